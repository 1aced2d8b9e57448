//! The f32 tile kernels against the CPU reference, one test body run per
//! kernel: the small-output kernel (32×32 tiles, K summed by four groups
//! of threads), the cell kernel of CPU devices and the large-output kernel
//! (128×128 tiles), each in every layout on odd shapes around its tile and
//! K step, with bias, accumulation and operands at offsets, and each
//! against the 64×64 kernel (bit for bit where both sum K in the same
//! order: the large kernel); then which kernel `bind_matmul` and the `Cpu`
//! layout choose for which shape.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::matmul::{
    bind_matmul, bind_matmul_tiled, matmul_reference, MatmulDesc, TileKernel, MATMUL_F32,
    MATMUL_F32_128, MATMUL_F32_CELLS, MATMUL_F32_SMALL,
};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::testing::{every_layout, random};

/// Runs `desc` on `kernel` and the 64×64 kernel with every operand 5
/// floats into its buffer and C starting from random values; compares
/// `kernel` with the reference, and with the 64×64 kernel bit for bit when
/// `exact` (same summation order) or to rounding otherwise.
fn check(gpu: &TestGpu, kernel: TileKernel, exact: bool, desc: MatmulDesc, seed: u64) {
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
    let (tested, general) = (
        ctx.upload("c_tested", &pad(&c0)).unwrap(),
        ctx.upload("c_general", &pad(&c0)).unwrap(),
    );
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let (av, bv) = (View::at(&a_buf, 5), View::at(&b_buf, 5));
    let biasv = desc.bias.then(|| View::at(&bias_buf, 5));
    let bind = |reg: &mut _, kernel, c| {
        bind_matmul_tiled(ctx, reg, kernel, desc, av, bv, biasv, View::at(c, 5)).unwrap()
    };
    let k_tested = bind(&mut reg, kernel, &tested);
    let k_general = bind(&mut reg, TileKernel::General, &general);
    assert_eq!(k_tested.key, kernel.source().key);
    assert_eq!(k_general.key, MATMUL_F32.key);
    submit(ctx, "matmul_tiles", &[&k_tested, &k_general]);
    let len = 5 + (desc.m * desc.n) as usize;
    let got = pollster::block_on(ctx.read_f32(&tested, len)).unwrap();
    let other = pollster::block_on(ctx.read_f32(&general, len)).unwrap();
    assert_eq!(&got[..5], &[3.0; 5], "nothing before C's offset is written");
    let mut want = matmul_reference(desc, &a, &b, desc.bias.then_some(&bias[..]));
    if desc.accumulate {
        want.iter_mut().zip(&c0).for_each(|(x, c)| *x += c);
    }
    let atol = 1e-5 * (desc.k as f64).sqrt() * 4.0;
    assert_close(
        &format!("{kernel:?} {desc:?}"),
        &got[5..],
        &want,
        atol,
        1e-5,
    );
    if exact {
        assert!(
            got == other,
            "{kernel:?} {desc:?}: differs from the 64×64 kernel"
        );
    } else {
        let what = format!("{kernel:?} {desc:?} vs 64×64");
        assert_close(&what, &got[5..], &other[5..], atol, 1e-5);
    }
}

/// [`check`] on every `(M, K, N)` of `shapes` in all four layouts, with
/// bias and accumulation in turn.
fn tile_kernel_matches(kernel: TileKernel, exact: bool, shapes: &[(u32, u32, u32)], seed0: u64) {
    let gpu = gpu_or_skip!();
    for (desc, seed) in every_layout(shapes, seed0) {
        check(gpu, kernel, exact, desc, seed);
    }
}

