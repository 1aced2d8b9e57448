//! The f32 tile kernels' GELU epilogues. Forward (`bind_matmul_tiled_gelu`,
//! the training graph's fc linear off tensor cores): per kernel (small,
//! 64×64, 128×128, the cell kernel of CPU devices), C is the plain
//! kernel's bit for bit and the GELU written beside it is the GELU
//! kernel's of that C bit for bit, in every layout on odd shapes, with
//! bias and operands at offsets; what each layout binds for which shape;
//! an aliased output is refused. Backward (`bind_matmul_tiled_gelu_grad`,
//! the fc projection's dX product): C is the plain kernel's product run
//! through the GELU backward kernel, bit for bit, per kernel and layout;
//! a bias, accumulation or aliased GELU input is refused.

use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, Layout};
use tinygpt_gpu::ops::gelu::{bind_gelu_backward, bind_gelu_forward};
use tinygpt_gpu::ops::matmul::{
    bind_matmul_tiled, bind_matmul_tiled_gelu, bind_matmul_tiled_gelu_grad, MatmulDesc, TileKernel,
    MATMUL_F32_CELLS_GELU,
};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{every_layout, random, TestGpu};

/// Around the small kernel's 32×32 tiles and K step, the 64×64 kernel's
/// and the 128×128 kernel's.
const SHAPES: [(u32, u32, u32); 5] = [
    (1, 3, 5),
    (33, 17, 31),
    (64, 64, 64),
    (130, 9, 129),
    (7, 200, 3),
];

/// Bits of `got` that differ from `want`.
fn differ(got: &[f32], want: &[f32]) -> usize {
    got.iter()
        .zip(want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count()
}

/// `desc` on `kernel` with the epilogue, and on the plain kernel followed
/// by the GELU kernel; compares C and GELU(C) bit for bit.
fn check(gpu: &TestGpu, kernel: TileKernel, desc: MatmulDesc, seed: u64) {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let pad = |v: &[f32]| [&[3.0; 5][..], v].concat();
    let up = |v: &[f32]| ctx.upload("operand", &pad(v)).unwrap();
    let (a, b, bias) = (
        up(&random(&mut rng, desc.m * desc.k)),
        up(&random(&mut rng, desc.k * desc.n)),
        up(&random(&mut rng, desc.n)),
    );
    let mn = (desc.m * desc.n) as usize;
    let zeros = || ctx.zeros("out", 5 + mn).unwrap();
    let (c_fused, g_fused, c_plain, g_plain) = (zeros(), zeros(), zeros(), zeros());
    let at = |buf| View::at(buf, 5);
    let ops = (at(&a), at(&b), desc.bias.then(|| at(&bias)));
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let fused =
        bind_matmul_tiled_gelu(ctx, &mut reg, kernel, desc, ops, at(&c_fused), at(&g_fused));
    let fused = fused.unwrap();
    assert_eq!(fused.key, kernel.source_gelu().key);
    let plain = bind_matmul_tiled(
        ctx,
        &mut reg,
        kernel,
        desc,
        ops.0,
        ops.1,
        ops.2,
        at(&c_plain),
    );
    let gelu = bind_gelu_forward(ctx, &mut reg, mn as u32, at(&c_plain), at(&g_plain));
    let ks = [fused, plain.unwrap(), gelu.unwrap()];
    submit(ctx, "matmul_gelu", &ks.iter().collect::<Vec<_>>());
    let read = |buf| pollster::block_on(ctx.read_f32(buf, 5 + mn)).unwrap();
    let (cf, gf, cp, gp) = (
        read(&c_fused),
        read(&g_fused),
        read(&c_plain),
        read(&g_plain),
    );
    assert_eq!(
        &gf[..5],
        &[0.0; 5],
        "nothing before GELU's offset is written"
    );
    let what = format!("{kernel:?} {desc:?}");
    assert_eq!(
        differ(&cf, &cp),
        0,
        "{what}: C differs from the plain kernel's"
    );
    assert_eq!(
        differ(&gf, &gp),
        0,
        "{what}: GELU(C) differs from the GELU kernel's"
    );
    assert!(
        gf[5..].iter().any(|v| *v != 0.0),
        "{what}: the GELU was written"
    );
}

const KERNELS: [TileKernel; 4] = [
    TileKernel::Small,
    TileKernel::General,
    TileKernel::Large,
    TileKernel::Cells,
];

#[test]
fn each_tile_kernel_writes_c_and_the_gelu_kernels_bits_of_it() {
    let gpu = gpu_or_skip!();
    for kernel in KERNELS {
        for (mut desc, seed) in every_layout(&SHAPES, 40) {
            desc.bias = seed % 2 == 0;
            check(gpu, kernel, desc, seed);
        }
    }
}

#[test]
fn each_layout_binds_its_kernel_or_nothing_for_one_row() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let buf = ctx.zeros("operands", 64 * 64).unwrap();
    let out = ctx.zeros("out", 64 * 64).unwrap();
    let gelu = ctx.zeros("gelu", 64 * 64).unwrap();
    let v = |b| View::at(b, 0);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut bind = |layout: Layout, m| {
        let desc = MatmulDesc::linear(m, 8, 16);
        let ops = (v(&buf), v(&buf), Some(v(&buf)));
        layout
            .bind_gelu(ctx, &mut reg, desc, ops, v(&out), v(&gelu))
            .unwrap()
    };
    let cells = bind(Layout::Cpu, 32).expect("bound");
    assert_eq!(cells.key, MATMUL_F32_CELLS_GELU.key);
    let tiles = bind(Layout::Gpu, 32).expect("bound");
    let want = MatmulDesc::linear(32, 8, 16)
        .tile_kernel()
        .source_gelu()
        .key;
    assert_eq!(tiles.key, want);
    // One row is the GEMV's: the graph runs the linear and the GELU.
    assert!(bind(Layout::Gpu, 1).is_none());
}

