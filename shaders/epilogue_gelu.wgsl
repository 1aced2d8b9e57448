// The f32 tile kernels' GELU epilogue (the other form of
// epilogue_none.wgsl): C is a linear's output and GELU(C) goes to `aux`
// too (C's shape, from p.aux_off), through erf.wgsl's `gelu_f32`
// (appended after this file), the GELU kernel's own function. Only
// unsplit products bind it (a K slice's partial product is not C).

@group(0) @binding(8) var<storage, read_write> aux: array<f32>;

fn epilogue(e: u32, v: f32) -> f32 {
    aux[p.aux_off + e] = gelu_f32(v);
    return v;
}
