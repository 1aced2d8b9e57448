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
