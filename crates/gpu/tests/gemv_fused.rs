//! The decoder's fused GEMVs (`shaders/gemv_row.wgsl` around the f32 and
//! the f16-storage GEMV): LayerNorm prologue, GELU epilogue and the residual
//! add (accumulate), alone and together, against the same ops as separate
//! kernels (LayerNorm, plain GEMV, GELU, residual add) and against an f64
//! CPU reference. The f16 weights are half-rounded for every comparison, so
//! only the order of f32 sums differs; K = 48 runs the aligned f16 GEMV,
//! K = 50 (or an odd weight offset) the one for any alignment.

use tinygpt_core::model::layers::{gelu_forward, layernorm_forward};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gate::Fault;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::gelu::bind_gelu_forward;
use tinygpt_gpu::ops::layernorm::{bind_layernorm_forward, LayerNormDesc};
use tinygpt_gpu::ops::matmul::f16w::{bind_gemv_f16w, pack_cpu, PackedW};
use tinygpt_gpu::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use tinygpt_gpu::ops::residual::bind_residual_forward;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random_in;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::{GpuContext, PipelineRegistry};

/// The folds of one case: LayerNorm first, GELU after the bias, the
/// residual added last.
#[derive(Clone, Copy, Debug)]
struct Folds {
    ln: bool,
    gelu: bool,
    residual: bool,
}

/// Inputs of one case on the GPU. `vecs` holds LayerNorm weight, LayerNorm
/// bias and the linear bias (K, K, N) after `pad` elements, as the flat
/// parameters do; `w` the weights (f32), `w16` the packed halves with the
/// weights at half `w_off`.
struct Case {
    k: u32,
    n: u32,
    x: wgpu::Buffer,
    vecs: wgpu::Buffer,
    w: wgpu::Buffer,
    w16: wgpu::Buffer,
    w_off: u32,
    resid: wgpu::Buffer,
    pad: u32,
    host: Host,
}

struct Host {
    x: Vec<f32>,
    ln_w: Vec<f32>,
    ln_b: Vec<f32>,
    w: Vec<f32>,
    bias: Vec<f32>,
    resid: Vec<f32>,
}

impl Case {
    fn new(ctx: &GpuContext, k: u32, n: u32, w_off: u32, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let (ku, nu) = (k as usize, n as usize);
        let pad = 3;
        let host = Host {
            // An offset mean, so the LayerNorm has something to remove.
            x: random_in(&mut rng, ku, -0.5, 1.5),
            ln_w: random_in(&mut rng, ku, 0.5, 1.5),
            ln_b: random_in(&mut rng, ku, -0.2, 0.2),
            // Half-representable, so the f16 weights are the f32 ones.
            w: random_in(&mut rng, ku * nu, -0.3, 0.3)
                .iter()
                .map(|&v| half::f16::from_f32(v).to_f32())
                .collect(),
            bias: random_in(&mut rng, nu, -0.5, 0.5),
            resid: random_in(&mut rng, nu, -1.0, 1.0),
        };
        let vecs: Vec<f32> = [
            vec![9.0; pad as usize],
            host.ln_w.clone(),
            host.ln_b.clone(),
            host.bias.clone(),
        ]
        .concat();
        let halves = [vec![0.25; w_off as usize], host.w.clone()].concat();
        Self {
            k,
            n,
            x: ctx.upload("x", &host.x).unwrap(),
            vecs: ctx.upload("vecs", &vecs).unwrap(),
            w: ctx.upload("w", &host.w).unwrap(),
            w16: ctx
                .upload_bytes("w16", bytemuck::cast_slice(&pack_cpu(&halves, None)))
                .unwrap(),
            w_off,
            resid: ctx.upload("resid", &host.resid).unwrap(),
            pad,
            host,
        }
    }

