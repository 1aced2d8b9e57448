//! The attention kernels against the CPU reference of `tinygpt_core`, run in
//! f64 so that the comparison measures only the kernels' f32 error: forward
//! output and log-sum-exp, backward gradients, causality, and the KV-cache
//! decode step against the full forward.

use std::sync::MutexGuard;
use tinygpt_core::model::layers::{
    attention_backward, attention_backward_masked, attention_forward, attention_forward_masked,
};
use tinygpt_core::model::{Dropout, Site};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::ahead::Ahead;
use tinygpt_gpu::ops::attention::{
    bind_attention_backward, bind_attention_decode, bind_attention_decode_ahead,
    bind_attention_forward, decode_position_buffer, set_decode_position, AttentionBackwardBuffers,
    AttentionDesc, DecodeDesc, KvCache,
};
use tinygpt_gpu::ops::dropout::DropoutDesc;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::PipelineRegistry;

const fn shape(b: u32, t: u32, c: u32, nh: u32) -> AttentionDesc {
    AttentionDesc {
        b,
        t,
        c,
        nh,
        layout: Layout::Gpu,
    }
}

/// `d` in each kernel layout (workgroup tiles, a row per invocation).
fn layouts(d: AttentionDesc) -> [AttentionDesc; 2] {
    [Layout::Gpu, Layout::Cpu].map(|layout| AttentionDesc { layout, ..d })
}

/// Odd T, HS not a multiple of 4, one and several row blocks, HS 64 and 128.
const SHAPES: &[AttentionDesc] = &[
    shape(2, 7, 12, 3),   // HS 4
    shape(1, 33, 16, 2),  // HS 8: two key tiles of 32
    shape(1, 64, 128, 2), // HS 64
    shape(2, 70, 10, 2),  // HS 5: two row blocks
    shape(1, 9, 256, 2),  // HS 128, the largest supported
    shape(1, 5, 7, 1),    // NH 1, HS 7
    shape(2, 37, 66, 1),  // HS 66: three head-dim chunks of 32, the last partial
];

