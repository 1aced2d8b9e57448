//! The 128×128-tile f32 matmul (large outputs) against the CPU reference in
//! every layout on odd shapes around its tile and 8-wide K step, with bias,
//! accumulation and operands at offsets; bit-identical to the 64×64 kernel
//! (both sum each output over K in the same order); and chosen by
//! `bind_matmul` only for outputs of 256 tiles or more.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::matmul::{
    bind_matmul, bind_matmul_tiled, matmul_reference, MatmulDesc, TileKernel, MATMUL_F32,
    MATMUL_F32_128,
};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::testing::TestGpu;

/// Runs `desc` on both tile kernels with every operand 5 floats into its
/// buffer and C starting from random values; compares the large kernel with
/// the reference and requires the two kernels to agree bit for bit.
fn check(gpu: &TestGpu, desc: MatmulDesc, seed: u64) {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let pad = |v: &[f32]| [&[3.0; 5][..], v].concat();
    let a = random(&mut rng, desc.m * desc.k);
    let b = random(&mut rng, desc.k * desc.n);
    let bias = random(&mut rng, desc.n);
    let c0 = random(&mut rng, desc.m * desc.n);
    let a_buf = ctx.upload("a", &pad(&a)).unwrap();
    let b_buf = ctx.upload("b", &pad(&b)).unwrap();
    let bias_buf = ctx.upload("bias", &pad(&bias)).unwrap();
    let (large, general) = (
        ctx.upload("c_large", &pad(&c0)).unwrap(),
        ctx.upload("c_general", &pad(&c0)).unwrap(),
    );
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let (av, bv) = (View::at(&a_buf, 5), View::at(&b_buf, 5));
    let biasv = desc.bias.then(|| View::at(&bias_buf, 5));
    let bind = |reg: &mut _, kernel, c| {
        bind_matmul_tiled(ctx, reg, kernel, desc, av, bv, biasv, View::at(c, 5)).unwrap()
    };
    let k_large = bind(&mut reg, TileKernel::Large, &large);
    let k_general = bind(&mut reg, TileKernel::General, &general);
    assert_eq!(k_large.key, MATMUL_F32_128.key);
    assert_eq!(k_general.key, MATMUL_F32.key);
    submit(ctx, "matmul_large", &[&k_large, &k_general]);
    let len = 5 + (desc.m * desc.n) as usize;
    let got = pollster::block_on(ctx.read_f32(&large, len)).unwrap();
    let other = pollster::block_on(ctx.read_f32(&general, len)).unwrap();
    assert_eq!(&got[..5], &[3.0; 5], "nothing before C's offset is written");
    let mut want = matmul_reference(desc, &a, &b, desc.bias.then_some(&bias[..]));
    if desc.accumulate {
        want.iter_mut().zip(&c0).for_each(|(x, c)| *x += c);
    }
    let atol = 1e-5 * (desc.k as f64).sqrt() * 4.0;
    assert_close(&format!("{desc:?}"), &got[5..], &want, atol, 1e-5);
    assert!(
        got == other,
        "{desc:?}: the 128×128 and 64×64 kernels differ"
    );
}

#[test]
fn large_tiles_match_the_reference_in_every_layout() {
    let gpu = gpu_or_skip!();
    // (M, K, N): below, at and past one tile and one 8-wide K step.
    let shapes = [
        (1, 1, 1),
        (3, 5, 7),
        (128, 8, 128),
        (129, 17, 130),
        (200, 33, 257),
    ];
    let mut seed = 0;
    for &(m, k, n) in &shapes {
        for (trans_a, trans_b) in [(false, false), (false, true), (true, false), (true, true)] {
            seed += 1;
            let desc = MatmulDesc {
                m,
                k,
                n,
                trans_a,
                trans_b,
                bias: seed % 2 == 0,
                accumulate: seed % 3 == 0,
            };
            check(gpu, desc, seed);
        }
    }
}

#[test]
fn bind_matmul_uses_large_tiles_only_for_large_outputs() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let big = MatmulDesc::linear(2048, 16, 2048);
    let small = MatmulDesc::linear(2048, 16, 1920);
    assert!(big.uses_large_tiles(), "16 × 16 tiles of 128");
    assert!(!small.uses_large_tiles(), "15 × 16 tiles of 128");
    let a = ctx.zeros("a", 2048 * 16).unwrap();
    let w = ctx.zeros("w", 2048 * 16).unwrap();
    let bias = ctx.zeros("bias", 2048).unwrap();
    let c = ctx.zeros("c", 2048 * 2048).unwrap();
    for (desc, key) in [(big, MATMUL_F32_128.key), (small, MATMUL_F32.key)] {
        let k = bind_matmul(ctx, &mut reg, desc, &a, &w, Some((&bias).into()), &c).unwrap();
        assert_eq!(k.key, key, "{desc:?}");
    }
}
