//! The tensor-core attention (`ops::attention::coop`) against a
//! device-emulating golden: the CPU reference in f64 run on the inputs its
//! tiles hold — `qkv` and `dout` rounded to f16 by round-to-nearest-even —
//! so that what is left is the kernels' own rounding: each weight (and
//! each dS) rounded to f16 before its product, and f32 sums. Forward
//! output and lse, every gradient, with and without dropout, heads of 16,
//! 32, 48 and 64, one to three row blocks of 64 and partial key blocks.
//! Devices without the kernels (lavapipe as Debian 12 ships it, every
//! browser) say that these did not run and why; binding there fails with
//! a message. CI runs them on Mesa 26's lavapipe (`.ci/coop-lavapipe`).
//! A model whose heads the kernels cannot hold trains on the f32
//! attention, on every device.

use half::f16;
use tinygpt_core::data::{Batch, BatchSampler};
use tinygpt_core::model::layers::{attention_backward_masked, attention_forward_masked};
use tinygpt_core::model::{Dropout, Site};
use tinygpt_core::{init_params, ModelConfig, Rng, TrainConfig};
use tinygpt_gpu::gate::f16_storage::case_line;
use tinygpt_gpu::gate::{coop_attention, FastPaths};
use tinygpt_gpu::kernel::{submit, Layout};
use tinygpt_gpu::model::GpuModel;
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::attention::{
    bind_attention_backward_coop_variant, bind_attention_forward_coop, coop_attention_unavailable,
    coop_grad_scale, dkv_ds_tile_unavailable, AttentionBackwardBuffers, AttentionDesc,
};
use tinygpt_gpu::ops::dropout::DropoutDesc;
use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
use tinygpt_gpu::testing::{assert_copy_is_staged, did_not_run, random, TestGpu};
use tinygpt_gpu::{gpu_or_skip, PipelineRegistry};

const fn shape(b: u32, t: u32, c: u32, nh: u32) -> AttentionDesc {
    AttentionDesc {
        b,
        t,
        c,
        nh,
        layout: Layout::Gpu,
    }
}

/// Heads of 16 to 64; T under one key block, across blocks and row
/// blocks, and past two row blocks.
const SHAPES: &[AttentionDesc] = &[
    shape(1, 5, 16, 1),   // HS 16, one partial block
    shape(1, 70, 64, 2),  // HS 32: two row blocks, the second partial
    shape(2, 33, 128, 2), // HS 64, two key blocks
    shape(1, 129, 96, 2), // HS 48: three row blocks
];

const SITE: Site = Site::Attention(0);

/// Whether the device runs the kernels for `d`; else says so.
fn available(gpu: &TestGpu, test: &str, d: &AttentionDesc) -> bool {
    match coop_attention_unavailable(&gpu.ctx, d) {
        Some(why) => {
            did_not_run(test, &why);
            false
        }
        None => true,
    }
}

/// `x` as the tiles hold it: `g·x` rounded to f16, over `g` (a power of
/// two: the backward's gradient scale, 1 for the forward's inputs).
fn f16_rounded(x: &[f32], g: f32) -> Vec<f64> {
    x.iter()
        .map(|&v| f16::from_f32(v * g).to_f64() / g as f64)
        .collect()
}

/// The golden: `(out, lse, dqkv)` in f64 on the f16-rounded inputs.
fn golden(d: AttentionDesc, qkv: &[f32], dout: &[f32], drop: Option<Dropout>) -> [Vec<f64>; 3] {
    let (b, t, c, nh) = (d.b as usize, d.t as usize, d.c as usize, d.nh as usize);
    let (x, dy) = (
        f16_rounded(qkv, 1.0),
        f16_rounded(dout, coop_grad_scale(&d)),
    );
    let mask = drop.map(|dr| dr.mask(SITE));
    let mut out = vec![0.0; b * t * c];
    let mut att = vec![0.0; b * nh * t * t];
    attention_forward_masked(&mut out, &mut att, &x, b, t, c, nh, mask);
    let mut dqkv = vec![0.0; b * t * 3 * c];
    attention_backward_masked(&mut dqkv, &dy, &x, &att, b, t, c, nh, mask);
    let hs = c / nh;
    let scale = 1.0 / (hs as f64).sqrt();
    let mut lse = Vec::new();
    for bi in 0..b {
        for h in 0..nh {
            for ti in 0..t {
                let at = |s: usize, part: usize, i: usize| {
                    x[(bi * t + s) * 3 * c + part * c + h * hs + i]
                };
                let scores: Vec<f64> = (0..=ti)
                    .map(|s| scale * (0..hs).map(|i| at(ti, 0, i) * at(s, 1, i)).sum::<f64>())
                    .collect();
                let m = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                lse.push(m + scores.iter().map(|s| (s - m).exp()).sum::<f64>().ln());
            }
        }
    }
    [out, lse, dqkv]
}

