//! `tinygpt sample` end to end on the local adapter with the bundled
//! model: several samples at once print each under its seed, sample 1 is
//! the text the seed gives alone, and bad counts are refused with one
//! clear error before anything loads.

use std::process::Command;

const MODEL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../models/shakespeare.safetensors"
);

fn sample(extra: &[&str]) -> std::process::Output {
    let base = [
        "sample",
        "--checkpoint",
        MODEL,
        "--prompt",
        "ROMEO:",
        "--length",
        "24",
    ];
    Command::new(env!("CARGO_BIN_EXE_tinygpt"))
        .args(base.iter().chain(extra))
        .output()
        .expect("tinygpt runs")
}

fn stdout(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn several_samples_print_each_under_its_seed_and_bad_counts_are_refused() {
    let out = sample(&["--num-samples", "3", "--seed", "5", "--temperature", "1"]);
    let text = stdout(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("72 tokens (3 samples)"), "{err}");
    let parts: Vec<&str> = text.split("── sample ").skip(1).collect();
    assert_eq!(parts.len(), 3, "{text}");
    for (i, part) in parts.iter().enumerate() {
        let head = format!("{} of 3 (seed {}) ──\nROMEO:", i + 1, 5 + i);
        assert!(part.starts_with(&head), "{part:?}");
    }
    // Sample 1 is seed 5's text alone; sample 3 is seed 7's.
    let alone = |seed: &str| stdout(&sample(&["--seed", seed, "--temperature", "1"]));
    let body = |part: &str| part.split_once('\n').unwrap().1.trim_end().to_string();
    assert_eq!(body(parts[0]), alone("5").trim_end());
    assert_eq!(body(parts[2]), alone("7").trim_end());

    for (args, why) in [
        (
            &["--num-samples", "9"][..],
            "samples must be in 1..=8 (got 9)",
        ),
        (
            &["--num-samples", "0"][..],
            "samples must be in 1..=8 (got 0)",
        ),
        (
            &["--num-samples", "2", "--temperature", "0"][..],
            "temperature 0 (greedy) gives all 2 samples the same text",
        ),
    ] {
        let out = sample(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

/// Natively the pipelines are built without wgpu's shader checks (the
/// default); with all of them, or some, the seed's text is the same, and
/// a check the CLI does not know is refused before anything loads.
#[test]
fn the_shader_checks_change_no_text_and_unknown_ones_are_refused() {
    let args = ["--seed", "3", "--temperature", "1"];
    let engine = stdout(&sample(&args));
    for checks in ["full", "loops,zero"] {
        let with: Vec<&str> = args
            .iter()
            .copied()
            .chain(["--shader-checks", checks])
            .collect();
        assert_eq!(stdout(&sample(&with)), engine, "{checks}");
    }
    let out = sample(&["--shader-checks", "loops,fast"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown shader check `fast`"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
