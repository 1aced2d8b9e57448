//! What the `safetensors` crate does and does not do for us: why the
//! project's pre-checks run before its parser, how its errors map onto
//! [`CheckpointError`], and why the writer stays the project's own. If a
//! crate upgrade changes one of these facts, the test says which.

use std::collections::{BTreeSet, HashMap};

use safetensors::{SafeTensorError, SafeTensors};
use serde_json::json;

use super::super::container::from_crate;
use super::*;

/// A file from a literal header (written as is, keys in this order).
fn raw(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

const A: &str = r#""a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}"#;

#[test]
fn the_crate_accepts_what_the_prechecks_refuse() {
    let cases = [
        // Hash maps keep the last of a repeated key.
        (format!("{{{A},{A}}}"), "tensor a appears twice"),
        (
            format!(r#"{{{A},"__metadata__":{{"k":"1","k":"2"}}}}"#),
            "metadata key \"k\" appears twice",
        ),
        // Unknown fields of an entry are ignored; a null __metadata__ is none.
        (
            r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}"#.into(),
            "unknown field `x`",
        ),
        (
            format!(r#"{{"__metadata__":null,{A}}}"#),
            "expected an object",
        ),
        // Any dtype it knows.
        (
            r#"{"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}"#.into(),
            "tensor a has dtype I32, expected F32 or F16",
        ),
    ];
    for (header, expected) in cases {
        let file = raw(&header, &[0; 4]);
        assert!(SafeTensors::deserialize(&file).is_ok(), "{header}");
        let err = load(&file).unwrap_err().to_string();
        assert!(err.contains(expected), "{header}: {err}");
    }
}

#[test]
fn the_crates_errors_name_less_than_the_prechecks() {
    let bytes = saved(false);
    let (header, data) = split(&bytes);
    let lnf_b = |h: &mut serde_json::Value| h["lnf_b"]["shape"] = json!([9]);
    let mut wrong_shape = header.clone();
    lnf_b(&mut wrong_shape);
    let mut padded = data.clone();
    padded.extend_from_slice(&[0; 8]);
    let mut past_end = bytes.clone();
    past_end[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    let cases: [(Vec<u8>, &str, &str); 4] = [
        (
            join(&wrong_shape, &data),
            "invalid shape, data type, or offset for tensor",
            "tensor lnf_b spans 32 bytes, but F32 with shape [9] needs 36",
        ),
        (
            join(&header, &padded),
            "incomplete metadata, file not fully covered",
            "bytes [",
        ),
        (
            bytes[..bytes.len() - 1].to_vec(),
            "incomplete metadata, file not fully covered",
            "tensor lnf_b has data_offsets",
        ),
        (past_end, "header too large", "runs past the end of the"),
    ];
    for (file, crate_says, we_say) in cases {
        let theirs = SafeTensors::deserialize(&file).unwrap_err().to_string();
        assert_eq!(theirs, crate_says);
        let ours = load(&file).unwrap_err().to_string();
        assert!(ours.contains(we_say), "{ours}");
    }
}

#[test]
fn crate_errors_map_onto_checkpoint_errors() {
    let crate_err = |file: &[u8]| SafeTensors::read_metadata(file).unwrap_err();
    let short = [0u8; 5];
    assert_eq!(
        from_crate(crate_err(&short), &short),
        CheckpointError::TooShort { len: 5 }
    );
    let past = raw("{}", &[]);
    let mut past = past[..9].to_vec();
    past[..8].copy_from_slice(&100u64.to_le_bytes());
    assert_eq!(
        from_crate(crate_err(&past), &past),
        CheckpointError::HeaderPastEnd {
            header_len: 100,
            file_len: 9
        }
    );
    let mut huge = past.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        from_crate(crate_err(&huge), &huge),
        CheckpointError::HeaderTooLarge {
            header_len: u64::MAX,
            ..
        }
    ));
    // Where both see the fault, the mapped error is of the pre-checks' kind.
    let mut not_utf8 = saved(false);
    not_utf8[8 + 3] = 0xFF;
    assert_eq!(
        Err(from_crate(crate_err(&not_utf8), &not_utf8)),
        load(&not_utf8)
    );
    let not_json = raw("[1, 2]", &[]);
    assert!(matches!(
        (from_crate(crate_err(&not_json), &not_json), load(&not_json)),
        (
            CheckpointError::HeaderJson { .. },
            Err(CheckpointError::HeaderJson { .. })
        )
    ));
    let err = from_crate(SafeTensorError::InvalidOffset("b".into()), &[]);
    assert_eq!(
        err.to_string(),
        "the header is not valid safetensors JSON: invalid offset for tensor `b`"
    );
}

/// The crate's `serialize` of our tensors and metadata.
fn crate_written(ckpt: &Checkpoint) -> Vec<u8> {
    let layout = ckpt.layout();
    let bytes = super::tensor_bytes(ckpt);
    let views = layout.tensors.iter().zip(&bytes).map(|(t, b)| {
        let view =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, t.shape.clone(), b);
        (t.kind.name(), view.unwrap())
    });
    let (header, _) = split(&save(ckpt, WeightDtype::F32).unwrap());
    let meta: HashMap<String, String> =
        serde_json::from_value(header["__metadata__"].clone()).unwrap();
    safetensors::serialize(views, Some(meta)).unwrap()
}

#[test]
fn the_crates_writer_does_not_serve() {
    let ckpt = sample(small_config(), false);
    // Metadata in hash-map order: the same checkpoint, different bytes.
    let files: BTreeSet<Vec<u8>> = (0..8).map(|_| crate_written(&ckpt)).collect();
    assert!(files.len() > 1, "the crate's writer became deterministic");
    // Tensors by dtype, then by name, not in parameter order.
    let first = |file: &[u8]| {
        let (_, header) = SafeTensors::read_metadata(file).unwrap();
        header.offset_keys()[0].clone()
    };
    assert_eq!(first(files.first().unwrap()), "attn_proj_b");
    assert_eq!(first(&saved(false)), "tok_emb");
    // Still, what it writes, we read.
    for file in &files {
        assert_eq!(load(file).unwrap(), ckpt);
    }
}