    fn ln_w(&self) -> View<'_> {
        View::at(&self.vecs, self.pad)
    }

    fn ln_b(&self) -> View<'_> {
        View::at(&self.vecs, self.pad + self.k)
    }

    fn bias(&self) -> View<'_> {
        View::at(&self.vecs, self.pad + 2 * self.k)
    }

    /// The GEMV of `a` into `c`, f32 or f16 weights, with `fusion`.
    #[allow(clippy::too_many_arguments)]
    fn gemv<'a>(
        &'a self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        f16: bool,
        a: &'a wgpu::Buffer,
        fusion: RowFusion<'a>,
        accumulate: bool,
        c: &'a wgpu::Buffer,
    ) -> BoundKernel {
        self.gemv_with(ctx, reg, f16.then_some(None), a, fusion, accumulate, c)
    }

    /// The GEMV of `desc` (rows of `a` into rows of `c`), f32 or f16
    /// weights, with `fusion`.
    #[allow(clippy::too_many_arguments)]
    fn gemv_desc<'a>(
        &'a self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        f16: bool,
        desc: MatmulDesc,
        a: &'a wgpu::Buffer,
        fusion: RowFusion<'a>,
        c: &'a wgpu::Buffer,
    ) -> BoundKernel {
        let bias = Some(self.bias());
        if f16 {
            let w = PackedW::at(&self.w16, self.w_off);
            return bind_gemv_f16w(ctx, reg, desc, a, w, bias, fusion, c).unwrap();
        }
        bind_gemv(ctx, reg, desc, a, &self.w, bias, fusion, c).unwrap()
    }

    /// [`Self::gemv`] with f16 weights run by a kernel `fault` when `f16`
    /// is `Some`.
    #[allow(clippy::too_many_arguments)]
    fn gemv_with<'a>(
        &'a self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        f16: Option<Option<Fault>>,
        a: &'a wgpu::Buffer,
        fusion: RowFusion<'a>,
        accumulate: bool,
        c: &'a wgpu::Buffer,
    ) -> BoundKernel {
        let desc = MatmulDesc {
            accumulate,
            ..MatmulDesc::linear(1, self.k, self.n)
        };
        let bias = Some(self.bias());
        match f16 {
            Some(fault) => {
                let w = PackedW {
                    fault,
                    ..PackedW::at(&self.w16, self.w_off)
                };
                bind_gemv_f16w(ctx, reg, desc, a, w, bias, fusion, c).unwrap()
            }
            None => bind_gemv(ctx, reg, desc, a, &self.w, bias, fusion, c).unwrap(),
        }
    }

    /// The fused kernel: one dispatch.
    fn fused(&self, gpu: &TestGpu, f16: bool, folds: Folds) -> Vec<f32> {
        self.fused_with(gpu, f16.then_some(None), folds)
    }

    fn fused_with(&self, gpu: &TestGpu, f16: Option<Option<Fault>>, folds: Folds) -> Vec<f32> {
        self.fused_in(gpu, f16, folds, (false, None))
    }

    /// [`Self::fused_with`] in the column layout when `columns`, the lanes
    /// summed with subgroups of `subgroups` when given.
    fn fused_in(
        &self,
        gpu: &TestGpu,
        f16: Option<Option<Fault>>,
        folds: Folds,
        (columns, subgroups): (bool, Option<u32>),
    ) -> Vec<f32> {
        let ctx = &gpu.ctx;
        let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
        let out = ctx.upload("out", &self.host.resid).unwrap();
        let fusion = RowFusion {
            layernorm: folds.ln.then(|| (self.ln_w(), self.ln_b())),
            gelu: folds.gelu,
            columns,
            subgroups,
        };
        let k = self.gemv_with(ctx, &mut reg, f16, &self.x, fusion, folds.residual, &out);
        submit(ctx, "fused", &[&k]);
        pollster::block_on(ctx.read_f32(&out, self.n as usize)).unwrap()
    }

    /// The same as separate kernels: up to four dispatches.
    fn unfused(&self, gpu: &TestGpu, f16: bool, folds: Folds) -> Vec<f32> {
        let ctx = &gpu.ctx;
        let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
        let (k, n) = (self.k, self.n as usize);
        let row = |label| ctx.zeros(label, n).unwrap();
        let (ln, mean, rstd) = (ctx.zeros("ln", k as usize).unwrap(), row("m"), row("r"));
        let (y, y_gelu, out) = (row("y"), row("y_gelu"), row("out"));
        let mut kernels = Vec::new();
        let mut a = &self.x;
        if folds.ln {
            // The workgroup tree: the fused prologue sums in its order.
            let desc = LayerNormDesc {
                n: 1,
                c: k,
                accumulate: false,
                layout: tinygpt_gpu::kernel::Layout::Gpu,
            };
            kernels.push(
                bind_layernorm_forward(
                    ctx,
                    &mut reg,
                    desc,
                    &self.x,
                    self.ln_w(),
                    self.ln_b(),
                    &ln,
                    &mean,
                    &rstd,
                )
                .unwrap(),
            );
            a = &ln;
        }
        kernels.push(self.gemv(ctx, &mut reg, f16, a, RowFusion::default(), false, &y));
        let mut last = &y;
        if folds.gelu {
            kernels.push(bind_gelu_forward(ctx, &mut reg, self.n, &y, &y_gelu).unwrap());
            last = &y_gelu;
        }
        if folds.residual {
            kernels.push(
                bind_residual_forward(ctx, &mut reg, self.n, &self.resid, last, &out).unwrap(),
            );
            last = &out;
        }
        let refs: Vec<&BoundKernel> = kernels.iter().collect();
        submit(ctx, "unfused", &refs);
        pollster::block_on(ctx.read_f32(last, n)).unwrap()
    }

    /// f64 on the CPU.
    fn reference(&self, folds: Folds) -> Vec<f32> {
        let h = &self.host;
        let f = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let mut a = f(&h.x);
        if folds.ln {
            let (mut out, mut m, mut r) = (vec![0.0; a.len()], [0.0], [0.0]);
            layernorm_forward(&mut out, &mut m, &mut r, &a, &f(&h.ln_w), &f(&h.ln_b));
            a = out;
        }
        let k = self.k as usize;
        let mut y: Vec<f64> = (0..self.n as usize)
            .map(|j| {
                let row = &h.w[j * k..][..k];
                row.iter().zip(&a).map(|(&w, x)| w as f64 * x).sum::<f64>() + h.bias[j] as f64
            })
            .collect();
        if folds.gelu {
            let inp = y.clone();
            gelu_forward(&mut y, &inp);
        }
        if folds.residual {
            y.iter_mut()
                .zip(&h.resid)
                .for_each(|(v, &r)| *v += r as f64);
        }
        y.iter().map(|&v| v as f32).collect()
    }
}

