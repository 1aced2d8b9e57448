//! The matmul on cooperative matrices (tensor cores, `shaders/matmul_coop.wgsl`
//! over `coop_stage.wgsl`): every layout of [`MatmulDesc`] (transposes,
//! bias, accumulation), the operands rounded to f16 as they are staged and
//! each output summed in f32. (A first design staged each K step through
//! workgroup memory inside the kernel: 17.5 TFLOP/s at 4096³ on the H200,
//! below the f32 kernel's 26; staging whole operands in storage and
//! loading fragments straight from them measured 46.) Native devices
//! where [`GpuContext::coop_matrix`] holds; elsewhere binding fails with a
//! message that says why.

use super::desc::{check_operands, MatmulDesc};
use super::fault::Fault;
use super::kernels::{COOP_STAGE_A, COOP_STAGE_A_T, COOP_STAGE_B, COOP_STAGE_B_T, MATMUL_COOP};
use super::split_k::{bind_reduce, check_scratch};
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_dim, shape_error};
use crate::ops::{BoundOp, View};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_protocol::memory::SPLIT_TARGET_WORKGROUPS_SMALL;

/// Why this device cannot run the kernel, or `None` when it can.
pub fn coop_unavailable(ctx: &GpuContext) -> Option<&'static str> {
    if cfg!(target_arch = "wasm32") {
        return Some("cooperative matrices are native only: wgpu 30 has no WebGPU form of them");
    }
    (!ctx.coop_matrix).then_some(
        "the adapter offers no 16×16×16 f16 → f32 cooperative matrix with 32-wide subgroups",
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

/// Elements one workgroup of the element-wise stage kernels stages
/// (`coop_stage.wgsl`'s `PER_GROUP`).
const PER_GROUP: u32 = 2048;

/// Workgroups of [`PER_GROUP`] elements for `n` elements, as a grid within
/// the 65,535 limit per dimension (the stage kernels flatten it back).
fn stage_grid(n: u32) -> [u32; 3] {
    let groups = n.div_ceil(PER_GROUP).max(1);
    let x = groups.min(65_535);
    [x, groups.div_ceil(x), 1]
}

/// The staging kernel of an operand and its grid: element-wise, or for a
/// transposed operand (whose element-wise reads would stride by a whole
/// row) the tiled kernel, a 32 × 16 tile (`outer` × K) per workgroup, while
/// its grid fits the 65,535 limit.
fn stage(
    transposed: bool,
    (outer, kp): (u32, u32),
    plain: &'static KernelSource,
    tiled: &'static KernelSource,
) -> (&'static KernelSource, [u32; 3]) {
    if transposed && kp / 16 <= 65_535 {
        (tiled, [outer / 32, kp / 16, 1])
    } else {
        (plain, stage_grid(outer * kp))
    }
}

/// The stage and matmul kernels' flag: op(A) scaled (`coop_stage.wgsl`).
const SCALED: u32 = 32;

/// [`bind_matmul_coop_scaled`] without a scale.
pub fn bind_matmul_coop<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<Vec<BoundKernel>, GpuError> {
    bind_matmul_coop_scaled(ctx, registry, desc, (a, 1.0), b, bias, c)
}

/// [`bind_matmul_coop_variant`] without a fault.
pub fn bind_matmul_coop_scaled<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, scale): (impl Into<View<'a>>, f32),
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<Vec<BoundKernel>, GpuError> {
    bind_matmul_coop_variant(ctx, registry, desc, (a, scale, None), b, bias, c)
}

/// The kernel of `fault`: the real one, or (fault injection) the one that
/// drops its last K step; no other fault lives in this kernel.
fn kernel(fault: Option<Fault>) -> &'static KernelSource {
    #[cfg(feature = "fault-injection")]
    if fault == Some(Fault::DropKTail) {
        return &super::kernels::MATMUL_COOP_DROPTAIL;
    }
    let _ = fault;
    &MATMUL_COOP
}

/// Binds `C (M, N) = op(A) · op(B) [+ bias] [+ C]` as three dispatches:
/// op(A) and op(B) staged as zero-padded f16 (`coop_stage.wgsl`, into
/// buffers this binding owns), then the cooperative-matrix kernel reading
/// its fragments straight from them (`matmul_coop.wgsl`: a 64×128
/// tile of C per workgroup, a 32×64 block per subgroup). op(A) is
/// multiplied by `scale` (a power of two) as it is staged and the product
/// by its inverse before the bias and the accumulation: a gradient of
/// order 1/(B·T) keeps f16's normal range and the result is the
/// unscaled one. `fault` (tests) picks a deliberately wrong kernel.
pub fn bind_matmul_coop_variant<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, scale, fault): (impl Into<View<'a>>, f32, Option<Fault>),
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<Vec<BoundKernel>, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    check(ctx, &desc, (a, scale), b, bias, c)?;
    bind_staged(ctx, registry, desc, (a, scale, fault), (b, bias, c), 1)
}

