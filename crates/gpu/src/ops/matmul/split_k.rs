//! The K-split matmul: partial products of K slices into a scratch, then
//! their ordered sum — for a weight gradient with its bias gradient (the
//! row sums of op(A)) in the same two dispatches.

use super::desc::{check_operands, MatmulDesc, TileKernel};
use super::kernels::{
    KT, KT_SMALL, MATMUL_F32_SMALL_ROW_SUMS, MATMUL_REDUCE, REDUCE_THREADS, ROW_SUMS,
};
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
    match bind_split(ctx, registry, desc, [a, b, c], bias, scratch, None)? {
        Some(op) => Ok(op),
        None => Ok(bind_matmul(ctx, registry, desc, a, b, bias, c)?.into()),
    }
}

/// [`bind_matmul_split_k`] that also adds the row sums of op(A),
/// `row_sums[row] (+)= Σ_k op(A)[row, k]` (accumulating as C does), in the
/// same two dispatches (the small-output kernel's `SUMS_ROWS` pipeline,
/// then the reduce with `ROW_SUMS`): a weight gradient `dW = dyᵀ·x` with
/// its bias gradient `Σ_rows dy`. `row_sums` (M floats) lies in C's
/// buffer, apart from C. `None`, binding nothing, where the shape is not
/// split or splits on the 64×64 kernel (row sums there measured slower on
/// the H200: BENCHMARKS.md): the caller sums the rows apart.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_split_k_row_sums<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    c: impl Into<View<'a>>,
    row_sums: View<'a>,
    scratch: Option<&wgpu::Buffer>,
) -> Result<Option<BoundOp>, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    row_sums.need("matmul", "row sums", desc.m as u64)?;
    let (c_end, sums_end) = (
        c.offset as u64 + desc.m as u64 * desc.n as u64,
        row_sums.offset as u64 + desc.m as u64,
    );
    let apart = sums_end <= c.offset as u64 || c_end <= row_sums.offset as u64;
    if row_sums.buffer != c.buffer || !apart {
        return Err(shape_error(
            "matmul",
            "the row sums must lie in C's buffer, apart from C".into(),
        ));
    }
    bind_split(
        ctx,
        registry,
        desc,
        [a, b, c],
        None,
        scratch,
        Some(row_sums),
    )
}

/// The split of [`bind_matmul_split_k`], with the row sums when given;
/// `None` where it does not split.
fn bind_split<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    [a, b, c]: [View<'a>; 3],
    bias: Option<View<'a>>,
    scratch: Option<&wgpu::Buffer>,
    row_sums: Option<View<'a>>,
) -> Result<Option<BoundOp>, GpuError> {
    let sums = row_sums.map_or(0, |_| desc.m as u64);
    let slab = desc.m as u64 * desc.n as u64 + sums;
    let fit = scratch.map_or(0, |s| s.size() / 4 / slab.max(1));
    let split = desc.split_k();
    let wanted = split.slices.min(fit.min(u32::MAX as u64) as u32);
    // Row sums only on the small-output kernel (its SUMS_ROWS pipeline).
    let Some(scratch) =
        scratch.filter(|_| wanted >= 2 && (split.small_tiles || row_sums.is_none()))
    else {
        return Ok(None);
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
    let source = match row_sums {
        None => kernel.source(),
        Some(_) => &MATMUL_F32_SMALL_ROW_SUMS,
    };
    let stage1 = bind_kernel(ctx, registry, source, &uniform, &buffers, [x, y, slices]);
    let stage2 = bind_reduce(ctx, registry, desc, slices, scratch, bias, c, row_sums);
    Ok(Some(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![scratch.clone()],
    }))
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
/// with the bias and, when `desc` accumulates, C's contents; and with
/// `row_sums` (in C's buffer) the slices' row sums into it.
#[allow(clippy::too_many_arguments)]
pub(super) fn bind_reduce(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    slices: u32,
    scratch: &wgpu::Buffer,
    bias: Option<View<'_>>,
    c: View<'_>,
    row_sums: Option<View<'_>>,
) -> BoundKernel {
    // An unused bias binding still needs a buffer: the scratch is read-only here.
    let bias = bias.unwrap_or(View::from(scratch));
    let offsets = [0, 0, bias.offset, c.offset];
    let flags = row_sums.map_or(0, |_| ROW_SUMS);
    let mut params = desc.params(offsets, [0, slices], flags);
    params.aux[0] = row_sums.map_or(0, |v| v.offset);
    let uniform = params.upload(ctx, "matmul_reduce_params");
    let buffers = [(1, scratch), (3, bias.buffer), (4, c.buffer)];
    let slab = desc.m * desc.n + row_sums.map_or(0, |_| desc.m);
    let groups = grid(ctx, slab.div_ceil(REDUCE_THREADS));
    bind_kernel(ctx, registry, &MATMUL_REDUCE, &uniform, &buffers, groups)
}
