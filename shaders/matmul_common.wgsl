// What the f32 matmul kernels share (matmul.wgsl, matmul_128.wgsl,
// matmul_small.wgsl; appended to each by ops/matmul/mod.rs): the Params
// uniform (built by MatmulDesc::uniform_words), the operand bindings, the
// flag bits, the guarded operand loaders and the row store with bias and
// accumulation, then the epilogue of the file appended after this one
// (epilogue_none.wgsl; epilogue_gelu.wgsl or epilogue_gelu_grad.wgsl, with
// erf.wgsl).

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 0: TRANS_A, bit 1: TRANS_B, bit 2: add bias, bit 3: accumulate into C,
    // bit 7: ROW_SUMS (below)
    flags: u32,
    // Element offsets of each operand in its buffer (parameters and their
    // gradients are views into one flat buffer each).
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
    // K per workgroup z (a multiple of the kernel's K step; ≥ K without split)
    k_chunk: u32,
    // reduce_slices: partial products to add
    slices: u32,
    // The tensor-core epilogue's GELU buffer (matmul_coop_common.wgsl), or
    // where reduce_slices writes the row sums (ROW_SUMS)
    aux_off: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const TRANS_A: u32 = 1u;
const TRANS_B: u32 = 2u;
const HAS_BIAS: u32 = 4u;
const ACCUMULATE: u32 = 8u;
// The split reduce (matmul.wgsl's reduce_slices) also adds the row sums of
// op(A) that the small-output kernel's SUMS_ROWS pipeline wrote after the
// slices, (slices, M), in order z = 0, 1, …, into c at aux_off (with
// ACCUMULATE, onto it): a weight gradient dW = dyᵀ·x so finishes its bias
// gradient Σ_rows dy in the dispatches it already takes.
const ROW_SUMS: u32 = 128u;

// op(A)[row, kk] and op(B)[kk, col] in the layout the flags say, zero
// outside the matrix.
fn op_a(row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) {
        return 0.0;
    }
    if ((p.flags & TRANS_A) != 0u) {
        return a[p.a_off + kk * p.m + row];
    }
    return a[p.a_off + row * p.k + kk];
}

fn op_b(kk: u32, col: u32) -> f32 {
    if (kk >= p.k || col >= p.n) {
        return 0.0;
    }
    if ((p.flags & TRANS_B) != 0u) {
        return b[p.b_off + col * p.k + kk];
    }
    return b[p.b_off + kk * p.n + col];
}

// Writes one row of a thread's 4×4 block (accumulators are vectors, never
// dynamically indexed private arrays, which drivers spill to memory).
fn store_row(c_base: u32, row: u32, col0: u32, acc: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    for (var j = 0u; j < 4u; j++) {
        let col = col0 + j;
        if (col >= p.n) {
            return;
        }
        var v = acc[j];
        if ((p.flags & HAS_BIAS) != 0u) {
            v += bias[p.bias_off + col];
        }
        let o = c_base + row * p.n + col;
        if ((p.flags & ACCUMULATE) != 0u) {
            v += c[o];
        }
        c[o] = epilogue(row * p.n + col, v);
    }
}
