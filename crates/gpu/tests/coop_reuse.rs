//! A tensor-core weight gradient `dW = dYᵀ·X` reading the dY its dX
//! product staged and the X its forward product staged
//! (`ops/matmul/coop_stage.rs`'s `Reuse`) gives the bits of the same
//! product staging its own operands — split along K and not, with the
//! gradient scaled — and stages only what does not fit (a dW whose rows are
//! not a whole number of 128-row tiles stages its dYᵀ again). Native
//! devices with cooperative matrices; elsewhere each test says it did not
//! run.

use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::matmul::coop::{
    bind_matmul_coop_split_k, bind_matmul_coop_staging, coop_unavailable, CoopOptions,
};
use tinygpt_gpu::ops::matmul::coop_stage::{Reuse, StagedRows};
use tinygpt_gpu::ops::matmul::MatmulDesc;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{did_not_run, random, TestGpu};

fn v(b: &wgpu::Buffer) -> View<'_> {
    View::at(b, 0)
}

fn unavailable(gpu: &TestGpu, test: &str) -> bool {
    match coop_unavailable(&gpu.ctx) {
        Some(why) => {
            did_not_run(test, why);
            true
        }
        None => false,
    }
}

/// The gradient's scale, as the training graph's for N rows.
const SCALE: f32 = 512.0;

/// What the forward and dX products of a linear `W (d_out, d_in)` over `n`
/// rows staged: `(X's rows, dY's rows)`, and their dispatches.
fn stage_both(
    gpu: &TestGpu,
    (n, d_in, d_out): (u32, u32, u32),
    [x, dy, w, y, dx]: [View<'_>; 5],
) -> (StagedRows, StagedRows, Vec<BoundKernel>) {
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let fwd = MatmulDesc {
        m: n,
        k: d_in,
        n: d_out,
        trans_b: true,
        ..Default::default()
    };
    let f = bind_matmul_coop_staging(ctx, &mut reg, fwd, (x, CoopOptions::default()), w, None, y);
    let back = MatmulDesc {
        m: n,
        k: d_out,
        n: d_in,
        ..Default::default()
    };
    let opts = CoopOptions::scaled(SCALE);
    let d = bind_matmul_coop_staging(ctx, &mut reg, back, (dy, opts), w, None, dx);
    let (f, d) = (f.unwrap(), d.unwrap());
    let [x_rows, _] = f.staged;
    let [dy_rows, _] = d.staged;
    let kernels = f.kernels.into_iter().chain(d.kernels).collect();
    (
        x_rows.expect("X staged"),
        dy_rows.expect("dY staged"),
        kernels,
    )
}

/// `dW (d_out, d_in) = dYᵀ·X` into `dw`, through a scratch when `split`.
fn weight_grad(
    gpu: &TestGpu,
    (n, d_in, d_out, split): (u32, u32, u32, bool),
    [dy, x, dw]: [View<'_>; 3],
    reuse: Reuse<'_>,
) -> Vec<BoundKernel> {
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let desc = MatmulDesc {
        m: d_out,
        k: n,
        n: d_in,
        trans_a: true,
        ..Default::default()
    };
    let scratch = split.then(|| ctx.zeros("scratch", 64 * (d_out * d_in) as usize).unwrap());
    let a = (dy, CoopOptions::scaled(SCALE));
    let parts = (scratch.as_ref(), reuse);
    let op = bind_matmul_coop_split_k(ctx, &mut reg, desc, a, x, None, dw, parts).unwrap();
    op.kernels
}

/// Both weight gradients of one shape: the one staging its own operands
/// and the one reusing; returns their outputs and dispatch counts.
fn both(gpu: &TestGpu, shape: (u32, u32, u32), split: bool) -> ([Vec<f32>; 2], [usize; 2]) {
    let (n, d_in, d_out) = shape;
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(u64::from(n + d_in + d_out));
    let mut up = |len: u32| ctx.upload("operand", &random(&mut rng, len)).unwrap();
    let (x, dy, w) = (up(n * d_in), up(n * d_out), up(d_out * d_in));
    let zeros = |len: u32| ctx.zeros("out", len as usize).unwrap();
    let (y, dx, dw0, dw1) = (
        zeros(n * d_out),
        zeros(n * d_in),
        zeros(d_out * d_in),
        zeros(d_out * d_in),
    );
    let (x_rows, dy_rows, mut ks) = stage_both(gpu, shape, [v(&x), v(&dy), v(&w), v(&y), v(&dx)]);
    let dims = (n, d_in, d_out, split);
    let own = weight_grad(gpu, dims, [v(&dy), v(&x), v(&dw0)], Reuse::default());
    let reuse = Reuse {
        a: Some(&dy_rows),
        b: Some(&x_rows),
    };
    let reused = weight_grad(gpu, dims, [v(&dy), v(&x), v(&dw1)], reuse);
    let counts = [own.len(), reused.len()];
    ks.extend(own);
    ks.extend(reused);
    submit(ctx, "coop_reuse", &ks.iter().collect::<Vec<_>>());
    let read = |b| pollster::block_on(ctx.read_f32(b, (d_out * d_in) as usize)).unwrap();
    ([read(&dw0), read(&dw1)], counts)
}

#[test]
fn a_weight_gradient_reading_staged_operands_gives_the_bits_of_staging_its_own() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop weight gradient reusing staged operands") {
        return;
    }
    // (N rows, d_in, d_out): N a whole number of 128-row tiles or not (320,
    // 1000: the staged copies' zero rows past N are read as K), nor of
    // 32-wide K blocks (1000); split K where N allows (1000, 4096); d_out
    // 100, fewer than a tile's 128 rows, whose copy is still 128 wide (the
    // zero columns become rows of dW past M, never stored).
    for shape in [
        (320, 128, 256),
        (1000, 256, 384),
        (4096, 128, 128),
        (1000, 128, 100),
    ] {
        for split in [false, true] {
            let ([own, reused], [n_own, n_reused]) = both(gpu, shape, split);
            let differ = own
                .iter()
                .zip(&reused)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count();
            assert_eq!(
                differ,
                0,
                "{shape:?} split {split}: {differ} of {} outputs differ",
                own.len()
            );
            assert!(own.iter().any(|v| *v != 0.0), "{shape:?}: the product ran");
            // Both staging dispatches gone.
            assert_eq!(n_reused + 2, n_own, "{shape:?} split {split}: dispatches");
        }
    }
}

