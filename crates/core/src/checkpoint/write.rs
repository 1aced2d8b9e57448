//! Writing: a fixed header order and fixed tensor order, so saving is
//! deterministic.
//!
//! The writer is the project's own, not `safetensors::serialize`: the crate
//! takes the metadata as a `HashMap` and writes it in that map's randomly
//! seeded order (the same checkpoint gives different bytes from one save to
//! the next), and it orders tensors by dtype and then by name, not in the
//! parameter order `docs/checkpoint.md` specifies. Its alignment (wider
//! dtypes first, header padded to 8 bytes) is the same as this writer's.
//! `tests/crate_parser.rs` checks both facts against the crate.

use half::f16;

use super::error::CheckpointError;
use super::format::Dtype;
use super::format::{
    Checkpoint, WeightDtype, ADAM_M_PREFIX, ADAM_V_PREFIX, EXTRA_PREFIX, FORMAT, FORMAT_VERSION,
    MAX_HEADER_LEN,
};

/// One tensor on its way to the file.
struct Outgoing<'a> {
    name: String,
    dtype: Dtype,
    shape: &'a [usize],
    values: &'a [f32],
}

/// A JSON string literal (serde_json's escaping).
fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn json_of<T: serde::Serialize>(key: &'static str, value: &T) -> Result<String, CheckpointError> {
    serde_json::to_string(value).map_err(|e| CheckpointError::BadMetadata {
        key,
        reason: e.to_string(),
    })
}

/// Serialises `ckpt` (after [`Checkpoint::validate`]) with weights in
/// `dtype`. Refuses values an F16 file could not hold and headers above
/// [`MAX_HEADER_LEN`], so everything `save` writes, [`load`](super::load) reads.
pub fn save(ckpt: &Checkpoint, dtype: WeightDtype) -> Result<Vec<u8>, CheckpointError> {
    ckpt.validate()?;
    let cfg = &ckpt.config;
    let layout = ckpt.layout();
    let vocab: String = ckpt.vocab.iter().collect();
    let mut meta: Vec<(String, String)> = vec![
        ("format".into(), FORMAT.into()),
        ("format_version".into(), FORMAT_VERSION.into()),
        ("config".into(), json_of("config", cfg)?),
        ("vocab".into(), json_string(&vocab)),
        ("step".into(), ckpt.step.to_string()),
    ];
    if let Some(train) = &ckpt.train_config {
        meta.push(("train_config".into(), json_of("train_config", train)?));
    }
    if let Some(adam) = &ckpt.adam {
        meta.push(("adam_step".into(), adam.step.to_string()));
    }
    for (k, v) in &ckpt.extra {
        meta.push((format!("{EXTRA_PREFIX}{k}"), v.clone()));
    }

    let weight_dtype = match dtype {
        WeightDtype::F32 => Dtype::F32,
        WeightDtype::F16 => Dtype::F16,
    };
    let mut tensors: Vec<Outgoing<'_>> = Vec::new();
    for spec in &layout.tensors {
        tensors.push(Outgoing {
            name: spec.kind.name().to_string(),
            dtype: weight_dtype,
            shape: &spec.shape,
            values: &ckpt.params[spec.range()],
        });
    }
    if let Some(adam) = &ckpt.adam {
        for (prefix, flat) in [(ADAM_M_PREFIX, &adam.m), (ADAM_V_PREFIX, &adam.v)] {
            for spec in &layout.tensors {
                tensors.push(Outgoing {
                    name: format!("{prefix}{}", spec.kind.name()),
                    dtype: Dtype::F32,
                    shape: &spec.shape,
                    values: &flat[spec.range()],
                });
            }
        }
    }
    // Wider elements first, as the safetensors writer does, so every tensor
    // starts aligned to its element size (the header is padded to 8).
    tensors.sort_by_key(|t| std::cmp::Reverse(t.dtype.size()));
    write_file(&meta, &tensors)
}

fn write_file(
    meta: &[(String, String)],
    tensors: &[Outgoing<'_>],
) -> Result<Vec<u8>, CheckpointError> {
    let mut header = String::from("{\"__metadata__\":{");
    for (i, (k, v)) in meta.iter().enumerate() {
        if i > 0 {
            header.push(',');
        }
        header.push_str(&json_string(k));
        header.push(':');
        header.push_str(&json_string(v));
    }
    header.push('}');
    let mut offset = 0usize;
    for t in tensors {
        let end = offset + t.values.len() * t.dtype.size();
        let shape: Vec<String> = t.shape.iter().map(usize::to_string).collect();
        header.push_str(&format!(
            ",{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}",
            json_string(&t.name),
            t.dtype.name(),
            shape.join(",")
        ));
        offset = end;
    }
    header.push('}');
    // Pad with spaces so the data region starts 8-byte aligned.
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    if header.len() > MAX_HEADER_LEN {
        return Err(CheckpointError::HeaderTooLarge {
            header_len: header.len() as u64,
            max: MAX_HEADER_LEN,
        });
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for t in tensors {
        match t.dtype {
            Dtype::F32 => {
                for &x in t.values {
                    out.extend_from_slice(&x.to_le_bytes());
                }
            }
            Dtype::F16 => {
                for (index, &x) in t.values.iter().enumerate() {
                    let h = f16::from_f32(x);
                    if h.is_infinite() {
                        return Err(CheckpointError::F16Overflow {
                            name: t.name.clone(),
                            index,
                            value: x,
                        });
                    }
                    out.extend_from_slice(&h.to_le_bytes());
                }
            }
        }
    }
    Ok(out)
}
