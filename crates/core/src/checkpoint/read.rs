//! Reading: the container is pre-checked and then parsed by the
//! `safetensors` crate in `container.rs`; the metadata and the tensor set are
//! checked against the declared config here.

use std::collections::BTreeMap;

use half::f16;
use tinygpt_protocol::{ModelConfig, TrainConfig};

use super::container::{self, Entry};
use super::error::CheckpointError;
use super::format::Dtype;
use super::format::{
    check_finite, check_non_negative, check_vocab, AdamMoments, Checkpoint, ADAM_M_PREFIX,
    ADAM_V_PREFIX, EXTRA_PREFIX, FORMAT, FORMAT_VERSION, OPTIONAL_KEYS, REQUIRED_KEYS,
};
use crate::params::{ParamLayout, PARAM_KINDS};

/// Which slot of the checkpoint a tensor name fills.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Weight,
    AdamM,
    AdamV,
}

/// The role of a tensor name and the index of its kind in [`PARAM_KINDS`].
fn classify(name: &str) -> Option<(Role, usize)> {
    let (role, base) = if let Some(base) = name.strip_prefix(ADAM_M_PREFIX) {
        (Role::AdamM, base)
    } else if let Some(base) = name.strip_prefix(ADAM_V_PREFIX) {
        (Role::AdamV, base)
    } else {
        (Role::Weight, name)
    };
    let k = PARAM_KINDS.iter().position(|kind| kind.name() == base)?;
    Some((role, k))
}

/// The metadata of a checkpoint, parsed and checked.
struct Meta {
    config: ModelConfig,
    vocab: Vec<char>,
    step: u64,
    train_config: Option<TrainConfig>,
    adam_step: Option<u64>,
    extra: BTreeMap<String, String>,
}

fn required<'m>(
    meta: &'m BTreeMap<String, String>,
    key: &'static str,
) -> Result<&'m str, CheckpointError> {
    meta.get(key)
        .map(String::as_str)
        .ok_or(CheckpointError::MissingMetadata { key })
}

fn parse_u64(key: &'static str, value: &str) -> Result<u64, CheckpointError> {
    value
        .parse()
        .map_err(|e: std::num::ParseIntError| CheckpointError::BadMetadata {
            key,
            reason: format!("expected a decimal integer: {e}"),
        })
}

fn parse_json<T: serde::de::DeserializeOwned>(
    key: &'static str,
    value: &str,
) -> Result<T, CheckpointError> {
    serde_json::from_str(value).map_err(|e| CheckpointError::BadMetadata {
        key,
        reason: e.to_string(),
    })
}

impl Meta {
    fn parse(meta: &BTreeMap<String, String>) -> Result<Meta, CheckpointError> {
        if meta.get("format").map(String::as_str) != Some(FORMAT) {
            return Err(CheckpointError::NotTinyGpt {
                found: meta.get("format").cloned(),
            });
        }
        let version = required(meta, "format_version")?;
        if version != FORMAT_VERSION {
            return Err(CheckpointError::UnsupportedVersion {
                found: version.to_string(),
                supported: FORMAT_VERSION,
            });
        }
        let known = |k: &str| REQUIRED_KEYS.contains(&k) || OPTIONAL_KEYS.contains(&k);
        if let Some(key) = meta
            .keys()
            .find(|k| !known(k) && !k.starts_with(EXTRA_PREFIX))
        {
            return Err(CheckpointError::UnknownMetadata { key: key.clone() });
        }
        let config: ModelConfig = parse_json("config", required(meta, "config")?)?;
        config
            .validate()
            .map_err(|source| CheckpointError::InvalidConfig { source })?;
        let vocab: String = parse_json("vocab", required(meta, "vocab")?)?;
        let vocab: Vec<char> = vocab.chars().collect();
        check_vocab(&config, vocab.clone())?;
        let step = parse_u64("step", required(meta, "step")?)?;
        let train_config = match meta.get("train_config") {
            None => None,
            Some(json) => {
                let train: TrainConfig = parse_json("train_config", json)?;
                train
                    .validate(&config)
                    .map_err(|source| CheckpointError::InvalidTrainConfig { source })?;
                Some(train)
            }
        };
        let adam_step = match meta.get("adam_step") {
            None => None,
            Some(s) => Some(parse_u64("adam_step", s)?),
        };
        let extra = meta
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(EXTRA_PREFIX)?.to_string(), v.clone())))
            .collect();
        Ok(Meta {
            config,
            vocab,
            step,
            train_config,
            adam_step,
            extra,
        })
    }
}

