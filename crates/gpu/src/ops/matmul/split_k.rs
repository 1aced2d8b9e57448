//! The K-split matmul: partial products of K slices into a scratch, then
//! their ordered sum — for a weight gradient with its bias gradient (the
//! row sums of op(A)) in the same two dispatches.

use super::desc::{check_operands, MatmulDesc, MatmulParams, TileKernel};
use super::kernels::{
    HAS_BIAS, KT, KT_SMALL, MATMUL_F32_SMALL_ROW_SUMS, MATMUL_REDUCE, MATMUL_REDUCE_TABLE,
    REDUCE_THREADS, ROW_SUMS,
};
use super::tiled::bind_matmul;
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_dim, check_no_alias, grid, shape_error};
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
    check_row_sums(&desc, c, row_sums)?;
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
    operands: [View<'a>; 3],
    bias: Option<View<'a>>,
    scratch: Option<&wgpu::Buffer>,
    row_sums: Option<View<'a>>,
) -> Result<Option<BoundOp>, GpuError> {
    let Some(scratch) = scratch else {
        return Ok(None);
    };
    let split = bind_first_stage(
        ctx,
        registry,
        desc,
        operands,
        bias,
        scratch.into(),
        row_sums,
    )?;
    let Some((stage1, reduce)) = split else {
        return Ok(None);
    };
    let bias = bias.map_or(scratch, |b| b.buffer);
    let stage2 = bind_reduce_params(ctx, registry, reduce, scratch, bias, operands[2].buffer);
    Ok(Some(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![scratch.clone()],
    }))
}

/// [`bind_matmul_split_k_row_sums`] (with `row_sums`) or
/// [`bind_matmul_split_k`] (without; no bias) with its second stage left
/// to the caller: the partial products into `scratch` from its offset (as
/// many slices as fit before the buffer's end: a region of
/// `memory::split_region_floats` holds them all), and the reduce's words, for
/// [`bind_reduce_table`] to run with others in one dispatch. `None` where it
/// does not split.
pub fn bind_split_k_deferred<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    [a, b, c]: [View<'a>; 3],
    row_sums: Option<View<'a>>,
    scratch: View<'a>,
) -> Result<Option<(BoundKernel, SplitReduce)>, GpuError> {
    if let Some(sums) = row_sums {
        check_row_sums(&desc, c, sums)?;
    }
    let split = bind_first_stage(ctx, registry, desc, [a, b, c], None, scratch, row_sums)?;
    Ok(split.map(|(k, params)| (k, SplitReduce(params))))
}

/// A split product's second stage as [`bind_split_k_deferred`] leaves it:
/// its reduce's words.
#[derive(Clone, Copy, Debug)]
pub struct SplitReduce(MatmulParams);

