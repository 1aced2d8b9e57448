//! The global gradient norm `‖g‖₂` of `optim::grad_norm`, reduced on the GPU
//! in two deterministic stages (partial sums of squares per workgroup, then
//! one workgroup over the partials) into one f32 that the optimiser reads in
//! place: no CPU round-trip per step.

use super::common::{bind_kernel, check_no_alias, uniform, BoundOp, View};
use crate::kernel::Layout;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const GRAD_NORM_PARTIALS: KernelSource = KernelSource {
    key: "grad_norm_partials",
    wgsl: include_str!("../../../../shaders/grad_norm.wgsl"),
    entry: "partials",
    constants: &[],
};

/// [`GRAD_NORM_PARTIALS`] in the [`Layout::Cpu`] layout.
pub const GRAD_NORM_PARTIALS_SERIAL: KernelSource = KernelSource {
    key: "grad_norm_partials_serial",
    wgsl: include_str!("../../../../shaders/grad_norm.wgsl"),
    entry: "partials_serial",
    constants: &[],
};

pub const GRAD_NORM_FINISH: KernelSource = KernelSource {
    key: "grad_norm_finish",
    wgsl: include_str!("../../../../shaders/grad_norm.wgsl"),
    entry: "finish",
    constants: &[],
};

/// Most workgroups of the first stage: enough to fill a large GPU, and
/// ~100 floats per thread at 25 M parameters.
pub const MAX_PARTIALS: u32 = 1024;
const WORKGROUP: u32 = 256;

/// Workgroups (and partial sums) of the first stage for `n` elements.
pub fn partials_len(n: u32) -> u32 {
    n.div_ceil(WORKGROUP).clamp(1, MAX_PARTIALS)
}

/// Binds `norm[0] = √Σ grads[i]²` over `n` elements (overwritten). The
/// partial sums live in a scratch buffer the op owns; `layout` picks a
/// workgroup per partial or an invocation per partial.
pub fn bind_grad_norm<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    layout: Layout,
    n: u32,
    grads: impl Into<View<'a>>,
    norm: &wgpu::Buffer,
) -> Result<BoundOp, GpuError> {
    let grads = grads.into();
    grads.need("grad_norm", "grads", n as u64)?;
    View::from(norm).need("grad_norm", "norm", 1)?;
    check_no_alias("grad_norm", &[("norm", norm)], &[("grads", grads.buffer)])?;
    let groups = partials_len(n);
    let partials = ctx.zeros("grad_norm_partials", groups as usize)?;
    let params = uniform(ctx, "grad_norm_params", &[n, grads.offset, groups]);
    let (src, workgroups) = match layout {
        Layout::Gpu => (&GRAD_NORM_PARTIALS, groups),
        Layout::Cpu => (&GRAD_NORM_PARTIALS_SERIAL, groups.div_ceil(64)),
    };
    let stage1 = bind_kernel(
        ctx,
        registry,
        src,
        &params,
        &[(1, grads.buffer), (2, &partials)],
        [workgroups, 1, 1],
    );
    let stage2 = bind_kernel(
        ctx,
        registry,
        &GRAD_NORM_FINISH,
        &params,
        &[(2, &partials), (3, norm)],
        [1, 1, 1],
    );
    Ok(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![partials],
    })
}
