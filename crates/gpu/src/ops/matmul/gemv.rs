//! The GEMV: one row times a linear weight (decoding), with what it folds
//! around its dot products ([`RowFusion`]), in the lane layout GPUs run
//! fastest and the column layout of CPU implementations.

use super::desc::{check_operands, MatmulDesc};
use crate::context::subgroup_size_supported;
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel_shaped, grid, shape_error};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// gemv.wgsl with what it folds around the dot products (gemv_row.wgsl,
/// erf.wgsl) and the lanes' sum (`$lanes`: lanes_wg.wgsl through workgroup
/// memory, or lanes_sg.wgsl's shuffles), then any `$more` files (the fused
/// decode kernel of `ops::attention` appends its own): one source.
macro_rules! gemv_source {
    ($lanes:literal $(, $more:literal)*) => {
        concat!(
            include_str!("../../../../../shaders/gemv.wgsl"),
            include_str!("../../../../../shaders/gemv_row.wgsl"),
            include_str!("../../../../../shaders/ln_sum.wgsl"),
            include_str!($lanes),
            include_str!("../../../../../shaders/erf.wgsl")
            $(, include_str!($more))*
        )
    };
}
pub(crate) use gemv_source;

const GEMV_WGSL: &str = gemv_source!("../../../../../shaders/lanes_wg.wgsl");

/// The same kernels summing the lanes with subgroup shuffles
/// (lanes_sg.wgsl: the same bits, [`RowFusion::subgroups`]).
const GEMV_SG_WGSL: &str = gemv_source!("../../../../../shaders/lanes_sg.wgsl");

pub const GEMV_F32: KernelSource = KernelSource {
    key: "gemv_f32_8col",
    wgsl: GEMV_WGSL,
    entry: "main",
    constants: &[],
};

/// The f32 GEMV with the LayerNorm prologue ([`RowFusion::layernorm`]).
pub const GEMV_F32_LN: KernelSource = KernelSource {
    key: "gemv_f32_8col_ln",
    wgsl: GEMV_WGSL,
    entry: "main_ln",
    constants: &[],
};

/// [`GEMV_F32`] and [`GEMV_F32_LN`] summing their lanes with subgroup
/// shuffles ([`RowFusion::subgroups`]).
pub const GEMV_F32_SG: KernelSource = KernelSource {
    key: "gemv_f32_8col_sg",
    wgsl: GEMV_SG_WGSL,
    ..GEMV_F32
};
pub const GEMV_F32_LN_SG: KernelSource = KernelSource {
    key: "gemv_f32_8col_ln_sg",
    wgsl: GEMV_SG_WGSL,
    ..GEMV_F32_LN
};

/// The f32 GEMV in the column layout ([`RowFusion::columns`]).
pub const GEMV_F32_COLS: KernelSource = KernelSource {
    key: "gemv_f32_cols",
    wgsl: GEMV_WGSL,
    entry: "main_cols",
    constants: &[],
};

/// Output columns per workgroup of the GEMVs (f32 and f16-storage).
pub const GEMV_COLUMNS: u32 = 8;
/// Output columns per workgroup of the column-layout GEMVs.
pub const GEMV_COLUMNS_CPU: u32 = 64;

/// What the M = 1 kernels (the f32 and the f16-storage GEMV) fold around
/// their dot products, so that a decoded token needs fewer dispatches
/// (`shaders/gemv_row.wgsl`): the LayerNorm of the input row before them,
/// GELU after the bias. The residual add is [`MatmulDesc::accumulate`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RowFusion<'a> {
    /// Read `LayerNorm(a)` with this weight and bias (K elements each, in
    /// one buffer) instead of `a`: each workgroup recomputes the row's mean
    /// and 1/σ exactly as the LayerNorm kernel does, each lane normalises
    /// the inputs it reads. Runs the kernel's `*_ln` entry point.
    pub layernorm: Option<(View<'a>, View<'a>)>,
    /// GELU of each output after its bias (before an accumulate).
    pub gelu: bool,
    /// Run the column layout: one invocation per output column summing
    /// its whole row, no workgroup memory, no barrier (the `*cols` entry
    /// points) — what CPU implementations of WebGPU run fastest, a GPU
    /// slowest. Not with `layernorm` (its prologue needs the lanes).
    pub columns: bool,
    /// Sum each column's 32 lanes with subgroup shuffles on an adapter
    /// whose one subgroup size is this (`shaders/lanes_sg.wgsl`, the
    /// subgroups fast path): the same tree, so the same bits, with no
    /// barrier where subgroups hold 32 lanes. Not with `columns`.
    pub subgroups: Option<u32>,
    /// With `layernorm`: the input row is the sum of this many slots (more
    /// than one: the decoder's `Stack` layout, `ops::attention::Stack`),
    /// slot `i` of row `r` at `a + (i·M + r)·K`, added in slot order
    /// (gemv_row.wgsl's `row_in`). 0 or 1: the row itself.
    pub slots: u32,
}

