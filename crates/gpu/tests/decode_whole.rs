//! The `Whole` decoder layout (one dispatch a token step, a workgroup per
//! sample: `ops::decode_whole`) against `Fused`, whose kernels it runs one
//! after another: the same logits bit for bit at every position, for one
//! sample and several, with the sums through workgroup memory and with
//! subgroups; the same greedy text through the chained picks, across a
//! window restart; two dispatches a chained token; f16 storage falls back
//! to `Fused`.

use std::ops::ControlFlow;
use tinygpt_core::{Gpt, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::generate_greedy;
use tinygpt_gpu::gate::{F16Storage, FastPaths};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::model::{DecoderKernels, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::PipelineRegistry;

/// Odd sizes: C not a multiple of 8 columns or of 256 inputs, HS 20, a
/// vocabulary of 11, a context of 12 (the greedy test wraps it).
fn config() -> ModelConfig {
    ModelConfig {
        vocab_size: 11,
        block_size: 12,
        n_layer: 2,
        n_head: 2,
        d_model: 40,
    }
}

fn params(cfg: &ModelConfig) -> Vec<f32> {
    let mut p = Gpt::new(*cfg, 5).unwrap().params;
    p.iter_mut().for_each(|x| *x *= 6.0);
    p
}

fn model(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    fast: FastPaths,
    kernels: DecoderKernels,
) -> GpuModel {
    let cfg = config();
    let tc = TrainConfig::default();
    let p = params(&cfg);
    let mut m = GpuModel::new(&gpu.ctx, cfg, &p, None, tc, OptState::default()).unwrap();
    m.set_fast_paths(&gpu.ctx, reg, fast).unwrap();
    m.set_decoder_kernels(kernels);
    pollster::block_on(m.prepare_inference(&gpu.ctx)).unwrap();
    m
}

/// The fast paths the test runs: f32, and f32 with subgroups where the
/// adapter has them (said when it does not).
fn paths(gpu: &TestGpu) -> Vec<FastPaths> {
    let mut all = vec![FastPaths::default()];
    match gpu.ctx.subgroup_size() {
        Ok(_) => all.push(FastPaths {
            subgroups: true,
            ..Default::default()
        }),
        Err(why) => eprintln!("DID NOT RUN with subgroups: {why}"),
    }
    all
}

fn logits(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    fast: FastPaths,
    kernels: DecoderKernels,
    batch: usize,
) -> Vec<f32> {
    let mut m = model(gpu, reg, fast, kernels);
    let dec = m.decoder_for(&gpu.ctx, reg, batch).unwrap();
    dec.reset();
    let mut all = Vec::new();
    for t in [3, 1, 4, 1, 5, 9, 2, 6, 5] {
        all.extend(pollster::block_on(dec.push(&gpu.ctx, t)).unwrap());
    }
    all
}

#[test]
fn the_whole_step_gives_the_fused_layouts_logits_bit_for_bit() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for fast in paths(gpu) {
        for batch in [1, 3] {
            let want = logits(gpu, &mut reg, fast, DecoderKernels::Fused, batch);
            let got = logits(gpu, &mut reg, fast, DecoderKernels::Whole, batch);
            assert_eq!(got.len(), want.len());
            let differ = got
                .iter()
                .zip(&want)
                .filter(|(g, w)| g.to_bits() != w.to_bits())
                .count();
            assert_eq!(
                differ,
                0,
                "{fast:?}, batch {batch}: {differ} of {} logits differ",
                got.len()
            );
            assert!(want.iter().all(|v| v.is_finite()) && want.iter().any(|&v| v != 0.0));
        }
    }
}

#[test]
fn the_whole_step_picks_the_fused_layouts_greedy_text() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // 30 tokens: past the 12-position window, so the cache restarts.
    let text = |reg: &mut PipelineRegistry, fast, kernels| {
        let mut m = model(gpu, reg, fast, kernels);
        let dec = m.decoder(&gpu.ctx, reg).unwrap();
        pollster::block_on(generate_greedy(&gpu.ctx, dec, &[2, 7, 1], 30, |_| {
            ControlFlow::Continue(())
        }))
        .unwrap()
    };
    for fast in paths(gpu) {
        let want = text(&mut reg, fast, DecoderKernels::Fused);
        assert_eq!(
            text(&mut reg, fast, DecoderKernels::Whole),
            want,
            "{fast:?}"
        );
        assert_eq!(want.len(), 30);
    }
}

#[test]
fn a_chained_whole_token_is_two_dispatches_and_f16_storage_runs_fused() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = config();
    let mut m = model(gpu, &mut reg, FastPaths::default(), DecoderKernels::Whole);
    // The step and the pick (the pick writes the next step's input row).
    assert_eq!(
        m.decoder(&gpu.ctx, &mut reg)
            .unwrap()
            .dispatches_per_token(),
        2
    );
    let f16 = FastPaths {
        f16_storage: Some(F16Storage {
            pack_on_gpu: false,
            fault: None,
            training: true,
        }),
        ..Default::default()
    };
    let mut m = model(gpu, &mut reg, f16, DecoderKernels::Whole);
    let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
    assert_eq!(dec.dispatches_per_token(), 5 * cfg.n_layer + 2);
}
