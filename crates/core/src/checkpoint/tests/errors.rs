//! One test per way a file (or a checkpoint to save) is refused.

use half::f16;
use serde_json::json;
use tinygpt_protocol::TrainConfig;

use super::*;

#[test]
fn files_too_short_for_the_length_prefix() {
    for len in 0..8 {
        assert_eq!(load(&vec![0; len]), Err(CheckpointError::TooShort { len }));
    }
}

#[test]
fn truncated_files_are_refused_at_every_point() {
    let bytes = saved(true);
    let header_end = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    for cut in [3, 8, 9, header_end / 2, header_end - 1] {
        let err = load(&bytes[..cut]).unwrap_err();
        assert!(
            matches!(
                err,
                CheckpointError::TooShort { .. } | CheckpointError::HeaderPastEnd { .. }
            ),
            "cut {cut}: {err}"
        );
    }
    for cut in [
        header_end,
        header_end + 1,
        (header_end + bytes.len()) / 2,
        bytes.len() - 1,
    ] {
        let err = load(&bytes[..cut]).unwrap_err();
        assert!(
            matches!(err, CheckpointError::OffsetsOutOfRange { .. }),
            "cut {cut}: {err}"
        );
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}

#[test]
fn header_length_past_the_file_or_too_large() {
    let mut bytes = saved(false);
    for n in [u64::MAX, u64::MAX / 2, bytes.len() as u64] {
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        let err = load(&bytes).unwrap_err();
        assert_eq!(
            err,
            CheckpointError::HeaderPastEnd {
                header_len: n,
                file_len: bytes.len()
            }
        );
    }
    let mut big = vec![b' '; MAX_HEADER_LEN + 64];
    big[..8].copy_from_slice(&(MAX_HEADER_LEN as u64 + 1).to_le_bytes());
    assert!(matches!(
        load(&big),
        Err(CheckpointError::HeaderTooLarge { .. })
    ));
}

#[test]
fn header_that_is_not_utf8_or_not_json() {
    let bytes = saved(false);
    let mut bad = bytes.clone();
    bad[8 + 3] = 0xFF;
    assert_eq!(
        load(&bad),
        Err(CheckpointError::HeaderNotUtf8 { offset: 11 })
    );
    let mut bad = bytes.clone();
    bad[8] = b'[';
    assert!(matches!(
        load(&bad),
        Err(CheckpointError::HeaderJson { .. })
    ));
    for header in [
        json!({"__metadata__": {"step": 3}}),
        json!({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "extra": 1}}),
        json!({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}),
        json!([1, 2]),
    ] {
        let err = load(&join(&header, &[0; 4])).unwrap_err();
        assert!(matches!(err, CheckpointError::HeaderJson { .. }), "{err}");
    }
    let dup = br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"__metadata__":{"k":"1","k":"2"}}"#;
    let mut file = (dup.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(dup);
    file.extend_from_slice(&[0; 4]);
    let err = load(&file).unwrap_err().to_string();
    assert!(err.contains("appears twice"), "{err}");
}

