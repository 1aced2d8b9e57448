// A whole decoded token in one workgroup per sample: every block's
// LayerNorms, linears, attention (the token's keys and values appended to
// the caches) and residual adds, the final LayerNorm and the tied head,
// writing the logits — the decoder's `Persistent` layout
// (model/decode/layout.rs). A token is then this dispatch and the pick's:
// two launch-and-barrier floors where the other layouts pay
// 4–7·n_layer + 2. Its price: one workgroup streams all the weights, so it
// wins only while they are small (they stay in L2 from token to token).
//
// Two widths: WG invocations a workgroup, 256 (what every WebGPU device
// offers) or 512 where the device offers it (`Wide`), from the file
// appended after this one (decode_persistent_wg256.wgsl or
// decode_persistent_wide.wgsl: WG, and the partials' room PART in NBUF
// buffers of 4·WG).
//
// Rows live in workgroup memory: x (the residual row), xn (a LayerNorm's
// output, then the attention's), big (the qkv row, then the fc hidden
// row). The linears (`linear`) run in rounds of 4·G output columns: G =
// WG / 8 groups of 8 lanes, group g taking columns r·4G + g + Gj (j < 4),
// its 8 lanes reading neighbouring vec4s of each column's weight row (a
// warp reads 128 contiguous bytes of four rows), four columns' loads in
// flight; each lane's four products a vec4, its partial (x + y) + (z + w),
// the 8 partials added as a fixed tree. The attention (`attend_heads`) runs
// every head at once: scores by (head, position) over all threads, each
// head's max and sum over 32 lanes of its own, then each output dim by
// WG/C threads (groups of positions), the groups added in order. All sums
// are f32, in fixed orders (not the other layouts', and each width its
// own: the logits agree to f32 rounding).
//
// Caches: one buffer each for every layer and sample; head h of sample b
// in layer l owns the block ((l·B + b)·NH + h)·T_max·HS: K transposed
// (dim i of position p at i·T_max + p), V by position (p·HS + i). The
// attention is decode_persistent_attend.wgsl (appended, with erf.wgsl).
//
// Weights: the flat f32 parameters (`w4` as vec4s, `wf` as scalars, the
// same buffer), the linears' weights as packed halves (`wh`, the f16
// weight cache) when HALF_W; LayerNorms, biases and the tied head always
// f32. Needs C ≤ 256, C and HS multiples of 4, NH ≤ 8, NH·T_max ≤ 1024
// (ops/persistent/mod.rs checks).