/// Decodes one tensor (already checked against dtype and shape) onto `out`.
fn decode_into(entry: &Entry<'_>, out: &mut Vec<f32>) -> Result<(), CheckpointError> {
    let start = out.len();
    match entry.dtype {
        Dtype::F32 => {
            let (chunks, _) = entry.bytes.as_chunks::<4>();
            out.extend(chunks.iter().map(|&b| f32::from_le_bytes(b)));
        }
        Dtype::F16 => {
            let (chunks, _) = entry.bytes.as_chunks::<2>();
            out.extend(chunks.iter().map(|&b| f16::from_le_bytes(b).to_f32()));
        }
    }
    check_finite(&entry.name, "", &out[start..])
}

/// Parses and validates a checkpoint, refusing — never panicking on —
/// anything that is not exactly a file [`save`](super::save) could have written for the
/// config it declares: framing and header lengths, header JSON, tensor
/// offsets (in range, tiling the data region), dtypes, metadata keys and
/// version, config and vocabulary, every tensor present with the shape of
/// that config and no other tensor, and finite values.
///
/// Memory use is bounded by the input: lengths are checked against the
/// bytes present before anything is allocated.
pub fn load(bytes: &[u8]) -> Result<Checkpoint, CheckpointError> {
    let file = container::parse(bytes)?;
    let meta = Meta::parse(&file.metadata)?;
    let slots = slots(&file.tensors, &meta.config)?;
    let has_adam = meta.adam_step.is_some() || slots[1..].iter().flatten().any(Option::is_some);
    check_complete(&slots, has_adam)?;
    if has_adam && meta.adam_step.is_none() {
        return Err(CheckpointError::MissingMetadata { key: "adam_step" });
    }
    // Every tensor matched its config shape and fits in `bytes`, so the
    // layout's total is bounded by the file size.
    let layout = ParamLayout::new(&meta.config);
    let decode = |role: Role| -> Result<Vec<f32>, CheckpointError> {
        let mut out = Vec::with_capacity(layout.total);
        for entry in slots[role as usize].iter().flatten() {
            decode_into(entry, &mut out)?;
        }
        Ok(out)
    };
    let params = decode(Role::Weight)?;
    let adam = match meta.adam_step {
        Some(step) => {
            let m = decode(Role::AdamM)?;
            let v = decode(Role::AdamV)?;
            for spec in &layout.tensors {
                check_non_negative(spec.kind.name(), &v[spec.range()])?;
            }
            Some(AdamMoments { m, v, step })
        }
        None => None,
    };
    Ok(Checkpoint {
        config: meta.config,
        vocab: meta.vocab,
        step: meta.step,
        params,
        adam,
        train_config: meta.train_config,
        extra: meta.extra,
    })
}

/// The file's tensors by role and kind, in PARAM_KINDS order.
type Slots<'f, 'a> = [[Option<&'f Entry<'a>>; PARAM_KINDS.len()]; 3];

/// Sorts the tensors into their slots, refusing unknown names, moments
/// that are not F32, and shapes that are not the config's — checked in a
/// fixed order (weights, then moments, each in layout order) so the error
/// names the same tensor whatever the header order.
fn slots<'f, 'a>(
    tensors: &'f [Entry<'a>],
    cfg: &ModelConfig,
) -> Result<Slots<'f, 'a>, CheckpointError> {
    let mut slots: Slots<'f, 'a> = Default::default();
    for entry in tensors {
        let Some((role, k)) = classify(&entry.name) else {
            return Err(CheckpointError::UnknownTensor {
                name: entry.name.clone(),
            });
        };
        if role != Role::Weight && entry.dtype != Dtype::F32 {
            return Err(CheckpointError::BadDtype {
                name: entry.name.clone(),
                dtype: entry.dtype.name().to_string(),
                expected: "F32",
            });
        }
        slots[role as usize][k] = Some(entry);
    }
    for role_slots in &slots {
        for (entry, kind) in role_slots.iter().zip(PARAM_KINDS) {
            let Some(entry) = entry else {
                continue;
            };
            let expected = kind.shape(cfg);
            if !entry
                .shape
                .iter()
                .copied()
                .eq(expected.iter().map(|&d| d as u64))
            {
                return Err(CheckpointError::ShapeMismatch {
                    name: entry.name.clone(),
                    shape: entry.shape.clone(),
                    expected,
                });
            }
        }
    }
    Ok(slots)
}

/// Refuses a missing weight, or (with moments) a missing moment.
fn check_complete(slots: &Slots<'_, '_>, has_adam: bool) -> Result<(), CheckpointError> {
    let roles: &[(Role, &str)] = if has_adam {
        &[
            (Role::Weight, ""),
            (Role::AdamM, ADAM_M_PREFIX),
            (Role::AdamV, ADAM_V_PREFIX),
        ]
    } else {
        &[(Role::Weight, "")]
    };
    for &(role, prefix) in roles {
        for (k, kind) in PARAM_KINDS.iter().enumerate() {
            if slots[role as usize][k].is_none() {
                return Err(CheckpointError::MissingTensor {
                    name: format!("{prefix}{}", kind.name()),
                });
            }
        }
    }
    Ok(())
}