/// Whether the kernels for `d` also write their outputs' f16 copies (the
/// COPY pipeline constant) here: at head sizes 16 and 48. At 32 and 64
/// they run without, the pipelines the gate (HS 64) and a model without
/// the tensor-core matmul (HS 32, below) bind: each pipeline costs CI's
/// lavapipe tens of seconds to compile (LLVM scalarizes every lane's
/// workgroup-memory access), and the copy's columns do not depend on the
/// head size beyond the fragments it spans (one and three here).
fn writes_copies(d: &AttentionDesc) -> bool {
    matches!(d.c / d.nh, 16 | 48)
}

/// The kernels' `(out, lse, dqkv)`, dK/dV with its dS tile or without
/// (`ds_tile`); `dqkv` starts as junk so that any element the backward
/// fails to write shows.
fn run(
    gpu: &TestGpu,
    (d, ds_tile): (AttentionDesc, bool),
    qkv: &[f32],
    dout: &[f32],
    drop: Option<Dropout>,
) -> [Vec<f32>; 3] {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let state = drop.map(|dr| {
        ctx.upload_bytes("opt_state", bytemuck::cast_slice(&[dr.step, 0, 0, 0]))
            .unwrap()
    });
    let mask = drop.zip(state.as_ref()).map(|(dr, state)| {
        let desc = DropoutDesc {
            p: dr.p,
            seed: dr.seed,
            state,
        };
        (desc, SITE)
    });
    let qkv_buf = ctx.upload("qkv", qkv).unwrap();
    let dout_buf = ctx.upload("dout", dout).unwrap();
    let out = ctx.zeros("out", d.out_len() as usize).unwrap();
    let lse = ctx.zeros("lse", d.lse_len() as usize).unwrap();
    let dqkv = ctx
        .upload("dqkv", &vec![1e3; d.qkv_len() as usize])
        .unwrap();
    // Each output's f16 copy too where `writes_copies`, as the tensor-core
    // training graph binds them.
    let (rows, g) = (d.b * d.t, coop_grad_scale(&d));
    let copy = |buf: &wgpu::Buffer, width, scale| {
        writes_copies(&d)
            .then(|| StagedRows::for_producer(ctx, buf.into(), (rows, width), scale).unwrap())
    };
    let (out_copy, dqkv_copy) = (copy(&out, d.c, 1.0), copy(&dqkv, 3 * d.c, g));
    let outs = (&qkv_buf, &out, &lse);
    let fwd =
        bind_attention_forward_coop(ctx, &mut reg, d, outs, (mask, out_copy.as_ref())).unwrap();
    let bufs = AttentionBackwardBuffers {
        qkv: &qkv_buf,
        out: &out,
        dout: &dout_buf,
        lse: &lse,
        dqkv: &dqkv,
    };
    let scaled = (mask, g, dqkv_copy.as_ref());
    let bwd =
        bind_attention_backward_coop_variant(ctx, &mut reg, d, bufs, scaled, ds_tile).unwrap();
    std::mem::drop(reg);
    submit(ctx, "attention_coop", &[&fwd, &bwd[0], &bwd[1]]);
    if let Some(copy) = &out_copy {
        assert_copy_is_staged(gpu, copy, (&out).into(), (rows, d.c), "out's f16 copy");
    }
    if let Some(copy) = &dqkv_copy {
        let what = "dqkv's f16 copy";
        assert_copy_is_staged(gpu, copy, (&dqkv).into(), (rows, 3 * d.c), what);
    }
    pollster::block_on(async {
        [
            ctx.read_f32(&out, d.out_len() as usize).await.unwrap(),
            ctx.read_f32(&lse, d.lse_len() as usize).await.unwrap(),
            ctx.read_f32(&dqkv, d.qkv_len() as usize).await.unwrap(),
        ]
    })
}

/// The worst `|got − want|` over `want`'s largest magnitude.
fn worst(got: &[f32], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let big = want.iter().fold(0.0f64, |m, w| m.max(w.abs())).max(1e-30);
    let diff = got
        .iter()
        .zip(want)
        .map(|(&g, w)| {
            if g.is_finite() {
                (g as f64 - w).abs()
            } else {
                f64::INFINITY
            }
        })
        .fold(0.0, f64::max);
    diff / big
}