/// Below, at and past one 32×32 tile, one 8-wide group step and one
/// 32-wide K step; several steps with a partial last one.
const SMALL_SHAPES: [(u32, u32, u32); 6] = [
    (1, 1, 1),
    (3, 5, 7),
    (32, 32, 32),
    (33, 17, 31),
    (31, 65, 33),
    (70, 200, 45),
];
/// Below, at and past one 128×128 tile and one 8-wide K step.
const LARGE_SHAPES: [(u32, u32, u32); 5] = [
    (1, 1, 1),
    (3, 5, 7),
    (128, 8, 128),
    (129, 17, 130),
    (200, 33, 257),
];

#[test]
fn small_tiles_match_the_reference_in_every_layout() {
    tile_kernel_matches(TileKernel::Small, false, &SMALL_SHAPES, 100);
}

#[test]
fn cells_match_the_reference_in_every_layout() {
    tile_kernel_matches(TileKernel::Cells, false, &SMALL_SHAPES, 100);
}

#[test]
fn large_tiles_match_the_reference_in_every_layout_and_the_64x64_kernel_bit_for_bit() {
    tile_kernel_matches(TileKernel::Large, true, &LARGE_SHAPES, 0);
}

#[test]
fn bind_matmul_uses_small_tiles_only_for_small_outputs() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // The tiny preset's attention projection (2 × 32 tiles of 64) and its
    // QKV projection (6 × 32).
    let small = MatmulDesc::linear(2048, 16, 128);
    let general = MatmulDesc::linear(2048, 16, 384);
    assert_eq!(small.tile_kernel(), TileKernel::Small);
    assert_eq!(general.tile_kernel(), TileKernel::General);
    let a = ctx.zeros("a", 2048 * 16).unwrap();
    let w = ctx.zeros("w", 384 * 16).unwrap();
    let bias = ctx.zeros("bias", 384).unwrap();
    let c = ctx.zeros("c", 2048 * 384).unwrap();
    for (desc, key) in [(small, MATMUL_F32_SMALL.key), (general, MATMUL_F32.key)] {
        let k = bind_matmul(ctx, &mut reg, desc, &a, &w, Some((&bias).into()), &c).unwrap();
        assert_eq!(k.key, key, "{desc:?}");
    }
}

#[test]
fn the_cpu_layout_runs_cells_for_every_shape_and_never_splits() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // A GEMV shape, a small and a general output, and a weight gradient
    // the GPU layout splits along K.
    let dw = MatmulDesc {
        m: 128,
        k: 2048,
        n: 128,
        trans_a: true,
        ..Default::default()
    };
    assert!(dw.split_k_slices() >= 2);
    let shapes = [
        MatmulDesc::linear(1, 16, 384),
        MatmulDesc::linear(2048, 16, 128),
        MatmulDesc::linear(2048, 16, 384),
        dw,
    ];
    let a = ctx.zeros("a", 2048 * 128).unwrap();
    let w = ctx.zeros("w", 2048 * 384).unwrap();
    let bias = ctx.zeros("bias", 384).unwrap();
    let c = ctx.zeros("c", 2048 * 384).unwrap();
    let scratch = ctx.zeros("scratch", 8 * 128 * 128).unwrap();
    for desc in shapes {
        let bias = desc.bias.then(|| (&bias).into());
        let k = Layout::Cpu
            .bind(ctx, &mut reg, desc, &a, &w, bias, &c)
            .unwrap();
        assert_eq!(k.key, MATMUL_F32_CELLS.key, "{desc:?}");
        let op = Layout::Cpu
            .bind_split_k(ctx, &mut reg, desc, &a, &w, bias, &c, Some(&scratch))
            .unwrap();
        let keys: Vec<_> = op.kernels.iter().map(|k| k.key).collect();
        assert_eq!(keys, [MATMUL_F32_CELLS.key], "{desc:?}");
        let gpu_op = Layout::Gpu
            .bind_split_k(ctx, &mut reg, desc, &a, &w, bias, &c, Some(&scratch))
            .unwrap();
        assert!(gpu_op.kernels.iter().all(|k| k.key != MATMUL_F32_CELLS.key));
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