impl<'a> RowFusion<'a> {
    /// The shader's flag bits (bit 6: GELU).
    pub(crate) fn flags(&self) -> u32 {
        (self.gelu as u32) << 6
    }

    /// Refuses the column layout with a LayerNorm prologue or subgroup
    /// sums, and subgroup sums on a device without subgroups or of a size
    /// the kernels do not run.
    pub(crate) fn check_layout(&self, ctx: &GpuContext, op: &'static str) -> Result<(), GpuError> {
        let refuse = |detail: &str| {
            Err(GpuError::Shape {
                op,
                detail: detail.into(),
            })
        };
        if self.columns && self.layernorm.is_some() {
            return refuse("the column layout has no LayerNorm prologue: run the LayerNorm first");
        }
        if self.columns && self.subgroups.is_some() {
            return refuse("the column layout has no lanes to sum with subgroups");
        }
        match self.subgroups {
            Some(_) if !ctx.features.contains(wgpu::Features::SUBGROUP) => {
                refuse("subgroup sums on a device without subgroup operations")
            }
            Some(n) if !subgroup_size_supported(n) => refuse(&format!(
                "subgroups of {n} lanes: the lanes' shuffles need a power of two from 4 to 128"
            )),
            _ => Ok(()),
        }
    }

    /// The params' groups word (`p.groups`): the LayerNorm prologue's
    /// groups of columns, the input's slots in the high half.
    pub(crate) fn groups_word(&self, groups: u32) -> u32 {
        groups | (self.slots.max(1) << 16)
    }

    /// Refuses slots without the LayerNorm prologue (the only reader of
    /// them) or past what the params' half-word holds, and an `a` too
    /// short for them.
    pub(crate) fn check_slots(
        &self,
        op: &'static str,
        desc: &MatmulDesc,
        a: View<'_>,
    ) -> Result<(), GpuError> {
        if self.slots <= 1 {
            return Ok(());
        }
        if self.layernorm.is_none() || self.slots > 0xffff {
            return Err(shape_error(
                op,
                format!(
                    "{} input slots: only a LayerNorm prologue sums slots, at most 65,535",
                    self.slots
                ),
            ));
        }
        a.need(
            op,
            "input slots",
            self.slots as u64 * desc.m as u64 * desc.k as u64,
        )
    }

    /// The params' subgroup word (`p.sg`): the size, or 0 (no shuffles).
    pub(crate) fn subgroup_word(&self) -> u32 {
        self.subgroups.unwrap_or(0)
    }

    /// The buffer and element offsets of the LayerNorm weight and bias
    /// (`fallback` and zeros without a LayerNorm: an unused binding still
    /// needs a buffer), after checking them against K and the written C.
    pub(crate) fn layernorm_binding(
        &self,
        op: &'static str,
        k: u32,
        fallback: &'a wgpu::Buffer,
        c: &wgpu::Buffer,
    ) -> Result<(&'a wgpu::Buffer, u32, u32), GpuError> {
        let Some((w, b)) = self.layernorm else {
            return Ok((fallback, 0, 0));
        };
        w.need(op, "LayerNorm weight", k as u64)?;
        b.need(op, "LayerNorm bias", k as u64)?;
        if w.buffer != b.buffer || w.buffer == c {
            return Err(GpuError::Shape {
                op,
                detail: "the LayerNorm weight and bias must share one buffer, not C's".into(),
            });
        }
        Ok((w.buffer, w.offset, b.offset))
    }
}

