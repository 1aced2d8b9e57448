//! LayerNorm, forward and backward, as in `layernorm_forward` /
//! `layernorm_backward` of `tinygpt_core::model::layers` (ε = 1e-5, biased
//! variance). One workgroup of 128 threads per row: comfortable for `C` up to
//! a few thousand.

use super::bias_grad::{bind_column_sums, chunks, rows_per_chunk, ColumnSum};
use super::common::{
    bind_kernel, check_dim, check_no_alias, grid, shape_error, uniform, BoundOp, View,
};
use super::dropout::{mask_words, DropoutDesc};
use super::matmul::coop_stage::StagedRows;
use crate::kernel::{BoundKernel, Layout};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_core::model::Site;

mod kernels;
pub use kernels::*;

/// `N` rows of `C` channels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LayerNormDesc {
    pub n: u32,
    pub c: u32,
    /// Backward only: add into `dx`, `dw`, `db` (the CPU convention) instead
    /// of overwriting them.
    pub accumulate: bool,
    /// A workgroup of 128 threads per row (`Gpu`) or a row per invocation
    /// (`Cpu`) for the forward and `dx`.
    pub layout: Layout,
}

impl LayerNormDesc {
    /// The row kernel of `gpu` or its serial form, and its workgroups.
    fn rows(
        &self,
        ctx: &GpuContext,
        gpu: &'static KernelSource,
        serial: &'static KernelSource,
    ) -> (&'static KernelSource, [u32; 3]) {
        match self.layout {
            Layout::Gpu => (gpu, grid(ctx, self.n)),
            Layout::Cpu => (serial, grid(ctx, self.n.div_ceil(64))),
        }
    }

    /// [`Self::rows`] of `plain` (`[Gpu, Cpu]` forms), or of `copied`
    /// where an f16 copy is written too.
    fn rows_of(
        &self,
        ctx: &GpuContext,
        [gpu, serial]: [&'static KernelSource; 2],
        copied: Option<&'static [KernelSource; 2]>,
    ) -> (&'static KernelSource, [u32; 3]) {
        match copied {
            Some([g, s]) => self.rows(ctx, g, s),
            None => self.rows(ctx, gpu, serial),
        }
    }

    fn check(&self, op: &'static str) -> Result<(u64, u64), GpuError> {
        if self.c == 0 {
            return Err(shape_error(op, format!("{self:?} has no channels")));
        }
        Ok((self.n as u64, self.c as u64))
    }
}

/// Binds `y (N, C) = (x − μ)·σ̂ · w + b`, writing (overwriting) `y`,
/// `mean (N)` and `rstd (N)` from `x (N, C)`, `w (C)`, `b (C)`.
#[allow(clippy::too_many_arguments)]
pub fn bind_layernorm_forward<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: LayerNormDesc,
    x: impl Into<View<'a>>,
    w: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    y: impl Into<View<'a>>,
    mean: impl Into<View<'a>>,
    rstd: impl Into<View<'a>>,
    copy: Option<&StagedRows>,
) -> Result<BoundKernel, GpuError> {
    let (n, c) = desc.check("layernorm")?;
    let (x, w, b, y) = (x.into(), w.into(), b.into(), y.into());
    let (mean, rstd) = (mean.into(), rstd.into());
    x.need("layernorm", "x", n * c)?;
    w.need("layernorm", "w", c)?;
    b.need("layernorm", "b", c)?;
    y.need("layernorm", "y", n * c)?;
    mean.need("layernorm", "mean", n)?;
    rstd.need("layernorm", "rstd", n)?;
    check_no_alias(
        "layernorm",
        &[
            ("y", y.buffer),
            ("mean", mean.buffer),
            ("rstd", rstd.buffer),
        ],
        &[("x", x.buffer), ("w", w.buffer), ("b", b.buffer)],
    )?;
    let params = uniform(
        ctx,
        "layernorm_params",
        &[
            desc.n,
            desc.c,
            x.offset,
            w.offset,
            b.offset,
            y.offset,
            mean.offset,
            rstd.offset,
        ],
    );
    let copied = copy.map(|_| &LAYERNORM_FORWARD_COPY16);
    let plain = [&LAYERNORM_FORWARD, &LAYERNORM_FORWARD_SERIAL];
    let (src, groups) = desc.rows_of(ctx, plain, copied);
    let mut bindings = vec![
        (1, x.buffer),
        (2, w.buffer),
        (3, b.buffer),
        (4, y.buffer),
        (5, mean.buffer),
        (6, rstd.buffer),
    ];
    if let Some(copy) = copy {
        bindings.push((
            15,
            copy.producer_binding("layernorm", y, (desc.n, desc.c))?.0,
        ));
    }
    Ok(bind_kernel(ctx, registry, src, &params, &bindings, groups))
}

