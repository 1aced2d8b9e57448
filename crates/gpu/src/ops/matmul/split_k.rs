//! The K-split matmul: partial products of K slices into a scratch, then
//! their ordered sum.

use super::desc::{check_operands, MatmulDesc, TileKernel};
use super::kernels::{KT, KT_SMALL, MATMUL_REDUCE, REDUCE_THREADS};
use super::tiled::bind_matmul;
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_dim, grid, shape_error};
use crate::ops::{BoundOp, View};
use crate::registry::PipelineRegistry;
use crate::{GpuContext, GpuError};

/// Binds `desc` split along K through `scratch` when the shape gains from it
/// ([`MatmulDesc::split_k_slices`]) and `scratch` holds two or more `(M, N)`
/// slices: workgroup z of the tiled kernel writes the partial product of
/// its K range to slice z, then `reduce_slices` adds the slices in order
/// (and the bias, and C when accumulating) into C. Otherwise (or without a
/// scratch) the plain [`bind_matmul`]. Ops sharing one scratch buffer must
/// run one after the other, as the ops of one pass do.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_split_k<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
    scratch: Option<&wgpu::Buffer>,
) -> Result<BoundOp, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    let slab = desc.m as u64 * desc.n as u64;
    let fit = scratch.map_or(0, |s| s.size() / 4 / slab.max(1));
    let split = desc.split_k();
    let wanted = split.slices.min(fit.min(u32::MAX as u64) as u32);
    let Some(scratch) = scratch.filter(|_| wanted >= 2) else {
        return Ok(bind_matmul(ctx, registry, desc, a, b, bias, c)?.into());
    };
    check_operands("matmul", &desc, a, (Some(b), b.buffer), bias, c)?;
    check_scratch("matmul", scratch, [a, b, c], bias)?;
    // Slices are multiples of the kernel's K step.
    let (kernel, k_step) = if split.small_tiles {
        (TileKernel::Small, KT_SMALL)
    } else {
        (TileKernel::General, KT)
    };
    let k_chunk = desc.k.div_ceil(wanted).next_multiple_of(k_step);
    let slices = desc.k.div_ceil(k_chunk);
    let [x, y, _] = kernel.grid(ctx, &desc);
    check_dim(ctx, "matmul", "K slices", slices)?;
    let partial = MatmulDesc {
        bias: false,
        accumulate: false,
        ..desc
    };
    let offsets = [a.offset, b.offset, a.offset, 0];
    let uniform = partial
        .params(offsets, [k_chunk, slices], 0)
        .upload(ctx, "matmul_split_k_params");
    let buffers = [(1, a.buffer), (2, b.buffer), (3, a.buffer), (4, scratch)];
    let stage1 = bind_kernel(
        ctx,
        registry,
        kernel.source(),
        &uniform,
        &buffers,
        [x, y, slices],
    );
    let stage2 = bind_reduce(ctx, registry, desc, slices, scratch, bias, c);
    Ok(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![scratch.clone()],
    })
}

/// Refuses a split-K `scratch` that is also one of the operands.
pub(super) fn check_scratch(
    op: &'static str,
    scratch: &wgpu::Buffer,
    [a, b, c]: [View<'_>; 3],
    bias: Option<View<'_>>,
) -> Result<(), GpuError> {
    let mut operands = [a, b, c].into_iter().chain(bias);
    if operands.any(|v| v.buffer == scratch) {
        return Err(shape_error(
            op,
            "the split-K scratch is also an operand".into(),
        ));
    }
    Ok(())
}

/// The ordered sum of the `slices` `(M, N)` slices in `scratch` into C,
/// with the bias and, when `desc` accumulates, C's contents.
pub(super) fn bind_reduce(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    slices: u32,
    scratch: &wgpu::Buffer,
    bias: Option<View<'_>>,
    c: View<'_>,
) -> BoundKernel {
    // An unused bias binding still needs a buffer: the scratch is read-only here.
    let bias = bias.unwrap_or(View::from(scratch));
    let offsets = [0, 0, bias.offset, c.offset];
    let uniform = desc
        .params(offsets, [0, slices], 0)
        .upload(ctx, "matmul_reduce_params");
    let buffers = [(1, scratch), (3, bias.buffer), (4, c.buffer)];
    let slab = desc.m * desc.n;
    let groups = grid(ctx, slab.div_ceil(REDUCE_THREADS));
    bind_kernel(ctx, registry, &MATMUL_REDUCE, &uniform, &buffers, groups)
}
