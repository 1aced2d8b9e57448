//! The f16-storage kernels' sources and pipelines: one WGSL source with
//! every entry point (and its subgroup-sum twin for the GEMVs), the tiled
//! kernel and the GEMVs by fault variant (`ops/matmul/fault.rs`).

use super::fault::{variants, VARIANTS};
use crate::registry::KernelSource;

/// The f16-storage kernels (f16w_common.wgsl and its faults' rounding
/// f16_round.wgsl, the tiled matmul_f16w.wgsl
/// and gemv_f16w.wgsl) with what the GEMVs fold around the dot products
/// (gemv_row.wgsl, erf.wgsl) and the GEMVs' lane sums (`$lanes`: the
/// workgroup tree or its subgroup form), then any `$more` files (the fused
/// decode kernel of `ops::attention` appends its own): one source, every
/// entry point.
macro_rules! f16w_source {
    ($lanes:literal $(, $more:literal)*) => {
        concat!(
            include_str!("../../../../../shaders/f16w_common.wgsl"),
            include_str!("../../../../../shaders/f16_round.wgsl"),
            include_str!("../../../../../shaders/f16w_tile.wgsl"),
            include_str!("../../../../../shaders/matmul_f16w.wgsl"),
            include_str!("../../../../../shaders/gemv_f16w.wgsl"),
            include_str!("../../../../../shaders/gemv_row.wgsl"),
            include_str!("../../../../../shaders/ln_sum.wgsl"),
            include_str!($lanes),
            include_str!("../../../../../shaders/erf.wgsl")
            $(, include_str!($more))*
        )
    };
}
pub(crate) use f16w_source;
pub(super) const MATMUL_WGSL: &str = f16w_source!("../../../../../shaders/lanes_wg.wgsl");
/// The same summing the GEMVs' lanes with subgroup shuffles (the same
/// bits, [`super::RowFusion::subgroups`]).
const MATMUL_SG_WGSL: &str = f16w_source!("../../../../../shaders/lanes_sg.wgsl");

/// The tiled kernel (M > 1) by fault index.
pub(super) const TILED: [KernelSource; VARIANTS] = variants(
    [
        "matmul_f16w_64x64_k16",
        "matmul_f16w_fault_f16acc",
        "matmul_f16w_fault_droptail",
    ],
    "main",
    MATMUL_WGSL,
);
pub const MATMUL_F16W: KernelSource = TILED[0];

/// Every GEMV entry point by `[any alignment][LayerNorm prologue][fault]`:
/// `gemv` for rows and input aligned to four elements, `gemv_any` for any
/// offset and K, each with its LayerNorm-prologue twin.
pub(super) const GEMVS: [[[KernelSource; VARIANTS]; 2]; 2] = [
    [
        variants(
            [
                "gemv_f16w_8col",
                "gemv_f16w_fault_f16acc",
                "gemv_f16w_fault_droptail",
            ],
            "gemv",
            MATMUL_WGSL,
        ),
        variants(
            [
                "gemv_f16w_8col_ln",
                "gemv_f16w_ln_fault_f16acc",
                "gemv_f16w_ln_fault_droptail",
            ],
            "gemv_ln",
            MATMUL_WGSL,
        ),
    ],
    [
        variants(
            [
                "gemv_f16w_8col_any",
                "gemv_f16w_any_fault_f16acc",
                "gemv_f16w_any_fault_droptail",
            ],
            "gemv_any",
            MATMUL_WGSL,
        ),
        variants(
            [
                "gemv_f16w_8col_any_ln",
                "gemv_f16w_any_ln_fault_f16acc",
                "gemv_f16w_any_ln_fault_droptail",
            ],
            "gemv_any_ln",
            MATMUL_WGSL,
        ),
    ],
];
/// [`GEMVS`] summing their lanes with subgroup shuffles.
pub(super) const GEMVS_SG: [[[KernelSource; VARIANTS]; 2]; 2] = [
    [
        variants(
            [
                "gemv_f16w_8col_sg",
                "gemv_f16w_sg_f16acc",
                "gemv_f16w_sg_droptail",
            ],
            "gemv",
            MATMUL_SG_WGSL,
        ),
        variants(
            [
                "gemv_f16w_8col_ln_sg",
                "gemv_f16w_ln_sg_f16acc",
                "gemv_f16w_ln_sg_droptail",
            ],
            "gemv_ln",
            MATMUL_SG_WGSL,
        ),
    ],
    [
        variants(
            [
                "gemv_f16w_8col_any_sg",
                "gemv_f16w_any_sg_f16acc",
                "gemv_f16w_any_sg_droptail",
            ],
            "gemv_any",
            MATMUL_SG_WGSL,
        ),
        variants(
            [
                "gemv_f16w_any_ln_sg",
                "gemv_f16w_any_ln_sg_f16acc",
                "gemv_f16w_any_ln_sg_droptail",
            ],
            "gemv_any_ln",
            MATMUL_SG_WGSL,
        ),
    ],
];
pub const GEMV_F16W: KernelSource = GEMVS[0][0][0];
pub const GEMV_F16W_ANY: KernelSource = GEMVS[1][0][0];

/// The column-layout GEMV ([`super::RowFusion::columns`]) by fault index.
pub(super) const GEMV_COLS: [KernelSource; VARIANTS] = variants(
    [
        "gemv_f16w_cols",
        "gemv_f16w_cols_fault_f16acc",
        "gemv_f16w_cols_fault_droptail",
    ],
    "gemv_cols",
    MATMUL_WGSL,
);