/// The folds (LayerNorm, GELU, residual) of the decoder's QKV, fc,
/// projection and fc_proj linears, then all.
const FOLDS: [(bool, bool, bool); 4] = [
    (true, false, false),
    (true, true, false),
    (false, false, true),
    (true, true, true),
];

/// (K, N, offset of the f16 weights in halves): 48 and 200 aligned, 50 not
/// (K), 48 at an odd offset; N not a multiple of the 8 columns of a
/// workgroup; K = 200 past the LayerNorm's 128 threads; then past the
/// GEMVs' rounds of eight loads per lane (256 inputs f32, 1024 aligned
/// f16, 512 unaligned) with the rest after them: 300, odd 517 unaligned,
/// 1030 unaligned, 4096 (the widest d_model) aligned.
const SHAPES: [(u32, u32, u32); 8] = [
    (48, 19, 0),
    (50, 9, 4),
    (48, 13, 7),
    (200, 21, 8),
    (300, 6, 0),
    (517, 5, 3),
    (1030, 4, 1),
    (4096, 3, 0),
];

#[test]
fn fused_gemvs_match_the_separate_kernels_and_the_reference() {
    let gpu = gpu_or_skip!();
    let mut identical = 0;
    let mut compared = 0;
    for (i, &(k, n, w_off)) in SHAPES.iter().enumerate() {
        let case = Case::new(&gpu.ctx, k, n, w_off, 40 + i as u64);
        for &(ln, gelu, residual) in &FOLDS {
            let f = Folds { ln, gelu, residual };
            let want = case.reference(f);
            for f16 in [false, true] {
                let what = format!("K {k} N {n} w_off {w_off} {f:?} f16 {f16}");
                let fused = case.fused(gpu, f16, f);
                let unfused = case.unfused(gpu, f16, f);
                // Same sums in the same order, so only a compiler's choice to
                // fuse a multiply-add differently can tell them apart.
                assert_close(
                    &format!("{what}: fused vs unfused"),
                    &fused,
                    &unfused,
                    1e-6,
                    1e-6,
                );
                identical += fused.iter().zip(&unfused).filter(|(a, b)| a == b).count();
                compared += fused.len();
                let atol = 2e-6 * (k as f64).sqrt();
                assert_close(&format!("{what}: fused vs f64"), &fused, &want, atol, 1e-5);
            }
        }
    }
    eprintln!("fused == unfused bit for bit on {identical} of {compared} outputs");
}

