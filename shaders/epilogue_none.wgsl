// The f32 tile kernels' store (matmul_common.wgsl's `store_row`) stores
// what `epilogue` returns for each output's index in C and its value; a
// plain product's source appends this file, which returns the value
// (epilogue_gelu.wgsl and epilogue_gelu_grad.wgsl are the others).

fn epilogue(e: u32, v: f32) -> f32 {
    return v;
}