/// FNV-1a of the values' bits: two builds whose kernels claim the same
/// bits print the same fingerprints.
fn fingerprint(v: &[f32]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ u64::from(x.to_bits())).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Each of out, lse and dqkv within `tol` of the largest golden magnitude:
/// a weight rounded to f16 moves it by at most 2⁻¹¹ of itself, so an
/// output by at most ~2⁻¹¹ of the largest value it weights; the limit
/// leaves four times that.
/// `dout` of order `dout_scale` (a loss gradient: ~1/(B·T)).
fn check(gpu: &TestGpu, test: &str, d: AttentionDesc, case: (u64, f32), drop: Option<Dropout>) {
    let (seed, dout_scale) = case;
    let mut rng = Rng::new(seed);
    // Scores of a few units: softmax rows far from uniform.
    let qkv: Vec<f32> = random(&mut rng, d.qkv_len())
        .iter()
        .map(|v| 2.0 * v)
        .collect();
    let dout: Vec<f32> = random(&mut rng, d.out_len())
        .iter()
        .map(|v| v * dout_scale)
        .collect();
    check_inputs(gpu, test, d, (&qkv, &dout), drop);
}

/// `check` on the given `qkv` and `dout`.
fn check_inputs(
    gpu: &TestGpu,
    test: &str,
    d: AttentionDesc,
    (qkv, dout): (&[f32], &[f32]),
    drop: Option<Dropout>,
) {
    let want = golden(d, qkv, dout, drop);
    // Each dK/dV kernel: without its dS tile, and with it where the device
    // offers the workgroup memory.
    let got = run(gpu, (d, false), qkv, dout, drop);
    compare(test, d, &got, &want);
    let test = format!("{test} (dS tile)");
    match dkv_ds_tile_unavailable(&gpu.ctx) {
        Some(why) => did_not_run(&test, &why),
        None => compare(&test, d, &run(gpu, (d, true), qkv, dout, drop), &want),
    }
}

/// `check`'s comparison of one kernel's outputs with the golden's.
fn compare(test: &str, d: AttentionDesc, got: &[Vec<f32>; 3], want: &[Vec<f64>; 3]) {
    let tol = 4.0 * f16::EPSILON.to_f64() / 2.0;
    for (name, (g, w)) in ["out", "lse", "dqkv"].iter().zip(got.iter().zip(want)) {
        let e = worst(g, w);
        eprintln!(
            "{test} {d:?}: {name} worst error {e:.2e} of its largest (limit {tol:.2e}), bits {:016x}",
            fingerprint(g)
        );
        if e > tol {
            let big = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let far = g
                .iter()
                .zip(w)
                .enumerate()
                .filter(|(_, (a, b))| !a.is_finite() || (**a as f64 - **b).abs() > tol * big);
            for (i, (a, b)) in far.take(8) {
                eprintln!("  {name}[{i}]: {a} against {b}");
            }
        }
        assert!(
            e <= tol,
            "{test} {d:?}: {name} off by {e:.3e} of its largest"
        );
    }
}

#[test]
fn tensor_core_attention_matches_the_f16_golden() {
    let gpu = gpu_or_skip!();
    for (i, &d) in SHAPES.iter().enumerate() {
        if available(gpu, "tensor-core attention", &d) {
            check(gpu, "tensor-core attention", d, (40 + i as u64, 1.0), None);
        }
    }
}

#[test]
fn tensor_core_attention_drops_the_weights_the_reference_drops() {
    let gpu = gpu_or_skip!();
    for (i, &d) in SHAPES.iter().enumerate() {
        if available(gpu, "tensor-core attention dropout", &d) {
            let drop = Dropout {
                p: 0.25,
                seed: 0xfeed_beef_1234,
                step: 7 + i as u32,
            };
            check(
                gpu,
                "tensor-core attention dropout",
                d,
                (60 + i as u64, 1.0),
                Some(drop),
            );
        }
    }
}

