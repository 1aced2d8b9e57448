//! The f32 GEMV (`M = 1`, B stored `(N, K)`: one decoded token through a
//! linear layer) against the matmul's CPU reference: odd K and N around the
//! kernel's 32 lanes and 8 columns, bias, accumulation, views at offsets.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::matmul::{bind_matmul, matmul_reference, MatmulDesc, GEMV_F32};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::testing::TestGpu;

/// Runs `desc` with every operand a view 3 floats into its buffer and C
/// starting from `c0`; returns `(got, want)` for C.
fn run(gpu: &TestGpu, desc: MatmulDesc, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let pad = |v: Vec<f32>| [vec![7.0; 3], v].concat();
    let a = random(&mut rng, desc.k);
    let w = random(&mut rng, desc.n * desc.k);
    let bias = random(&mut rng, desc.n);
    let c0 = random(&mut rng, desc.n);
    let a_buf = ctx.upload("a", &pad(a.clone())).unwrap();
    let w_buf = ctx.upload("w", &pad(w.clone())).unwrap();
    let bias_buf = ctx.upload("bias", &pad(bias.clone())).unwrap();
    let c_buf = ctx.upload("c", &pad(c0.clone())).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let k = bind_matmul(
        ctx,
        &mut reg,
        desc,
        View::at(&a_buf, 3),
        View::at(&w_buf, 3),
        desc.bias.then(|| View::at(&bias_buf, 3)),
        View::at(&c_buf, 3),
    )
    .unwrap();
    assert_eq!(k.key, GEMV_F32.key, "M = 1 with B transposed runs the GEMV");
    submit(ctx, "gemv", &[&k]);
    let got = pollster::block_on(ctx.read_f32(&c_buf, 3 + desc.n as usize)).unwrap();
    assert_eq!(&got[..3], &[7.0; 3], "nothing before C's offset is written");
    let mut want = matmul_reference(desc, &a, &w, desc.bias.then_some(&bias[..]));
    if desc.accumulate {
        want.iter_mut().zip(&c0).for_each(|(x, c)| *x += c);
    }
    (got[3..].to_vec(), want)
}

#[test]
fn gemv_matches_reference_on_odd_shapes() {
    let gpu = gpu_or_skip!();
    // (K, N): K below and past one round of 8 loads × 32 lanes, with and
    // without a remainder; N below and past 8 columns.
    let shapes = [(1, 1), (5, 3), (32, 8), (129, 17), (256, 9), (1000, 77)];
    for (i, &(k, n)) in shapes.iter().enumerate() {
        for (bias, accumulate) in [(false, false), (true, false), (true, true)] {
            let desc = MatmulDesc {
                bias,
                accumulate,
                ..MatmulDesc::linear(1, k, n)
            };
            let (got, want) = run(gpu, desc, 40 + i as u64);
            // f32 accumulation of K products of magnitude ≤ 1.
            let atol = 1e-5 * (k as f64).sqrt() * 4.0;
            assert_close(&format!("{desc:?}"), &got, &want, atol, 1e-5);
        }
    }
}
