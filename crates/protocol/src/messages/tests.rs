//! The messages' wire format, and the sample request's count.

use super::*;

#[test]
fn wire_names_are_snake_case_tags() {
    let caps = WorkerOutput::GpuCaps(GpuCaps::default());
    let json = serde_json::to_string(&caps).unwrap();
    assert!(json.starts_with(r#"{"type":"gpu_caps""#), "{json}");
    let back: WorkerOutput = serde_json::from_str(&json).unwrap();
    assert_eq!(back, caps);
    let q = serde_json::to_string(&WorkerInput::QueryCaps).unwrap();
    assert_eq!(q, r#"{"type":"query_caps"}"#);
}

#[test]
fn a_request_without_a_count_asks_for_one_sample() {
    let json =
        r#"{"prompt":"a","max_tokens":3,"temperature":1.0,"top_k":null,"top_p":null,"seed":4}"#;
    let req: SampleRequest = serde_json::from_str(json).unwrap();
    assert_eq!(req.num_samples, 1);
    let chunk: WorkerOutput = serde_json::from_str(
        r#"{"type":"sample_chunk","text":"x","tokens":1,"tokens_per_s":1.0,"first_token_ms":2.0}"#,
    )
    .unwrap();
    assert!(matches!(chunk, WorkerOutput::SampleChunk { sample: 0, .. }));
}

#[test]
fn sample_counts_outside_one_to_eight_and_several_greedy_ones_are_refused() {
    for n in 1..=MAX_SAMPLES {
        assert_eq!(check_num_samples(n, 0.8), Ok(()));
    }
    assert_eq!(check_num_samples(1, 0.0), Ok(()));
    let e = check_num_samples(0, 1.0).unwrap_err();
    assert_eq!(e, "samples must be in 1..=8 (got 0)");
    assert!(check_num_samples(9, 1.0).unwrap_err().contains("(got 9)"));
    assert!(check_num_samples(3, 0.0).unwrap_err().contains("greedy"));
}
