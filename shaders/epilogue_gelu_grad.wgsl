// The f32 tile kernels' GELU-backward epilogue (the other forms:
// epilogue_none.wgsl, epilogue_gelu.wgsl): the product is the gradient
// flowing into a GELU's output, and C receives it times GELU' of the
// GELU's input, read from `aux` (C's shape, from p.aux_off), through
// erf.wgsl's `gelu_grad_f32` (appended after this file) — the GELU
// backward kernel's own product, `dy · gelu_grad_f32(x)`. Only unsplit
// products bind it (a K slice's partial product is not C).

@group(0) @binding(8) var<storage, read> aux: array<f32>;

fn epilogue(e: u32, v: f32) -> f32 {
    return v * gelu_grad_f32(aux[p.aux_off + e]);
}
