//! The launch floor's kernels (`tinygpt bench`'s `floor` row): what one
//! dispatch costs on an adapter with nothing to do, and with a barrier
//! before it, so every other figure reads as dispatches × floor + work.

use crate::kernel::BoundKernel;
use crate::ops::common::bind_kernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

const WGSL: &str = include_str!("../../../../shaders/floor.wgsl");

/// One invocation that does nothing.
pub const FLOOR_NOOP: KernelSource = KernelSource {
    key: "floor_noop",
    wgsl: WGSL,
    entry: "noop",
    constants: &[],
};

/// One invocation that adds into `x[0]`: back to back, each waits on a
/// barrier for the previous one's write.
pub const FLOOR_TOUCH: KernelSource = KernelSource {
    key: "floor_touch",
    wgsl: WGSL,
    entry: "touch",
    constants: &[],
};

/// Binds one floor dispatch over `x` (one f32 or more): `touch` writes it,
/// `noop` only binds it.
pub fn bind_floor(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    touch: bool,
    x: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let uniform = ctx.uniform("floor_params", bytemuck::cast_slice(&[1u32, 0, 0, 0]));
    let (src, buffers): (_, &[(u32, &wgpu::Buffer)]) = if touch {
        (&FLOOR_TOUCH, &[(1, x)])
    } else {
        (&FLOOR_NOOP, &[])
    };
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &uniform,
        buffers,
        [1, 1, 1],
    ))
}