/// Binds the f32 GEMV `c (N) = a (K) · Wᵀ [+ bias] [+ c]` (`desc`:
/// `trans_b`) with `fusion` around it: what [`bind_matmul`] runs for one
/// row, and the decoder's fused linears. With M > 1 it runs the M rows side
/// by side ([`gemv_grid`]), each giving the bits it gives alone.
#[allow(clippy::too_many_arguments)]
pub fn bind_gemv<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    fusion: RowFusion<'a>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    if desc.m == 0 || !desc.trans_b {
        return Err(shape_error(
            "matmul",
            format!("a GEMV needs M ≥ 1 and trans_b, got {desc:?}"),
        ));
    }
    check_operands("matmul", &desc, a, (Some(b), b.buffer), bias, c)?;
    fusion.check_layout(ctx, "gemv")?;
    fusion.check_slots("gemv", &desc, a)?;
    let (ln, ln_w, ln_b) = fusion.layernorm_binding("gemv", desc.k, a.buffer, c.buffer)?;
    // An unused bias binding still needs a buffer: A is read-only, so reuse it.
    let bias = bias.unwrap_or(a);
    let offsets = [a.offset, b.offset, bias.offset, c.offset];
    let mut params = desc.params(offsets, [ln_w, ln_b], fusion.flags());
    let groups = ln_column_groups(&desc, fusion);
    params.aux = [fusion.groups_word(groups), fusion.subgroup_word()];
    let uniform = params.upload(ctx, "gemv_params");
    let mut buffers = vec![
        (1, a.buffer),
        (2, b.buffer),
        (3, bias.buffer),
        (4, c.buffer),
    ];
    let sg = fusion.subgroups.is_some();
    let (src, columns) = if fusion.layernorm.is_some() {
        buffers.push((5, ln));
        let src = if sg { &GEMV_F32_LN_SG } else { &GEMV_F32_LN };
        (src, GEMV_COLUMNS * groups)
    } else if fusion.columns {
        (&GEMV_F32_COLS, GEMV_COLUMNS_CPU)
    } else {
        (if sg { &GEMV_F32_SG } else { &GEMV_F32 }, GEMV_COLUMNS)
    };
    let groups = gemv_grid(ctx, "gemv", &desc, columns)?;
    // The lane layout with K as a constant (`KC`, gemv_row.wgsl).
    let shape: &[(&str, u32)] = if fusion.columns {
        &[]
    } else {
        &[("KC", desc.k)]
    };
    let src = (src, shape);
    Ok(bind_kernel_shaped(
        ctx, registry, src, &uniform, &buffers, groups,
    ))
}

/// Workgroups of one GEMV beyond which its LayerNorm-prologue form gives
/// each workgroup two groups of [`GEMV_COLUMNS`] columns, one after the
/// other, computing the row's statistics once for both and halving the
/// workgroups. The decoder's QKV and fc GEMVs cross it only with several
/// samples decoded together (`nanogpt`, 8 samples: 1,152 and 1,536
/// workgroups), where it measured 3 % more tokens/s on the H200
/// (BENCHMARKS.md, run 45); one sample never does.
pub(crate) const LN_WIDE_ABOVE: u32 = 512;

/// Groups of [`GEMV_COLUMNS`] columns a workgroup of the LayerNorm-prologue
/// GEMV runs (`p.groups` in gemv.wgsl and f16w_common.wgsl): 2 past
/// [`LN_WIDE_ABOVE`] workgroups, else 1. Each column's sums do not change.
pub(crate) fn ln_column_groups(desc: &MatmulDesc, fusion: RowFusion<'_>) -> u32 {
    let workgroups = desc.n.div_ceil(GEMV_COLUMNS) as u64 * desc.m as u64;
    match fusion.layernorm.is_some() && workgroups > LN_WIDE_ABOVE as u64 {
        true => 2,
        false => 1,
    }
}

/// The workgroups of a GEMV of `desc.m` rows and `columns` output columns
/// per workgroup: the columns of one row over x (and y), the rows over z
/// (`shaders/gemv_row.wgsl`'s `set_row`).
pub(crate) fn gemv_grid(
    ctx: &GpuContext,
    op: &'static str,
    desc: &MatmulDesc,
    columns: u32,
) -> Result<[u32; 3], GpuError> {
    if desc.m > ctx.limits.max_compute_workgroups_per_dimension {
        return Err(shape_error(
            op,
            format!(
                "{} rows: a GEMV runs at most {} at once",
                desc.m, ctx.limits.max_compute_workgroups_per_dimension
            ),
        ));
    }
    let [x, y, _] = grid(ctx, desc.n.div_ceil(columns));
    Ok([x, y, desc.m])
}
