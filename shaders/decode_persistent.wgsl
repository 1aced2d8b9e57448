// A whole decoded token in one workgroup per sample: every block's
// LayerNorms, linears, attention (the token's keys and values appended to
// the caches) and residual adds, the final LayerNorm and the tied head,
// writing the logits — the decoder's `Persistent` layout
// (model/decode/layout.rs). A token is then this dispatch and the pick's:
// two launch-and-barrier floors where the other layouts pay
// 4–7·n_layer + 2. Its price: one workgroup streams all the weights, so it
// wins only while they are small (they stay in L2 from token to token).
//
// Rows live in workgroup memory: x (the residual row), xn (a LayerNorm's
// output, then the attention's), big (the qkv row, then the fc hidden
// row). The linears (`linear`) run in rounds of 128 output columns: 32
// groups of 8 lanes, group g taking columns r·128 + g + 32j (j < 4), its
// 8 lanes reading neighbouring vec4s of each column's weight row (a warp
// reads 128 contiguous bytes of four rows), four columns' loads in flight;
// each lane's four products a vec4, its partial (x + y) + (z + w), the 8
// partials added as a fixed tree. The attention (`attend_heads`) runs
// every head at once: scores by (head, position) over all threads, each
// head's max and sum over 32 lanes of its own, then each output dim by
// 256/C threads (groups of positions), the groups added in order. All sums are f32, in fixed
// orders (not the other layouts': the logits agree to f32 rounding).
//
// Caches: one buffer each for every layer and sample; head h of sample b
// in layer l owns the block ((l·B + b)·NH + h)·T_max·HS: K transposed
// (dim i of position p at i·T_max + p), V by position (p·HS + i).
//
// Weights: the flat f32 parameters (`w4` as vec4s, `wf` as scalars, the
// same buffer), the linears' weights as packed halves (`wh`, the f16
// weight cache) when HALF_W; LayerNorms, biases and the tied head always
// f32. Needs C ≤ 256, C and HS multiples of 4, NH ≤ 8, NH·T_max ≤ 1024
// (ops/attention/persistent.rs checks).

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
// x: the token's position P; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> w4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> wf: array<f32>;
@group(0) @binding(4) var<storage, read> wh: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;
// The input rows (C per sample) and the logits (V per sample).
@group(0) @binding(7) var<storage, read> x_in: array<f32>;
@group(0) @binding(8) var<storage, read_write> logits: array<f32>;

// The linears' weights as packed halves (the f16 weight cache).
override HALF_W: bool = false;

const WG: u32 = 256u;
const CMAX: u32 = 256u;
// Columns a round of `linear`, lanes per column.
const ROUND: u32 = 128u;
const LANES: u32 = 8u;
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
// Two rounds' partial sums (rounds alternate halves); the attention's
// scores (NH·T_max).
var<workgroup> part_sh: array<f32, 2048>;
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
    return vec4<f32>(big_sh[k], big_sh[k + 1u], big_sh[k + 2u], big_sh[k + 3u]);
}