/// The lanes summed with subgroup shuffles (`shaders/lanes_sg.wgsl`) give
/// the workgroup tree's bits in every shape and fold above, f32 and f16
/// weights: the subgroups fast path's claim, per variant.
#[test]
fn subgroup_sums_give_the_workgroup_trees_bits() {
    let gpu = gpu_or_skip!();
    let size = match gpu.ctx.subgroup_size() {
        Ok(n) => n,
        Err(why) => return tinygpt_gpu::testing::did_not_run("subgroup sums", why),
    };
    for (i, &(k, n, w_off)) in SHAPES.iter().enumerate() {
        let case = Case::new(&gpu.ctx, k, n, w_off, 40 + i as u64);
        for &(ln, gelu, residual) in &FOLDS {
            let f = Folds { ln, gelu, residual };
            for f16 in [None, Some(None)] {
                let tree = case.fused_in(gpu, f16, f, (false, None));
                let sg = case.fused_in(gpu, f16, f, (false, Some(size)));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let what =
                    format!("K {k} N {n} w_off {w_off} {f:?} f16 {f16:?}, subgroups of {size}");
                assert_eq!(bits(&sg), bits(&tree), "{what}");
            }
        }
    }
}

/// Many rows at once with the LayerNorm folded: past 512 workgroups each
/// runs two groups of 8 columns (`LN_WIDE_ABOVE`), and every row still gets
/// the bits it gets alone — f32, aligned f16 (K = 48) and any-alignment f16
/// (K = 50) weights; N = 1030 leaves the last workgroup's second group
/// partly past the end. 5 rows × 129 groups of 8 columns = 645 workgroups.
#[test]
fn a_layernorm_gemv_over_many_rows_gives_each_row_its_bits_alone() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (rows, n) = (5usize, 1030u32);
    for (i, (k, w_off)) in [(48u32, 0u32), (50, 4)].into_iter().enumerate() {
        let case = Case::new(ctx, k, n, w_off, 90 + i as u64);
        let mut rng = Rng::new(7 + i as u64);
        let xs: Vec<Vec<f32>> = (0..rows)
            .map(|_| random_in(&mut rng, k as usize, -0.5, 1.5))
            .collect();
        for f16 in [false, true] {
            let run = |xs: &[Vec<f32>]| -> Vec<f32> {
                let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
                let x = ctx.upload("xs", &xs.concat()).unwrap();
                let out = ctx.zeros("out", xs.len() * n as usize).unwrap();
                let fusion = RowFusion {
                    layernorm: Some((case.ln_w(), case.ln_b())),
                    ..RowFusion::default()
                };
                let desc = MatmulDesc::linear(xs.len() as u32, k, n);
                let k = case.gemv_desc(ctx, &mut reg, f16, desc, &x, fusion, &out);
                submit(ctx, "rows", &[&k]);
                pollster::block_on(ctx.read_f32(&out, xs.len() * n as usize)).unwrap()
            };
            let together = run(&xs);
            for (r, x) in xs.iter().enumerate() {
                let alone = run(std::slice::from_ref(x));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let row = &together[r * n as usize..][..n as usize];
                assert_eq!(bits(row), bits(&alone), "K {k} f16 {f16}: row {r}");
            }
            assert!(together.iter().all(|v| v.is_finite() && *v != 0.0));
        }
    }
}

/// The column layout (one invocation per output column: CPU
/// implementations) gives the lane layout's results to f32 rounding, and
/// the f64 reference's, f32 and f16 weights at any alignment and K, with
/// GELU and the residual add folded; its f16 fault variants carry their
/// fault. It has no LayerNorm prologue (refused below).
#[test]
fn column_gemvs_match_the_lane_gemvs_and_the_reference() {
    let gpu = gpu_or_skip!();
    // (K, N, offset of the f16 weights): K a multiple of 4 or not, odd; an
    // odd weight offset; N past the 64 columns of a workgroup.
    let shapes = [
        (48, 19, 0),
        (50, 9, 4),
        (48, 13, 7),
        (1, 3, 0),
        (7, 70, 1),
        (517, 130, 3),
        (1030, 4, 0),
    ];
    for (i, &(k, n, w_off)) in shapes.iter().enumerate() {
        let case = Case::new(&gpu.ctx, k, n, w_off, 90 + i as u64);
        for (gelu, residual) in [(false, false), (true, false), (false, true), (true, true)] {
            let f = Folds {
                ln: false,
                gelu,
                residual,
            };
            let want = case.reference(f);
            for f16 in [false, true] {
                let what = format!("K {k} N {n} w_off {w_off} {f:?} f16 {f16}");
                let cols = case.fused_in(gpu, f16.then_some(None), f, (true, None));
                let lanes = case.fused(gpu, f16, f);
                let atol = 2e-6 * (k as f64).sqrt();
                assert_close(
                    &format!("{what}: columns vs lanes"),
                    &cols,
                    &lanes,
                    atol,
                    1e-5,
                );
                assert_close(&format!("{what}: columns vs f64"), &cols, &want, atol, 1e-5);
            }
        }
        let f = Folds {
            ln: false,
            gelu: false,
            residual: false,
        };
        let real = case.fused_in(gpu, Some(None), f, (true, None));
        let what = format!("columns K {k} w_off {w_off}");
        if k <= 64 {
            // Short sums: f16 accumulation stays near the real result.
            let acc16 = case.fused_in(gpu, Some(Some(Fault::F16Accumulate)), f, (true, None));
            assert_close(&format!("{what} f16acc"), &acc16, &real, 2e-2, 2e-2);
            assert!(acc16 != real, "{what}: f16 accumulation rounds");
        }
        if k >= 16 && k % 16 != 0 {
            let dropped = case.fused_in(gpu, Some(Some(Fault::DropKTail)), f, (true, None));
            assert!(
                dropped.iter().zip(&real).any(|(d, r)| (d - r).abs() > 1e-3),
                "{what}: the K tail was dropped"
            );
        }
    }
}

