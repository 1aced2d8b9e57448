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
// head's max and sum over 32 lanes of its own, then each output dim by one
// thread summing the positions in order. All sums are f32, in fixed
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
// A round's partial sums; the attention's scores (NH·T_max).
var<workgroup> part_sh: array<f32, 1024>;
var<workgroup> red: array<f32, WG>;

// The sample this workgroup decodes, and the batch.
var<private> row: u32;
var<private> rows: u32;

// Elements 4·e4 … 4·e4 + 3 of the packed halves.
fn half_vec(e4: u32) -> vec4<f32> {
    let q = wh[e4];
    return vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
}

fn in_vec(src: u32, k: u32) -> vec4<f32> {
    if (src == IN_XN) {
        return vec4<f32>(xn_sh[k], xn_sh[k + 1u], xn_sh[k + 2u], xn_sh[k + 3u]);
    }
    return vec4<f32>(big_sh[k], big_sh[k + 1u], big_sh[k + 2u], big_sh[k + 3u]);
}

// The tree of `red` over all threads: the sum of every thread's `v`.
fn block_sum(t: u32, v: f32) -> f32 {
    workgroupBarrier();
    red[t] = v;
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (t < s) {
            red[t] += red[t + s];
        }
    }
    workgroupBarrier();
    return red[0];
}

// xn = LayerNorm(x) with weight and bias at elements w_off and b_off.
fn layernorm(t: u32, w_off: u32, b_off: u32) {
    let c = p.c;
    let live = t < c;
    let xv = select(0.0, x_sh[min(t, c - 1u)], live);
    let mu = block_sum(t, xv) / f32(c);
    let d = select(0.0, xv - mu, live);
    let variance = block_sum(t, d * d) / f32(c);
    let rstd = 1.0 / sqrt(variance + LN_EPS);
    if (live) {
        xn_sh[t] = d * rstd * wf[w_off + t] + wf[b_off + t];
    }
    workgroupBarrier();
}

// out (N) = in (K) · Wᵀ [+ bias] [GELU], W (N, K) from element w_off
// (`half`: of the packed halves), written per `dst`: into big, added into
// x (the residual), or to the sample's logits. K a multiple of 4.
fn linear(t: u32, src: u32, k: u32, n: u32, w_off: u32, half: bool, b_off: u32, gelu_on: bool, dst: u32) {
    let g = t / LANES;
    let lane = t % LANES;
    let quads = k / 4u;
    for (var r0 = 0u; r0 < n; r0 += ROUND) {
        var acc = array<vec4<f32>, 4>();
        var rowq = array<u32, 4>();
        for (var j = 0u; j < 4u; j++) {
            rowq[j] = (w_off + min(r0 + g + 32u * j, n - 1u) * k) / 4u;
        }
        for (var q = lane; q < quads; q += LANES) {
            let x = in_vec(src, 4u * q);
            var w: array<vec4<f32>, 4>;
            for (var j = 0u; j < 4u; j++) {
                if (half) {
                    w[j] = half_vec(rowq[j] + q);
                } else {
                    w[j] = w4[rowq[j] + q];
                }
            }
            for (var j = 0u; j < 4u; j++) {
                acc[j] = fma(x, w[j], acc[j]);
            }
        }
        for (var j = 0u; j < 4u; j++) {
            let a = acc[j];
            part_sh[(g + 32u * j) * LANES + lane] = (a.x + a.y) + (a.z + a.w);
        }
        workgroupBarrier();
        let col = r0 + t;
        if (t < ROUND && col < n) {
            let q = t * LANES;
            var v = ((part_sh[q] + part_sh[q + 1u]) + (part_sh[q + 2u] + part_sh[q + 3u]))
                + ((part_sh[q + 4u] + part_sh[q + 5u]) + (part_sh[q + 6u] + part_sh[q + 7u]));
            if (dst != OUT_LOGITS) {
                v += wf[b_off + col];
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
        workgroupBarrier();
    }
}

// Where head h's cache block of layer l starts.
fn cache_base(l: u32, h: u32) -> u32 {
    return ((l * rows + row) * p.nh + h) * p.t_max * p.hs;
}

// The attention of layer l over positions 0 ..= last: q, k, v in big
// (the qkv row), k and v appended at `last` first; the heads' outputs into
// xn. Every thread calls it (barriers).
fn attend_heads(t: u32, l: u32, last: u32) {
    let c = p.c;
    let hs = p.hs;
    let n = last + 1u;
    if (t < c) {
        let h = t / hs;
        let d = t % hs;
        let base = cache_base(l, h);
        k_cache[base + d * p.t_max + last] = big_sh[c + t];
        v_cache[base + last * hs + d] = big_sh[2u * c + t];
    }
    storageBarrier();
    workgroupBarrier();
    // Scores of (head, position), positions neighbouring across threads.
    for (var i = t; i < p.nh * n; i += WG) {
        let h = i / n;
        let s = i % n;
        let base = cache_base(l, h) + s;
        let q = h * hs;
        var acc = vec4<f32>(0.0);
        for (var d = 0u; d < hs; d += 4u) {
            let kv = vec4<f32>(k_cache[base + d * p.t_max], k_cache[base + (d + 1u) * p.t_max],
                k_cache[base + (d + 2u) * p.t_max], k_cache[base + (d + 3u) * p.t_max]);
            acc = fma(vec4<f32>(big_sh[q + d], big_sh[q + d + 1u], big_sh[q + d + 2u], big_sh[q + d + 3u]), kv, acc);
        }
        part_sh[h * p.t_max + s] = ((acc.x + acc.y) + (acc.z + acc.w)) * p.scale;
    }
    workgroupBarrier();
    // Each head's max, then its weights exp(score − max) and their sum:
    // 32 lanes a head, lane j taking positions j, j + 32, ….
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
    for (var s = 16u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lane < s) {
            red[t] = max(red[t], red[t + s]);
        }
    }
    workgroupBarrier();
    m = red[h * 32u];
    var l_sum = 0.0;
    if (live) {
        for (var s = lane; s < n; s += 32u) {
            let e = exp(part_sh[h * p.t_max + s] - m);
            part_sh[h * p.t_max + s] = e;
            l_sum += e;
        }
    }
    workgroupBarrier();
    red[t] = l_sum;
    for (var s = 16u; s > 0u; s >>= 1u) {
        workgroupBarrier();
        if (lane < s) {
            red[t] += red[t + s];
        }
    }
    workgroupBarrier();
    // Output dim t: its head's weighted values, positions in order.
    if (t < c) {
        let hh = t / hs;
        let d = t % hs;
        let base = cache_base(l, hh) + d;
        let w0 = hh * p.t_max;
        var acc = vec4<f32>(0.0);
        var s = 0u;
        for (; s + 4u <= n; s += 4u) {
            let vv = vec4<f32>(v_cache[base + s * hs], v_cache[base + (s + 1u) * hs],
                v_cache[base + (s + 2u) * hs], v_cache[base + (s + 3u) * hs]);
            acc = fma(vec4<f32>(part_sh[w0 + s], part_sh[w0 + s + 1u], part_sh[w0 + s + 2u], part_sh[w0 + s + 3u]), vv, acc);
        }
        for (; s < n; s++) {
            acc.x = fma(part_sh[w0 + s], v_cache[base + s * hs], acc.x);
        }
        xn_sh[t] = ((acc.x + acc.y) + (acc.z + acc.w)) / red[hh * 32u];
    }
    workgroupBarrier();
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