#[test]
fn offsets_that_overlap_leave_gaps_or_run_out() {
    let bytes = saved(false);
    let err = load_edited(&bytes, |h| {
        let (s, _) = offsets(h, "pos_emb");
        h["pos_emb"]["data_offsets"] = json!([s - 4, s - 4 + 4 * 4 * 8]);
    })
    .unwrap_err();
    assert!(
        matches!(err, CheckpointError::OverlappingTensors { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("overlaps"), "{err}");

    let (mut header, mut data) = split(&bytes);
    data.extend_from_slice(&[0; 8]);
    assert_eq!(
        load(&join(&header, &data)).unwrap_err(),
        CheckpointError::UncoveredData {
            start: data.len() as u64 - 8,
            end: data.len() as u64
        }
    );
    header["lnf_b"]["data_offsets"] = json!([1u64 << 40, (1u64 << 40) + 32]);
    assert!(matches!(
        load(&join(&header, &data)),
        Err(CheckpointError::OffsetsOutOfRange { .. })
    ));
    let err = load_edited(&bytes, |h| h["lnf_b"]["data_offsets"] = json!([40, 8])).unwrap_err();
    assert!(
        matches!(err, CheckpointError::OffsetsOutOfRange { .. }),
        "{err}"
    );
}

#[test]
fn byte_length_must_match_dtype_and_shape() {
    let err = load_edited(&saved(false), |h| h["lnf_b"]["shape"] = json!([9])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "tensor lnf_b spans 32 bytes, but F32 with shape [9] needs 36"
    );
    let err = load_edited(&saved(false), |h| {
        h["lnf_b"]["shape"] = json!([u64::MAX, u64::MAX])
    })
    .unwrap_err();
    assert!(
        matches!(err, CheckpointError::ByteLengthMismatch { .. }),
        "{err}"
    );
}

#[test]
fn unsupported_dtypes_are_refused() {
    for dtype in ["I32", "BF16", "F64", "U8", "nonsense"] {
        let err = load_edited(&saved(false), |h| h["ln1_w"]["dtype"] = json!(dtype)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("tensor ln1_w has dtype {dtype}, expected F32 or F16")
        );
    }
    // Adam moments must be F32: relabel one as F16 with shape doubled.
    let err = load_edited(&saved(true), |h| {
        h["adam_m.lnf_b"]["dtype"] = json!("F16");
        h["adam_m.lnf_b"]["shape"] = json!([16]);
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            CheckpointError::BadDtype {
                expected: "F32",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn missing_extra_and_duplicate_tensors() {
    let bytes = saved(false);
    // Missing: drop the tensor stored last, together with its bytes.
    let (mut header, data) = split(&bytes);
    let (start, _) = offsets(&header, "lnf_b");
    assert_eq!(
        offsets(&header, "lnf_b").1,
        data.len(),
        "lnf_b is stored last"
    );
    header.as_object_mut().unwrap().remove("lnf_b");
    let err = load(&join(&header, &data[..start])).unwrap_err();
    assert_eq!(
        err,
        CheckpointError::MissingTensor {
            name: "lnf_b".into()
        }
    );

    let (mut header, mut data) = split(&bytes);
    header["head.weight"] =
        json!({"dtype": "F32", "shape": [2], "data_offsets": [data.len(), data.len() + 8]});
    data.extend_from_slice(&[0; 8]);
    let err = load(&join(&header, &data)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown tensor \"head.weight\" (not a parameter or AdamW moment of this format)"
    );

    // The same entry twice (serde maps would keep one silently).
    let (header, data) = split(&bytes);
    let h = header.to_string();
    let dup = format!("{},\"lnf_b\":{}}}", &h[..h.len() - 1], header["lnf_b"]);
    let mut file = (dup.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(dup.as_bytes());
    file.extend_from_slice(&data);
    assert_eq!(
        load(&file),
        Err(CheckpointError::DuplicateTensor {
            name: "lnf_b".into()
        })
    );
}

#[test]
fn non_finite_and_negative_values() {
    let bytes = saved(true);
    let (header, mut data) = split(&bytes);
    let (start, _) = offsets(&header, "fc_w");
    data[start + 12..start + 16].copy_from_slice(&f32::NAN.to_le_bytes());
    let err = load(&join(&header, &data)).unwrap_err();
    assert!(
        matches!(&err, CheckpointError::NonFinite { name, index: 3, .. } if name == "fc_w"),
        "{err}"
    );
    assert!(
        err.to_string().contains("fc_w") && err.to_string().contains("NaN"),
        "{err}"
    );

    let (header, mut data) = split(&bytes);
    let (start, _) = offsets(&header, "adam_m.qkv_b");
    data[start..start + 4].copy_from_slice(&f32::INFINITY.to_le_bytes());
    assert!(matches!(
        load(&join(&header, &data)),
        Err(CheckpointError::NonFinite { name, .. }) if name == "adam_m.qkv_b"
    ));

    let (header, mut data) = split(&bytes);
    let (start, _) = offsets(&header, "adam_v.ln2_w");
    data[start + 4..start + 8].copy_from_slice(&(-1.0f32).to_le_bytes());
    assert_eq!(
        load(&join(&header, &data)),
        Err(CheckpointError::NegativeMoment {
            name: "adam_v.ln2_w".into(),
            index: 1,
            value: -1.0
        })
    );

    // An F16 infinity is non-finite too.
    let f16_bytes = save(&sample(small_config(), false), WeightDtype::F16).unwrap();
    let (header, mut data) = split(&f16_bytes);
    let (start, _) = offsets(&header, "tok_emb");
    data[start..start + 2].copy_from_slice(&f16::INFINITY.to_le_bytes());
    assert!(matches!(
        load(&join(&header, &data)),
        Err(CheckpointError::NonFinite { .. })
    ));
}

#[test]
fn shapes_must_match_the_declared_config() {
    // The tensors of a C = 8 model under a config that says C = 16.
    let mut wide = small_config();
    wide.d_model = 16;
    let err = load_edited(
        &saved(false),
        set_meta("config", &serde_json::to_string(&wide).unwrap()),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tensor tok_emb has shape [5, 8], expected [5, 16] for this config"
    );
    let err = load_edited(&saved(false), |h| {
        h["qkv_w"]["shape"] = json!([2, 8, 24]);
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tensor qkv_w has shape [2, 8, 24], expected [2, 24, 8] for this config"
    );
}

#[test]
fn metadata_errors() {
    let bytes = saved(false);
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "format_version",
            "2",
            "format_version \"2\" is not supported",
        ),
        ("format", "pt", "not a TinyGPT checkpoint"),
        ("config", "{not json", "metadata \"config\" is invalid"),
        (
            "config",
            r#"{"vocab_size":5,"block_size":4,"n_layer":2,"n_head":3,"d_model":8}"#,
            "n_head (3) must divide d_model (8)",
        ),
        (
            "vocab",
            "\"\\nab\"",
            "the vocabulary has 3 characters but config.vocab_size is 5",
        ),
        ("vocab", "\"ba!\\n \"", "must be sorted and unique"),
        ("vocab", "[\"a\"]", "metadata \"vocab\" is invalid"),
        ("step", "-3", "metadata \"step\" is invalid"),
        ("adam_step", "x", "metadata \"adam_step\" is invalid"),
        ("train_config", "{}", "metadata \"train_config\" is invalid"),
        ("colour", "blue", "unknown metadata key \"colour\""),
    ];
    for (key, value, expected) in cases {
        let err = load_edited(&bytes, set_meta(key, value))
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "{key}={value}: {err}");
    }
    let bad_train = TrainConfig {
        seq_len: 99,
        ..TrainConfig::default()
    };
    let err = load_edited(
        &bytes,
        set_meta("train_config", &serde_json::to_string(&bad_train).unwrap()),
    )
    .unwrap_err();
    assert!(
        matches!(err, CheckpointError::InvalidTrainConfig { .. }),
        "{err}"
    );
    for key in ["format_version", "config", "vocab", "step"] {
        let err = load_edited(&bytes, |h| {
            h["__metadata__"].as_object_mut().unwrap().remove(key);
        })
        .unwrap_err();
        assert_eq!(err, CheckpointError::MissingMetadata { key }, "{key}");
    }
    let err = load_edited(&bytes, |h| {
        h.as_object_mut().unwrap().remove("__metadata__");
    })
    .unwrap_err();
    assert_eq!(err, CheckpointError::NotTinyGpt { found: None });
}

#[test]
fn adam_moments_are_all_or_nothing() {
    let err = load_edited(&saved(true), |h| {
        h["__metadata__"]
            .as_object_mut()
            .unwrap()
            .remove("adam_step");
    })
    .unwrap_err();
    assert_eq!(err, CheckpointError::MissingMetadata { key: "adam_step" });
    let err = load_edited(&saved(false), set_meta("adam_step", "3")).unwrap_err();
    assert_eq!(
        err,
        CheckpointError::MissingTensor {
            name: "adam_m.tok_emb".into()
        }
    );
}

#[test]
fn save_refuses_what_load_would_refuse() {
    let good = sample(small_config(), true);
    let mut c = good.clone();
    c.params.pop();
    assert!(matches!(
        save(&c, WeightDtype::F32),
        Err(CheckpointError::WrongLength { what: "params", .. })
    ));
    let mut c = good.clone();
    c.adam.as_mut().unwrap().v.push(0.0);
    assert!(matches!(
        save(&c, WeightDtype::F32),
        Err(CheckpointError::WrongLength { what: "adam.v", .. })
    ));
    let mut c = good.clone();
    c.params[7] = f32::NAN;
    assert!(matches!(
        save(&c, WeightDtype::F32),
        Err(CheckpointError::NonFinite { index: 7, .. })
    ));
    let mut c = good.clone();
    c.params[3] = 1e6;
    assert!(save(&c, WeightDtype::F32).is_ok());
    assert_eq!(
        save(&c, WeightDtype::F16),
        Err(CheckpointError::F16Overflow {
            name: "tok_emb".into(),
            index: 3,
            value: 1e6
        })
    );
    let mut c = good.clone();
    c.vocab.pop();
    assert!(matches!(
        save(&c, WeightDtype::F32),
        Err(CheckpointError::VocabSizeMismatch { .. })
    ));
    let mut c = good.clone();
    c.extra.insert("big".into(), "x".repeat(MAX_HEADER_LEN));
    assert!(matches!(
        save(&c, WeightDtype::F32),
        Err(CheckpointError::HeaderTooLarge { .. })
    ));
}
