//! The matmul on cooperative matrices (tensor cores, `shaders/matmul_coop.wgsl`):
//! every layout of [`MatmulDesc`] (transposes, bias, accumulation), the
//! operands rounded to f16 as they are staged and each output summed in
//! f32. Native devices where [`GpuContext::coop_matrix`] holds; elsewhere
//! binding fails with a message that says why.

use super::desc::MatmulDesc;
use super::kernels::{MATMUL_COOP, MATMUL_TILE_COOP};
use super::tiled::bind_with;
use crate::kernel::BoundKernel;
use crate::ops::View;
use crate::registry::PipelineRegistry;
use crate::{GpuContext, GpuError};

/// Why this device cannot run the kernel, or `None` when it can.
pub fn coop_unavailable(ctx: &GpuContext) -> Option<&'static str> {
    if cfg!(target_arch = "wasm32") {
        return Some("cooperative matrices are native only (wgpu 30 has no WebGPU form of them)");
    }
    (!ctx.coop_matrix).then_some(
        "the adapter offers no 16×16×16 f16 → f32 cooperative matrix with 32-wide subgroups",
    )
}

/// Binds `C (M, N) = op(A) · op(B) [+ bias] [+ C]` to the cooperative-matrix
/// kernel: one 128×128 tile of C per workgroup.
pub fn bind_matmul_coop<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    if coop_unavailable(ctx).is_some() {
        return Err(GpuError::MissingFeature {
            feature: "16×16×16 f16 → f32 cooperative matrix (32-wide subgroups)",
            needed_for: "the tensor-core matmul",
        });
    }
    let groups = [
        desc.n.div_ceil(MATMUL_TILE_COOP),
        desc.m.div_ceil(MATMUL_TILE_COOP),
        1,
    ];
    bind_with(ctx, registry, &MATMUL_COOP, groups, desc, a, b, bias, c)
}
