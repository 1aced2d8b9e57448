//! The bias gradient `db (cols) (+)= Σ_rows dout (rows, cols)` as a
//! deterministic two-stage column sum (no float atomics in WebGPU): chunks
//! of [`rows_per_chunk`] rows into partials, then the partials into `db`.
//! The matmul kernel computes `dW` and `dX`; this completes a linear layer's
//! backward.

use super::common::{bind_kernel, check_dim, check_no_alias, shape_error, uniform, BoundOp, View};
use crate::kernel::{BoundKernel, Layout};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
/// The chunks of a column sum's first stage (the memory plan counts them).
pub use tinygpt_protocol::memory::{row_chunks as chunks, rows_per_chunk};

/// bias_grad.wgsl with its chunks' tree (column_chunk.wgsl).
const COLUMN_SUM_WGSL: &str = concat!(
    include_str!("../../../../shaders/bias_grad.wgsl"),
    include_str!("../../../../shaders/column_chunk.wgsl")
);

pub const COLUMN_SUM: KernelSource = KernelSource {
    key: "column_sum_chunked",
    wgsl: COLUMN_SUM_WGSL,
    entry: "main",
    constants: &[],
};

/// [`COLUMN_SUM`] in the [`Layout::Cpu`] layout: a column per invocation.
pub const COLUMN_SUM_SERIAL: KernelSource = KernelSource {
    key: "column_sum_serial",
    wgsl: COLUMN_SUM_WGSL,
    entry: "main_serial",
    constants: &[],
};

/// Columns per workgroup of the column-sum kernel.
const COLUMNS_PER_WORKGROUP: u32 = 32;

/// `db (cols) (+)= Σ_rows dout (rows, cols)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BiasGradDesc {
    pub rows: u32,
    pub cols: u32,
    /// Add into `db` (the CPU convention) instead of overwriting it.
    pub accumulate: bool,
    /// Lanes and a tree per column (`Gpu`) or a column per invocation.
    pub layout: Layout,
}

/// One column sum of [`bind_column_sums`]: `dst[chunk, :] (+)= Σ_{r in
/// chunk} src[r, :]` over `cols` columns (`src (rows, cols)`, `dst
/// (chunks, cols)`), added onto `dst` when `accumulate`.
#[derive(Clone, Copy, Debug)]
pub struct ColumnSum<'a> {
    pub src: View<'a>,
    pub dst: View<'a>,
    pub cols: u32,
    pub accumulate: bool,
}

/// One dispatch: `dst[chunk, :] (+)= Σ_{r in chunk} src[r, :]` for `src
/// (rows, cols)` in chunks of `rows_per_chunk` rows (`dst (chunks, cols)`),
/// for each of `sums` — one `(src, dst)` pair, or several whose sources
/// share a buffer and whose destinations share another (LayerNorm's dw and
/// db: one dispatch instead of two). `layout` picks 8 lanes per column and
/// a tree, or one invocation per column.
#[allow(clippy::too_many_arguments)]
pub fn bind_column_sum<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    layout: Layout,
    rows: u32,
    cols: u32,
    rows_per_chunk: u32,
    accumulate: bool,
    sums: &[(View<'a>, View<'a>)],
) -> Result<BoundKernel, GpuError> {
    let sums: Vec<ColumnSum> = sums
        .iter()
        .map(|&(src, dst)| ColumnSum {
            src,
            dst,
            cols,
            accumulate,
        })
        .collect();
    bind_column_sums(ctx, registry, layout, rows, rows_per_chunk, &sums)
}

