// The f32 tile kernels' store (matmul_common.wgsl's `store_row`) calls
// `epilogue` with each output's index in C and its value; a plain
// product's source appends this file, which does nothing more
// (epilogue_gelu.wgsl is the other one).

fn epilogue(e: u32, v: f32) {}
