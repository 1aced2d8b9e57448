//! The subgroups path (`shaders/lanes_sg.wgsl`, `gate::subgroups`): the
//! GEMVs summing their lanes with subgroup shuffles give the bits of the
//! workgroup-memory tree in every form the decoder binds (the gate, which
//! demands bit identity, passes); the kernel faults it carries fail it and
//! the packing fault does not reach it; a subgroup size the adapter does
//! not run gives NaN rather than quietly wrong sums; and the decoder's
//! logits with the path on are the f32 path's, bit for bit, in both GPU
//! layouts, one sample and several. On an adapter without subgroups of
//! one size each test says it did not run and why.

use tinygpt_core::{Gpt, ModelConfig, TrainConfig};
use tinygpt_gpu::gate::Fault;
use tinygpt_gpu::gate::{subgroups, FastPaths, GateOptions, BUNDLED_SHAPE, DEFAULT_VOCAB};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::model::{DecoderKernels, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use tinygpt_gpu::testing::{random, TestGpu};

/// The adapter's subgroup size, or `None` after saying why the test did
/// not run.
fn size_or_say(gpu: &TestGpu, test: &str) -> Option<u32> {
    match gpu.ctx.subgroup_size() {
        Ok(n) => Some(n),
        Err(why) => {
            tinygpt_gpu::testing::did_not_run(test, why);
            None
        }
    }
}

fn opts(fault: Option<Fault>) -> GateOptions {
    GateOptions {
        fault,
        vocab: DEFAULT_VOCAB,
        now_ms: || 0.0,
        measure_speed: false,
        speed_shape: BUNDLED_SHAPE,
    }
}

#[test]
fn the_gate_finds_every_output_bit_identical() {
    let gpu = gpu_or_skip!();
    let Some(size) = size_or_say(gpu, "subgroups gate") else {
        return;
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let r = pollster::block_on(subgroups::gate(&gpu.ctx, &mut reg, opts(None))).unwrap();
    eprintln!("{}", r.lines.join("\n"));
    assert!(r.passed, "subgroups of {size}: {:?}", r.lines);
    assert!(r.cases.len() >= 8);
    for c in &r.cases {
        assert_eq!(c.stats.max_abs_err, 0.0, "{}", c.name);
        assert_eq!(c.stats.non_finite, 0, "{}", c.name);
    }
    assert!(r.lines[0].contains("bit-identical"), "{}", r.lines[0]);
}

#[test]
fn the_kernel_faults_fail_the_gate_and_the_packing_fault_does_not_reach_it() {
    let gpu = gpu_or_skip!();
    if size_or_say(gpu, "subgroups faults").is_none() {
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for fault in [Fault::F16Accumulate, Fault::DropKTail, Fault::TruncatePack] {
        let r = pollster::block_on(subgroups::gate(&gpu.ctx, &mut reg, opts(Some(fault))));
        let r = r.unwrap();
        assert_eq!(
            r.passed,
            !subgroups::carries(fault),
            "{fault:?}: {:?}",
            r.lines
        );
        if r.passed {
            continue;
        }
        // Only the f16-storage cases carry the fault; they say how many differ.
        let failing: Vec<_> = r.cases.iter().filter(|c| !c.stats.passed).collect();
        assert!(
            failing.iter().all(|c| c.name.starts_with("f16")),
            "{fault:?}"
        );
        assert!(r.lines.iter().any(|l| l.contains("differ")), "{fault:?}");
    }
}

#[test]
fn a_subgroup_size_the_adapter_does_not_run_gives_nan() {
    let gpu = gpu_or_skip!();
    let Some(size) = size_or_say(gpu, "subgroups wrong size") else {
        return;
    };
    if size >= 32 {
        // Shuffles within a column's 32 lanes are right for any declared
        // size here: no wrong layout to provoke.
        let why = format!("subgroups of {size} hold a whole column: no wrong layout to provoke");
        tinygpt_gpu::testing::did_not_run("subgroups wrong size", &why);
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let (k, n) = (72, 24);
    let mut rng = tinygpt_core::Rng::new(3);
    let x = ctx.upload("x", &random(&mut rng, k)).unwrap();
    let w = ctx.upload("w", &random(&mut rng, k * n)).unwrap();
    let y = ctx.zeros("y", n as usize).unwrap();
    let desc = MatmulDesc {
        bias: false,
        ..MatmulDesc::linear(1, k, n)
    };
    // Declared twice the real size: the widest level is a shuffle that
    // leaves the subgroup.
    let fusion = RowFusion {
        subgroups: Some(2 * size),
        ..RowFusion::default()
    };
    let kernel = bind_gemv(ctx, &mut reg, desc, &x, &w, None, fusion, &y).unwrap();
    tinygpt_gpu::kernel::submit(ctx, "sg_wrong_size", &[&kernel]);
    let got = pollster::block_on(ctx.read_f32(&y, n as usize)).unwrap();
    assert!(got.iter().all(|v| v.is_nan()), "{got:?}");
}

fn config() -> ModelConfig {
    ModelConfig {
        vocab_size: 13,
        block_size: 10,
        n_layer: 2,
        n_head: 2,
        d_model: 40,
    }
}

#[test]
fn the_decoder_gives_the_f32_logits_bit_for_bit() {
    let gpu = gpu_or_skip!();
    if size_or_say(gpu, "subgroups decoder").is_none() {
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let cfg = config();
    let mut p = Gpt::new(cfg, 4).unwrap().params;
    p.iter_mut().for_each(|x| *x *= 6.0);
    let logits = |reg: &mut _, kernels, batch, on: bool| {
        let tc = TrainConfig::default();
        let mut m = GpuModel::new(ctx, cfg, &p, None, tc, OptState::default()).unwrap();
        let fast = FastPaths {
            subgroups: on,
            ..Default::default()
        };
        m.set_fast_paths(ctx, reg, fast).unwrap();
        m.set_decoder_kernels(kernels);
        let dec = m.decoder_for(ctx, reg, batch).unwrap();
        let mut all = Vec::new();
        for t in [3, 1, 4, 1, 5, 9, 2, 6] {
            all.extend(pollster::block_on(dec.push(ctx, t)).unwrap());
        }
        all
    };
    for kernels in [
        DecoderKernels::Prologue,
        DecoderKernels::Fused,
        DecoderKernels::Separate,
    ] {
        for batch in [1, 3] {
            let want = logits(&mut *reg, kernels, batch, false);
            let got = logits(&mut *reg, kernels, batch, true);
            let differ = got
                .iter()
                .zip(&want)
                .filter(|(g, w)| g.to_bits() != w.to_bits())
                .count();
            assert_eq!(differ, 0, "{kernels:?} batch {batch}");
            assert!(want.iter().all(|v| v.is_finite()));
        }
    }
}

/// The column layout has no lanes to sum, and a subgroup size the shuffles
/// do not run, or subgroups on a device without them, are refused: errors,
/// not kernels (any adapter).
#[test]
fn layouts_and_sizes_the_shuffles_cannot_run_are_refused() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let (x, w, y) = (
        ctx.zeros("x", 8).unwrap(),
        ctx.zeros("w", 64).unwrap(),
        ctx.zeros("y", 8).unwrap(),
    );
    let desc = MatmulDesc {
        bias: false,
        ..MatmulDesc::linear(1, 8, 8)
    };
    let refused = |fusion: RowFusion, reg: &mut _| {
        bind_gemv(ctx, reg, desc, &x, &w, None, fusion, &y).is_err()
    };
    let columns = RowFusion {
        columns: true,
        subgroups: Some(32),
        ..RowFusion::default()
    };
    assert!(refused(columns, &mut *reg));
    for n in [0, 2, 3, 48, 256] {
        let odd = RowFusion {
            subgroups: Some(n),
            ..RowFusion::default()
        };
        assert!(refused(odd, &mut *reg), "subgroups of {n}");
    }
    // The adapter's own size binds; without subgroups any size is refused.
    let own = RowFusion {
        subgroups: Some(ctx.subgroup_size().unwrap_or(32)),
        ..RowFusion::default()
    };
    assert_eq!(refused(own, &mut *reg), ctx.subgroup_size().is_err());
}