/// [`bind_column_sum`] of sums of the same rows, each with its own columns
/// and accumulation (workgroup z computes sum z): every source in one
/// buffer, every destination in another.
pub fn bind_column_sums(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    layout: Layout,
    rows: u32,
    rows_per_chunk: u32,
    sums: &[ColumnSum<'_>],
) -> Result<BoundKernel, GpuError> {
    let op = "column_sum";
    let first = sums
        .first()
        .ok_or_else(|| shape_error(op, "no sums given".into()))?;
    let (src_buf, dst_buf) = (first.src.buffer, first.dst.buffer);
    if sums
        .iter()
        .any(|s| s.src.buffer != src_buf || s.dst.buffer != dst_buf)
    {
        let msg = format!(
            "{} sums given; their sources must share one buffer and their destinations another",
            sums.len()
        );
        return Err(shape_error(op, msg));
    }
    let rows_per_chunk = rows_per_chunk.max(1);
    let n_chunks = rows.div_ceil(rows_per_chunk).max(1);
    let mut table = Vec::with_capacity(4 * sums.len());
    for s in sums {
        s.src.need(op, "src", rows as u64 * s.cols as u64)?;
        s.dst.need(op, "dst", n_chunks as u64 * s.cols as u64)?;
        table.extend([s.src.offset, s.dst.offset, s.cols, s.accumulate as u32]);
    }
    check_no_alias(op, &[("dst", dst_buf)], &[("src", src_buf)])?;
    check_dim(ctx, op, "row chunks", n_chunks)?;
    check_dim(ctx, op, "sums", sums.len() as u32)?;
    let params = uniform(ctx, "column_sum_params", &[rows, rows_per_chunk, 0, 0]);
    let table = ctx.upload_bytes("column_sum_table", bytemuck::cast_slice(&table))?;
    let cols = sums.iter().map(|s| s.cols).max().unwrap_or(0);
    let (src, per_group) = match layout {
        Layout::Gpu => (&COLUMN_SUM, COLUMNS_PER_WORKGROUP),
        Layout::Cpu => (&COLUMN_SUM_SERIAL, 64),
    };
    let buffers = [(1, src_buf), (2, dst_buf), (3, &table)];
    let groups = [cols.div_ceil(per_group), n_chunks, sums.len() as u32];
    Ok(bind_kernel(ctx, registry, src, &params, &buffers, groups))
}

/// Binds `db (cols) (+)= Σ_rows dout (rows, cols)`: one dispatch when the rows
/// fit one chunk, else two through a scratch buffer the op owns.
pub fn bind_bias_grad<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: BiasGradDesc,
    dout: impl Into<View<'a>>,
    db: impl Into<View<'a>>,
) -> Result<BoundOp, GpuError> {
    let partials = ctx.zeros("bias_grad_partials", bias_grad_partials(desc) as usize)?;
    let (first, second) = bind_bias_grad_deferred(
        ctx,
        registry,
        desc,
        dout.into(),
        db.into(),
        (&partials).into(),
    )?;
    let Some(second) = second else {
        return Ok(first.into());
    };
    let (rows, layout) = (chunks(desc.rows), desc.layout);
    let stage2 = bind_column_sums(ctx, registry, layout, rows, rows, &[second])?;
    Ok(BoundOp {
        kernels: vec![first, stage2],
        scratch: vec![partials],
    })
}

/// Floats of the partials [`bind_bias_grad_deferred`] writes: `(chunks,
/// cols)` where the rows take more than one chunk, else none.
pub fn bias_grad_partials(desc: BiasGradDesc) -> u32 {
    match chunks(desc.rows) {
        0 | 1 => 0,
        n => n * desc.cols,
    }
}

/// [`bind_bias_grad`] with its second stage left to the caller: the one
/// dispatch where the rows fit one chunk (`None` after it); else the first
/// stage into `partials` ([`bias_grad_partials`] floats) and the second as
/// a [`ColumnSum`] of `chunks(rows)` rows, for [`bind_column_sums`] to
/// finish with others of as many rows in one dispatch.
pub fn bind_bias_grad_deferred<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: BiasGradDesc,
    dout: View<'a>,
    db: View<'a>,
    partials: View<'a>,
) -> Result<(BoundKernel, Option<ColumnSum<'a>>), GpuError> {
    if desc.cols == 0 {
        return Err(shape_error("bias_grad", format!("{desc:?} has no columns")));
    }
    let (rows, cols, layout) = (desc.rows, desc.cols, desc.layout);
    let n_chunks = chunks(rows);
    if n_chunks <= 1 {
        let sum = [(dout, db)];
        let k = bind_column_sum(
            ctx,
            registry,
            layout,
            rows,
            cols,
            rows,
            desc.accumulate,
            &sum,
        )?;
        return Ok((k, None));
    }
    let sum = [(dout, partials)];
    let per = rows_per_chunk(rows);
    let stage1 = bind_column_sum(ctx, registry, layout, rows, cols, per, false, &sum)?;
    let second = ColumnSum {
        src: partials,
        dst: db,
        cols,
        accumulate: desc.accumulate,
    };
    Ok((stage1, Some(second)))
}
