
// What the cooperative-matrix matmul's staging (coop_stage.wgsl) and its
// kernels (matmul_coop.wgsl, matmul_coop_tiled.wgsl) agree on, appended to
// each: the staged operands' padded shapes — op(A) as [M′][K′], op(B) as
// [K′][N′], zero outside the matrix (ops/matmul/coop.rs sizes their
// buffers by the same numbers) — and the SCALED flag.
const PAD_M: u32 = 128u;
const PAD_K: u32 = 32u;
const PAD_N: u32 = 128u;

// Flag bit of the Params: op(A) staged times bitcast<f32>(p.k_chunk), C
// multiplied back by bitcast<f32>(p.slices) (its inverse; both powers of
// two).
const SCALED: u32 = 32u;

fn padded(x: u32, to: u32) -> u32 {
    return (x + to - 1u) / to * to;
}
