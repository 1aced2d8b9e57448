//! The matmul on cooperative matrices (tensor cores, `shaders/matmul_coop*.wgsl`
//! over `coop_stage.wgsl`): every layout of [`MatmulDesc`] (transposes,
//! bias, accumulation), the operands rounded to f16 as they are staged and
//! each output summed in f32. Two kernels ([`CoopKernel`], in
//! `coop_kernel.rs`): fragments loaded straight from the staged operands,
//! or through workgroup memory in 32-wide K blocks. (The block width as a
//! pipeline constant, 32 or 64, with the copies in loops over small arrays
//! and the tiles sized for 64, ran at 43 and 46 TFLOP/s at 4096³ on the
//! H200 against this kernel's 107: run 26.) Native devices where
//! [`GpuContext::coop_matrix`] holds; elsewhere binding fails with a
//! message that says why.

pub use super::coop_kernel::{
    carries, engine_kernel, set_engine_kernel, CoopKernel, Epilogue, TiledForm, COOP_KERNEL,
};
use super::coop_stage::{bind_operands, check_scale, pads, Reuse, StagedRows, PAD_K, SCALED};
use super::desc::{check_operands, MatmulDesc};
use super::fault::Fault;
use super::split_k::{bind_reduce, check_scratch};
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_dim, shape_error};
use crate::ops::{BoundOp, View};
use crate::registry::PipelineRegistry;
use crate::{GpuContext, GpuError};
use tinygpt_protocol::memory::coop_split_k;

/// How a binding runs: its kernel, op(A)'s scale (a power of two; see
/// [`bind_matmul_coop_variant`]), its epilogue and, in tests, a
/// deliberately wrong kernel.
#[derive(Clone, Copy, Debug)]
pub struct CoopOptions<'a> {
    pub kernel: CoopKernel,
    pub scale: f32,
    pub epilogue: Epilogue<'a>,
    pub fault: Option<Fault>,
}

impl Default for CoopOptions<'_> {
    fn default() -> Self {
        CoopOptions {
            kernel: engine_kernel(),
            scale: 1.0,
            epilogue: Epilogue::Plain,
            fault: None,
        }
    }
}

impl CoopOptions<'_> {
    /// The engine's kernel with op(A) scaled by `scale`.
    pub fn scaled(scale: f32) -> Self {
        CoopOptions {
            scale,
            ..Default::default()
        }
    }
}

/// Why this device cannot run the kernel, or `None` when it can.
pub fn coop_unavailable(ctx: &GpuContext) -> Option<&'static str> {
    if cfg!(target_arch = "wasm32") {
        return Some("cooperative matrices are native only: wgpu 30 has no WebGPU form of them");
    }
    (!ctx.coop_matrix).then_some(
        "the adapter offers no 16×16×16 f16 → f32 cooperative matrix with 32-wide subgroups, \
         subgroup barriers, 45 KiB of workgroup memory and 9 storage buffers a stage",
    )
}

fn refuse(ctx: &GpuContext) -> Result<(), GpuError> {
    match coop_unavailable(ctx) {
        Some(_) => Err(GpuError::MissingFeature {
            feature: "16×16×16 f16 → f32 cooperative matrix (32-wide subgroups)",
            needed_for: "the tensor-core matmul",
        }),
        None => Ok(()),
    }
}

/// The GELU epilogue's flag (`matmul_coop_common.wgsl`): GELU(C)'s f16
/// copy written too.
const COPY16: u32 = 256;

/// Its flag for GELU(C) in f32 (`Epilogue::Gelu`; not under
/// `Epilogue::GeluCopy`).
const AUX32: u32 = 512;

/// [`bind_matmul_coop_variant`] with the default [`CoopOptions`].
pub fn bind_matmul_coop<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<Vec<BoundKernel>, GpuError> {
    let a = (a, CoopOptions::default());
    bind_matmul_coop_variant(ctx, registry, desc, a, b, bias, c)
}