/// The fault variants of every f16 GEMV (aligned or not, with or without
/// the LayerNorm) are the real ones' loops with the fault: the dropped K
/// tail changes the result, f16 accumulation stays near it on these inputs.
#[test]
fn fused_fault_variants_run_with_their_fault() {
    let gpu = gpu_or_skip!();
    for (k, w_off) in [(40, 0), (42, 1)] {
        let case = Case::new(&gpu.ctx, k, 11, w_off, 7);
        for ln in [false, true] {
            let f = Folds {
                ln,
                gelu: false,
                residual: false,
            };
            let real = case.fused(gpu, true, f);
            let what = format!("K {k} w_off {w_off} LayerNorm {ln}");
            let acc16 = case.fused_with(gpu, Some(Some(Fault::F16Accumulate)), f);
            assert_close(&format!("{what} f16acc"), &acc16, &real, 2e-2, 2e-2);
            let dropped = case.fused_with(gpu, Some(Some(Fault::DropKTail)), f);
            assert!(
                dropped.iter().zip(&real).any(|(d, r)| (d - r).abs() > 1e-3),
                "{what}"
            );
        }
    }
}

#[test]
fn a_layernorm_that_is_not_k_wide_or_shares_c_is_refused() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let case = Case::new(ctx, 48, 8, 0, 1);
    // Large enough for K elements, so that sharing it is what is refused.
    let out = ctx.zeros("out", 100).unwrap();
    let desc = MatmulDesc::linear(1, 48, 8);
    let other = ctx.zeros("other", 100).unwrap();
    let bad = [
        // The bias view at the end of `vecs` leaves fewer than K elements.
        (case.ln_w(), View::at(&case.vecs, case.pad + 2 * 48 + 1)),
        // Weight and bias in two buffers.
        (case.ln_w(), View::from(&other)),
        // The LayerNorm parameters in the written buffer.
        (View::from(&out), View::at(&out, 0)),
    ];
    for (w, b) in bad {
        let fusion = RowFusion {
            layernorm: Some((w, b)),
            ..RowFusion::default()
        };
        let bias = Some(case.bias());
        assert!(bind_gemv(ctx, &mut reg, desc, &case.x, &case.w, bias, fusion, &out).is_err());
        let packed = PackedW::at(&case.w16, 0);
        let got = bind_gemv_f16w(ctx, &mut reg, desc, &case.x, packed, bias, fusion, &out);
        assert!(got.is_err());
    }
    // The column layout has no LayerNorm prologue.
    let fusion = RowFusion {
        layernorm: Some((case.ln_w(), case.ln_b())),
        columns: true,
        ..RowFusion::default()
    };
    let bias = Some(case.bias());
    let Err(err) = bind_gemv(ctx, &mut reg, desc, &case.x, &case.w, bias, fusion, &out) else {
        panic!("a LayerNorm with the column layout was bound");
    };
    assert!(err.to_string().contains("column layout"), "{err}");
    let packed = PackedW::at(&case.w16, 0);
    assert!(bind_gemv_f16w(ctx, &mut reg, desc, &case.x, packed, bias, fusion, &out).is_err());
}
