//! The bias gradient `db (cols) (+)= Σ_rows dout (rows, cols)` as a
//! deterministic two-stage column sum (no float atomics in WebGPU): chunks
//! of [`rows_per_chunk`] rows into partials, then the partials into `db`.
//! The matmul kernel computes `dW` and `dX`; this completes a linear layer's
//! backward.

use super::common::{bind_kernel, check_dim, check_no_alias, shape_error, uniform, BoundOp, View};
use crate::kernel::{BoundKernel, Layout};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const COLUMN_SUM: KernelSource = KernelSource {
    key: "column_sum_chunked",
    wgsl: include_str!("../../../../shaders/bias_grad.wgsl"),
    entry: "main",
    constants: &[],
};

/// [`COLUMN_SUM`] in the [`Layout::Cpu`] layout: a column per invocation.
pub const COLUMN_SUM_SERIAL: KernelSource = KernelSource {
    key: "column_sum_serial",
    wgsl: include_str!("../../../../shaders/bias_grad.wgsl"),
    entry: "main_serial",
    constants: &[],
};

/// Columns per workgroup of the column-sum kernel.
const COLUMNS_PER_WORKGROUP: u32 = 32;
/// Rows a workgroup's 8 lanes take per round of four loads each.
const ROWS_PER_ROUND: u32 = 32;
/// Fewest rows per chunk: below this a chunk is not worth a workgroup.
const MIN_ROWS_PER_CHUNK: u32 = 64;

/// Rows summed per partial in the first stage: about √rows, so that both
/// stages are equally short (128 rows and 128 chunks at `N = B·T` = 16 384),
/// a whole number of rounds, and at least 64.
pub fn rows_per_chunk(rows: u32) -> u32 {
    let root = (rows as f64).sqrt().ceil() as u32;
    root.next_multiple_of(ROWS_PER_ROUND)
        .max(MIN_ROWS_PER_CHUNK)
}

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

/// Number of row chunks, hence partial rows, for `rows` rows.
pub fn chunks(rows: u32) -> u32 {
    rows.div_ceil(rows_per_chunk(rows))
}

/// One dispatch: `dst[chunk, :] (+)= Σ_{r in chunk} src[r, :]` for `src
/// (rows, cols)` in chunks of `rows_per_chunk` rows (`dst (chunks, cols)`),
/// for each of `sums` — one `(src, dst)` pair, or two whose sources share a
/// buffer and whose destinations share another (LayerNorm's dw and db: one
/// dispatch instead of two). `layout` picks 8 lanes per column and a tree,
/// or one invocation per column.
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
    let (&(src, dst), rest) = sums
        .split_first()
        .ok_or_else(|| shape_error("column_sum", "no sums given".into()))?;
    let (src1, dst1) = match rest {
        [] => (src, dst),
        [(s, d)] if s.buffer == src.buffer && d.buffer == dst.buffer => (*s, *d),
        _ => {
            return Err(shape_error(
                "column_sum",
                format!(
                    "{} sums given; two must share their source and their destination buffers",
                    sums.len()
                ),
            ))
        }
    };
    let rows_per_chunk = rows_per_chunk.max(1);
    let n_chunks = rows.div_ceil(rows_per_chunk).max(1);
    for (src, dst) in [(src, dst), (src1, dst1)] {
        src.need("column_sum", "src", rows as u64 * cols as u64)?;
        dst.need("column_sum", "dst", n_chunks as u64 * cols as u64)?;
    }
    check_no_alias("column_sum", &[("dst", dst.buffer)], &[("src", src.buffer)])?;
    check_dim(ctx, "column_sum", "row chunks", n_chunks)?;
    let params = uniform(
        ctx,
        "column_sum_params",
        &[
            rows,
            cols,
            rows_per_chunk,
            accumulate as u32,
            src.offset,
            dst.offset,
            src1.offset,
            dst1.offset,
        ],
    );
    let src_buf = src.buffer;
    let (src, per_group) = match layout {
        Layout::Gpu => (&COLUMN_SUM, COLUMNS_PER_WORKGROUP),
        Layout::Cpu => (&COLUMN_SUM_SERIAL, 64),
    };
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &params,
        &[(1, src_buf), (2, dst.buffer)],
        [cols.div_ceil(per_group), n_chunks, sums.len() as u32],
    ))
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
    let (dout, db) = (dout.into(), db.into());
    if desc.cols == 0 {
        return Err(shape_error("bias_grad", format!("{desc:?} has no columns")));
    }
    let (rows, cols) = (desc.rows, desc.cols);
    let n_chunks = chunks(rows);
    if n_chunks <= 1 {
        let k = bind_column_sum(
            ctx,
            registry,
            desc.layout,
            rows,
            cols,
            rows,
            desc.accumulate,
            &[(dout, db)],
        )?;
        return Ok(k.into());
    }
    let partials = ctx.zeros("bias_grad_partials", (n_chunks * cols) as usize)?;
    let stage1 = bind_column_sum(
        ctx,
        registry,
        desc.layout,
        rows,
        cols,
        rows_per_chunk(rows),
        false,
        &[(dout, (&partials).into())],
    )?;
    let stage2 = bind_column_sum(
        ctx,
        registry,
        desc.layout,
        n_chunks,
        cols,
        n_chunks,
        desc.accumulate,
        &[((&partials).into(), db)],
    )?;
    Ok(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![partials],
    })
}
