//! The launch floor's kernels (`tinygpt bench`'s `floor` row): what one
//! dispatch costs on an adapter with nothing to do, and with a barrier
//! before it, so every other figure reads as dispatches × floor + work;
//! and what a barrier across the workgroups of one persistent dispatch
//! costs (`grid_sync.wgsl`), the alternative to a dispatch per step.

use crate::kernel::BoundKernel;
use crate::ops::common::bind_kernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

const WGSL: &str = concat!(
    include_str!("../../../../shaders/floor.wgsl"),
    include_str!("../../../../shaders/grid_sync.wgsl")
);

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

/// `n` barriers across every workgroup of the dispatch, each checking its
/// neighbour's write from before the barrier.
pub const FLOOR_GRID: KernelSource = KernelSource {
    key: "floor_grid",
    wgsl: WGSL,
    entry: "grid",
    constants: &[],
};

/// What a grid of barriers leaves in its `sync` buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridSync {
    /// Barriers completed (the generation, modulo 2¹⁶).
    pub generation: u32,
    /// Arrivals at an unfinished barrier: zero after a clean dispatch.
    pub pending: u32,
    /// A wait gave up: the workgroups were not all resident.
    pub gave_up: bool,
    /// Reads after a barrier that missed a write from before it.
    pub stale: u32,
}

impl GridSync {
    /// Bytes of the `sync` buffer.
    pub const BYTES: usize = 16;

    /// Reads a `sync` buffer's bytes.
    pub fn parse(bytes: &[u8]) -> Self {
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        Self {
            generation: words[0] >> 16,
            pending: words[0] & 0xffff,
            gave_up: words[1] != 0,
            stale: words[2],
        }
    }
}

/// Binds `barriers` grid barriers across `groups` workgroups of 256
/// invocations: `x` holds two f32 a workgroup, `sync` [`GridSync::BYTES`]
/// (zeros at first; every barrier leaves its count at zero).
pub fn bind_floor_grid(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (barriers, groups): (u32, u32),
    x: &wgpu::Buffer,
    sync: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    if groups == 0 || groups > 0xffff || x.size() < 8 * groups as u64 {
        return Err(GpuError::Shape {
            op: "floor_grid",
            detail: format!(
                "{groups} workgroups need 1..65535 and {} bytes of x",
                8 * groups
            ),
        });
    }
    let uniform = ctx.uniform("floor_params", bytemuck::cast_slice(&[barriers, 0, 0, 0]));
    Ok(bind_kernel(
        ctx,
        registry,
        &FLOOR_GRID,
        &uniform,
        &[(1, x), (2, sync)],
        [groups, 1, 1],
    ))
}

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