/// A split's first stage (the partial products of its K slices into
/// `scratch` from its offset, as many slices as fit there) and its
/// reduce's words; `None` where it does not split.
fn bind_first_stage<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    [a, b, c]: [View<'a>; 3],
    bias: Option<View<'a>>,
    scratch: View<'a>,
    row_sums: Option<View<'a>>,
) -> Result<Option<(BoundKernel, MatmulParams)>, GpuError> {
    let sums = row_sums.map_or(0, |_| desc.m as u64);
    let slab = desc.m as u64 * desc.n as u64 + sums;
    let room = (scratch.buffer.size() / 4).saturating_sub(scratch.offset as u64);
    let fit = room / slab.max(1);
    let split = desc.split_k();
    let wanted = split.slices.min(fit.min(u32::MAX as u64) as u32);
    // Row sums only on the small-output kernel (its SUMS_ROWS pipeline).
    if wanted < 2 || !(split.small_tiles || row_sums.is_none()) {
        return Ok(None);
    }
    check_operands("matmul", &desc, a, (Some(b), b.buffer), bias, c)?;
    check_scratch("matmul", scratch.buffer, [a, b, c], bias)?;
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
    let offsets = [a.offset, b.offset, a.offset, scratch.offset];
    let uniform = partial
        .params(offsets, [k_chunk, slices], 0)
        .upload(ctx, "matmul_split_k_params");
    let buffers = [
        (1, a.buffer),
        (2, b.buffer),
        (3, a.buffer),
        (4, scratch.buffer),
    ];
    let source = match row_sums {
        None => kernel.source(),
        Some(_) => &MATMUL_F32_SMALL_ROW_SUMS,
    };
    let stage1 = bind_kernel(ctx, registry, source, &uniform, &buffers, [x, y, slices]);
    let reduce = reduce_params(desc, (slices, scratch.offset), bias, c, row_sums);
    Ok(Some((stage1, reduce)))
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

/// Refuses row sums too short, or outside C's buffer, or overlapping C.
fn check_row_sums(desc: &MatmulDesc, c: View<'_>, row_sums: View<'_>) -> Result<(), GpuError> {
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
    Ok(())
}

/// The words of the ordered sum of the `slices` `(M, N)` slices at
/// `scratch_off` into C, with the bias and, when `desc` accumulates, C's
/// contents; and with `row_sums` (in C's buffer) the slices' row sums into
/// it.
fn reduce_params(
    desc: MatmulDesc,
    (slices, scratch_off): (u32, u32),
    bias: Option<View<'_>>,
    c: View<'_>,
    row_sums: Option<View<'_>>,
) -> MatmulParams {
    let bias_off = bias.map_or(0, |b| b.offset);
    let offsets = [scratch_off, 0, bias_off, c.offset];
    let flags = row_sums.map_or(0, |_| ROW_SUMS);
    let mut params = desc.params(offsets, [0, slices], flags);
    params.aux[0] = row_sums.map_or(0, |v| v.offset);
    params
}

/// The elements a reduce of `params` computes: C's, then its row sums.
fn reduce_len(params: &MatmulParams) -> u32 {
    let sums = (params.flags & ROW_SUMS != 0) as u32 * params.m;
    params.m * params.n + sums
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
    let params = reduce_params(desc, (slices, 0), bias, c, row_sums);
    // An unused bias binding still needs a buffer: the scratch is read-only here.
    let bias = bias.map_or(scratch, |b| b.buffer);
    bind_reduce_params(ctx, registry, params, scratch, bias, c.buffer)
}

/// Binds one reduce (`params`) of the slices in `scratch` into `c`'s
/// buffer, the bias (when its flag is set) read from `bias`.
fn bind_reduce_params(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    params: MatmulParams,
    scratch: &wgpu::Buffer,
    bias: &wgpu::Buffer,
    c: &wgpu::Buffer,
) -> BoundKernel {
    let uniform = params.upload(ctx, "matmul_reduce_params");
    let buffers = [(1, scratch), (3, bias), (4, c)];
    let groups = grid(ctx, reduce_len(&params).div_ceil(REDUCE_THREADS));
    bind_kernel(ctx, registry, &MATMUL_REDUCE, &uniform, &buffers, groups)
}

/// Binds the reduces of [`bind_split_k_deferred`]'s splits in one
/// dispatch (workgroup z runs `reductions[z]`): every split's slices in
/// `scratch`, every C in `c`, none with a bias.
pub fn bind_reduce_table(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    reductions: &[SplitReduce],
    scratch: &wgpu::Buffer,
    c: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let op = "matmul_reduce";
    let reductions: Vec<MatmulParams> = reductions.iter().map(|r| r.0).collect();
    if reductions.is_empty() {
        return Err(shape_error(op, "no reduces given".into()));
    }
    if reductions.iter().any(|r| r.flags & HAS_BIAS != 0) {
        return Err(shape_error(op, "a reduce in a table has a bias".into()));
    }
    check_no_alias(op, &[("c", c)], &[("scratch", scratch)])?;
    check_dim(ctx, op, "reductions", reductions.len() as u32)?;
    let longest = reductions.iter().map(reduce_len).max().unwrap_or(0);
    let [x, y, _] = grid(ctx, longest.div_ceil(REDUCE_THREADS));
    let table = ctx.upload_bytes("matmul_reduce_table", bytemuck::cast_slice(&reductions))?;
    // The uniform's slices: the table's length (each reduce's own words are
    // in the table).
    let count = MatmulDesc::default().params([0; 4], [0, reductions.len() as u32], 0);
    let uniform = count.upload(ctx, "matmul_reduce_table_params");
    let buffers = [(1, scratch), (3, scratch), (4, c), (5, &table)];
    let groups = [x, y, reductions.len() as u32];
    Ok(bind_kernel(
        ctx,
        registry,
        &MATMUL_REDUCE_TABLE,
        &uniform,
        &buffers,
        groups,
    ))
}