/// Refuses a device without the kernel, a scale that is not a power of
/// two, and operands that do not fit `desc`.
fn check(
    ctx: &GpuContext,
    desc: &MatmulDesc,
    (a, scale): (View<'_>, f32),
    b: View<'_>,
    bias: Option<View<'_>>,
    c: View<'_>,
) -> Result<(), GpuError> {
    refuse(ctx)?;
    // A positive normal float with no mantissa bits: a power of two.
    if !(scale.is_normal() && scale > 0.0 && scale.to_bits() & 0x7f_ffff == 0) {
        return Err(shape_error(
            "matmul_coop",
            format!("the scale must be a power of two, got {scale}"),
        ));
    }
    check_operands("matmul_coop", desc, a, (Some(b), b.buffer), bias, c)
}

/// The staging and the kernel for checked operands, over `slices` K
/// slices (each into its `(M, N)` slice of `c`, which is then a scratch
/// and `desc` neither biased nor accumulating).
fn bind_staged(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, scale, fault): (View<'_>, f32, Option<Fault>),
    (b, bias, c): (View<'_>, Option<View<'_>>, View<'_>),
    slices: u32,
) -> Result<Vec<BoundKernel>, GpuError> {
    let (mp, kp, np) = (
        desc.m.next_multiple_of(64),
        desc.k.next_multiple_of(16),
        desc.n.next_multiple_of(128),
    );
    // f16 halves, in whole words.
    let a16 = ctx.zeros("coop_a16", (mp * kp).div_ceil(2) as usize)?;
    let b16 = ctx.zeros("coop_b16", (kp * np).div_ceil(2) as usize)?;
    let bias = bias.unwrap_or(a);
    let offsets = [a.offset, b.offset, bias.offset, c.offset];
    let (extra, flags) = match scale == 1.0 {
        true => ([0, 0], 0),
        false => ([scale.to_bits(), (1.0 / scale).to_bits()], SCALED),
    };
    let uniform = desc
        .params(offsets, extra, flags)
        .upload(ctx, "matmul_coop_params");
    let (stage_a, grid_a) = stage(desc.trans_a, (mp, kp), &COOP_STAGE_A, &COOP_STAGE_A_T);
    let stage_a = bind_kernel(
        ctx,
        registry,
        stage_a,
        &uniform,
        &[(1, a.buffer), (5, &a16)],
        grid_a,
    );
    let (stage_b, grid_b) = stage(desc.trans_b, (np, kp), &COOP_STAGE_B, &COOP_STAGE_B_T);
    let stage_b = bind_kernel(
        ctx,
        registry,
        stage_b,
        &uniform,
        &[(2, b.buffer), (5, &b16)],
        grid_b,
    );
    let buffers = [(3, bias.buffer), (4, c.buffer), (5, &a16), (6, &b16)];
    let groups = [np / 128, mp / 64, slices];
    let main = bind_kernel(ctx, registry, kernel(fault), &uniform, &buffers, groups);
    Ok(vec![stage_a, stage_b, main])
}

/// [`bind_matmul_coop_scaled`] split along K through `scratch` where the
/// output's 64×128 tiles would leave the GPU idle (a weight gradient: few
/// tiles, K = B·T): about [`SPLIT_TARGET_WORKGROUPS_SMALL`] workgroups,
/// slices of at least 256 of K, as many as `scratch` holds; the slices'
/// f32 partial products are then added in order by the f32 path's
/// `reduce_slices` (with the bias, and C when accumulating). Unsplit
/// without a scratch or where one slice fills the GPU.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_coop_split_k<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, scale): (View<'a>, f32),
    b: View<'a>,
    bias: Option<View<'a>>,
    c: View<'a>,
    scratch: Option<&wgpu::Buffer>,
) -> Result<BoundOp, GpuError> {
    check(ctx, &desc, (a, scale), b, bias, c)?;
    let slab = desc.m as u64 * desc.n as u64;
    let fit = scratch
        .map_or(0, |s| s.size() / 4 / slab.max(1))
        .min(1 << 16) as u32;
    let tiles = desc.m.div_ceil(64) * desc.n.div_ceil(128);
    let wanted = SPLIT_TARGET_WORKGROUPS_SMALL
        .div_ceil(tiles)
        .min(desc.k / 256)
        .min(fit);
    let Some(scratch) = scratch.filter(|_| wanted >= 2) else {
        let kernels = bind_staged(ctx, registry, desc, (a, scale, None), (b, bias, c), 1)?;
        return Ok(BoundOp {
            kernels,
            scratch: Vec::new(),
        });
    };
    check_scratch("matmul_coop", scratch, [a, b, c], bias)?;
    // Whole 16-wide steps per slice, as the kernel divides them.
    let steps = desc.k.div_ceil(16);
    let slices = steps.div_ceil(steps.div_ceil(wanted));
    check_dim(ctx, "matmul_coop", "K slices", slices)?;
    let partial = MatmulDesc {
        bias: false,
        accumulate: false,
        ..desc
    };
    let parts = (b, None, View::from(scratch));
    let mut kernels = bind_staged(ctx, registry, partial, (a, scale, None), parts, slices)?;
    let reduce = bind_reduce(ctx, registry, desc, slices, scratch, bias, c);
    kernels.push(reduce);
    Ok(BoundOp {
        kernels,
        scratch: vec![scratch.clone()],
    })
}
