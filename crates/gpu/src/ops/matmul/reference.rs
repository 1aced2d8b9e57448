//! One matmul run end to end, and its CPU reference: for tests and the
//! start-up kernel check.

use super::desc::MatmulDesc;
use crate::kernel::Layout;
use crate::ops::View;
use crate::registry::PipelineRegistry;
use crate::{GpuContext, GpuError};

/// Uploads, runs and reads back one matmul: for tests.
pub async fn matmul_once(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>, GpuError> {
    matmul_once_in(Layout::Gpu, ctx, registry, desc, a, b, bias).await
}

/// [`matmul_once`] in `layout`: the start-up kernel check runs the layout
/// the device's models will.
pub async fn matmul_once_in(
    layout: Layout,
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>, GpuError> {
    let a_buf = ctx.upload("a", a)?;
    let b_buf = ctx.upload("b", b)?;
    let bias_buf = bias.map(|v| ctx.upload("bias", v)).transpose()?;
    let c_buf = ctx.zeros("c", (desc.m * desc.n) as usize)?;
    let k = layout.bind(
        ctx,
        registry,
        desc,
        &a_buf,
        &b_buf,
        bias_buf.as_ref().map(View::from),
        &c_buf,
    )?;
    crate::kernel::submit(ctx, "matmul_once", &[&k]);
    ctx.read_f32(&c_buf, (desc.m * desc.n) as usize).await
}

/// CPU reference of the same op, in f64 accumulation.
pub fn matmul_reference(desc: MatmulDesc, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let (m, k, n) = (desc.m as usize, desc.k as usize, desc.n as usize);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for kk in 0..k {
                let av = if desc.trans_a {
                    a[kk * m + i]
                } else {
                    a[i * k + kk]
                };
                let bv = if desc.trans_b {
                    b[j * k + kk]
                } else {
                    b[kk * n + j]
                };
                acc += av as f64 * bv as f64;
            }
            if let Some(bias) = bias {
                acc += bias[j] as f64;
            }
            c[i * n + j] = acc as f32;
        }
    }
    c
}

/// The device-emulating golden of the f16-storage kernels (seed 004 §2):
/// `W` rounded to f16 by round-to-nearest-even as the packer does, each
/// output summed in an f32 register in K order 0, 1, 2, … from zero — the
/// tiled kernel's order — then the bias added in f32. WGSL's `fma` may or
/// may not fuse (lavapipe rounds the product first), so `fused` picks the
/// device's: the tiled kernel then matches bit for bit. Any kernel stays
/// within [`f32_order_bound`] of it whatever its order (the GEMVs sum lanes
/// first); anything more is a kernel bug, never f16 drift.
pub fn f16w_golden(
    desc: MatmulDesc,
    a: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    fused: bool,
) -> Vec<f32> {
    let (m, k, n) = (desc.m as usize, desc.k as usize, desc.n as usize);
    let w16: Vec<f32> = w.iter().map(|&v| half::f16::from_f32(v).to_f32()).collect();
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for kk in 0..k {
                let (x, y) = (a[i * k + kk], w16[j * k + kk]);
                acc = if fused {
                    x.mul_add(y, acc)
                } else {
                    acc + x * y
                };
            }
            c[i * n + j] = acc + bias.map_or(0.0, |b| b[j]);
        }
    }
    c
}

/// How far an f32 sum of `desc`'s products may land from [`f16w_golden`]
/// in another order, per output: `K · 2⁻²⁴ · Σ|a·w₁₆|` (the classic bound
/// on reordering a length-K f32 sum) plus one rounding of the bias add.
pub fn f32_order_bound(desc: MatmulDesc, a: &[f32], w: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let (m, k, n) = (desc.m as usize, desc.k as usize, desc.n as usize);
    let u = f32::EPSILON as f64 / 2.0;
    let mut out = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut mag = 0.0f64;
            for kk in 0..k {
                let w16 = half::f16::from_f32(w[j * k + kk]).to_f32();
                mag += (a[i * k + kk] * w16).abs() as f64;
            }
            let b = bias.map_or(0.0, |b| b[j].abs() as f64);
            out[i * n + j] = ((k as f64 + 1.0) * u * (mag + b)) as f32;
        }
    }
    out
}