/// [`bind_matmul_coop_variant`] on the engine's kernel, op(A) scaled.
pub fn bind_matmul_coop_scaled<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, scale): (impl Into<View<'a>>, f32),
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<Vec<BoundKernel>, GpuError> {
    let a = (a, CoopOptions::scaled(scale));
    bind_matmul_coop_variant(ctx, registry, desc, a, b, bias, c)
}

/// Binds `C (M, N) = op(A) · op(B) [+ bias] [+ C]` as three dispatches:
/// op(A) and op(B) staged as zero-padded f16 (`coop_stage.wgsl`, into
/// buffers this binding owns), then `opts.kernel` reading them. op(A) is
/// multiplied by `opts.scale` (a power of two) as it is staged and the
/// product by its inverse before the bias and the accumulation: a gradient
/// of order 1/(B·T) keeps f16's normal range and the result is the
/// unscaled one. `opts.fault` (tests) picks a deliberately wrong kernel.
pub fn bind_matmul_coop_variant<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, opts): (impl Into<View<'a>>, CoopOptions<'a>),
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<Vec<BoundKernel>, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    let b = (b, Reuse::default());
    let op = bind_matmul_coop_staging(ctx, registry, desc, (a, opts), b, bias, c, None)?;
    Ok(op.kernels)
}

/// A product's dispatches and the operands it staged ([`StagedRows`]:
/// op(A) when A is not transposed, op(B) always), which later products of
/// the same graph may read ([`Reuse`]).
pub struct StagedOp {
    pub kernels: Vec<BoundKernel>,
    pub staged: [Option<StagedRows>; 2],
    /// Whether the product runs in K slices through a scratch, then their
    /// sum.
    pub split: bool,
}

/// Refuses a device without the kernel, a scale that is not a power of
/// two, and operands (the epilogue's too) that do not fit `desc`.
fn check(
    ctx: &GpuContext,
    desc: &MatmulDesc,
    (a, opts): (View<'_>, CoopOptions<'_>),
    b: View<'_>,
    bias: Option<View<'_>>,
    c: View<'_>,
) -> Result<(), GpuError> {
    refuse(ctx)?;
    let scale = opts.scale;
    if let Some(aux) = opts.epilogue.view() {
        aux.need(
            "matmul_coop",
            "the GELU buffer",
            desc.m as u64 * desc.n as u64,
        )?;
    }
    if let (Some(aux), Some(copy)) = (opts.epilogue.view(), opts.epilogue.copy()) {
        copy.producer_binding("matmul_coop", aux, (desc.m, desc.n))?;
    }
    check_scale("matmul_coop", scale)?;
    check_operands("matmul_coop", desc, a, (Some(b), b.buffer), bias, c)
}