/// The shared registry; a test that panicked while holding it (a failed
/// comparison) leaves it usable, so one failure does not fail every test.
fn registry(gpu: &TestGpu) -> MutexGuard<'_, PipelineRegistry> {
    gpu.registry
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn to_f64(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

fn to_f32(x: &[f64]) -> Vec<f32> {
    x.iter().map(|&v| v as f32).collect()
}

/// The CPU reference in f64: `(out (B,T,C), att (B,NH,T,T))`.
fn cpu_forward(d: AttentionDesc, qkv: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let (b, t, c, nh) = (d.b as usize, d.t as usize, d.c as usize, d.nh as usize);
    let mut out = vec![0.0; b * t * c];
    let mut att = vec![0.0; b * nh * t * t];
    attention_forward(&mut out, &mut att, &to_f64(qkv), b, t, c, nh);
    (out, att)
}

/// `lse[b,h,t] = log Σ_{s≤t} exp(q_t·k_s/√HS)` straight from the scores, in f64.
fn cpu_lse(d: AttentionDesc, qkv: &[f32]) -> Vec<f64> {
    let (t, c, nh) = (d.t as usize, d.c as usize, d.nh as usize);
    let hs = c / nh;
    let scale = 1.0 / (hs as f64).sqrt();
    let col = |bi: usize, ti: usize, part: usize, h: usize, i: usize| {
        qkv[(bi * t + ti) * 3 * c + part * c + h * hs + i] as f64
    };
    let mut lse = Vec::new();
    for bi in 0..d.b as usize {
        for h in 0..nh {
            for ti in 0..t {
                let scores: Vec<f64> = (0..=ti)
                    .map(|s| {
                        scale
                            * (0..hs)
                                .map(|i| col(bi, ti, 0, h, i) * col(bi, s, 1, h, i))
                                .sum::<f64>()
                    })
                    .collect();
                let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                lse.push(max + scores.iter().map(|x| (x - max).exp()).sum::<f64>().ln());
            }
        }
    }
    lse
}

/// Runs the GPU forward: `(out, lse)`.
fn gpu_forward(gpu: &TestGpu, d: AttentionDesc, qkv: &[f32]) -> (Vec<f32>, Vec<f32>) {
    gpu_forward_dropout(gpu, d, qkv, None)
}

/// The optimiser-state buffer whose first word, the step, the dropout
/// kernels read.
fn step_buffer(gpu: &TestGpu, step: u32) -> wgpu::Buffer {
    gpu.ctx
        .upload_bytes("opt_state", bytemuck::cast_slice(&[step, 0, 0, 0]))
        .unwrap()
}

fn gpu_forward_dropout(
    gpu: &TestGpu,
    d: AttentionDesc,
    qkv: &[f32],
    drop: Option<Dropout>,
) -> (Vec<f32>, Vec<f32>) {
    let ctx = &gpu.ctx;
    let mut reg = registry(gpu);
    let qkv_buf = ctx.upload("qkv", qkv).unwrap();
    let out = ctx.zeros("out", d.out_len() as usize).unwrap();
    let lse = ctx.zeros("lse", d.lse_len() as usize).unwrap();
    let state = drop.map(|dr| step_buffer(gpu, dr.step));
    let mask = drop
        .zip(state.as_ref())
        .map(|(dr, state)| (desc(dr, state), SITE));
    let k = bind_attention_forward(ctx, &mut reg, d, &qkv_buf, &out, &lse, mask).unwrap();
    submit(ctx, "attention_fwd", &[&k]);
    pollster::block_on(async {
        (
            ctx.read_f32(&out, d.out_len() as usize).await.unwrap(),
            ctx.read_f32(&lse, d.lse_len() as usize).await.unwrap(),
        )
    })
}

/// Runs the GPU forward then backward in one pass; `dqkv` starts as junk
/// so that any element the backward fails to overwrite shows.
fn gpu_backward(gpu: &TestGpu, d: AttentionDesc, qkv: &[f32], dout: &[f32]) -> Vec<f32> {
    gpu_backward_dropout(gpu, d, qkv, dout, None)
}

fn gpu_backward_dropout(
    gpu: &TestGpu,
    d: AttentionDesc,
    qkv: &[f32],
    dout: &[f32],
    drop: Option<Dropout>,
) -> Vec<f32> {
    let ctx = &gpu.ctx;
    let state = drop.map(|dr| step_buffer(gpu, dr.step));
    let mask = drop
        .zip(state.as_ref())
        .map(|(dr, state)| (desc(dr, state), SITE));
    let mut reg = registry(gpu);
    let qkv_buf = ctx.upload("qkv", qkv).unwrap();
    let dout_buf = ctx.upload("dout", dout).unwrap();
    let out = ctx.zeros("out", d.out_len() as usize).unwrap();
    let lse = ctx.zeros("lse", d.lse_len() as usize).unwrap();
    let dqkv = ctx
        .upload("dqkv", &vec![1e3; d.qkv_len() as usize])
        .unwrap();
    let fwd = bind_attention_forward(ctx, &mut reg, d, &qkv_buf, &out, &lse, mask).unwrap();
    let bufs = AttentionBackwardBuffers {
        qkv: &qkv_buf,
        out: &out,
        dout: &dout_buf,
        lse: &lse,
        dqkv: &dqkv,
    };
    let bwd = bind_attention_backward(ctx, &mut reg, d, bufs, mask).unwrap();
    submit(ctx, "attention_fwd_bwd", &[&fwd, &bwd[0], &bwd[1]]);
    pollster::block_on(ctx.read_f32(&dqkv, d.qkv_len() as usize)).unwrap()
}

fn check_forward(gpu: &TestGpu, d: AttentionDesc, qkv: &[f32], atol: f64, rtol: f64) {
    for d in layouts(d) {
        check_forward_in(gpu, d, qkv, atol, rtol);
    }
}

fn check_forward_in(gpu: &TestGpu, d: AttentionDesc, qkv: &[f32], atol: f64, rtol: f64) {
    let (out, lse) = gpu_forward(gpu, d, qkv);
    let (want, _) = cpu_forward(d, qkv);
    assert_close(&format!("out {d:?}"), &out, &to_f32(&want), atol, rtol);
    let want = cpu_lse(d, qkv);
    assert_close(&format!("lse {d:?}"), &lse, &to_f32(&want), atol, rtol);
}

fn check_backward(gpu: &TestGpu, d: AttentionDesc, qkv: &[f32], dout: &[f32], rtol: f64) {
    for d in layouts(d) {
        check_backward_in(gpu, d, qkv, dout, rtol);
    }
}

fn check_backward_in(gpu: &TestGpu, d: AttentionDesc, qkv: &[f32], dout: &[f32], rtol: f64) {
    let got = gpu_backward(gpu, d, qkv, dout);
    let (_, att) = cpu_forward(d, qkv);
    let mut want = vec![0.0; d.qkv_len() as usize];
    let (b, t, c, nh) = (d.b as usize, d.t as usize, d.c as usize, d.nh as usize);
    attention_backward(&mut want, &to_f64(dout), &to_f64(qkv), &att, b, t, c, nh);
    // Sums of up to T terms of magnitude ≤ ~1: the error grows ~√T·ε.
    let atol = 4e-6 * (d.t as f64).sqrt();
    assert_close(&format!("dqkv {d:?}"), &got, &to_f32(&want), atol, rtol);
}

/// Feeds the tokens of `qkv (1,T,3C)` one at a time through the decode
/// kernel (which appends each to the cache) and compares each position's
/// output with the GPU and CPU full forwards.
/// Every variant of the decode kernel: 256 invocations per head, the same
/// with workgroups loading ahead (which must give the same bits), and one
/// invocation per head.
fn check_decode(gpu: &TestGpu, desc: DecodeDesc, qkv: &[f32], tol: f64) {
    // Four ranges of a buffer of 90,000 words: five workgroups ahead.
    let words = gpu.ctx.zeros("ahead_src", 90_000).unwrap();
    let ahead = Ahead {
        buffer: &words,
        ranges: [(0, 40_000), (40_001, 7), (50_000, 0), (50_003, 39_997)],
    };
    assert_eq!(ahead.groups(), 5);
    let plain = check_decode_in(gpu, (false, None), desc, qkv, tol);
    let loading = check_decode_in(gpu, (false, Some(ahead)), desc, qkv, tol);
    assert_eq!(
        to_bits(&loading),
        to_bits(&plain),
        "loads ahead changed the bits"
    );
    check_decode_in(gpu, (true, None), desc, qkv, tol);
}

fn to_bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// The outputs of `check_decode`'s decode steps in one variant: serial or
/// not, loading ahead or not.
fn check_decode_in(
    gpu: &TestGpu,
    (serial, ahead): (bool, Option<Ahead<'_>>),
    desc: DecodeDesc,
    qkv: &[f32],
    tol: f64,
) -> Vec<f32> {
    let c = desc.c as usize;
    let full = shape(1, (qkv.len() / (3 * c)) as u32, desc.c, desc.nh);
    let (forward, _) = gpu_forward(gpu, full, qkv);
    let (cpu, _) = cpu_forward(full, qkv);

    let ctx = &gpu.ctx;
    let mut reg = registry(gpu);
    let position = decode_position_buffer(ctx);
    let row = ctx.zeros("qkv_row", 3 * c).unwrap();
    let out = ctx.zeros("out_row", c).unwrap();
    let cache = KvCache::new(ctx, desc).unwrap();
    let io = (&position, &row, &cache, &out);
    let decode =
        bind_attention_decode_ahead(ctx, &mut reg, (serial, None), desc, io, ahead).unwrap();
    let mut got = Vec::new();
    for (p, token) in qkv.chunks_exact(3 * c).enumerate() {
        ctx.queue.write_buffer(&row, 0, bytemuck::cast_slice(token));
        set_decode_position(ctx, &position, desc, p as u32).unwrap();
        submit(ctx, "decode_step", &[&decode]);
        got.extend(pollster::block_on(ctx.read_f32(&out, c)).unwrap());
    }
    let ahead = ahead.is_some();
    let what = format!("decode {desc:?} T {} serial {serial} ahead {ahead}", full.t);
    assert_close(&format!("{what} vs GPU forward"), &got, &forward, tol, tol);
    assert_close(&format!("{what} vs CPU"), &got, &to_f32(&cpu), tol, tol);
    got
}

#[test]
fn forward_out_and_lse_match_cpu_reference() {
    let gpu = gpu_or_skip!();
    for (i, &d) in SHAPES.iter().enumerate() {
        let qkv = random(&mut Rng::new(100 + i as u64), d.qkv_len());
        // out is a convex combination of values in [-1, 1], summed in f32.
        check_forward(gpu, d, &qkv, 2e-6, 1e-5);
    }
}

#[test]
fn backward_matches_cpu_reference() {
    let gpu = gpu_or_skip!();
    for (i, &d) in SHAPES.iter().enumerate() {
        let mut rng = Rng::new(300 + i as u64);
        let qkv = random(&mut rng, d.qkv_len());
        let dout = random(&mut rng, d.out_len());
        check_backward(gpu, d, &qkv, &dout, 1e-5);
    }
}

/// The layer whose attention-weight mask the dropout tests draw.
const SITE: Site = Site::Attention(1);

fn desc(d: Dropout, state: &wgpu::Buffer) -> DropoutDesc<'_> {
    DropoutDesc {
        p: d.p,
        seed: d.seed,
        state,
    }
}

/// Dropout on the attention weights: the forward output and every gradient
/// match the reference with the same mask (seed, step, site), over every
/// tiling case; another step draws another mask.
#[test]
fn dropout_on_the_weights_matches_the_masked_reference() {
    let gpu = gpu_or_skip!();
    for (i, &d) in SHAPES.iter().enumerate() {
        let mut rng = Rng::new(700 + i as u64);
        let qkv = random(&mut rng, d.qkv_len());
        let dout = random(&mut rng, d.out_len());
        let (b, t, c, nh) = (d.b as usize, d.t as usize, d.c as usize, d.nh as usize);
        let drop = Dropout {
            p: 0.3,
            seed: 0x1234_5678_9abc,
            step: 11 + i as u32,
        };
        let mask = Some(drop.mask(SITE));
        let mut want = vec![0.0; b * t * c];
        let mut att = vec![0.0; b * nh * t * t];
        attention_forward_masked(&mut want, &mut att, &to_f64(&qkv), b, t, c, nh, mask);
        let atol = 4e-6 * (d.t as f64).sqrt();
        let mut want_dqkv = vec![0.0; d.qkv_len() as usize];
        let (dy, x) = (to_f64(&dout), to_f64(&qkv));
        attention_backward_masked(&mut want_dqkv, &dy, &x, &att, b, t, c, nh, mask);
        for d in layouts(d) {
            let (got, _) = gpu_forward_dropout(gpu, d, &qkv, Some(drop));
            assert_close(&format!("out {d:?}"), &got, &to_f32(&want), atol, 1e-5);
            let (plain, _) = gpu_forward(gpu, d, &qkv);
            assert_ne!(got, plain, "{d:?}: the mask changed nothing");
            let got = gpu_backward_dropout(gpu, d, &qkv, &dout, Some(drop));
            assert_close(
                &format!("dqkv {d:?}"),
                &got,
                &to_f32(&want_dqkv),
                atol,
                1e-5,
            );
        }
    }
}

#[test]
fn decode_with_kv_cache_matches_full_forward() {
    let gpu = gpu_or_skip!();
    // (T, C, NH, T_max): HS 4; HS 65 (dims past 64); HS 128; positions past
    // one chunk of 256; HS 64 past it, where a group of values (16 at HS 64)
    // has more than the eight rows it loads before the scores.
    let cases = [
        (9, 12, 3, 16),
        (70, 130, 2, 70),
        (5, 256, 2, 8),
        (260, 8, 1, 264),
        (300, 128, 2, 300),
    ];
    for (i, &(t, c, nh, t_max)) in cases.iter().enumerate() {
        let qkv = random(&mut Rng::new(500 + i as u64), shape(1, t, c, nh).qkv_len());
        check_decode(
            gpu,
            DecodeDesc {
                c,
                nh,
                t_max,
                batch: 1,
            },
            &qkv,
            1e-5,
        );
    }
}

/// Q and K scaled by 12 give scores in the hundreds and near one-hot rows:
/// `exp` overflows f32 past 88, so this fails unless every kernel subtracts
/// the true running max.
#[test]
fn sharp_softmax_stays_finite_and_accurate() {
    let gpu = gpu_or_skip!();
    let d = shape(2, 70, 16, 2);
    let mut rng = Rng::new(600);
    let mut qkv = random(&mut rng, d.qkv_len());
    for row in qkv.chunks_exact_mut(3 * d.c as usize) {
        row[..2 * d.c as usize].iter_mut().for_each(|x| *x *= 12.0);
    }
    let dout = random(&mut rng, d.out_len());
    // A score of size S carries an f32 error ~S·ε, which moves the weights
    // by as much in relative terms.
    check_forward(gpu, d, &qkv, 2e-5, 2e-5);
    check_backward(gpu, d, &qkv, &dout, 1e-4);
    let seq = &qkv[..d.qkv_len() as usize / 2];
    check_decode(
        gpu,
        DecodeDesc {
            c: d.c,
            nh: d.nh,
            t_max: d.t,
            batch: 1,
        },
        seq,
        2e-5,
    );
}

#[test]
fn future_tokens_do_not_change_earlier_rows() {
    let gpu = gpu_or_skip!();
    let d = shape(2, 70, 10, 2);
    let (t, c) = (d.t as usize, d.c as usize);
    let mut rng = Rng::new(400);
    let qkv = random(&mut rng, d.qkv_len());
    let dout = random(&mut rng, d.out_len());
    // Replace q, k and v of token `future` of the second sequence.
    let future = 66;
    let mut changed = qkv.clone();
    for x in &mut changed[(t + future) * 3 * c..][..3 * c] {
        *x = rng.uniform(-2.0, 2.0);
    }
    let (out_a, _) = gpu_forward(gpu, d, &qkv);
    let (out_b, _) = gpu_forward(gpu, d, &changed);
    let (dq_a, dq_b) = (
        gpu_backward(gpu, d, &qkv, &dout),
        gpu_backward(gpu, d, &changed, &dout),
    );
    let earlier = (t + future) * c;
    assert_eq!(
        out_a[..earlier],
        out_b[..earlier],
        "outputs before the change"
    );
    assert_ne!(
        out_a[earlier..][..c],
        out_b[earlier..][..c],
        "the changed row itself"
    );
    // dq_t depends only on rows ≤ t; dk, dv of earlier rows do see later queries.
    for row in 0..t + future {
        let q = &dq_a[row * 3 * c..][..c];
        assert_eq!(q, &dq_b[row * 3 * c..][..c], "dq of row {row}");
    }
}

#[test]
fn bad_shapes_are_errors_not_panics() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = registry(gpu);
    let big = ctx.zeros("big", 1 << 16).unwrap();
    let small = ctx.zeros("small", 4).unwrap();
    let fwd =
        |reg: &mut _, d, qkv| bind_attention_forward(ctx, reg, d, qkv, &big, &big, None).is_err();
    assert!(
        !fwd(&mut reg, shape(2, 7, 12, 3), &big),
        "a valid shape binds"
    );
    assert!(
        fwd(&mut reg, shape(2, 7, 12, 5), &big),
        "C not a multiple of NH"
    );
    assert!(fwd(&mut reg, shape(1, 2, 129, 1), &big), "HS over 128");
    assert!(fwd(&mut reg, shape(0, 7, 12, 3), &big), "empty batch");
    assert!(fwd(&mut reg, shape(2, 7, 12, 3), &small), "qkv too small");

    let desc = DecodeDesc {
        c: 12,
        nh: 3,
        t_max: 4,
        batch: 1,
    };
    let position = decode_position_buffer(ctx);
    let cache = KvCache::new(ctx, desc).unwrap();
    let short = KvCache {
        k: ctx.zeros("k", 8).unwrap(),
        v: ctx.zeros("v", 8).unwrap(),
    };
    let out = ctx.zeros("out", 12).unwrap();
    let mut bind = |cache: &KvCache, out: &wgpu::Buffer| {
        bind_attention_decode(
            ctx,
            &mut reg,
            (false, None),
            desc,
            &position,
            &big,
            cache,
            out,
        )
    };
    assert!(bind(&cache, &out).is_ok());
    assert!(bind(&short, &out).is_err());
    assert!(bind(&cache, &small).is_err());
    let io = (&position, &big, &cache, &out);
    let words = (big.size() / 4) as u32;
    for (last, ok) in [(words, true), (words + 1, false)] {
        let ahead = Ahead {
            buffer: &big,
            ranges: [(0, 8), (1, last - 1), (0, 0), (0, 0)],
        };
        let k = bind_attention_decode_ahead(ctx, &mut reg, (false, None), desc, io, Some(ahead));
        assert_eq!(k.is_ok(), ok, "loads ahead to word {last} of {words}");
    }
    assert!(set_decode_position(ctx, &position, desc, 3).is_ok());
    assert!(
        set_decode_position(ctx, &position, desc, 4).is_err(),
        "position past T_max"
    );
}
