//! Tensor-core products reading operands that earlier products staged
//! (`ops/matmul/coop_stage.rs`'s `Reuse`) give the bits of the same
//! products staging their own: a weight gradient `dW = dYᵀ·X` reading the
//! dY its dX product staged (`A_KM`) and the X its forward product staged,
//! split along K and not, the gradient scaled; a dX product `dY·W` reading
//! the Wᵀ the forward product staged (`B_NK`). Copies that do not fit are
//! staged again (rows that are not whole 128-row tiles), and a copy of
//! another operand is refused. Each form of the tiled kernel
//! ([`TiledForm::ALL`]) gives the base form's bits. Native devices with
//! cooperative matrices; elsewhere each test says it did not run.

use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::matmul::coop::{
    bind_matmul_coop_split_k, bind_matmul_coop_staging, coop_unavailable, CoopKernel, CoopOptions,
    TiledForm,
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
/// rows staged (X's rows, dY's rows), their dispatches, and the dispatch
/// counts of the dX product staging its own W (into `dx`) and reading the
/// forward's Wᵀ (into `dx1`).
struct Staged {
    x_rows: StagedRows,
    dy_rows: StagedRows,
    kernels: Vec<BoundKernel>,
    dx_counts: [usize; 2],
}

fn stage_both(
    (gpu, kernel): (&TestGpu, CoopKernel),
    (n, d_in, d_out): (u32, u32, u32),
    [x, dy, w, y]: [View<'_>; 4],
    [dx, dx1]: [View<'_>; 2],
) -> Staged {
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ctx = &gpu.ctx;
    let fwd = MatmulDesc {
        m: n,
        k: d_in,
        n: d_out,
        trans_b: true,
        ..Default::default()
    };
    let plain = CoopOptions {
        kernel,
        ..Default::default()
    };
    let none = Reuse::default();
    let f = bind_matmul_coop_staging(ctx, &mut reg, fwd, (x, plain), (w, none), None, y, None);
    let f = f.unwrap();
    let back = MatmulDesc {
        m: n,
        k: d_out,
        n: d_in,
        ..Default::default()
    };
    let opts = CoopOptions {
        kernel,
        ..CoopOptions::scaled(SCALE)
    };
    let d = bind_matmul_coop_staging(ctx, &mut reg, back, (dy, opts), (w, none), None, dx, None);
    let d = d.unwrap();
    let [x_rows, w_rows] = f.staged;
    let w_rows = w_rows.expect("Wᵀ staged");
    let reuse = Reuse {
        a: None,
        b: Some(&w_rows),
    };
    let d1 = bind_matmul_coop_staging(ctx, &mut reg, back, (dy, opts), (w, reuse), None, dx1, None);
    let d1 = d1.unwrap();
    let dx_counts = [d.kernels.len(), d1.kernels.len()];
    let [dy_rows, _] = d.staged;
    let kernels = f.kernels.into_iter().chain(d.kernels).chain(d1.kernels);
    Staged {
        x_rows: x_rows.expect("X staged"),
        dy_rows: dy_rows.expect("dY staged"),
        kernels: kernels.collect(),
        dx_counts,
    }
}

/// `dW (d_out, d_in) = dYᵀ·X` into `dw`, through a scratch when `split`.
fn weight_grad(
    (gpu, kernel): (&TestGpu, CoopKernel),
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
    let opts = CoopOptions {
        kernel,
        ..CoopOptions::scaled(SCALE)
    };
    let parts = (scratch.as_ref(), reuse);
    let a = (dy, opts);
    let op = bind_matmul_coop_split_k(ctx, &mut reg, desc, a, x, None, dw, parts).unwrap();
    op.kernels
}

/// Outputs and dispatch counts, each `[staging its own, reusing]`.
struct Both {
    dw: [Vec<f32>; 2],
    dw_counts: [usize; 2],
    dx: [Vec<f32>; 2],
    dx_counts: [usize; 2],
}

/// Both weight gradients of one shape on `kernel` — the one staging its
/// own operands and the one reusing — and both dX products likewise.
fn both(on: (&TestGpu, CoopKernel), shape: (u32, u32, u32), split: bool) -> Both {
    let gpu = on.0;
    let (n, d_in, d_out) = shape;
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(u64::from(n + d_in + d_out));
    let mut up = |len: u32| ctx.upload("operand", &random(&mut rng, len)).unwrap();
    let (x, dy, w) = (up(n * d_in), up(n * d_out), up(d_out * d_in));
    let zeros = |len: u32| ctx.zeros("out", len as usize).unwrap();
    let (y, dx0, dx1) = (zeros(n * d_out), zeros(n * d_in), zeros(n * d_in));
    let (dw0, dw1) = (zeros(d_out * d_in), zeros(d_out * d_in));
    let ops = [v(&x), v(&dy), v(&w), v(&y)];
    let st = stage_both(on, shape, ops, [v(&dx0), v(&dx1)]);
    let dims = (n, d_in, d_out, split);
    let own = weight_grad(on, dims, [v(&dy), v(&x), v(&dw0)], Reuse::default());
    let reuse = Reuse {
        a: Some(&st.dy_rows),
        b: Some(&st.x_rows),
    };
    let reused = weight_grad(on, dims, [v(&dy), v(&x), v(&dw1)], reuse);
    let dw_counts = [own.len(), reused.len()];
    let mut ks = st.kernels;
    ks.extend(own);
    ks.extend(reused);
    submit(ctx, "coop_reuse", &ks.iter().collect::<Vec<_>>());
    let read = |b, len: u32| pollster::block_on(ctx.read_f32(b, len as usize)).unwrap();
    Both {
        dw: [read(&dw0, d_out * d_in), read(&dw1, d_out * d_in)],
        dw_counts,
        dx: [read(&dx0, n * d_in), read(&dx1, n * d_in)],
        dx_counts: st.dx_counts,
    }
}

/// How many outputs of `a` and `b` differ in their bits.
fn differ(a: &[f32], b: &[f32]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
}

#[test]
fn a_weight_gradient_reading_staged_operands_gives_the_bits_of_staging_its_own() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop weight gradient reusing staged operands") {
        return;
    }
    // (N rows, d_in, d_out): N a whole number of 128-row tiles or not (320,
    // 1000: the staged copies' zero rows past N are read as K), nor of
    // 32-wide K blocks (1000); split K where N allows (1000: three slices
    // of ≥ 256, 4096: sixteen); d_out 100, fewer than a tile's 128 rows,
    // whose copy is still 128 wide (the zero columns become rows of dW past
    // M, never stored).
    for shape in [
        (320, 128, 256),
        (1000, 256, 384),
        (4096, 128, 128),
        (1000, 128, 100),
    ] {
        for split in [false, true] {
            let base = both((gpu, CoopKernel::Tiled(TiledForm::Base)), shape, split);
            for form in TiledForm::ALL {
                let r = both((gpu, CoopKernel::Tiled(form)), shape, split);
                check_reuse(&r, (shape, split, form));
                // Every form sums each output's products in the same order.
                for (what, [a, b]) in [
                    ("dW", [&r.dw[0], &base.dw[0]]),
                    ("dX", [&r.dx[0], &base.dx[0]]),
                ] {
                    let d = differ(a, b);
                    assert_eq!(d, 0, "{shape:?} split {split}: {d} {what} outputs of {form:?} differ from the base form's");
                }
            }
        }
    }
}

/// The reusing products give the bits of those staging their own, with
/// fewer dispatches.
fn check_reuse(r: &Both, (shape, split, form): ((u32, u32, u32), bool, TiledForm)) {
    let [own, reused] = &r.dw;
    let d = differ(own, reused);
    let len = own.len();
    assert_eq!(
        d, 0,
        "{shape:?} split {split} {form:?}: {d} of {len} dW outputs differ"
    );
    assert!(own.iter().any(|v| *v != 0.0), "{shape:?}: the product ran");
    // Both staging dispatches gone.
    let [n_own, n_reused] = r.dw_counts;
    assert_eq!(
        n_reused + 2,
        n_own,
        "{shape:?} split {split}: dW dispatches"
    );
    // The dX product reading the forward's Wᵀ (`B_NK`): the same bits, W's
    // staging gone.
    let d = differ(&r.dx[0], &r.dx[1]);
    assert_eq!(d, 0, "{shape:?} {form:?}: {d} dX outputs differ");
    assert!(r.dx[0].iter().any(|v| *v != 0.0), "{shape:?}: dX ran");
    let [x_own, x_reused] = r.dx_counts;
    assert_eq!(x_reused + 1, x_own, "{shape:?}: dX dispatches");
}

#[test]
fn operands_that_do_not_fit_are_staged_again() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop reuse of operands that do not fit") {
        return;
    }
    // d_out 96: dY's staged rows are 96 halves apart, the dW's 128-row
    // tiles want 128, so dYᵀ is staged again; X (d_in 128) is reused.
    // d_in 160: X's rows are 160 apart, op(B) wants 256; staged again; and
    // the forward's Wᵀ has 160 rows where dX's 128-column tiles want 256,
    // so dX stages W again too.
    for (shape, staged) in [
        ((320, 128, 96), 1),
        ((320, 160, 128), 1),
        ((320, 160, 96), 2),
    ] {
        let r = both((gpu, CoopKernel::Tiled(TiledForm::Base)), shape, true);
        assert_eq!(differ(&r.dw[0], &r.dw[1]), 0, "{shape:?}: dW");
        assert_eq!(differ(&r.dx[0], &r.dx[1]), 0, "{shape:?}: dX");
        let [n_own, n_reused] = r.dw_counts;
        assert_eq!(n_reused + 2 - staged, n_own, "{shape:?}: dW dispatches");
        let w_staged = usize::from(shape.1 % 128 != 0);
        let [x_own, x_reused] = r.dx_counts;
        assert_eq!(x_reused + 1 - w_staged, x_own, "{shape:?}: dX dispatches");
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
    let (x, dy, w) = (zeros(n * d_in), zeros(n * d_out), zeros(d_out * d_in));
    let (y, dx0, dx1, dw) = (
        zeros(n * d_out),
        zeros(n * d_in),
        zeros(n * d_in),
        zeros(d_out * d_in),
    );
    let ops = [v(&x), v(&dy), v(&w), v(&y)];
    let on = (gpu, CoopKernel::Tiled(TiledForm::Base));
    let x_rows = stage_both(on, (n, d_in, d_out), ops, [v(&dx0), v(&dx1)]).x_rows;
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
