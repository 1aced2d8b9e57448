//! Exact (erf) GELU, forward and backward, as `gelu_forward` /
//! `gelu_backward` of `tinygpt_core::model::layers`.

use super::bias_grad::{chunks, rows_per_chunk};
use super::common::{bind_kernel, check_dim, check_no_alias, grid, shape_error, uniform, View};
use super::matmul::coop_stage::StagedRows;
use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// gelu.wgsl with erf.wgsl (the erf and GELU it shares with the GEMV
/// epilogue) and column_chunk.wgsl (the column sums' tree it shares with
/// the bias gradient), and without an f16 copy (copy16_none.wgsl).
const GELU_WGSL: &str = concat!(
    include_str!("../../../../shaders/gelu.wgsl"),
    include_str!("../../../../shaders/erf.wgsl"),
    include_str!("../../../../shaders/column_chunk.wgsl"),
    include_str!("../../../../shaders/copy16_none.wgsl")
);

/// The same writing the backward's dx's f16 copy too (copy16.wgsl,
/// copy16_write.wgsl).
const GELU_COPY16_WGSL: &str = concat!(
    include_str!("../../../../shaders/copy16.wgsl"),
    include_str!("../../../../shaders/gelu.wgsl"),
    include_str!("../../../../shaders/erf.wgsl"),
    include_str!("../../../../shaders/column_chunk.wgsl"),
    include_str!("../../../../shaders/copy16_write.wgsl")
);

/// Words of gelu.wgsl's uniform.
const PARAMS: usize = 12;

/// gelu.wgsl's uniform: `words`, the rest zero.
fn params(ctx: &GpuContext, label: &str, words: &[u32]) -> wgpu::Buffer {
    let mut all = [0u32; PARAMS];
    all[..words.len()].copy_from_slice(words);
    uniform(ctx, label, &all)
}

pub const GELU_FORWARD: KernelSource = KernelSource {
    key: "gelu_forward",
    wgsl: GELU_WGSL,
    entry: "forward",
    constants: &[],
};

pub const GELU_BACKWARD: KernelSource = KernelSource {
    key: "gelu_backward",
    wgsl: GELU_WGSL,
    entry: "backward",
    constants: &[],
};

/// Both at eight elements an invocation (large `n`: [`per_invocation`]).
pub const GELU_FORWARD_X8: KernelSource = KernelSource {
    key: "gelu_forward_x8",
    constants: &[("PER_INVOCATION", 8.0)],
    ..GELU_FORWARD
};
pub const GELU_BACKWARD_X8: KernelSource = KernelSource {
    key: "gelu_backward_x8",
    constants: &[("PER_INVOCATION", 8.0)],
    ..GELU_BACKWARD
};

/// The backward writing dx's f16 copy too, at one and eight elements an
/// invocation (`StagedRows::for_producer`).
pub const GELU_BACKWARD_COPY16: [KernelSource; 2] = [
    KernelSource {
        key: "gelu_backward_copy16",
        wgsl: GELU_COPY16_WGSL,
        ..GELU_BACKWARD
    },
    KernelSource {
        key: "gelu_backward_x8_copy16",
        wgsl: GELU_COPY16_WGSL,
        ..GELU_BACKWARD_X8
    },
];

/// The backward of a `(rows, cols)` matrix with the first stage of its
/// column sums (`backward_columns`: the bias gradient of the linear whose
/// output the GELU took, in the column sum's order and bits), plain and
/// writing dx's f16 copy too.
pub const GELU_BACKWARD_COLUMNS: [KernelSource; 2] = [
    KernelSource {
        key: "gelu_backward_columns",
        wgsl: GELU_WGSL,
        entry: "backward_columns",
        constants: &[],
    },
    KernelSource {
        key: "gelu_backward_columns_copy16",
        wgsl: GELU_COPY16_WGSL,
        entry: "backward_columns",
        constants: &[],
    },
];