/// The residual add before a LayerNorm: `x = base + branch`, or with
/// `drop` (training with dropout) `x = base + mask(site) ∘ branch / (1 − p)`
/// — the residual kernel's or the dropout kernel's bits.
#[derive(Clone, Copy)]
pub struct ResidualAdd<'a> {
    pub base: View<'a>,
    pub branch: View<'a>,
    pub drop: Option<(DropoutDesc<'a>, Site)>,
    /// `(N, C)`: the stream, written.
    pub x: View<'a>,
}

/// Binds the residual add `add` and [`bind_layernorm_forward`] on its sum
/// in one dispatch, with both ops' bits: `add.x`, `y`, `mean` and `rstd`
/// written.
pub fn bind_layernorm_residual<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: LayerNormDesc,
    add: ResidualAdd<'a>,
    [w, b]: [View<'a>; 2],
    [y, mean, rstd]: [View<'a>; 3],
    copy: Option<&StagedRows>,
) -> Result<BoundKernel, GpuError> {
    let op = "layernorm_residual";
    let (n, c) = desc.check(op)?;
    let x = add.x;
    for (name, v, len) in [
        ("x", x, n * c),
        ("base", add.base, n * c),
        ("branch", add.branch, n * c),
        ("w", w, c),
        ("b", b, c),
        ("y", y, n * c),
        ("mean", mean, n),
        ("rstd", rstd, n),
    ] {
        v.need(op, name, len)?;
    }
    let state = add.drop.map_or(add.base.buffer, |(d, _)| d.state);
    let written = [
        ("x", x.buffer),
        ("y", y.buffer),
        ("mean", mean.buffer),
        ("rstd", rstd.buffer),
    ];
    let read = [
        ("base", add.base.buffer),
        ("branch", add.branch.buffer),
        ("w", w.buffer),
        ("b", b.buffer),
        ("state", state),
    ];
    check_no_alias(op, &written, &read)?;
    if w.buffer != b.buffer {
        return Err(shape_error(
            op,
            "w and b must share one buffer (the kernel binds them as one)".into(),
        ));
    }
    let mask = match add.drop {
        Some((d, site)) => mask_words(d, site),
        None => [0; 6],
    };
    // Bindings 1–8 in the shader's order (but b's, read through w's), then
    // the dropout state at 9.
    let views = [x, w, b, y, mean, rstd, add.base, add.branch];
    let offsets = views.map(|v| v.offset);
    let words: Vec<u32> = [desc.n, desc.c]
        .into_iter()
        .chain(offsets)
        .chain(mask)
        .collect();
    let params = uniform(ctx, "layernorm_residual_params", &words);
    let copied = copy.map(|_| &LAYERNORM_RESIDUAL_COPY16);
    let plain = [&LAYERNORM_RESIDUAL, &LAYERNORM_RESIDUAL_SERIAL];
    let (src, groups) = desc.rows_of(ctx, plain, copied);
    let mut bindings: Vec<(u32, &wgpu::Buffer)> = (1..).zip(views.map(|v| v.buffer)).collect();
    // w and b are one binding (2).
    bindings.remove(2);
    bindings.push((9, state));
    if let Some(copy) = copy {
        bindings.push((15, copy.producer_binding(op, y, (desc.n, desc.c))?.0));
    }
    Ok(bind_kernel(ctx, registry, src, &params, &bindings, groups))
}

/// The operands of the backward; `mean` and `rstd` are the forward's.
pub struct LayerNormGrads<'a> {
    pub dout: View<'a>,
    pub x: View<'a>,
    pub w: View<'a>,
    pub mean: View<'a>,
    pub rstd: View<'a>,
    /// `(N, C)`, written.
    pub dx: View<'a>,
    /// `(C)`, written.
    pub dw: View<'a>,
    /// `(C)`, written.
    pub db: View<'a>,
    /// `dx`'s f16 copy, written too where given (the tensor-core path's dY
    /// of the product before: [`StagedRows::for_producer`]).
    pub dx_copy: Option<&'a StagedRows>,
}

/// Binds the backward: `dx (N, C)`, `dw (C)`, `db (C)`, each accumulated or
/// overwritten as `desc.accumulate` says. Three kinds of dispatch: `dx` per
/// row, then `dw`/`db` per column in two deterministic stages (partials of
/// [`rows_per_chunk`] rows in a scratch buffer the op owns, then their sums,
/// dw's and db's in one dispatch).
pub fn bind_layernorm_backward(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: LayerNormDesc,
    g: LayerNormGrads<'_>,
) -> Result<BoundOp, GpuError> {
    let floats = layernorm_backward_partials(desc) as usize;
    let partials = ctx.zeros("layernorm_dwdb_partials", floats)?;
    let (mut op, sums) =
        bind_layernorm_backward_deferred(ctx, registry, desc, g, (&partials).into())?;
    let n_chunks = chunks(desc.n).max(1);
    let k = bind_column_sums(ctx, registry, desc.layout, n_chunks, n_chunks, &sums)?;
    op.kernels.push(k);
    op.scratch.push(partials);
    Ok(op)
}