#[test]
fn operands_that_do_not_fit_are_staged_again() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop reuse of operands that do not fit") {
        return;
    }
    // d_out 96: dY's staged rows are 96 halves apart, the dW's 128-row
    // tiles want 128, so dYᵀ is staged again; X (d_in 128) is reused.
    // d_in 160: X's rows are 160 apart, op(B) wants 256; staged again.
    for (shape, staged) in [
        ((320, 128, 96), 1),
        ((320, 160, 128), 1),
        ((320, 160, 96), 2),
    ] {
        let ([own, reused], [n_own, n_reused]) = both(gpu, shape, true);
        assert!(
            own.iter()
                .zip(&reused)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{shape:?}"
        );
        assert_eq!(n_reused + 2 - staged, n_own, "{shape:?}: dispatches");
    }
}

#[test]
fn a_staged_copy_of_another_operand_is_refused() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop reuse refusing another operand's copy") {
        return;
    }
    let (n, d_in, d_out) = (256, 128, 128);
    let ctx = &gpu.ctx;
    let zeros = |len: u32| ctx.zeros("operand", len as usize).unwrap();
    let (x, dy, w, y, dx, dw) = (
        zeros(n * d_in),
        zeros(n * d_out),
        zeros(d_out * d_in),
        zeros(n * d_out),
        zeros(n * d_in),
        zeros(d_out * d_in),
    );
    let (x_rows, _, _) = stage_both(gpu, (n, d_in, d_out), [v(&x), v(&dy), v(&w), v(&y), v(&dx)]);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let desc = MatmulDesc {
        m: d_out,
        k: n,
        n: d_in,
        trans_a: true,
        ..Default::default()
    };
    // X's copy offered as dY's.
    let reuse = Reuse {
        a: Some(&x_rows),
        b: None,
    };
    let a = (v(&dy), CoopOptions::scaled(SCALE));
    let e = bind_matmul_coop_split_k(ctx, &mut reg, desc, a, v(&x), None, v(&dw), (None, reuse));
    let e = e.err().expect("refused").to_string();
    assert!(e.contains("staged"), "{e}");
}
