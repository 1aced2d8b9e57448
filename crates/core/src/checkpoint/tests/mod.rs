//! Round trips, interop with the `safetensors` crate, and one test per way
//! a file is refused.

use std::collections::BTreeMap;

use half::f16;
use serde_json::{json, Value};
use tinygpt_protocol::{ModelConfig, TrainConfig};

use super::*;
use crate::params::{ParamKind, ParamLayout};
use crate::rng::Rng;

/// V 5, T 4, L 2, NH 2, C 8: every tensor kind, a few hundred values.
pub(super) fn small_config() -> ModelConfig {
    ModelConfig {
        vocab_size: 5,
        block_size: 4,
        n_layer: 2,
        n_head: 2,
        d_model: 8,
    }
}

fn filled(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.normal() * scale).collect()
}

pub(super) fn sample(cfg: ModelConfig, with_adam: bool) -> Checkpoint {
    let total = ParamLayout::new(&cfg).total;
    let vocab: Vec<char> = "\n !abcdefghijklmnopqrstuvwxyz"
        .chars()
        .take(cfg.vocab_size)
        .collect();
    let adam = with_adam.then(|| AdamMoments {
        m: filled(total, 2, 1e-3),
        v: filled(total, 3, 1e-3).iter().map(|x| x * x).collect(),
        step: 41,
    });
    let train_config = TrainConfig {
        seq_len: cfg.block_size,
        ..TrainConfig::default()
    };
    Checkpoint {
        config: cfg,
        vocab,
        step: 42,
        params: filled(total, 1, 0.5),
        adam,
        train_config: Some(train_config),
        extra: BTreeMap::from([
            ("loss_history".to_string(), "[4.1,3.2]".to_string()),
            ("sampler_state".to_string(), "[1,2,3,4]".to_string()),
        ]),
    }
}

pub(super) fn saved(with_adam: bool) -> Vec<u8> {
    save(&sample(small_config(), with_adam), WeightDtype::F32).unwrap()
}

/// Splits a file into its header JSON and data region.
pub(super) fn split(bytes: &[u8]) -> (Value, Vec<u8>) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    (header, bytes[8 + n..].to_vec())
}

pub(super) fn join(header: &Value, data: &[u8]) -> Vec<u8> {
    let h = header.to_string();
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

/// Loads `bytes` after editing its header.
pub(super) fn load_edited(
    bytes: &[u8],
    edit: impl FnOnce(&mut Value),
) -> Result<Checkpoint, CheckpointError> {
    let (mut header, data) = split(bytes);
    edit(&mut header);
    load(&join(&header, &data))
}

pub(super) fn set_meta<'a>(key: &'a str, value: &'a str) -> impl FnOnce(&mut Value) + 'a {
    move |h| h["__metadata__"][key] = json!(value)
}

pub(super) fn offsets(header: &Value, name: &str) -> (usize, usize) {
    let o = &header[name]["data_offsets"];
    (
        o[0].as_u64().unwrap() as usize,
        o[1].as_u64().unwrap() as usize,
    )
}

#[test]
fn f32_round_trip_is_exact() {
    for with_adam in [false, true] {
        let ckpt = sample(small_config(), with_adam);
        let loaded = load(&save(&ckpt, WeightDtype::F32).unwrap()).unwrap();
        assert_eq!(loaded, ckpt, "with_adam {with_adam}");
    }
}

#[test]
fn f16_round_trip_rounds_to_nearest_even() {
    for with_adam in [false, true] {
        let mut ckpt = sample(small_config(), with_adam);
        // Include values at the edges of f16: a tie, subnormals, the max.
        ckpt.params[..5].copy_from_slice(&[1.0 + 1.0 / 2048.0, 1e-6, -3e-8, 65504.0, 65519.0]);
        let bytes = save(&ckpt, WeightDtype::F16).unwrap();
        let loaded = load(&bytes).unwrap();
        for (&a, &b) in ckpt.params.iter().zip(&loaded.params) {
            assert_eq!(b, f16::from_f32(a).to_f32(), "{a}");
            if a.abs() > 1e-4 {
                assert!((a - b).abs() <= a.abs() / 2048.0, "{a} → {b}");
            }
        }
        assert_eq!(loaded.params[0], 1.0, "ties go to even");
        assert_eq!(loaded.params[4], 65504.0);
        assert_eq!(loaded.adam, ckpt.adam, "moments stay F32");
        assert_eq!(
            (loaded.step, &loaded.vocab, &loaded.extra),
            (ckpt.step, &ckpt.vocab, &ckpt.extra)
        );
        let f32_len = save(&ckpt, WeightDtype::F32).unwrap().len();
        assert!(bytes.len() < f32_len);
    }
}

#[test]
fn saving_is_deterministic() {
    assert_eq!(saved(true), saved(true));
}

#[test]
fn a_checkpoint_loads_as_the_model_it_was_saved_from() {
    let other = ModelConfig {
        vocab_size: 7,
        block_size: 6,
        n_layer: 1,
        n_head: 4,
        d_model: 12,
    };
    let ckpt = sample(other, false);
    let loaded = load(&save(&ckpt, WeightDtype::F32).unwrap()).unwrap();
    assert_eq!(loaded.config, other);
    assert_eq!(loaded.params.len(), other.num_params());
    assert_eq!(loaded, ckpt);
}

#[test]
fn the_safetensors_crate_reads_our_files() {
    let ckpt = sample(small_config(), true);
    let bytes = save(&ckpt, WeightDtype::F16).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(st.len(), 48);
    let layout = ckpt.layout();
    let qkv = st.tensor("qkv_w").unwrap();
    assert_eq!(qkv.dtype(), safetensors::Dtype::F16);
    assert_eq!(qkv.shape(), [2, 24, 8]);
    let first = f16::from_le_bytes([qkv.data()[0], qkv.data()[1]]);
    assert_eq!(
        first,
        f16::from_f32(layout.view(&ckpt.params, ParamKind::QkvW)[0])
    );
    let v = st.tensor("adam_v.fc_proj_w").unwrap();
    assert_eq!(
        (v.dtype(), v.shape()),
        (safetensors::Dtype::F32, &[2, 8, 32][..])
    );
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = meta.metadata().clone().unwrap();
    assert_eq!(meta["format"], "tinygpt");
    assert_eq!(meta["vocab"], "\"\\n !ab\"");
    assert_eq!(meta["extra.loss_history"], "[4.1,3.2]");
}

/// Each weight tensor of `ckpt` as little-endian f32 bytes, in layout order.
pub(super) fn tensor_bytes(ckpt: &Checkpoint) -> Vec<Vec<u8>> {
    ckpt.layout()
        .tensors
        .iter()
        .map(|t| {
            ckpt.params[t.range()]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect()
        })
        .collect()
}

#[test]
fn we_read_files_the_safetensors_crate_writes() {
    let ckpt = sample(small_config(), false);
    let layout = ckpt.layout();
    let bytes = tensor_bytes(&ckpt);
    let views = layout.tensors.iter().zip(&bytes).map(|(t, b)| {
        let view =
            safetensors::tensor::TensorView::new(safetensors::Dtype::F32, t.shape.clone(), b);
        (t.kind.name(), view.unwrap())
    });
    let (header, _) = split(&saved(false));
    let meta: std::collections::HashMap<String, String> =
        serde_json::from_value(header["__metadata__"].clone()).unwrap();
    let file = safetensors::serialize(views, Some(meta)).unwrap();
    assert_eq!(load(&file).unwrap(), ckpt);
}

mod crate_parser;
mod errors;