/// Scores that rise along the keys — by about half a unit a key, 16 a
/// block of 32 — pass each row's reference in every block after its
/// first: the forward's lazy rescaling (`attention_coop_fwd.wgsl`'s TAU)
/// moves the references and rescales the accumulators' rows every block,
/// and the outputs, dominated by each row's last keys, still match.
#[test]
fn scores_rising_along_the_keys_rescale_the_sums() {
    let gpu = gpu_or_skip!();
    let test = "tensor-core attention, rising scores";
    for (i, &d) in SHAPES.iter().enumerate().skip(1) {
        if !available(gpu, test, &d) {
            continue;
        }
        let (t, c, hs) = (d.t as usize, d.c as usize, (d.c / d.nh) as usize);
        let mut rng = Rng::new(90 + i as u64);
        let mut qkv = random(&mut rng, d.qkv_len());
        // Queries biased to +1 and keys raised by β·s in every column:
        // the score of key s grows by about β·s·HS·scale = s / 2.
        let beta = 0.5 / (hs as f32).sqrt();
        for (row, chunk) in qkv.chunks_mut(3 * c).enumerate() {
            let s = (row % t) as f32;
            chunk[..c].iter_mut().for_each(|q| *q += 1.0);
            chunk[c..2 * c].iter_mut().for_each(|k| *k += beta * s);
        }
        let dout = random(&mut rng, d.out_len());
        check_inputs(gpu, test, d, (&qkv, &dout), None);
    }
}

/// Loss gradients of a large batch: of order 2⁻²⁰ at B·T = 8,192 (a mean
/// over the rows, times weights under one). Staged unscaled they would
/// sit in f16's subnormals (spacing 2⁻²⁴: 6 % of such a value), and so
/// would dS; scaled by the gradient scale (8,192 here) they keep the
/// golden's precision.
#[test]
fn gradients_of_a_large_batch_keep_f16_precision() {
    let gpu = gpu_or_skip!();
    let (test, d) = (
        "tensor-core attention, small gradients",
        shape(32, 256, 32, 2),
    );
    if available(gpu, test, &d) {
        check(gpu, test, d, (80, 1.0 / 1048576.0), None);
    }
}