/// Elements an invocation takes over `n` (gelu.wgsl's `PER_INVOCATION`, a
/// pipeline each): 8 where that still leaves at least 8,192 workgroups,
/// else 1. On the H200 (run 53) eight made nanoGPT's GELU backward 153 →
/// 131 µs (25 M elements) but tiny's 9.5 → 12.0 (1 M); the residual at
/// nanoGPT's shape (6.3 M) was slower with eight too (30.7 → 32.6) and
/// stays one element an invocation.
fn per_invocation(n: u32) -> u32 {
    match n >= 8 * 256 * 8192 {
        true => 8,
        false => 1,
    }
}

/// The kernel taking `per` elements an invocation, of `[one, eight]`.
fn variant(
    op: &'static str,
    per: u32,
    [one, eight]: [&'static KernelSource; 2],
) -> Result<&'static KernelSource, GpuError> {
    match per {
        1 => Ok(one),
        8 => Ok(eight),
        _ => Err(shape_error(
            op,
            format!("{per} elements an invocation: 1 or 8"),
        )),
    }
}

/// Binds `y (n) = gelu(x (n))`, overwriting `y`.
pub fn bind_gelu_forward<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    n: u32,
    x: impl Into<View<'a>>,
    y: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let per = per_invocation(n);
    bind_gelu_forward_per(ctx, registry, (n, per), x, y)
}

/// [`bind_gelu_forward`] taking `per` (1 or 8) elements an invocation
/// (tests run both).
pub fn bind_gelu_forward_per<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (n, per): (u32, u32),
    x: impl Into<View<'a>>,
    y: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let kernel = variant("gelu", per, [&GELU_FORWARD, &GELU_FORWARD_X8])?;
    let (x, y) = (x.into(), y.into());
    x.need("gelu", "x", n as u64)?;
    y.need("gelu", "y", n as u64)?;
    check_no_alias("gelu", &[("y", y.buffer)], &[("x", x.buffer)])?;
    let params = params(ctx, "gelu_params", &[n, 0, x.offset, y.offset]);
    Ok(bind_kernel(
        ctx,
        registry,
        kernel,
        &params,
        &[(1, x.buffer), (2, y.buffer)],
        grid(ctx, n.div_ceil(256 * per)),
    ))
}

/// Binds `dx (n) (+)= dy · gelu'(x)`: added into `dx` when `accumulate` (the
/// CPU convention), else overwriting it.
pub fn bind_gelu_backward<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    n: u32,
    accumulate: bool,
    x: impl Into<View<'a>>,
    dy: impl Into<View<'a>>,
    dx: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let per = per_invocation(n);
    bind_gelu_backward_per(ctx, registry, (n, per), accumulate, (x, dy), dx)
}

/// [`bind_gelu_backward`] taking `per` (1 or 8) elements an invocation
/// (tests run both).
pub fn bind_gelu_backward_per<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (n, per): (u32, u32),
    accumulate: bool,
    (x, dy): (impl Into<View<'a>>, impl Into<View<'a>>),
    dx: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let ops = (x.into(), dy.into(), dx.into());
    bind_backward(ctx, registry, (n, per), accumulate, ops, None)
}

/// [`bind_gelu_backward`] of a `(rows, cols)` matrix writing `dx`'s f16
/// copy too, `per` elements an invocation (None: as
/// [`bind_gelu_backward`] picks).
pub fn bind_gelu_backward_copy<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (rows, cols, per): (u32, u32, Option<u32>),
    accumulate: bool,
    (x, dy): (View<'a>, View<'a>),
    dx: View<'a>,
    copy: &StagedRows,
) -> Result<BoundKernel, GpuError> {
    let n = rows * cols;
    let per = per.unwrap_or_else(|| per_invocation(n));
    let copy = (copy, (rows, cols));
    bind_backward(ctx, registry, (n, per), accumulate, (x, dy, dx), Some(copy))
}

