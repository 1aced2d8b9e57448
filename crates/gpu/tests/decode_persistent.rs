//! The `Persistent` decoder (`shaders/decode_persistent.wgsl`: a whole
//! token in one workgroup a sample) against the `Prologue` layout at the
//! shapes it is for — several rounds of 128 output columns (3C and 4C
//! past 128), more positions than a head's 32 lanes, eight heads, C at its
//! limit of 256, two samples at once, f32 and f16-stored weights: the
//! logits of every step within f32 rounding, the same greedy text; a model
//! that does not fit the workgroup decodes in `Prologue`; the kernel
//! refuses what it cannot run.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::{Gpt, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::generate_greedy;
use tinygpt_gpu::gate::{F16Storage, FastPaths};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::model::{DecoderKernels, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::attention::DecodeDesc;
use tinygpt_gpu::ops::persistent::persistent_fits;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::PipelineRegistry;

fn f16() -> FastPaths {
    FastPaths {
        f16_storage: Some(F16Storage {
            pack_on_gpu: false,
            fault: None,
            training: true,
        }),
        ..Default::default()
    }
}

fn model(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    cfg: ModelConfig,
    fast: FastPaths,
    kernels: DecoderKernels,
) -> GpuModel {
    let mut p = Gpt::new(cfg, 5).unwrap().params;
    p.iter_mut().for_each(|x| *x *= 4.0);
    let tc = TrainConfig::default();
    let mut m = GpuModel::new(&gpu.ctx, cfg, &p, None, tc, OptState::default()).unwrap();
    m.set_fast_paths(&gpu.ctx, reg, fast).unwrap();
    m.set_decoder_kernels(kernels);
    pollster::block_on(m.prepare_inference(&gpu.ctx)).unwrap();
    m
}

fn cfg(d_model: usize, n_head: usize, block_size: usize) -> ModelConfig {
    ModelConfig {
        vocab_size: 65,
        block_size,
        n_layer: 2,
        n_head,
        d_model,
    }
}

/// (C, NH, T_max): tiny's rows and heads; eight heads of 32 at C 256.
const SHAPES: [(usize, usize, usize); 2] = [(128, 4, 48), (256, 8, 40)];

#[test]
fn the_persistent_kernel_gives_the_prologue_layouts_logits_and_text() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for (c, nh, t_max) in SHAPES {
        let cfg = cfg(c, nh, t_max);
        for fast in [FastPaths::default(), f16()] {
            let what = format!("C {c} NH {nh} f16 {}", fast.f16_storage.is_some());
            let runs = [DecoderKernels::Prologue, DecoderKernels::Persistent].map(|k| {
                let mut m = model(gpu, &mut reg, cfg, fast, k);
                let dec = m.decoder_for(&gpu.ctx, &mut reg, 2).unwrap();
                assert_eq!(dec.layout(), k, "{what}");
                dec.reset();
                // Past 32 positions: a head's lanes take two each.
                let tokens: Vec<u32> = (0..36).map(|i| (i * 7 + 3) % 65).collect();
                let logits: Vec<f32> = tokens
                    .iter()
                    .flat_map(|&t| pollster::block_on(dec.push(&gpu.ctx, t)).unwrap())
                    .collect();
                let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
                let go = |_| std::ops::ControlFlow::Continue(());
                let text = pollster::block_on(generate_greedy(&gpu.ctx, dec, &[1, 2, 3], 30, go));
                (logits, text.unwrap())
            });
            let [(want, want_text), (got, got_text)] = runs;
            assert_close(&format!("{what}: logits"), &got, &want, 2e-4, 1e-4);
            assert!(
                got.iter().zip(&want).any(|(a, b)| a != b),
                "{what}: its own sums"
            );
            assert_eq!(got_text, want_text, "{what}: greedy text");
        }
    }
}

#[test]
fn a_model_the_workgroup_cannot_hold_decodes_in_the_prologue_layout() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // C 384 (nanogpt's rows), heads of 6 (not a multiple of 4).
    for cfg in [cfg(384, 6, 8), cfg(24, 4, 8)] {
        let mut m = model(
            gpu,
            &mut reg,
            cfg,
            FastPaths::default(),
            DecoderKernels::Persistent,
        );
        let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
        assert_eq!(dec.layout(), DecoderKernels::Prologue, "{cfg:?}");
        assert_eq!(dec.dispatches_per_token(), 5 * cfg.n_layer + 2);
    }
    let desc = |c, nh, t_max| DecodeDesc {
        c,
        nh,
        t_max,
        batch: 1,
    };
    assert!(persistent_fits(&desc(256, 8, 128)));
    assert!(persistent_fits(&desc(128, 4, 256)));
    for (c, nh, t_max) in [
        (260, 5, 8),
        (128, 16, 8),
        (128, 4, 257),
        (20, 2, 8),
        (130, 2, 8),
    ] {
        assert!(!persistent_fits(&desc(c, nh, t_max)), "{c} {nh} {t_max}");
    }
}

/// The engine's own choice: on a GPU `Persistent` for rows up to 128 wide
/// that fit it, `Prologue` past them; on a CPU implementation the column
/// layout; a layout set by hand stays set.
#[test]
fn the_engine_picks_the_persistent_layout_for_narrow_models_on_gpus() {
    let gpu = gpu_or_skip!();
    let desc = |c, nh| DecodeDesc {
        c,
        nh,
        t_max: 64,
        batch: 1,
    };
    let gpu_layout = DecoderKernels::Prologue;
    assert_eq!(
        gpu_layout.preferred_for(&desc(128, 4)),
        DecoderKernels::Persistent
    );
    assert_eq!(
        gpu_layout.preferred_for(&desc(256, 4)),
        DecoderKernels::Prologue
    );
    assert_eq!(
        gpu_layout.preferred_for(&desc(20, 2)),
        DecoderKernels::Prologue
    );
    let cpu_layout = DecoderKernels::Columns;
    assert_eq!(
        cpu_layout.preferred_for(&desc(128, 4)),
        DecoderKernels::Columns
    );
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for (c, nh) in [(128, 4), (256, 4)] {
        let cfg = cfg(c, nh, 16);
        let p = Gpt::new(cfg, 5).unwrap().params;
        let tc = TrainConfig::default();
        let mut m = GpuModel::new(&gpu.ctx, cfg, &p, None, tc, OptState::default()).unwrap();
        let device = DecoderKernels::for_device(&gpu.ctx);
        let want = device.preferred_for(&desc(c as u32, nh as u32));
        assert_eq!(
            m.decoder(&gpu.ctx, &mut reg).unwrap().layout(),
            want,
            "C {c}"
        );
        m.set_decoder_kernels(DecoderKernels::Separate);
        assert_eq!(
            m.decoder(&gpu.ctx, &mut reg).unwrap().layout(),
            DecoderKernels::Separate
        );
    }
}