/// The tensor-core gate's attention cases: the forward's output and lse,
/// and dQ, dK and dV on gradients of order 2⁻²⁰, within their bounds of
/// the f32 kernels' — and the fault the scale exists for, the gradients
/// staged unscaled, fails every gradient's case.
#[test]
fn the_gate_passes_the_attention_and_fails_it_unscaled() {
    let gpu = gpu_or_skip!();
    let test = "the tensor-core gate's attention cases";
    if !available(gpu, test, &coop_attention::GATE_SHAPE) {
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut run = |scale| {
        let mut rng = Rng::new(11);
        let cases = coop_attention::attention_cases(&gpu.ctx, &mut reg, &mut rng, scale);
        let cases = pollster::block_on(cases).unwrap();
        for c in &cases {
            let line = coop_attention::l2_line("coop-matrix", c);
            eprintln!(
                "{test}, scale {scale:?}: {}",
                line.unwrap_or_else(|| case_line("coop-matrix", c))
            );
        }
        cases
    };
    let scaled = run(None);
    assert_eq!(scaled.len(), 6);
    assert!(scaled.iter().all(|c| c.stats.passed), "{scaled:#?}");
    // Unscaled, every gradient's case fails: the weight gradient on the
    // seed's thresholds, dQ, dK and dV on their bound; the forward's two
    // (no gradients) pass either way.
    let unscaled = run(Some(1.0));
    for c in &unscaled {
        let forward = c.name.starts_with("attention forward");
        assert_eq!(c.stats.passed, forward, "{c:#?}");
    }
    assert_eq!(unscaled.iter().filter(|c| c.stats.passed).count(), 2);
}

#[test]
fn heads_the_tiles_cannot_hold_are_refused_with_a_reason() {
    let gpu = gpu_or_skip!();
    for (c, nh) in [(40, 2), (256, 2)] {
        let d = shape(1, 8, c, nh);
        let why = coop_attention_unavailable(&gpu.ctx, &d).expect("refused");
        eprintln!("HS {}: {why}", c / nh);
        let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
        let buf = gpu.ctx.zeros("x", 3 * 8 * c as usize).unwrap();
        let err =
            bind_attention_forward_coop(&gpu.ctx, &mut reg, d, (&buf, &buf, &buf), (None, None));
        assert!(err.is_err(), "HS {} bound", c / nh);
    }
}

/// A model trained with its attention's backward on these kernels (and
/// everything else on f32, as on a device without the tensor-core matmul)
/// follows the f32 model's losses step by step — with dropout on the
/// weights, so the graph passes the masks through — and its step binds
/// the tensor-core forward and backward.
#[test]
fn a_model_trains_with_its_attention_on_tensor_cores() {
    let gpu = gpu_or_skip!();
    let cfg = ModelConfig {
        vocab_size: 65,
        block_size: 64,
        n_layer: 2,
        n_head: 2,
        d_model: 64,
    };
    let d = shape(4, 64, 64, 2);
    if !available(gpu, "tensor-core attention in training", &d) {
        return;
    }
    let tc = TrainConfig {
        batch_size: 4,
        seq_len: 64,
        steps: 100,
        warmup_steps: 0,
        dropout: 0.1,
        ..TrainConfig::default()
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let mut losses = [Vec::new(), Vec::new()];
    for (on, losses) in [false, true].into_iter().zip(&mut losses) {
        let (mut m, batch) = train(gpu, &mut reg, (cfg, tc), on, losses);
        let keys: Vec<_> = pollster::block_on(m.profile_train_step(ctx, &mut reg, &batch))
            .unwrap()
            .into_iter()
            .map(|t| t.key)
            .collect();
        // Its three kernels a layer, forward and backward; none on f32.
        let coop = keys
            .iter()
            .filter(|k| k.starts_with("attention_coop"))
            .count();
        assert_eq!(coop, if on { 3 * cfg.n_layer } else { 0 }, "{keys:?}");
        let fwd = keys
            .iter()
            .filter(|k| k.starts_with("attention_fwd"))
            .count();
        assert_eq!(fwd, if on { 0 } else { cfg.n_layer }, "{keys:?}");
    }
    eprintln!(
        "losses f32 {:?}\nlosses tensor-core attention {:?}",
        losses[0], losses[1]
    );
    for (i, (a, b)) in losses[0].iter().zip(&losses[1]).enumerate() {
        assert!(
            (a - b).abs() <= LOSS_TOLERANCE * a,
            "step {i}: {a} against {b}"
        );
    }
    assert_ne!(
        losses[0], losses[1],
        "the tensor-core attention changed nothing"
    );
}

/// A model whose heads the tiles cannot hold (HS 8), with the tensor-core
/// attention asked for, trains on the f32 attention: its losses are the
/// f32 model's bit for bit, wherever the test runs (on a device without
/// the kernels, for that reason instead, which it prints).
#[test]
fn a_head_the_tiles_cannot_hold_trains_on_the_f32_attention() {
    let gpu = gpu_or_skip!();
    let cfg = ModelConfig {
        vocab_size: 65,
        block_size: 16,
        n_layer: 1,
        n_head: 2,
        d_model: 16,
    };
    let why = coop_attention_unavailable(&gpu.ctx, &shape(4, 16, 16, 2));
    eprintln!("HS 8: {}", why.as_deref().expect("refused"));
    let tc = TrainConfig {
        batch_size: 4,
        seq_len: 16,
        steps: 100,
        warmup_steps: 0,
        dropout: 0.1,
        ..TrainConfig::default()
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut losses = [Vec::new(), Vec::new()];
    for (on, losses) in [false, true].into_iter().zip(&mut losses) {
        train(gpu, &mut reg, (cfg, tc), on, losses);
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&losses[0]), bits(&losses[1]), "{losses:?}");
}

/// A model of `cfg` (the same weights each time) trained `STEPS` steps on
/// batches of `tc`'s shape, the tensor-core attention asked for or not;
/// each step's loss into `losses`. Returns the model and its first batch.
fn train(
    gpu: &TestGpu,
    reg: &mut PipelineRegistry,
    (cfg, tc): (ModelConfig, TrainConfig),
    on: bool,
    losses: &mut Vec<f32>,
) -> (GpuModel, Batch) {
    let tokens: Vec<u32> = (0..20_000)
        .map(|i| ((i * 7 + i / 13) % 65) as u32)
        .collect();
    let mut sampler = BatchSampler::new(5);
    let batches: Vec<_> = (0..STEPS)
        .map(|_| sampler.next_batch(&tokens, tc.batch_size, tc.seq_len))
        .collect();
    let ctx = &gpu.ctx;
    let params = init_params(&cfg, 3);
    let mut m = GpuModel::new(ctx, cfg, &params, None, tc, OptState::default()).unwrap();
    let fast = FastPaths {
        coop_attention: on,
        ..Default::default()
    };
    m.set_fast_paths(ctx, reg, fast).unwrap();
    for b in &batches {
        m.train_step(ctx, reg, b).unwrap();
        losses.push(pollster::block_on(m.read_loss(ctx)).unwrap());
    }
    let first = batches.into_iter().next().expect("STEPS > 0");
    (m, first)
}

/// Steps of each model the tests above train.
const STEPS: usize = 12;
/// Its losses' agreement: a weight rounded to f16 moves an output by at
/// most 2⁻¹¹ of the value it weights, far under this relative 0.2 %.
const LOSS_TOLERANCE: f32 = 2e-3;
