// What the f32 matmul kernels share (matmul.wgsl, matmul_128.wgsl,
// matmul_small.wgsl; appended to each by ops/matmul/mod.rs): the Params
// uniform (built by MatmulDesc::uniform_words), the operand bindings, the
// flag bits, the guarded operand loaders and the row store with bias and
// accumulation.

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 0: TRANS_A, bit 1: TRANS_B, bit 2: add bias, bit 3: accumulate into C
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
    // With ONES_COLUMN: B's own columns (p.n counts one more), and where
    // reduce_slices writes that last column of C (a bias gradient).
    b_n: u32,
    ones_off: u32,
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
// op(B) has one more column than B, all ones: C's last column is then
// Σ_k op(A)[row, k] — a weight gradient's split-K run also sums its bias
// gradient (Σ over the rows of dy), with no dispatch of its own. Not with
// TRANS_B.
const ONES_COLUMN: u32 = 16u;

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
    if ((p.flags & ONES_COLUMN) != 0u) {
        if (col == p.b_n) {
            return 1.0;
        }
        return b[p.b_off + kk * p.b_n + col];
    }
    return b[p.b_off + kk * p.n + col];
}

// ONES_COLUMN: whether this workgroup's tile column holds the ones column
// alone (B's N a multiple of the tile). Such a tile's only output is
// Σ_k op(A)[row, k] per row, which `ones_part` sums directly instead of the
// tile's multiply-adds against ones and zeros.
fn ones_only(col0: u32) -> bool {
    return (p.flags & ONES_COLUMN) != 0u && col0 >= p.b_n;
}

// One thread's share of row `row`'s sum over K range [k0, k1): every
// `parts`-th k from k0 + part.
fn ones_part(row: u32, k0: u32, k1: u32, part: u32, parts: u32) -> f32 {
    var s = 0.0;
    for (var k = k0 + part; k < k1; k += parts) {
        s += op_a(row, k);
    }
    return s;
}

// Stores a ones-only tile's row sum in the ones column of C's slice.
fn ones_store(c_base: u32, row: u32, v: f32) {
    if (row < p.m) {
        c[c_base + row * p.n + p.b_n] = v;
    }
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
        c[o] = v;
    }
}
