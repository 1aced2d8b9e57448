//! The f32 matmul in the three layouts training needs (64×64 tiles; 32×32
//! for small outputs, 128×128 for large ones), its K-split form for a small
//! output with a long K (weight gradients summed over B·T rows), and the
//! GEMV that replaces it for one row times a linear weight (decoding); and
//! the same product on cooperative matrices (tensor cores, `coop.rs`).

pub mod coop;
mod coop_kernel;
pub mod coop_stage;
mod desc;
pub mod f16c;
pub mod f16w;
mod f16w_kernels;
mod fault;
mod gemv;
mod kernels;
mod layout;
mod reference;
mod split_k;
mod tiled;

pub use crate::context::subgroup_size_supported;
pub(crate) use desc::check_operands;
pub use desc::{MatmulDesc, TileKernel};
pub(crate) use f16w_kernels::f16w_source;
pub use fault::Fault;
pub(crate) use fault::{variants, variants_with, VARIANTS};
pub(crate) use gemv::gemv_source;
pub use gemv::{
    bind_gemv, RowFusion, GEMV_COLUMNS, GEMV_COLUMNS_CPU, GEMV_F32, GEMV_F32_COLS, GEMV_F32_LN,
    GEMV_F32_LN_SG, GEMV_F32_SG,
};
pub use kernels::{
    COOP_STAGE_A, COOP_STAGE_A_T, COOP_STAGE_B, COOP_STAGE_B_T, MATMUL_COOP, MATMUL_COOP_TILED,
    MATMUL_COOP_TILED_AKM, MATMUL_COOP_TILED_BNK, MATMUL_F32, MATMUL_F32_128, MATMUL_F32_128_GELU,
    MATMUL_F32_128_GELU_GRAD, MATMUL_F32_CELLS, MATMUL_F32_CELLS_GELU, MATMUL_F32_CELLS_GELU_GRAD,
    MATMUL_F32_GELU, MATMUL_F32_GELU_GRAD, MATMUL_F32_SMALL, MATMUL_F32_SMALL_GELU,
    MATMUL_F32_SMALL_GELU_GRAD, MATMUL_F32_SMALL_ROW_SUMS, MATMUL_REDUCE, MATMUL_REDUCE_TABLE,
    MATMUL_TILE_LARGE,
};
#[cfg(feature = "fault-injection")]
pub use kernels::{MATMUL_COOP_DROPTAIL, MATMUL_COOP_TILED_DROPTAIL};
pub use reference::{f16w_golden, f32_order_bound, matmul_once, matmul_once_in, matmul_reference};
pub use split_k::{
    bind_matmul_split_k, bind_matmul_split_k_row_sums, bind_reduce_table, bind_split_k_deferred,
    SplitReduce,
};
pub use tiled::{
    bind_matmul, bind_matmul_tiled, bind_matmul_tiled_gelu, bind_matmul_tiled_gelu_grad,
};
pub use tinygpt_protocol::memory::{
    coop_split_k, split_k_scratch_floats, SplitK, MATMUL_TILE, MATMUL_TILE_SMALL, SPLIT_MIN_K,
};