fn bind_backward(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (n, per): (u32, u32),
    accumulate: bool,
    (x, dy, dx): (View<'_>, View<'_>, View<'_>),
    copy: Option<(&StagedRows, (u32, u32))>,
) -> Result<BoundKernel, GpuError> {
    let kernels = match copy {
        Some(_) => [&GELU_BACKWARD_COPY16[0], &GELU_BACKWARD_COPY16[1]],
        None => [&GELU_BACKWARD, &GELU_BACKWARD_X8],
    };
    let kernel = variant("gelu_backward", per, kernels)?;
    let copy = match copy {
        Some((c, shape)) => Some(c.producer_binding("gelu_backward", dx, shape)?),
        None => None,
    };
    let [width, scale] = copy.map_or([0, 0], |(_, words)| words);
    x.need("gelu_backward", "x", n as u64)?;
    dy.need("gelu_backward", "dy", n as u64)?;
    dx.need("gelu_backward", "dx", n as u64)?;
    check_no_alias(
        "gelu_backward",
        &[("dx", dx.buffer)],
        &[("x", x.buffer), ("dy", dy.buffer)],
    )?;
    let params = params(
        ctx,
        "gelu_backward_params",
        &[
            n,
            accumulate as u32,
            x.offset,
            0,
            dy.offset,
            dx.offset,
            width,
            scale,
        ],
    );
    let mut bindings = vec![(1, x.buffer), (3, dy.buffer), (4, dx.buffer)];
    bindings.extend(copy.map(|(buffer, _)| (15, buffer)));
    let groups = grid(ctx, n.div_ceil(256 * per));
    Ok(bind_kernel(
        ctx, registry, kernel, &params, &bindings, groups,
    ))
}

/// [`bind_gelu_backward`] of a `(rows, cols)` matrix, overwriting `dx`, with
/// the first stage of its column sums into `partials` (the bias gradient's
/// `(chunks, cols)`: `bias_grad::bias_grad_partials`, the same bits as
/// `bias_grad::bind_bias_grad_deferred`'s first stage reading `dx`) and,
/// where given, dx's f16 copy. The rows must take more than one chunk.
pub fn bind_gelu_backward_columns<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (rows, cols): (u32, u32),
    (x, dy): (View<'a>, View<'a>),
    (dx, copy): (View<'a>, Option<&StagedRows>),
    partials: View<'a>,
) -> Result<BoundKernel, GpuError> {
    let op = "gelu_backward";
    let n_chunks = chunks(rows);
    if n_chunks <= 1 || cols == 0 {
        let msg = format!("{rows} rows of {cols}: the column form needs more than one chunk");
        return Err(shape_error(op, msg));
    }
    let n = rows * cols;
    x.need(op, "x", n as u64)?;
    dy.need(op, "dy", n as u64)?;
    dx.need(op, "dx", n as u64)?;
    partials.need(op, "partials", n_chunks as u64 * cols as u64)?;
    let written = [("dx", dx.buffer), ("partials", partials.buffer)];
    check_no_alias(op, &written, &[("x", x.buffer), ("dy", dy.buffer)])?;
    check_dim(ctx, op, "row chunks", n_chunks)?;
    let copy = match copy {
        Some(c) => Some(c.producer_binding(op, dx, (rows, cols))?),
        None => None,
    };
    let scale = copy.map_or(0, |(_, [_, scale])| scale);
    let words = [n, 0, x.offset, 0, dy.offset, dx.offset, cols, scale];
    let per = rows_per_chunk(rows);
    let words = [&words[..], &[rows, per, partials.offset]].concat();
    let params = params(ctx, "gelu_backward_columns_params", &words);
    let mut bindings = vec![
        (1, x.buffer),
        (3, dy.buffer),
        (4, dx.buffer),
        (5, partials.buffer),
    ];
    bindings.extend(copy.map(|(buffer, _)| (15, buffer)));
    let kernel = &GELU_BACKWARD_COLUMNS[copy.is_some() as usize];
    let groups = [cols.div_ceil(32), n_chunks, 1];
    Ok(bind_kernel(
        ctx, registry, kernel, &params, &bindings, groups,
    ))
}