#[test]
fn a_gelu_output_aliasing_an_operand_is_refused() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let buf = ctx.zeros("operands", 64).unwrap();
    let out = ctx.zeros("out", 64).unwrap();
    let desc = MatmulDesc {
        bias: false,
        ..MatmulDesc::linear(4, 4, 4)
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut bind = |gelu| {
        let ops = (View::at(&buf, 0), View::at(&buf, 16), None);
        bind_matmul_tiled_gelu(
            ctx,
            &mut reg,
            TileKernel::General,
            desc,
            ops,
            View::at(&out, 0),
            gelu,
        )
    };
    assert!(
        bind(View::at(&out, 32)).is_err(),
        "GELU written over C's buffer"
    );
    let e = bind(View::at(&buf, 32))
        .err()
        .expect("GELU written over the operands' buffer");
    assert!(e.to_string().contains("gelu"), "{e}");
    let fresh = ctx.zeros("gelu", 64).unwrap();
    assert!(
        bind(View::at(&fresh, 0)).is_ok(),
        "a buffer of its own is bound"
    );
}

/// `desc` on `kernel` with the GELU-backward epilogue, and on the plain
/// kernel followed by the GELU backward kernel; compares C bit for bit.
fn check_grad(gpu: &TestGpu, kernel: TileKernel, desc: MatmulDesc, seed: u64) {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let pad = |v: &[f32]| [&[3.0; 5][..], v].concat();
    let mn = (desc.m * desc.n) as usize;
    let up = |v: &[f32]| ctx.upload("operand", &pad(v)).unwrap();
    let (a, b) = (
        up(&random(&mut rng, desc.m * desc.k)),
        up(&random(&mut rng, desc.k * desc.n)),
    );
    // The GELU's input, over its curved part and both tails.
    let pre: Vec<f32> = random(&mut rng, desc.m * desc.n);
    let pre = up(&pre.iter().map(|v| 4.0 * v).collect::<Vec<_>>());
    let zeros = || ctx.zeros("out", 5 + mn).unwrap();
    let (fused, product, plain) = (zeros(), zeros(), zeros());
    let at = |buf| View::at(buf, 5);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ops = (at(&a), at(&b));
    let k = bind_matmul_tiled_gelu_grad(ctx, &mut reg, kernel, desc, ops, at(&pre), at(&fused));
    let k = k.unwrap();
    assert_eq!(k.key, kernel.source_gelu_grad().key);
    let (o0, o1) = ops;
    let p = bind_matmul_tiled(ctx, &mut reg, kernel, desc, o0, o1, None, at(&product));
    let g = bind_gelu_backward(
        ctx,
        &mut reg,
        mn as u32,
        false,
        at(&pre),
        at(&product),
        at(&plain),
    );
    let ks = [k, p.unwrap(), g.unwrap()];
    submit(ctx, "matmul_gelu_grad", &ks.iter().collect::<Vec<_>>());
    let read = |buf| pollster::block_on(ctx.read_f32(buf, 5 + mn)).unwrap();
    let (got, want) = (read(&fused), read(&plain));
    let what = format!("{kernel:?} {desc:?}");
    assert_eq!(&got[..5], &[0.0; 5], "{what}: nothing before C's offset");
    assert_eq!(
        differ(&got, &want),
        0,
        "{what}: not the GELU backward's bits"
    );
    assert!(got[5..].iter().any(|v| *v != 0.0), "{what}: C was written");
}

#[test]
fn each_tile_kernel_gives_the_gelu_backward_kernels_bits_of_its_product() {
    let gpu = gpu_or_skip!();
    for kernel in KERNELS {
        for (mut desc, seed) in every_layout(&SHAPES, 70) {
            (desc.bias, desc.accumulate) = (false, false);
            check_grad(gpu, kernel, desc, seed);
        }
    }
}

#[test]
fn the_gelu_backward_epilogue_refuses_a_bias_accumulation_and_aliasing() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let buf = ctx.zeros("operands", 64).unwrap();
    let out = ctx.zeros("out", 64).unwrap();
    let plain = MatmulDesc {
        m: 4,
        k: 4,
        n: 4,
        ..Default::default()
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut bind = |desc, pre| {
        let ops = (View::at(&buf, 0), View::at(&buf, 16));
        let c = View::at(&out, 0);
        bind_matmul_tiled_gelu_grad(ctx, &mut reg, TileKernel::General, desc, ops, pre, c)
    };
    let pre = View::at(&buf, 32);
    assert!(bind(plain, pre).is_ok(), "a plain product is bound");
    let bias = MatmulDesc {
        bias: true,
        ..plain
    };
    let e = bind(bias, pre).err().expect("a bias refused");
    assert!(e.to_string().contains("no bias"), "{e}");
    let acc = MatmulDesc {
        accumulate: true,
        ..plain
    };
    assert!(bind(acc, pre).is_err(), "accumulation refused");
    let e = bind(plain, View::at(&out, 32))
        .err()
        .expect("GELU input in C's buffer");
    assert!(e.to_string().contains("GELU input"), "{e}");
}
