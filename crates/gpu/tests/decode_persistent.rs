//! The `Persistent` decoder (`shaders/decode_persistent.wgsl`: a whole
//! token in one workgroup a sample), at both widths (`PersistentWide`:
//! 512 invocations), against the `Prologue` layout at the
//! shapes it is for — several rounds of 128 output columns (3C and 4C
//! past 128), more positions than a head's 32 lanes, eight heads, C at its
//! limit of 256, two samples at once, f32 and f16-stored weights: the
//! logits of every step within f32 rounding, the same greedy text; a model
//! that does not fit the workgroup decodes in `Prologue`; the kernel
//! refuses what it cannot run; the pick inside the kernel (one dispatch a
//! token) gives the tokens of the pick on its own, greedy and seeded; the
//! f16 kernels' test-only faults reach its packed-halves variant.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::sample::{SampleParams, Sampler};
use tinygpt_core::{Gpt, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::{generate_greedy, generate_rows};
use tinygpt_gpu::gate::stats::gate_stats;
use tinygpt_gpu::gate::{F16Storage, FastPaths};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::model::{DecoderKernels, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::attention::DecodeDesc;
use tinygpt_gpu::ops::matmul::Fault;
use tinygpt_gpu::ops::persistent::{
    persistent_fits, persistent_pick_offered, persistent_wide_offered,
};
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::PipelineRegistry;

fn f16() -> FastPaths {
    f16_with(None)
}

/// f16 storage under a test-only fault.
fn f16_with(fault: Option<Fault>) -> FastPaths {
    FastPaths {
        f16_storage: Some(F16Storage {
            pack_on_gpu: false,
            fault,
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
    scaled_model(gpu, reg, (cfg, 4.0), fast, kernels)
}

/// [`model`] with its parameters `scale` times a seeded model's.
fn scaled_model(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    (cfg, scale): (ModelConfig, f32),
    fast: FastPaths,
    kernels: DecoderKernels,
) -> GpuModel {
    let mut p = Gpt::new(cfg, 5).unwrap().params;
    p.iter_mut().for_each(|x| *x *= scale);
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
            let run = |k: DecoderKernels, reg: &mut PipelineRegistry| {
                let mut m = model(gpu, reg, cfg, fast, k);
                let dec = m.decoder_for(&gpu.ctx, reg, 2).unwrap();
                assert_eq!(dec.layout(), k, "{what}");
                dec.reset();
                // Past 32 positions: a head's lanes take two each.
                let tokens: Vec<u32> = (0..36).map(|i| (i * 7 + 3) % 65).collect();
                let logits: Vec<f32> = tokens
                    .iter()
                    .flat_map(|&t| pollster::block_on(dec.push(&gpu.ctx, t)).unwrap())
                    .collect();
                let dec = m.decoder(&gpu.ctx, reg).unwrap();
                let go = |_| std::ops::ControlFlow::Continue(());
                let text = pollster::block_on(generate_greedy(&gpu.ctx, dec, &[1, 2, 3], 30, go));
                (logits, text.unwrap())
            };
            let (want, want_text) = run(DecoderKernels::Prologue, &mut reg);
            for k in [DecoderKernels::Persistent, DecoderKernels::PersistentWide] {
                if k == DecoderKernels::PersistentWide && !persistent_wide_offered(&gpu.ctx.limits)
                {
                    eprintln!("{what}: the wide kernel did not run: this adapter offers {} invocations, {} bytes of workgroup memory", gpu.ctx.limits.max_compute_invocations_per_workgroup, gpu.ctx.limits.max_compute_workgroup_storage_size);
                    continue;
                }
                let (got, got_text) = run(k, &mut reg);
                let what = format!("{what} {k:?}");
                assert_close(&format!("{what}: logits"), &got, &want, 2e-4, 1e-4);
                assert!(
                    got.iter().zip(&want).any(|(a, b)| a != b),
                    "{what}: its own sums"
                );
                assert_eq!(got_text, want_text, "{what}: greedy text");
            }
        }
    }
}

/// Each test-only fault of the f16 kernels in the persistent kernel's
/// packed-halves variant, so that the f16-storage gate meets in a
/// persistent decoder the faults it must catch: against the f32 kernel's
/// logits the gate's statistic passes the kernel's own and fails the
/// faulty one's — `f16acc` where the sums pass f16's range (the weights
/// 2,000 times a seeded model's), `droptail` where K is not a multiple of
/// the 16 it drops past (C 36).
#[test]
fn the_persistent_f16_kernel_carries_the_gemvs_faults() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for (name, c, nh, scale) in [("f16acc", 128, 4, 2000.0), ("droptail", 36, 3, 4.0)] {
        let fault = Fault::parse(name).expect("the tests build with fault injection");
        let cfg = (cfg(c, nh, 16), scale);
        let mut logits = |fast: FastPaths| {
            let k = DecoderKernels::Persistent;
            let mut m = scaled_model(gpu, &mut reg, cfg, fast, k);
            let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
            assert_eq!(dec.layout(), k, "{name}");
            dec.reset();
            (0..8u32)
                .flat_map(|t| pollster::block_on(dec.push(&gpu.ctx, t * 11 % 65)).unwrap())
                .collect::<Vec<f32>>()
        };
        let want = logits(FastPaths::default());
        let (real, bad) = (logits(f16()), logits(f16_with(Some(fault))));
        let (real_stats, bad_stats) = (gate_stats(&real, &want), gate_stats(&bad, &want));
        eprintln!("{name}: kernel {real_stats:?}\n  fault {bad_stats:?}");
        assert!(real_stats.passed, "{name}: the kernel fails the gate");
        assert!(!bad_stats.passed, "{name}: the fault passes the gate");
    }
}

#[test]
fn a_model_the_workgroup_cannot_hold_decodes_in_the_prologue_layout() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // C 384 (nanogpt's rows), heads of 6 (not a multiple of 4).
    for cfg in [cfg(384, 6, 8), cfg(24, 4, 8)] {
        for k in [DecoderKernels::Persistent, DecoderKernels::PersistentWide] {
            let mut m = model(gpu, &mut reg, cfg, FastPaths::default(), k);
            let dec = m.decoder(&gpu.ctx, &mut reg).unwrap();
            assert_eq!(dec.layout(), DecoderKernels::Prologue, "{cfg:?} {k:?}");
            assert_eq!(dec.dispatches_per_token(), 5 * cfg.n_layer + 2);
        }
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

/// The engine's own choice: on a GPU `Persistent` (never the wide form,
/// measured slower) for rows up to 128 wide
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
    // WebGPU's default limits (256 invocations, 16 KB) and a device that
    // offers the wide workgroup.
    let narrow = wgpu::Limits::default();
    let wide = wgpu::Limits {
        max_compute_invocations_per_workgroup: 1024,
        max_compute_workgroup_size_x: 1024,
        max_compute_workgroup_storage_size: 32_768,
        ..narrow.clone()
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
    // Asked for by hand: the wide one where offered, else the narrow.
    for (limits, want) in [
        (&narrow, DecoderKernels::Persistent),
        (&wide, DecoderKernels::PersistentWide),
    ] {
        assert_eq!(
            DecoderKernels::PersistentWide.for_model(&desc(128, 4), limits),
            want
        );
    }
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

/// The pick inside the kernel (greedy and seeded, two samples at once,
/// across a window restart) against the same kernel with the pick on its
/// own: the same tokens, at both widths, f32 and f16 storage; one dispatch
/// a token against two.
#[test]
fn the_pick_inside_the_kernel_gives_the_pick_on_its_owns_tokens() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let cfg = cfg(64, 4, 12);
    let seeded = SampleParams {
        temperature: 1.5,
        top_k: Some(8),
        top_p: Some(0.95),
        seed: 7,
    };
    for k in [DecoderKernels::Persistent, DecoderKernels::PersistentWide] {
        let width = k.persistent_width().unwrap();
        let limits = &gpu.ctx.limits;
        let wide = k == DecoderKernels::PersistentWide;
        if (wide && !persistent_wide_offered(limits)) || !persistent_pick_offered(limits, width) {
            let why = "the device lacks the invocations, workgroup memory or storage buffers";
            tinygpt_gpu::testing::did_not_run(&format!("{k:?} with its pick"), why);
            continue;
        }
        for fast in [FastPaths::default(), f16()] {
            let mut m = model(gpu, &mut reg, cfg, fast, k);
            for rule in [SampleParams::greedy(), seeded] {
                let texts = [true, false].map(|inside| {
                    let dec = m.decoder_for(&gpu.ctx, &mut reg, 2).unwrap();
                    dec.set_pick_in_kernel(inside);
                    assert_eq!(dec.dispatches_per_token(), 2 - inside as usize);
                    let mut samplers: Vec<Sampler> = (0..2)
                        .map(|i| Sampler::new(rule.for_sample(i)).unwrap())
                        .collect();
                    let samplers = (rule.temperature > 0.0).then_some(&mut samplers[..]);
                    let go = |_, _| std::ops::ControlFlow::Continue(());
                    let n = 2 * cfg.block_size;
                    pollster::block_on(generate_rows(&gpu.ctx, dec, &[1, 2, 3], n, samplers, go))
                        .unwrap()
                });
                let what = format!("{k:?}, f16 {}, {rule:?}", fast.f16_storage.is_some());
                assert_eq!(texts[0], texts[1], "{what}");
                assert_eq!(texts[0][0].len(), 2 * cfg.block_size, "{what}");
                if rule.temperature > 0.0 {
                    assert_ne!(texts[0][0], texts[0][1], "{what}: two seeds");
                }
            }
        }
    }
}