// The sum of every thread's `v`: sixteen threads add sixteen each, then
// every thread the sixteen sums (fixed trees), three barriers.
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
        a = step4(a, in_vec(src, 4u * q), hv(w00), hv(w01), hv(w02), hv(w03));
        a = step4(a, in_vec(src, 4u * q1), hv(w10), hv(w11), hv(w12), hv(w13));
        a = step4(a, in_vec(src, 4u * q2), hv(w20), hv(w21), hv(w22), hv(w23));
        a = step4(a, in_vec(src, 4u * q3), hv(w30), hv(w31), hv(w32), hv(w33));
    }
    for (; q < quads; q += LANES) {
        a = step4(a, in_vec(src, 4u * q), hv(wh[rq.x + q]), hv(wh[rq.y + q]), hv(wh[rq.z + q]), hv(wh[rq.w + q]));
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

// out (N) = in (K) · Wᵀ [+ bias] [GELU], W (N, K) from element w_off
// (`half`: of the packed halves), written per `dst`: into big, added into
// x (the residual), or to the sample's logits. K a multiple of 4.
fn linear(t: u32, src: u32, k: u32, n: u32, w_off: u32, half: bool, b_off: u32, gelu_on: bool, dst: u32) {
    let g = t / LANES;
    let lane = t % LANES;
    let quads = k / 4u;
    for (var r0 = 0u; r0 < n; r0 += ROUND) {
        // This round's half of part_sh: the next round writes the other
        // while this one's sums are read, the one after this one's only
        // past the next round's barrier.
        let pb = ((r0 / ROUND) % 2u) * ROUND * LANES;
        let last = n - 1u;
        let rq = vec4<u32>(
            (w_off + min(r0 + g, last) * k) / 4u,
            (w_off + min(r0 + g + 32u, last) * k) / 4u,
            (w_off + min(r0 + g + 64u, last) * k) / 4u,
            (w_off + min(r0 + g + 96u, last) * k) / 4u,
        );
        // The column's bias, loaded with the round's weights.
        var bias_v = 0.0;
        if (t < ROUND && dst != OUT_LOGITS) {
            bias_v = wf[b_off + min(r0 + t, last)];
        }
        var a: Acc;
        if (half) {
            a = lane_half(src, rq, lane, quads);
        } else {
            a = lane_f32(src, rq, lane, quads);
        }
        part_sh[pb + g * LANES + lane] = lane_sum(a.a0);
        part_sh[pb + (g + 32u) * LANES + lane] = lane_sum(a.a1);
        part_sh[pb + (g + 64u) * LANES + lane] = lane_sum(a.a2);
        part_sh[pb + (g + 96u) * LANES + lane] = lane_sum(a.a3);
        workgroupBarrier();
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
    workgroupBarrier();
}

// Where head h's cache block of layer l starts.
fn cache_base(l: u32, h: u32) -> u32 {
    return ((l * rows + row) * p.nh + h) * p.t_max * p.hs;
}

// The attention of layer l over positions 0 ..= last: q, k, v in big
// (the qkv row); k and v appended to the caches at `last`, where this
// dispatch never reads them back (position `last` comes from big); the
// heads' outputs into xn. Every thread calls it (barriers).
fn attend_heads(t: u32, l: u32, last: u32) {
    let c = p.c;
    let hs = p.hs;
    let n = last + 1u;
    if (t < c) {
        let base = cache_base(l, t / hs);
        let d = t % hs;
        k_cache[base + d * p.t_max + last] = big_sh[c + t];
        v_cache[base + last * hs + d] = big_sh[2u * c + t];
    }
    // The weighted values' first round of sixteen positions (below
    // `last`), loaded now, so that its round trip overlaps the scores and
    // the softmax (`groups`, `gi`: below).
    let groups = WG / c;
    let o = t % c;
    let gi = t / c;
    let hh = o / hs;
    let vbase = cache_base(l, hh) + o % hs;
    let first = gi < groups && gi + 15u * groups < last;
    var pv0 = vec4<f32>(0.0);
    var pv1 = vec4<f32>(0.0);
    var pv2 = vec4<f32>(0.0);
    var pv3 = vec4<f32>(0.0);
    if (first) {
        pv0 = v4(vbase, gi, groups);
        pv1 = v4(vbase, gi + 4u * groups, groups);
        pv2 = v4(vbase, gi + 8u * groups, groups);
        pv3 = v4(vbase, gi + 12u * groups, groups);
    }
    // Scores of (head, position), positions neighbouring across threads;
    // sixteen dims' loads in flight.
    for (var i = t; i < p.nh * n; i += WG) {
        let h = i / n;
        let s = i % n;
        let q = h * hs;
        var acc = vec4<f32>(0.0);
        if (s == last) {
            for (var d = 0u; d < hs; d += 4u) {
                acc = fma(big4(q + d), big4(c + q + d), acc);
            }
        } else {
            let base = cache_base(l, h) + s;
            var d = 0u;
            for (; d + 16u <= hs; d += 16u) {
                let k0 = k4(base, d);
                let k1 = k4(base, d + 4u);
                let k2 = k4(base, d + 8u);
                let k3 = k4(base, d + 12u);
                acc = fma(big4(q + d), k0, acc);
                acc = fma(big4(q + d + 4u), k1, acc);
                acc = fma(big4(q + d + 8u), k2, acc);
                acc = fma(big4(q + d + 12u), k3, acc);
            }
            for (; d < hs; d += 4u) {
                acc = fma(big4(q + d), k4(base, d), acc);
            }
        }
        part_sh[h * p.t_max + s] = ((acc.x + acc.y) + (acc.z + acc.w)) * p.scale;
    }
    workgroupBarrier();
    // Each head's max, then its weights exp(score − max) and their sum:
    // 32 lanes a head, lane j taking positions j, j + 32, …; lane 0 adds
    // the lanes' 32 in order.
    let h = t / 32u;
    let lane = t % 32u;
    let live = h < p.nh;
    var m = NEG;
    if (live) {
        for (var s = lane; s < n; s += 32u) {
            m = max(m, part_sh[h * p.t_max + s]);
        }
    }
    red[t] = m;
    workgroupBarrier();
    if (live && lane == 0u) {
        var mm = red[t];
        for (var i = 1u; i < 32u; i++) {
            mm = max(mm, red[t + i]);
        }
        m_sh[h] = mm;
    }
    workgroupBarrier();
    var l_sum = 0.0;
    if (live) {
        let mh = m_sh[h];
        for (var s = lane; s < n; s += 32u) {
            let e = exp(part_sh[h * p.t_max + s] - mh);
            part_sh[h * p.t_max + s] = e;
            l_sum += e;
        }
    }
    red[t] = l_sum;
    workgroupBarrier();
    if (live && lane == 0u) {
        var ls = red[t];
        for (var i = 1u; i < 32u; i++) {
            ls += red[t + i];
        }
        l_sh[h] = ls;
    }
    // Output dim o of group gi (WG / C groups of positions gi, gi + G, …
    // below `last`): its head's weighted values, sixteen positions' loads
    // in flight; then the groups in order, then position `last` from big.
    var acc = 0.0;
    if (gi < groups) {
        let w0 = hh * p.t_max;
        var a4 = vec4<f32>(0.0);
        var s = gi;
        let step = 4u * groups;
        if (first) {
            a4 = fma(w4s(w0, s, groups), pv0, a4);
            a4 = fma(w4s(w0, s + step, groups), pv1, a4);
            a4 = fma(w4s(w0, s + 2u * step, groups), pv2, a4);
            a4 = fma(w4s(w0, s + 3u * step, groups), pv3, a4);
            s += 4u * step;
        }
        // Sixteen positions a round: s, s + G, …, s + 15G.
        for (; s + 15u * groups < last; s += 4u * step) {
            let v0 = v4(vbase, s, groups);
            let v1 = v4(vbase, s + step, groups);
            let v2 = v4(vbase, s + 2u * step, groups);
            let v3 = v4(vbase, s + 3u * step, groups);
            a4 = fma(w4s(w0, s, groups), v0, a4);
            a4 = fma(w4s(w0, s + step, groups), v1, a4);
            a4 = fma(w4s(w0, s + 2u * step, groups), v2, a4);
            a4 = fma(w4s(w0, s + 3u * step, groups), v3, a4);
        }
        for (; s < last; s += groups) {
            a4.x = fma(part_sh[w0 + s], v_cache[vbase + s * hs], a4.x);
        }
        acc = (a4.x + a4.y) + (a4.z + a4.w);
    }
    workgroupBarrier();
    red[t] = acc;
    workgroupBarrier();
    if (t < c) {
        var sum = red[t];
        for (var i = 1u; i < groups; i++) {
            sum += red[i * c + t];
        }
        let th = t / hs;
        sum = fma(part_sh[th * p.t_max + last], big_sh[2u * c + t], sum);
        xn_sh[t] = sum / l_sh[th];
    }
    workgroupBarrier();
}

// Dims d … d + 3 of the key at the transposed block position `at`.
fn k4(at: u32, d: u32) -> vec4<f32> {
    let tm = p.t_max;
    return vec4<f32>(k_cache[at + d * tm], k_cache[at + (d + 1u) * tm], k_cache[at + (d + 2u) * tm], k_cache[at + (d + 3u) * tm]);
}

fn big4(i: u32) -> vec4<f32> {
    return vec4<f32>(big_sh[i], big_sh[i + 1u], big_sh[i + 2u], big_sh[i + 3u]);
}

// The values of dim `at` (a head's block + dim) at positions s, s + g,
// s + 2g, s + 3g.
fn v4(at: u32, s: u32, g: u32) -> vec4<f32> {
    let hs = p.hs;
    return vec4<f32>(v_cache[at + s * hs], v_cache[at + (s + g) * hs], v_cache[at + (s + 2u * g) * hs], v_cache[at + (s + 3u * g) * hs]);
}

// The weights of positions s, s + g, s + 2g, s + 3g from w0.
fn w4s(w0: u32, s: u32, g: u32) -> vec4<f32> {
    return vec4<f32>(part_sh[w0 + s], part_sh[w0 + s + g], part_sh[w0 + s + 2u * g], part_sh[w0 + s + 3u * g]);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    row = wg.y;
    rows = nwg.y;
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
