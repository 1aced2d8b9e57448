//! Residual connections: `y = a + b` forward, and `acc += b` for the
//! backward, where a branch's gradient joins the stream's.

use super::common::{bind_kernel, check_no_alias, grid, uniform, View};
use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const RESIDUAL_FORWARD: KernelSource = KernelSource {
    key: "residual_forward",
    wgsl: include_str!("../../../../shaders/residual.wgsl"),
    entry: "forward",
    constants: &[],
};

pub const RESIDUAL_ACCUMULATE: KernelSource = KernelSource {
    key: "residual_accumulate",
    wgsl: include_str!("../../../../shaders/residual.wgsl"),
    entry: "accumulate",
    constants: &[],
};

/// Binds `y (n) = a (n) + b (n)`, overwriting `y`.
pub fn bind_residual_forward<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    n: u32,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    y: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let (a, b, y) = (a.into(), b.into(), y.into());
    a.need("residual", "a", n as u64)?;
    b.need("residual", "b", n as u64)?;
    y.need("residual", "y", n as u64)?;
    check_no_alias(
        "residual",
        &[("y", y.buffer)],
        &[("a", a.buffer), ("b", b.buffer)],
    )?;
    let params = uniform(ctx, "residual_params", &[n, a.offset, b.offset, y.offset]);
    Ok(bind_kernel(
        ctx,
        registry,
        &RESIDUAL_FORWARD,
        &params,
        &[(1, a.buffer), (2, b.buffer), (3, y.buffer)],
        grid(ctx, n.div_ceil(256)),
    ))
}

/// Binds `acc (n) += b (n)`. `acc` and `b` must be different buffers (WebGPU
/// refuses a dispatch that reads a buffer it also writes).
pub fn bind_residual_accumulate<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    n: u32,
    acc: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let (acc, b) = (acc.into(), b.into());
    acc.need("residual_accumulate", "acc", n as u64)?;
    b.need("residual_accumulate", "b", n as u64)?;
    check_no_alias(
        "residual_accumulate",
        &[("acc", acc.buffer)],
        &[("b", b.buffer)],
    )?;
    let params = uniform(
        ctx,
        "residual_accumulate_params",
        &[n, acc.offset, b.offset, 0],
    );
    Ok(bind_kernel(
        ctx,
        registry,
        &RESIDUAL_ACCUMULATE,
        &params,
        &[(2, b.buffer), (4, acc.buffer)],
        grid(ctx, n.div_ceil(256)),
    ))
}