/// The staging (or the [`Reuse`]d operands) and the kernel for checked
/// operands, over `slices` K slices (each into its `(M, N)` slice of `c`,
/// which is then a scratch and `desc` neither biased nor accumulating).
fn bind_staged(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, opts): (View<'_>, CoopOptions<'_>),
    (b, bias, c): (View<'_>, Option<View<'_>>, View<'_>),
    (slices, reuse): (u32, Reuse<'_>),
) -> Result<StagedOp, GpuError> {
    let (mp, kp, np) = pads(&desc);
    let bias = bias.unwrap_or(a);
    let offsets = [a.offset, b.offset, bias.offset, c.offset];
    let (extra, mut flags) = match opts.scale == 1.0 {
        true => ([0, 0], 0),
        false => ([opts.scale.to_bits(), (1.0 / opts.scale).to_bits()], SCALED),
    };
    let copy = opts.epilogue.copy();
    if copy.is_some() {
        flags |= COPY16;
    }
    if opts.epilogue.writes_f32() {
        flags |= AUX32;
    }
    let aux = opts.epilogue.view();
    let mut params = desc.params(offsets, extra, flags);
    params.aux[0] = aux.map_or(0, |v| v.offset);
    let uniform = params.upload(ctx, "matmul_coop_params");
    // The epilogue's bindings are always there; unused ones get two words
    // (the f16 copy's four halves).
    let unused = match (aux, copy) {
        (Some(_), Some(_)) => None,
        _ => Some(ctx.zeros("coop_no_aux", 2)?),
    };
    let word = || unused.as_ref().expect("made above");
    let aux16 = copy.map_or_else(word, StagedRows::buffer);
    let aux = aux.map_or_else(word, |v| v.buffer);
    let shape = (&desc, (mp, kp, np), &uniform);
    // Only the tiled kernel's plain, fault-free form has the `A_KM` and
    // `B_NK` pipelines.
    let plain = opts.fault.is_none() && matches!(opts.epilogue, Epilogue::Plain);
    let transposes = matches!(opts.kernel, CoopKernel::Tiled(_)) && plain;
    let ops = bind_operands(ctx, registry, shape, (a, opts.scale, transposes), b, reuse)?;
    let buffers = [
        (3, bias.buffer),
        (4, c.buffer),
        (5, &ops.a16),
        (6, &ops.b16),
        (8, aux),
        (9, aux16),
    ];
    let (kernel, rows) = opts.kernel.source(opts.fault, opts.epilogue, ops.layout);
    let groups = [np / 128, mp.div_ceil(rows), slices];
    let mut kernels = ops.kernels;
    kernels.push(bind_kernel(
        ctx, registry, kernel, &uniform, &buffers, groups,
    ));
    Ok(StagedOp {
        kernels,
        staged: ops.staged,
        split: false,
    })
}

/// [`bind_matmul_coop_variant`] split along K through `scratch` where the
/// output's tiles would leave the GPU idle (a weight gradient: few tiles,
/// K = B·T; any product of few tiles): [`coop_split_k`]'s slices, as many
/// as `scratch` holds (the memory plan's holds them:
/// [`split_k_scratch_floats`](tinygpt_protocol::memory::split_k_scratch_floats));
/// the slices' f32 partial products are then added in order by the f32
/// path's `reduce_slices` (with the bias, and C when accumulating).
/// Unsplit without a scratch or where one slice fills the GPU. Operands in
/// `reuse` are read, not staged.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_coop_split_k<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, opts): (View<'a>, CoopOptions<'a>),
    b: View<'a>,
    bias: Option<View<'a>>,
    c: View<'a>,
    (scratch, reuse): (Option<&wgpu::Buffer>, Reuse<'_>),
) -> Result<BoundOp, GpuError> {
    if !matches!(opts.epilogue, Epilogue::Plain) {
        return Err(shape_error(
            "matmul_coop",
            "a split product has no GELU epilogue (its slices are reduced in f32)".into(),
        ));
    }
    let op =
        bind_matmul_coop_staging(ctx, registry, desc, (a, opts), (b, reuse), bias, c, scratch)?;
    Ok(BoundOp {
        kernels: op.kernels,
        scratch: scratch.filter(|_| op.split).into_iter().cloned().collect(),
    })
}

/// [`bind_matmul_coop_variant`] reading the operands in `reuse` where they
/// fit, keeping what it staged for later products; with a `scratch`, split
/// along K as [`bind_matmul_coop_split_k`] splits (a product with the GELU
/// epilogue whole).
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_coop_staging<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, opts): (View<'a>, CoopOptions<'a>),
    (b, reuse): (View<'a>, Reuse<'_>),
    bias: Option<View<'a>>,
    c: View<'a>,
    scratch: Option<&wgpu::Buffer>,
) -> Result<StagedOp, GpuError> {
    check(ctx, &desc, (a, opts), b, bias, c)?;
    let slab = desc.m as u64 * desc.n as u64;
    let fit = scratch
        .map_or(0, |s| s.size() / 4 / slab.max(1))
        .min(1 << 16) as u32;
    let plain = matches!(opts.epilogue, Epilogue::Plain);
    let wanted = coop_split_k(desc.m, desc.k, desc.n).min(fit);
    let Some(scratch) = scratch.filter(|_| wanted >= 2 && plain) else {
        return bind_staged(ctx, registry, desc, (a, opts), (b, bias, c), (1, reuse));
    };
    check_scratch("matmul_coop", scratch, [a, b, c], bias)?;
    // Whole K blocks per slice, as the kernels divide them (k_range).
    let blocks = desc.k.div_ceil(PAD_K);
    let slices = blocks.div_ceil(blocks.div_ceil(wanted));
    check_dim(ctx, "matmul_coop", "K slices", slices)?;
    let partial = MatmulDesc {
        bias: false,
        accumulate: false,
        ..desc
    };
    let parts = (b, None, View::from(scratch));
    let mut op = bind_staged(ctx, registry, partial, (a, opts), parts, (slices, reuse))?;
    let reduce = bind_reduce(ctx, registry, desc, slices, scratch, bias, c, None);
    op.kernels.push(reduce);
    op.split = true;
    Ok(op)
}
