// What the M = 1 kernels (gemv.wgsl, and matmul_f16w.wgsl's GEMVs) fold
// around their dot products, so that a decoded token needs fewer dispatches:
//   prologue  LayerNorm of the input row (the `*_ln` entry points): every
//             workgroup recomputes the row's mean and 1/σ, then normalises
//             the row 256 inputs at a time into workgroup memory, where the
//             lanes read them
//   epilogue  + bias, then GELU (flag GELU), then + C (ACCUMULATE: the
//             residual add of the decoder), as separate kernels would, in
//             that order.
// The normalised inputs are computed exactly as layernorm.wgsl computes its
// output (same strided sums over 128 threads, same tree, same expression),
// and the `*_ln` loops add the products in the plain loops' order, so a
// fused LayerNorm gives the bits of the LayerNorm kernel followed by the
// GEMV. The barriers of the prologue are never inside a branch: CPU
// implementations (SwiftShader, lavapipe) run a kernel many times slower
// when one is, even untaken.
//
// Rows: a GEMV runs M rows (the decoder's samples decoded together, each
// one's row beside the others) as M layers of workgroups: the workgroups
// at z = r compute row r, reading input row r (K elements from a_off) and
// writing output row r (N from c_off), every sum in the one row's order, so
// a row's bits do not depend on M. Each entry point calls `set_row` first.
//
// Appended to the kernel's source (with ln_sum.wgsl and erf.wgsl); the
// kernel declares
// `p` (fields m, k, n, flags, a_off, bias_off, c_off, ln_w_off, ln_b_off,
// groups),
// `a` (f32 input row), `bias` and `c` at bindings 1, 3, 4, and runs 256
// invocations per workgroup.

const HAS_BIAS: u32 = 4u;
const ACCUMULATE: u32 = 8u;
const GELU: u32 = 64u;
const LN_EPS: f32 = 1e-5;

// Where this workgroup's input and output rows start (`set_row`).
var<private> a_row: u32;
var<private> c_row: u32;

fn set_row(wg: vec3<u32>) {
    a_row = p.a_off + wg.z * p.k;
    c_row = p.c_off + wg.z * p.n;
}

// LayerNorm weight at ln_w_off and bias at ln_b_off (the flat parameters).
@group(0) @binding(5) var<storage, read> lnp: array<f32>;

// `red` (ln_sum.wgsl) holds in turn: the LayerNorm's two sums (a region
// each), chunks of the normalised row, the lanes' partial dot products.

// Groups of 8 columns a workgroup of a `*_ln` entry point runs (the low
// half of `p.groups`; 0 or 1: one).
fn ln_groups() -> u32 {
    return max(p.groups & 0xffffu, 1u);
}

// Input k of the LayerNorm prologue. Its row is one row of `a`, or (the
// high half of `p.groups`: S > 1 slots, the decoder's `Stack` layout) the
// sum of S rows — row r of each of S blocks of M·K, slot i's at
// a_off + i·M·K — added in slot order: the residual row kept as its
// shares (attention_decode_proj.wgsl), which every reader sums alike.
fn row_in(k: u32) -> f32 {
    var v = a[a_row + k];
    let slots = p.groups >> 16u;
    for (var i = 1u; i < slots; i++) {
        v += a[a_row + i * p.m * p.k + k];
    }
    return v;
}

// Mean and 1/σ of the K inputs. Every invocation calls it (barriers).
fn ln_stats(t: u32) -> vec2<f32> {
    var s = 0.0;
    if (t < LN_THREADS) {
        for (var i = t; i < p.k; i += LN_THREADS) {
            s += row_in(i);
        }
    }
    let mu = ln_sum(t, s, 0u) / f32(p.k);
    var q = 0.0;
    if (t < LN_THREADS) {
        for (var i = t; i < p.k; i += LN_THREADS) {
            let d = row_in(i) - mu;
            q += d * d;
        }
    }
    let variance = ln_sum(t, q, LN_REGION) / f32(p.k);
    return vec2<f32>(mu, 1.0 / sqrt(variance + LN_EPS));
}

// Input k normalised with `st` = (mean, 1/σ).
fn ln_x(k: u32, st: vec2<f32>) -> f32 {
    return (row_in(k) - st.x) * st.y * lnp[p.ln_w_off + k] + lnp[p.ln_b_off + k];
}

// Stages inputs k0 … k0 + 255 (those below K) normalised with `st` in
// `red`, once every invocation is done with what `red` held (the previous
// chunk, or the sums). Every invocation calls it (barriers).
fn stage_ln(t: u32, k0: u32, st: vec2<f32>) {
    workgroupBarrier();
    if (k0 + t < p.k) {
        red[t] = ln_x(k0 + t, st);
    }
    workgroupBarrier();
}

// Writes output column `col` from its dot product.
fn finish_col(col: u32, dot: f32) {
    var v = dot;
    if ((p.flags & HAS_BIAS) != 0u) {
        v += bias[p.bias_off + col];
    }
    if ((p.flags & GELU) != 0u) {
        v = gelu_f32(v);
    }
    let o = c_row + col;
    if ((p.flags & ACCUMULATE) != 0u) {
        v += c[o];
    }
    c[o] = v;
}
