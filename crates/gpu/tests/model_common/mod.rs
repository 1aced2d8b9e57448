//! What the tests of `GpuModel` on its fast paths share (`gate_model.rs`,
//! `localize.rs`): a small odd-shaped model and its training, token
//! streams, the engine's own device, and the f16-weight levers. Not every
//! test file uses every helper.
#![allow(dead_code)]

use std::rc::Rc;
use tinygpt_core::data::{Batch, BatchSampler};
use tinygpt_core::{ModelConfig, Rng, TrainConfig};
use tinygpt_gpu::engine::Gpu;
use tinygpt_gpu::gate::{F16Storage, FastPaths, Fault};
use tinygpt_gpu::model::GpuModel;
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::matmul::f16c::{f16_compute_unavailable, F16Compute};

/// d_model 21 with vocab 11: odd tensor offsets and odd K, so the
/// unaligned half-reading path of the kernels runs too.
pub fn config() -> ModelConfig {
    ModelConfig {
        vocab_size: 11,
        block_size: 16,
        n_layer: 2,
        n_head: 3,
        d_model: 21,
    }
}

pub fn train_config(steps: usize) -> TrainConfig {
    TrainConfig {
        batch_size: 4,
        seq_len: 16,
        steps,
        warmup_steps: 5,
        lr: 1e-2,
        min_lr: 1e-3,
        grad_clip: 1.0,
        ..TrainConfig::default()
    }
}

pub fn tokens(n: usize, v: u32) -> Vec<u32> {
    let mut rng = Rng::new(77);
    (0..n)
        .map(|i| {
            if rng.below(6) == 0 {
                rng.below(v as usize) as u32
            } else {
                (i as u32 * 3 + i as u32 / 5) % v
            }
        })
        .collect()
}

pub fn batches(n: usize, seed: u64, tc: &TrainConfig, v: u32) -> Vec<Batch> {
    let data = tokens(4000, v);
    let mut s = BatchSampler::new(seed);
    (0..n)
        .map(|_| s.next_batch(&data, tc.batch_size, tc.seq_len))
        .collect()
}

/// Its own device (the engine's `Gpu`), after the shared one decided
/// whether GPU tests run here.
pub fn engine_gpu() -> Option<Rc<Gpu>> {
    tinygpt_gpu::testing::test_gpu()?;
    Some(Gpu::new(tinygpt_gpu::testing::open_context()))
}

/// The f16-weight fast paths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lever {
    Storage,
    Compute,
}

/// The paths `test` runs on here: f16 storage, and f16 compute where the
/// adapter has shader-f16 (else the test says it did not run).
pub fn levers(gpu: &Gpu, test: &str) -> Vec<Lever> {
    match f16_compute_unavailable(&gpu.ctx) {
        None => vec![Lever::Storage, Lever::Compute],
        Some(why) => {
            tinygpt_gpu::testing::did_not_run(&format!("{test} (f16 compute)"), why);
            vec![Lever::Storage]
        }
    }
}

/// `lever` alone, packing on the GPU or the CPU, with a test-only fault.
pub fn on(lever: Lever, pack_on_gpu: bool, fault: Option<Fault>) -> FastPaths {
    match lever {
        Lever::Storage => FastPaths {
            f16_storage: Some(F16Storage {
                pack_on_gpu,
                fault,
                training: true,
            }),
            ..Default::default()
        },
        Lever::Compute => FastPaths {
            f16_compute: Some(F16Compute { pack_on_gpu, fault }),
            ..Default::default()
        },
    }
}

pub fn f16(pack_on_gpu: bool, fault: Option<Fault>) -> FastPaths {
    on(Lever::Storage, pack_on_gpu, fault)
}

/// The sample gate's texts in these tests: token ids as digits.
pub fn digits(ids: &[u32]) -> String {
    ids.iter()
        .map(|i| char::from_digit(i % 10, 10).unwrap())
        .collect()
}

pub fn model(gpu: &Gpu, params: &[f32], fast: FastPaths) -> GpuModel {
    let mut m = GpuModel::new(
        &gpu.ctx,
        config(),
        params,
        None,
        train_config(200),
        OptState::default(),
    )
    .unwrap();
    m.set_fast_paths(&gpu.ctx, &mut gpu.registry.borrow_mut(), fast)
        .unwrap();
    m
}

pub fn eval(gpu: &Gpu, m: &mut GpuModel, b: &[Batch]) -> f32 {
    pollster::block_on(m.eval_loss(&gpu.ctx, &mut gpu.registry.borrow_mut(), b)).unwrap()
}
