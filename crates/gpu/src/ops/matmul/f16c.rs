//! The f16-compute linear forward (`shaders/matmul_f16c.wgsl` with
//! `matmul_f16c_128.wgsl`, shader-f16): 64×64 and 128×128 tiles, as the
//! f32 matmul picks them, with both operands held as f16 in workgroup
//! memory and registers (A rounded to nearest even as it is
//! staged, W the packed halves), each product and sum in f32. Bound by
//! [`super::f16w::bind_matmul_f16w`] when its [`super::f16w::PackedW`]
//! asks for `compute` and M > 1; one row keeps the f16-storage GEMV (a
//! decode step streams weights: f16 operands there would only round x).

use super::fault::{variants, VARIANTS};
use crate::registry::KernelSource;
use crate::{GpuContext, GpuError};

/// The f16-compute path as the model uses it once its gate passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F16Compute {
    /// The GPU packs the weights (its conversion matched RNE bit for bit);
    /// a train step must repack inside its own submission, so without it
    /// the path is not activated.
    pub pack_on_gpu: bool,
    /// Test-only fault carried into the model's kernels.
    pub fault: Option<crate::ops::matmul::Fault>,
}

/// `enable f16;` first, then the f16-storage kernels' common params and
/// bindings (and their faults' rounding), the tile's staging and stores, the kernel, and the flags and
/// row helpers every f16-weight source shares (gemv_row.wgsl, erf.wgsl).
const F16C_WGSL: &str = concat!(
    "enable f16;\n",
    include_str!("../../../../../shaders/f16w_common.wgsl"),
    include_str!("../../../../../shaders/f16_round.wgsl"),
    include_str!("../../../../../shaders/f16w_tile.wgsl"),
    include_str!("../../../../../shaders/matmul_f16c.wgsl"),
    include_str!("../../../../../shaders/matmul_f16c_128.wgsl"),
    include_str!("../../../../../shaders/gemv_row.wgsl"),
    include_str!("../../../../../shaders/ln_sum.wgsl"),
    include_str!("../../../../../shaders/erf.wgsl")
);

/// The tiled f16-compute kernel by fault index.
pub(super) const TILED_F16C: [KernelSource; VARIANTS] = variants(
    [
        "matmul_f16c_64x64_k16",
        "matmul_f16c_fault_f16acc",
        "matmul_f16c_fault_droptail",
    ],
    "main",
    F16C_WGSL,
);
pub const MATMUL_F16C: KernelSource = TILED_F16C[0];

/// The 128×128-tile kernel (outputs where the f32 matmul runs its large
/// tiles: [`super::MatmulDesc::uses_large_tiles`]) by fault index.
pub(super) const TILED_F16C_LARGE: [KernelSource; VARIANTS] = variants(
    [
        "matmul_f16c_128x128_k8",
        "matmul_f16c_128_fault_f16acc",
        "matmul_f16c_128_fault_droptail",
    ],
    "main_128",
    F16C_WGSL,
);
pub const MATMUL_F16C_LARGE: KernelSource = TILED_F16C_LARGE[0];

/// Every f16-compute pipeline, fault variants included.
pub fn all_kernels() -> impl Iterator<Item = &'static KernelSource> {
    let tiled: &'static [KernelSource; VARIANTS] = &TILED_F16C;
    let large: &'static [KernelSource; VARIANTS] = &TILED_F16C_LARGE;
    tiled.iter().chain(large)
}

/// Why this device cannot run f16 compute, or `None` when it can.
pub fn f16_compute_unavailable(ctx: &GpuContext) -> Option<&'static str> {
    (!ctx.features.contains(wgpu::Features::SHADER_F16))
        .then_some("the adapter offers no shader-f16")
}

pub(super) fn refuse(ctx: &GpuContext) -> Result<(), GpuError> {
    match f16_compute_unavailable(ctx) {
        Some(_) => Err(GpuError::MissingFeature {
            feature: "shader-f16",
            needed_for: "the f16-compute matmul",
        }),
        None => Ok(()),
    }
}
