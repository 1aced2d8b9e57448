//! The cases of `gemv_fused.rs`: a GEMV's inputs on the GPU and the host,
//! the folds around it (LayerNorm, GELU, residual add), the shapes, and
//! each case run fused, as separate kernels and on an f64 reference.

use tinygpt_core::model::layers::{gelu_forward, layernorm_forward};
use tinygpt_core::Rng;
use tinygpt_gpu::gate::Fault;
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
pub struct Folds {
    pub ln: bool,
    pub gelu: bool,
    pub residual: bool,
}

/// Inputs of one case on the GPU. `vecs` holds LayerNorm weight, LayerNorm
/// bias and the linear bias (K, K, N) after `pad` elements, as the flat
/// parameters do; `w` the weights (f32), `w16` the packed halves with the
/// weights at half `w_off`.
pub struct Case {
    pub k: u32,
    pub n: u32,
    pub x: wgpu::Buffer,
    pub vecs: wgpu::Buffer,
    pub w: wgpu::Buffer,
    pub w16: wgpu::Buffer,
    pub w_off: u32,
    pub resid: wgpu::Buffer,
    pub pad: u32,
    pub host: Host,
}

pub struct Host {
    pub x: Vec<f32>,
    pub ln_w: Vec<f32>,
    pub ln_b: Vec<f32>,
    pub w: Vec<f32>,
    pub bias: Vec<f32>,
    pub resid: Vec<f32>,
}

impl Case {
    pub fn new(ctx: &GpuContext, k: u32, n: u32, w_off: u32, seed: u64) -> Self {
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

    pub fn ln_w(&self) -> View<'_> {
        View::at(&self.vecs, self.pad)
    }

    pub fn ln_b(&self) -> View<'_> {
        View::at(&self.vecs, self.pad + self.k)
    }

    pub fn bias(&self) -> View<'_> {
        View::at(&self.vecs, self.pad + 2 * self.k)
    }

    /// The GEMV of `a` into `c`, f32 or f16 weights, with `fusion`.
    #[allow(clippy::too_many_arguments)]
    pub fn gemv<'a>(
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
    pub fn gemv_desc<'a>(
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
    pub fn gemv_with<'a>(
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
    pub fn fused(&self, gpu: &TestGpu, f16: bool, folds: Folds) -> Vec<f32> {
        self.fused_with(gpu, f16.then_some(None), folds)
    }

    pub fn fused_with(&self, gpu: &TestGpu, f16: Option<Option<Fault>>, folds: Folds) -> Vec<f32> {
        self.fused_in(gpu, f16, folds, (false, None))
    }

    /// [`Self::fused_with`] in the column layout when `columns`, the lanes
    /// summed with subgroups of `subgroups` when given.
    pub fn fused_in(
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
            slots: 1,
        };
        let k = self.gemv_with(ctx, &mut reg, f16, &self.x, fusion, folds.residual, &out);
        submit(ctx, "fused", &[&k]);
        pollster::block_on(ctx.read_f32(&out, self.n as usize)).unwrap()
    }

    /// The same as separate kernels: up to four dispatches.
    pub fn unfused(&self, gpu: &TestGpu, f16: bool, folds: Folds) -> Vec<f32> {
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
                    None,
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
    pub fn reference(&self, folds: Folds) -> Vec<f32> {
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
pub const FOLDS: [(bool, bool, bool); 4] = [
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
/// 1030 unaligned, 4096 (the widest d_model) aligned; and 128 and 384,
/// whose LayerNorm forms load every weight before the row's statistics
/// (`*_pre` in gemv.wgsl and gemv_f16w.wgsl: a multiple of 128 up to 512).
pub const SHAPES: [(u32, u32, u32); 10] = [
    (128, 9, 4),
    (384, 10, 0),
    (48, 19, 0),
    (50, 9, 4),
    (48, 13, 7),
    (200, 21, 8),
    (300, 6, 0),
    (517, 5, 3),
    (1030, 4, 1),
    (4096, 3, 0),
];