/// Floats of the partials of [`bind_layernorm_backward_deferred`]: dw's
/// `(chunks, C)`, then db's.
pub fn layernorm_backward_partials(desc: LayerNormDesc) -> u32 {
    2 * chunks(desc.n).max(1) * desc.c
}

/// [`bind_layernorm_backward`] with its last stage left to the caller: `dx`
/// and the `dw`/`db` partials into `partials`
/// ([`layernorm_backward_partials`] floats), then their sums as two
/// [`ColumnSum`]s of `chunks(N)` rows, for [`bind_column_sums`] to finish
/// with others of as many rows in one dispatch.
pub fn bind_layernorm_backward_deferred<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: LayerNormDesc,
    g: LayerNormGrads<'a>,
    partials: View<'a>,
) -> Result<(BoundOp, [ColumnSum<'a>; 2]), GpuError> {
    let op = "layernorm_backward";
    g.check(desc.check(op)?)?;
    partials.need(op, "partials", layernorm_backward_partials(desc) as u64)?;
    let n_chunks = chunks(desc.n).max(1);
    check_dim(ctx, op, "row chunks", n_chunks)?;
    let words = [
        desc.n,
        desc.c,
        desc.accumulate as u32,
        rows_per_chunk(desc.n),
    ];
    let offsets = [g.dout, g.x, g.mean, g.rstd, g.w, g.dx].map(|v| v.offset);
    let copy = match g.dx_copy {
        Some(c) => Some(c.producer_binding(op, g.dx, (desc.n, desc.c))?),
        None => None,
    };
    let copy_scale = copy.map_or(0, |(_, [_, scale])| scale);
    let params = uniform(
        ctx,
        "layernorm_backward_params",
        &[words.as_slice(), &offsets, &[partials.offset, copy_scale]].concat(),
    );
    let [b1, b2, b3, b4] = [
        (1, g.dout.buffer),
        (2, g.x.buffer),
        (3, g.mean.buffer),
        (4, g.rstd.buffer),
    ];
    let copied = copy.map(|_| &LAYERNORM_BACKWARD_DX_COPY16);
    let plain = [&LAYERNORM_BACKWARD_DX, &LAYERNORM_BACKWARD_DX_SERIAL];
    let (src, groups) = desc.rows_of(ctx, plain, copied);
    let mut dx_buffers = vec![b1, b2, b3, b4, (5, g.w.buffer), (6, g.dx.buffer)];
    dx_buffers.extend(copy.map(|(buffer, _)| (15, buffer)));
    let dx = bind_kernel(ctx, registry, src, &params, &dx_buffers, groups);
    // dw's partials (chunks, C), then db's.
    let (src, columns) = match desc.layout {
        Layout::Gpu => (&LAYERNORM_BACKWARD_DWDB, 32),
        Layout::Cpu => (&LAYERNORM_BACKWARD_DWDB_SERIAL, 64),
    };
    let stage1_buffers = [b1, b2, b3, b4, (7, partials.buffer)];
    let stage1_groups = [desc.c.div_ceil(columns), n_chunks, 1];
    let stage1 = bind_kernel(ctx, registry, src, &params, &stage1_buffers, stage1_groups);
    let sum = |src: View<'a>, dst| ColumnSum {
        src,
        dst,
        cols: desc.c,
        accumulate: desc.accumulate,
    };
    let db_partials = View::at(partials.buffer, partials.offset + n_chunks * desc.c);
    let sums = [sum(partials, g.dw), sum(db_partials, g.db)];
    let op = BoundOp {
        kernels: vec![dx, stage1],
        scratch: Vec::new(),
    };
    Ok((op, sums))
}

impl LayerNormGrads<'_> {
    /// Refuses operands too small for `n` rows of `c`, and a written
    /// gradient sharing a buffer with a read operand.
    fn check(&self, (n, c): (u64, u64)) -> Result<(), GpuError> {
        let op = "layernorm_backward";
        let sizes = [
            (self.dout, "dout", n * c),
            (self.x, "x", n * c),
            (self.w, "w", c),
            (self.mean, "mean", n),
            (self.rstd, "rstd", n),
            (self.dx, "dx", n * c),
            (self.dw, "dw", c),
            (self.db, "db", c),
        ];
        for (v, name, len) in sizes {
            v.need(op, name, len)?;
        }
        let written = [
            ("dx", self.dx.buffer),
            ("dw", self.dw.buffer),
            ("db", self.db.buffer),
        ];
        let read = [
            ("dout", self.dout.buffer),
            ("x", self.x.buffer),
            ("w", self.w.buffer),
            ("mean", self.mean.buffer),
            ("rstd", self.rstd.buffer),
        ];
        check_no_alias(op, &written, &read)
    }
}
