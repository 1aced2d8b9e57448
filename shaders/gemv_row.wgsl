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

// KC: K as a pipeline constant (ops/matmul binds a pipeline per K for the
// lane layouts), or 0: `p.k`. Known when the pipeline is compiled, the
// loops over K have fixed trip counts, so the driver can unroll them and
// issue a lane's loads at once; the products and their order do not change.
override KC: u32 = 0u;

fn k_len() -> u32 {
    if (KC != 0u) {
        return KC;
    }
    return p.k;
}

// +0.0 that no compiler can see (bit 31 of the flags is never set): the
// lanes' accumulators start from it. With K a constant the loops unroll,
// and a first fma(x, w, 0.0) a compiler folds into x·w may then be fused
// into a later sum of two accumulators as one fma — a different rounding
// (lavapipe does it), where the loops over a uniform K keep two sums.
fn acc_zero() -> vec4<f32> {
    return vec4<f32>(bitcast<f32>(p.flags & 0x80000000u));
}

const HAS_BIAS: u32 = 4u;
const ACCUMULATE: u32 = 8u;
const GELU: u32 = 64u;
const LN_EPS: f32 = 1e-5;

// Where this workgroup's input and output rows start (`set_row`).
var<private> a_row: u32;
var<private> c_row: u32;

fn set_row(wg: vec3<u32>) {
    a_row = p.a_off + wg.z * k_len();
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
        v += a[a_row + i * p.m * k_len() + k];
    }
    return v;
}

// Mean and 1/σ of the K inputs. Every invocation calls it (barriers).
fn ln_stats(t: u32) -> vec2<f32> {
    var s = 0.0;
    if (t < LN_THREADS) {
        for (var i = t; i < k_len(); i += LN_THREADS) {
            s += row_in(i);
        }
    }
    // Divided by the uniform's K, never the constant's: a compiler may turn
    // a division by a constant into a product with its reciprocal, which
    // rounds differently from layernorm.wgsl's division (lavapipe does).
    let mu = ln_sum(t, s, 0u) / f32(p.k);
    var q = 0.0;
    if (t < LN_THREADS) {
        for (var i = t; i < k_len(); i += LN_THREADS) {
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
    if (k0 + t < k_len()) {
        red[t] = ln_x(k0 + t, st);
    }
    workgroupBarrier();
}

// The LayerNorm prologue with its loads ahead, for K a constant of at most
// two stages (`ln_preloads`): what each invocation stages — inputs t and
// 256 + t, their LayerNorm weights and biases — loaded before the row's
// statistics (with the first group's weights: the kernels' `*_pre` dots),
// so that their latency overlaps the statistics' reductions. The same
// values in the same expressions as `stage_ln`: the same bits.
const LN_STAGE: u32 = 256u;

struct LnPre {
    x: vec2<f32>,
    w: vec2<f32>,
    b: vec2<f32>,
}

fn ln_preloads() -> bool {
    return KC != 0u && KC <= 2u * LN_STAGE;
}

// Input r·256 + t's row value, weight and bias in component r (past K, the
// first input's: loaded, never staged).
fn ln_preload(t: u32) -> LnPre {
    let k = k_len();
    let i0 = select(0u, t, t < k);
    let i1 = select(0u, LN_STAGE + t, LN_STAGE + t < k);
    return LnPre(
        vec2<f32>(row_in(i0), row_in(i1)),
        vec2<f32>(lnp[p.ln_w_off + i0], lnp[p.ln_w_off + i1]),
        vec2<f32>(lnp[p.ln_b_off + i0], lnp[p.ln_b_off + i1]),
    );
}

// `stage_ln` of stage r (inputs 256·r …) from the preloaded values.
fn stage_ln_pre(t: u32, r: u32, st: vec2<f32>, pre: LnPre) {
    workgroupBarrier();
    if (r * LN_STAGE + t < k_len()) {
        red[t] = (pre.x[r] - st.x) * st.y * pre.w[r] + pre.b[r];
    }
    workgroupBarrier();
}

// What the epilogue of column `col` reads besides its dot product: its
// bias and the C it accumulates into (each 0 where the flags leave it
// out), loaded when a kernel starts (`epilogue_loads`), so that their
// latency overlaps the dot product's instead of following it.
struct Epi {
    bias: f32,
    c: f32,
}

fn epilogue_loads(col: u32) -> Epi {
    var e = Epi(0.0, 0.0);
    let cl = min(col, p.n - 1u);
    if ((p.flags & HAS_BIAS) != 0u) {
        e.bias = bias[p.bias_off + cl];
    }
    if ((p.flags & ACCUMULATE) != 0u) {
        e.c = c[c_row + cl];
    }
    return e;
}

// Writes output column `col` from its dot product and `e`.
fn finish_col_with(col: u32, dot: f32, e: Epi) {
    var v = dot;
    if ((p.flags & HAS_BIAS) != 0u) {
        v += e.bias;
    }
    if ((p.flags & GELU) != 0u) {
        v = gelu_f32(v);
    }
    if ((p.flags & ACCUMULATE) != 0u) {
        v += e.c;
    }
    c[c_row + col] = v;
}

// Writes output column `col` from its dot product.
fn finish_col(col: u32, dot: f32) {
    finish_col_with(col, dot, epilogue_loads(col));
}
