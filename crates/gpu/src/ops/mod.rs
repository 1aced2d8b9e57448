pub mod adamw;
pub mod ahead;
pub mod argmax;
pub mod attention;
pub mod bias_grad;
pub mod common;
pub mod crossentropy;
pub mod dropout;
pub mod embedding;
pub mod floor;
pub mod gelu;
pub mod grad_norm;
pub mod layernorm;
pub mod matmul;
pub mod persistent;
pub mod residual;
pub use common::{BoundOp, View};

use crate::registry::KernelSource;

/// Every pipeline the engine can create, variants included: the shader
/// validation test (`tests/shaders.rs`) validates each with naga and fails
/// on a `KernelSource` key anywhere in the crate that is not listed here.
pub fn all_kernels() -> Vec<&'static KernelSource> {
    use matmul::*;
    let mut all: Vec<&'static KernelSource> = vec![
        &argmax::GREEDY_PICK,
        &argmax::SAMPLE_PICK,
        &argmax::HEAD_GREEDY_PICK,
        &argmax::HEAD_SAMPLE_PICK,
        &floor::FLOOR_NOOP,
        &matmul::COOP_STAGE_A,
        &matmul::COOP_STAGE_B,
        &matmul::COOP_STAGE_A_T,
        &matmul::COOP_STAGE_B_T,
        &floor::FLOOR_TOUCH,
        &embedding::EMBEDDING_FORWARD,
        &embedding::EMBEDDING_FORWARD_DECODE,
        &embedding::EMBEDDING_BACKWARD_TOK,
        &embedding::EMBEDDING_BACKWARD_TOK_SERIAL,
        &embedding::EMBEDDING_BACKWARD_POS,
        &adamw::ADAMW_SCHEDULE,
        &adamw::ADAMW_UPDATE,
        &layernorm::LAYERNORM_FORWARD,
        &layernorm::LAYERNORM_FORWARD_SERIAL,
        &layernorm::LAYERNORM_RESIDUAL,
        &layernorm::LAYERNORM_RESIDUAL_SERIAL,
        &layernorm::LAYERNORM_BACKWARD_DX,
        &layernorm::LAYERNORM_BACKWARD_DX_SERIAL,
        &layernorm::LAYERNORM_BACKWARD_DWDB,
        &layernorm::LAYERNORM_BACKWARD_DWDB_SERIAL,
        &layernorm::LAYERNORM_FORWARD_COPY16[0],
        &layernorm::LAYERNORM_FORWARD_COPY16[1],
        &layernorm::LAYERNORM_RESIDUAL_COPY16[0],
        &layernorm::LAYERNORM_RESIDUAL_COPY16[1],
        &layernorm::LAYERNORM_BACKWARD_DX_COPY16[0],
        &layernorm::LAYERNORM_BACKWARD_DX_COPY16[1],
        &attention::ATTENTION_FWD,
        &attention::ATTENTION_FWD_SERIAL,
        &attention::ATTENTION_BWD_DQ,
        &attention::ATTENTION_BWD_DQ_SERIAL,
        &attention::ATTENTION_BWD_DKV,
        &attention::ATTENTION_BWD_DKV_SERIAL,
        &attention::ATTENTION_DECODE,
        &attention::ATTENTION_DECODE_SG,
        &attention::ATTENTION_DECODE_SERIAL,
        &attention::ATTENTION_DECODE_QKV,
        &attention::ATTENTION_DECODE_QKV_SG,
        &bias_grad::COLUMN_SUM,
        &bias_grad::COLUMN_SUM_SERIAL,
        &grad_norm::GRAD_NORM_PARTIALS,
        &grad_norm::GRAD_NORM_PARTIALS_SERIAL,
        &grad_norm::GRAD_NORM_FINISH,
        &dropout::DROPOUT,
        &crossentropy::CROSSENTROPY_FORWARD,
        &crossentropy::CROSSENTROPY_FORWARD_BACKWARD,
        &crossentropy::CROSSENTROPY_FORWARD_SERIAL,
        &crossentropy::CROSSENTROPY_FORWARD_BACKWARD_SERIAL,
        &crossentropy::CROSSENTROPY_MEAN,
        &gelu::GELU_FORWARD,
        &gelu::GELU_BACKWARD,
        &gelu::GELU_FORWARD_X8,
        &gelu::GELU_BACKWARD_X8,
        &gelu::GELU_BACKWARD_COPY16[0],
        &gelu::GELU_BACKWARD_COPY16[1],
        &gelu::GELU_BACKWARD_COLUMNS[0],
        &gelu::GELU_BACKWARD_COLUMNS[1],
        &residual::RESIDUAL_FORWARD,
        &residual::RESIDUAL_ACCUMULATE,
        &MATMUL_F32,
        &MATMUL_F32_SMALL,
        &MATMUL_F32_SMALL_ROW_SUMS,
        &MATMUL_F32_CELLS,
        &MATMUL_F32_128,
        &matmul::MATMUL_F32_GELU,
        &matmul::MATMUL_F32_SMALL_GELU,
        &matmul::MATMUL_F32_CELLS_GELU,
        &matmul::MATMUL_F32_128_GELU,
        &matmul::MATMUL_F32_GELU_GRAD,
        &matmul::MATMUL_F32_SMALL_GELU_GRAD,
        &matmul::MATMUL_F32_CELLS_GELU_GRAD,
        &matmul::MATMUL_F32_128_GELU_GRAD,
        &MATMUL_REDUCE,
        &matmul::MATMUL_REDUCE_TABLE,
        &GEMV_F32,
        &GEMV_F32_LN,
        &GEMV_F32_SG,
        &GEMV_F32_LN_SG,
        &GEMV_F32_COLS,
    ];
    all.extend(MATMUL_COOP.iter().chain(MATMUL_COOP_TILED.iter().flatten()));
    all.extend(&matmul::MATMUL_COOP_TILED_AKM);
    all.extend(&matmul::MATMUL_COOP_TILED_BNK);
    all.extend(attention::ATTENTION_COOP_FWD.iter());
    all.extend(attention::ATTENTION_COOP_BWD_DQ.iter());
    all.extend(attention::ATTENTION_COOP_BWD_DKV.iter());
    all.extend(attention::ATTENTION_COOP_BWD_DKV_DS.iter());
    all.extend(attention::ATTENTION_DECODE_QKV_F16W.iter().flatten());
    all.extend(attention::ATTENTION_DECODE_PROJ.iter().flatten());
    all.extend(persistent::DECODE_PERSISTENT.iter().flat_map(|s| s.all()));
    all.extend(
        persistent::DECODE_PERSISTENT_PICK
            .iter()
            .flatten()
            .flat_map(|s| s.all()),
    );
    all.extend(f16w::all_kernels());
    all.extend(f16c::all_kernels());
    #[cfg(feature = "fault-injection")]
    all.extend([&MATMUL_COOP_DROPTAIL, &MATMUL_COOP_TILED_DROPTAIL]);
    all
}