struct Params {
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    v: u32,
    n_layer: u32,
    scale: f32,
    _pad: u32,
    // Layer 0's element offset of each parameter in the flat buffer.
    ln1_w: u32,
    ln1_b: u32,
    qkv_w: u32,
    qkv_b: u32,
    proj_w: u32,
    proj_b: u32,
    ln2_w: u32,
    ln2_b: u32,
    fc_w: u32,
    fc_b: u32,
    fcp_w: u32,
    fcp_b: u32,
    lnf_w: u32,
    lnf_b: u32,
    tok: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> w4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> wf: array<f32>;
@group(0) @binding(4) var<storage, read> wh: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;
// The input rows (C per sample). The logits (V per sample, `logits`) and
// the position (`pos`, x: the token's position P) are bound by the entry
// point's file: decode_persistent_main.wgsl, or decode_persistent_pick.wgsl
// (with the pick's).
@group(0) @binding(7) var<storage, read> x_in: array<f32>;

// The linears' weights as packed halves (the f16 weight cache).
override HALF_W: bool = false;

// FAULT: the test-only variants of the packed-halves kernel
// (ops/matmul/fault.rs, registered under keys of their own), so that tests
// can prove the f16-storage gate catches a wrong kernel here too: 1 keeps
// each lane's sums as an f16 register would after every step (`to_f16`,
// f16_round.wgsl, appended), 2 leaves out K past its last whole 16 (the
// GEMVs' dropped tail). 0, the default, is the kernel.
override FAULT: u32 = 0u;

const CMAX: u32 = 256u;
// Lanes a column, groups of lanes, and columns a round of `linear`.
const LANES: u32 = 8u;
const GROUPS: u32 = WG / LANES;
const ROUND: u32 = 4u * GROUPS;
const NEG: f32 = -1e30;
const LN_EPS: f32 = 1e-5;
// Where a linear reads and writes.
const IN_XN: u32 = 0u;
const IN_BIG: u32 = 1u;
const OUT_BIG: u32 = 0u;
const OUT_X_ADD: u32 = 1u;
const OUT_LOGITS: u32 = 2u;

var<workgroup> x_sh: array<f32, CMAX>;
var<workgroup> xn_sh: array<f32, CMAX>;
var<workgroup> big_sh: array<f32, 1024>;
// NBUF rounds' partial sums (rounds take the NBUF buffers in turn); the
// attention's scores (NH·T_max).
var<workgroup> part_sh: array<f32, PART>;
var<workgroup> red: array<f32, WG>;
var<workgroup> red16: array<f32, 16>;
// Each head's max score and sum of weights.
var<workgroup> m_sh: array<f32, 8>;
var<workgroup> l_sh: array<f32, 8>;

// The sample this workgroup decodes, and the batch.
var<private> row: u32;
var<private> rows: u32;

fn in_vec(src: u32, k: u32) -> vec4<f32> {
    if (src == IN_XN) {
        return vec4<f32>(xn_sh[k], xn_sh[k + 1u], xn_sh[k + 2u], xn_sh[k + 3u]);
    }
    return big4(k);
}

// big[i … i + 3].
fn big4(i: u32) -> vec4<f32> {
    return vec4<f32>(big_sh[i], big_sh[i + 1u], big_sh[i + 2u], big_sh[i + 3u]);
}

// The sum of the first 256 threads' `v` (the rest must pass 0: a
// LayerNorm's row is at most 256 wide): sixteen threads add sixteen each,
// then every thread the sixteen sums (fixed trees), three barriers.
fn block_sum(t: u32, v: f32) -> f32 {
    workgroupBarrier();
    red[t] = v;
    workgroupBarrier();
    if (t < 16u) {
        let o = 16u * t;
        red16[t] = (sum4(red[o], red[o + 1u], red[o + 2u], red[o + 3u])
            + sum4(red[o + 4u], red[o + 5u], red[o + 6u], red[o + 7u]))
            + (sum4(red[o + 8u], red[o + 9u], red[o + 10u], red[o + 11u])
            + sum4(red[o + 12u], red[o + 13u], red[o + 14u], red[o + 15u]));
    }
    workgroupBarrier();
    return (sum4(red16[0], red16[1], red16[2], red16[3]) + sum4(red16[4], red16[5], red16[6], red16[7]))
        + (sum4(red16[8], red16[9], red16[10], red16[11]) + sum4(red16[12], red16[13], red16[14], red16[15]));
}

fn sum4(a: f32, b: f32, c: f32, d: f32) -> f32 {
    return (a + b) + (c + d);
}

// xn = LayerNorm(x) with weight and bias at elements w_off and b_off.
fn layernorm(t: u32, w_off: u32, b_off: u32) {
    let c = p.c;
    let live = t < c;
    // Loaded before the sums, so that their round trip overlaps them.
    let lw = wf[w_off + min(t, c - 1u)];
    let lb = wf[b_off + min(t, c - 1u)];
    let xv = select(0.0, x_sh[min(t, c - 1u)], live);
    let mu = block_sum(t, xv) / f32(c);
    let d = select(0.0, xv - mu, live);
    let variance = block_sum(t, d * d) / f32(c);
    let rstd = 1.0 / sqrt(variance + LN_EPS);
    if (live) {
        xn_sh[t] = d * rstd * lw + lb;
    }
    workgroupBarrier();
}

// A lane's four columns' vec4 sums.
struct Acc {
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
}

// One lane's products for the four columns whose weight rows start at
// vec4s `rq`: quads q = lane, lane + 8, … < `quads`, four quads (sixteen
// loads) a round, the products of each column in order of q. f32 weights.
// (Written out, no arrays: a GPU compiler keeps these in registers.)
fn lane_f32(src: u32, rq: vec4<u32>, lane: u32, quads: u32) -> Acc {
    var a = Acc(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var q = lane;
    for (; q + 3u * LANES < quads; q += 4u * LANES) {
        let q1 = q + LANES;
        let q2 = q + 2u * LANES;
        let q3 = q + 3u * LANES;
        let w00 = w4[rq.x + q];
        let w01 = w4[rq.y + q];
        let w02 = w4[rq.z + q];
        let w03 = w4[rq.w + q];
        let w10 = w4[rq.x + q1];
        let w11 = w4[rq.y + q1];
        let w12 = w4[rq.z + q1];
        let w13 = w4[rq.w + q1];
        let w20 = w4[rq.x + q2];
        let w21 = w4[rq.y + q2];
        let w22 = w4[rq.z + q2];
        let w23 = w4[rq.w + q2];
        let w30 = w4[rq.x + q3];
        let w31 = w4[rq.y + q3];
        let w32 = w4[rq.z + q3];
        let w33 = w4[rq.w + q3];
        a = step4(a, in_vec(src, 4u * q), w00, w01, w02, w03);
        a = step4(a, in_vec(src, 4u * q1), w10, w11, w12, w13);
        a = step4(a, in_vec(src, 4u * q2), w20, w21, w22, w23);
        a = step4(a, in_vec(src, 4u * q3), w30, w31, w32, w33);
    }
    for (; q < quads; q += LANES) {
        a = step4(a, in_vec(src, 4u * q), w4[rq.x + q], w4[rq.y + q], w4[rq.z + q], w4[rq.w + q]);
    }
    return a;
}

// A step's sums `a` as FAULT 1 keeps them where the weights are packed
// halves (`half`); else `a` itself.
fn fault_sums(a: Acc, half: bool) -> Acc {
    if (!half || FAULT != 1u) {
        return a;
    }
    return Acc(f16v(a.a0), f16v(a.a1), f16v(a.a2), f16v(a.a3));
}

fn f16v(v: vec4<f32>) -> vec4<f32> {
    return vec4<f32>(to_f16(v.x), to_f16(v.y), to_f16(v.z), to_f16(v.w));
}

// A linear's quads of K summed: all of them, or under FAULT 2 (packed
// halves) those before K's last partial 16.
fn k_quads(k: u32, half: bool) -> u32 {
    if (half && FAULT == 2u) {
        return (k / 16u) * 4u;
    }
    return k / 4u;
}

// `lane_f32` with the weights as packed halves.
fn lane_half(src: u32, rq: vec4<u32>, lane: u32, quads: u32) -> Acc {
    var a = Acc(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    var q = lane;
    for (; q + 3u * LANES < quads; q += 4u * LANES) {
        let q1 = q + LANES;
        let q2 = q + 2u * LANES;
        let q3 = q + 3u * LANES;
        let w00 = wh[rq.x + q];
        let w01 = wh[rq.y + q];
        let w02 = wh[rq.z + q];
        let w03 = wh[rq.w + q];
        let w10 = wh[rq.x + q1];
        let w11 = wh[rq.y + q1];
        let w12 = wh[rq.z + q1];
        let w13 = wh[rq.w + q1];
        let w20 = wh[rq.x + q2];
        let w21 = wh[rq.y + q2];
        let w22 = wh[rq.z + q2];
        let w23 = wh[rq.w + q2];
        let w30 = wh[rq.x + q3];
        let w31 = wh[rq.y + q3];
        let w32 = wh[rq.z + q3];
        let w33 = wh[rq.w + q3];
        a = fault_sums(step4(a, in_vec(src, 4u * q), hv(w00), hv(w01), hv(w02), hv(w03)), true);
        a = fault_sums(step4(a, in_vec(src, 4u * q1), hv(w10), hv(w11), hv(w12), hv(w13)), true);
        a = fault_sums(step4(a, in_vec(src, 4u * q2), hv(w20), hv(w21), hv(w22), hv(w23)), true);
        a = fault_sums(step4(a, in_vec(src, 4u * q3), hv(w30), hv(w31), hv(w32), hv(w33)), true);
    }
    for (; q < quads; q += LANES) {
        a = fault_sums(step4(a, in_vec(src, 4u * q), hv(wh[rq.x + q]), hv(wh[rq.y + q]), hv(wh[rq.z + q]), hv(wh[rq.w + q])), true);
    }
    return a;
}

fn step4(a: Acc, x: vec4<f32>, w0: vec4<f32>, w1: vec4<f32>, w2: vec4<f32>, w3: vec4<f32>) -> Acc {
    return Acc(fma(x, w0, a.a0), fma(x, w1, a.a1), fma(x, w2, a.a2), fma(x, w3, a.a3));
}

// Four halves (two words) as f32.
fn hv(q: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
}

fn lane_sum(a: vec4<f32>) -> f32 {
    return (a.x + a.y) + (a.z + a.w);
}

// The vec4 offsets of the rows of group g's four columns in the round from
// column r0 (past the last column: the last's).
fn round_rq(w_off: u32, k: u32, n: u32, r0: u32, g: u32) -> vec4<u32> {
    let last = n - 1u;
    return vec4<u32>(
        (w_off + min(r0 + g, last) * k) / 4u,
        (w_off + min(r0 + g + GROUPS, last) * k) / 4u,
        (w_off + min(r0 + g + 2u * GROUPS, last) * k) / 4u,
        (w_off + min(r0 + g + 3u * GROUPS, last) * k) / 4u,
    );
}

// Column r0 + t's bias (invocations t < ROUND; none for the logits).
fn round_bias(t: u32, n: u32, r0: u32, b_off: u32, dst: u32) -> f32 {
    if (t < ROUND && dst != OUT_LOGITS) {
        return wf[b_off + min(r0 + t, n - 1u)];
    }
    return 0.0;
}

// A round's four partial sums of this lane into buffer pb.
fn put_partials(pb: u32, g: u32, lane: u32, a: Acc) {
    part_sh[pb + g * LANES + lane] = lane_sum(a.a0);
    part_sh[pb + (g + GROUPS) * LANES + lane] = lane_sum(a.a1);
    part_sh[pb + (g + 2u * GROUPS) * LANES + lane] = lane_sum(a.a2);
    part_sh[pb + (g + 3u * GROUPS) * LANES + lane] = lane_sum(a.a3);
}

// Column r0 + t (invocations t < ROUND) from its 8 partials in buffer pb:
// the fixed tree, the bias, GELU, written per `dst`.
fn finish_col(t: u32, n: u32, r0: u32, pb: u32, bias_v: f32, gelu_on: bool, dst: u32) {
    let col = r0 + t;
    if (t < ROUND && col < n) {
        let q = pb + t * LANES;
        var v = ((part_sh[q] + part_sh[q + 1u]) + (part_sh[q + 2u] + part_sh[q + 3u]))
            + ((part_sh[q + 4u] + part_sh[q + 5u]) + (part_sh[q + 6u] + part_sh[q + 7u]));
        if (dst != OUT_LOGITS) {
            v += bias_v;
        }
        if (gelu_on) {
            v = gelu_f32(v);
        }
        if (dst == OUT_BIG) {
            big_sh[col] = v;
        } else if (dst == OUT_X_ADD) {
            x_sh[col] += v;
        } else {
            logits[row * p.v + col] = v;
        }
    }
}

// This round's buffer of part_sh: with two, the next round writes the
// other while this one's sums are read, the one after this one's only past
// the next round's barrier; with one, a barrier ends each round but the
// last (`end_round`).
fn round_buffer(r0: u32) -> u32 {
    return ((r0 / ROUND) % NBUF) * ROUND * LANES;
}

fn end_round(n: u32, r0: u32) {
    if (NBUF == 1u && r0 + ROUND < n) {
        workgroupBarrier();
    }
}

// out (N) = in (K) · Wᵀ [+ bias] [GELU], W (N, K) from element w_off
// (`half`: of the packed halves), written per `dst`: into big, added into
// x (the residual), or to the sample's logits. K a multiple of 4. Where a
// lane takes exactly four quads of each column (K = 32·LANES: every
// linear of a C-128 model but the fc projection), `linear_piped`.
fn linear(t: u32, src: u32, k: u32, n: u32, w_off: u32, half: bool, b_off: u32, gelu_on: bool, dst: u32) {
    let quads = k_quads(k, half);
    if (quads == 4u * LANES) {
        linear_piped(t, src, k, n, w_off, half, b_off, gelu_on, dst);
        return;
    }
    let g = t / LANES;
    let lane = t % LANES;
    for (var r0 = 0u; r0 < n; r0 += ROUND) {
        let pb = round_buffer(r0);
        let rq = round_rq(w_off, k, n, r0, g);
        // The column's bias, loaded with the round's weights.
        let bias_v = round_bias(t, n, r0, b_off, dst);
        var a: Acc;
        if (half) {
            a = lane_half(src, rq, lane, quads);
        } else {
            a = lane_f32(src, rq, lane, quads);
        }
        put_partials(pb, g, lane, a);
        workgroupBarrier();
        finish_col(t, n, r0, pb, bias_v, gelu_on, dst);
        end_round(n, r0);
    }
    workgroupBarrier();
}

// Weight quad q of the column whose row starts at vec4 r: f32, or packed
// halves (`half`).
fn wq(r: u32, q: u32, half: bool) -> vec4<f32> {
    if (half) {
        return hv(wh[r + q]);
    }
    return w4[r + q];
}

// `linear` where each lane takes four quads of a column: the next round's
// sixteen weights are loaded before this round's barrier and sums, so
// that their round trip overlaps them (the same products in the same
// order as `lane_f32`'s one unrolled pass).
fn linear_piped(t: u32, src: u32, k: u32, n: u32, w_off: u32, half: bool, b_off: u32, gelu_on: bool, dst: u32) {
    let g = t / LANES;
    let lane = t % LANES;
    let q0 = lane;
    let q1 = lane + LANES;
    let q2 = lane + 2u * LANES;
    let q3 = lane + 3u * LANES;
    let x0 = in_vec(src, 4u * q0);
    let x1 = in_vec(src, 4u * q1);
    let x2 = in_vec(src, 4u * q2);
    let x3 = in_vec(src, 4u * q3);
    var rq = round_rq(w_off, k, n, 0u, g);
    var bias_v = round_bias(t, n, 0u, b_off, dst);
    var w00 = wq(rq.x, q0, half);
    var w01 = wq(rq.y, q0, half);
    var w02 = wq(rq.z, q0, half);
    var w03 = wq(rq.w, q0, half);
    var w10 = wq(rq.x, q1, half);
    var w11 = wq(rq.y, q1, half);
    var w12 = wq(rq.z, q1, half);
    var w13 = wq(rq.w, q1, half);
    var w20 = wq(rq.x, q2, half);
    var w21 = wq(rq.y, q2, half);
    var w22 = wq(rq.z, q2, half);
    var w23 = wq(rq.w, q2, half);
    var w30 = wq(rq.x, q3, half);
    var w31 = wq(rq.y, q3, half);
    var w32 = wq(rq.z, q3, half);
    var w33 = wq(rq.w, q3, half);
    for (var r0 = 0u; r0 < n; r0 += ROUND) {
        let pb = round_buffer(r0);
        var a = Acc(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
        a = fault_sums(step4(a, x0, w00, w01, w02, w03), half);
        a = fault_sums(step4(a, x1, w10, w11, w12, w13), half);
        a = fault_sums(step4(a, x2, w20, w21, w22, w23), half);
        a = fault_sums(step4(a, x3, w30, w31, w32, w33), half);
        put_partials(pb, g, lane, a);
        let this_bias = bias_v;
        let next = r0 + ROUND;
        if (next < n) {
            rq = round_rq(w_off, k, n, next, g);
            bias_v = round_bias(t, n, next, b_off, dst);
            w00 = wq(rq.x, q0, half);
            w01 = wq(rq.y, q0, half);
            w02 = wq(rq.z, q0, half);
            w03 = wq(rq.w, q0, half);
            w10 = wq(rq.x, q1, half);
            w11 = wq(rq.y, q1, half);
            w12 = wq(rq.z, q1, half);
            w13 = wq(rq.w, q1, half);
            w20 = wq(rq.x, q2, half);
            w21 = wq(rq.y, q2, half);
            w22 = wq(rq.z, q2, half);
            w23 = wq(rq.w, q2, half);
            w30 = wq(rq.x, q3, half);
            w31 = wq(rq.y, q3, half);
            w32 = wq(rq.z, q3, half);
            w33 = wq(rq.w, q3, half);
        }
        workgroupBarrier();
        finish_col(t, n, r0, pb, this_bias, gelu_on, dst);
        end_round(n, r0);
    }
    workgroupBarrier();
}

// Sample `b` (of `nb`)'s token: its logits into row b of `logits`. Every
// invocation calls it (barriers).
fn decode_token(t: u32, b: u32, nb: u32) {
    row = b;
    rows = nb;
    let c = p.c;
    let cc = c * c;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, p.t_max - 1u);
    if (t < c) {
        x_sh[t] = x_in[row * c + t];
    }
    workgroupBarrier();
    for (var l = 0u; l < p.n_layer; l++) {
        layernorm(t, p.ln1_w + l * c, p.ln1_b + l * c);
        linear(t, IN_XN, c, 3u * c, p.qkv_w + l * 3u * cc, HALF_W, p.qkv_b + l * 3u * c, false, OUT_BIG);
        attend_heads(t, l, last);
        linear(t, IN_XN, c, c, p.proj_w + l * cc, HALF_W, p.proj_b + l * c, false, OUT_X_ADD);
        layernorm(t, p.ln2_w + l * c, p.ln2_b + l * c);
        linear(t, IN_XN, c, 4u * c, p.fc_w + l * 4u * cc, HALF_W, p.fc_b + l * 4u * c, true, OUT_BIG);
        linear(t, IN_BIG, 4u * c, c, p.fcp_w + l * 4u * cc, HALF_W, p.fcp_b + l * c, false, OUT_X_ADD);
    }
    layernorm(t, p.lnf_w, p.lnf_b);
    linear(t, IN_XN, c, p.v, p.tok, false, 0u, false, OUT_LOGITS);
}
