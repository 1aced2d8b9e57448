// A decoded token's blocks and head in one dispatch: the `Persistent`
// decoder layout (model/decode/layout.rs). G workgroups of 256
// invocations, all resident at once, run the step's stages one after
// another with a grid barrier between two (grid_sync.wgsl, appended, as is
// erf.wgsl for GELU):
//   per layer  LN1 + QKV GEMV → attention (the token's K, V appended to
//              the cache) → projection GEMV, added into x → LN2 + fc GEMV
//              + GELU → fc_proj GEMV, added into x
//   then       the final LN and the tied head → logits
// — 5·L + 1 stages behind 5·L grid barriers instead of as many dispatches,
// each of which waits for the whole GPU to drain (BENCHMARKS.md, "The
// launch floor"). The pick stays a dispatch of its own (sample_pick.wgsl).
//
// GEMV stages: warp w of workgroup g is warp g·8 + w of the grid and
// computes columns (g·8 + w) + r·8G, r = 0, 1, …; its 32 lanes take four
// inputs each round (lane i inputs 4i … 4i + 3, then 4(i + 32) …, four
// loads of weights in flight), and lane 0 adds the 32 lanes in order. Each
// workgroup stages a sample's input row (LayerNormed where the stage has
// one: every workgroup computes the row's mean and 1/σ itself) in
// workgroup memory; samples decoded together run one after another.
// Attention: workgroup g takes the (sample, head) pairs g, g + G, …; the
// K cache block of a head is transposed (dim i of position t at
// i·T_max + t) so neighbouring threads score neighbouring positions, the
// V block is (T_max, HS); positions go 256 at a time with an online
// softmax, as attention_decode.wgsl's `main`. All sums are f32 in a fixed
// order, which is not the other layouts' order: the logits agree with
// theirs to f32 rounding, not bit for bit.

struct Params {
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    batch: u32,
    v: u32,
    n_layer: u32,
    _pad0: u32,
    scale: f32,
    _pad1: u32,
    _pad2: u32,
    _pad3: u32,
    // The flat offsets of the sixteen parameter tensors, in ParamKind's
    // order (TOK_EMB … LNF_B below).
    off: array<vec4<u32>, 4>,
}

// The linears read f16 weights (the packed cache, element i in half
// i mod 2 of word i / 2) instead of the f32 ones.
override F16W: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
// x: the token's position P.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> params: array<f32>;
// The same f32 parameters four at a time, and the f16 cache (or, without
// F16W, any buffer: unread).
@group(0) @binding(3) var<storage, read> w4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> h4: array<vec2<u32>>;
// The residual rows (C a sample), the pick writes the next one.
@group(0) @binding(5) var<storage, read_write> x: array<f32>;
// 8C a sample: qkv (3C), atty (C), fch (4C).
@group(0) @binding(6) var<storage, read_write> act: array<f32>;
@group(0) @binding(7) var<storage, read_write> logits: array<f32>;
// Layer l, sample s, head h: K then V, T_max·HS each, from
// ((l·B + s)·NH + h)·2·T_max·HS.
@group(0) @binding(8) var<storage, read_write> kv: array<f32>;
@group(0) @binding(9) var<storage, read_write> sync: array<atomic<u32>>;

const WG: u32 = 256u;
const LANES: u32 = 32u;
const WARPS: u32 = 8u;
const NONE: u32 = 0xffffffffu;
const NEG: f32 = -1e30;
const EPS: f32 = 1e-5;

const TOK_EMB: u32 = 0u;
const LN1_W: u32 = 2u;
const LN1_B: u32 = 3u;
const QKV_W: u32 = 4u;
const QKV_B: u32 = 5u;
const PROJ_W: u32 = 6u;
const PROJ_B: u32 = 7u;
const LN2_W: u32 = 8u;
const LN2_B: u32 = 9u;
const FC_W: u32 = 10u;
const FC_B: u32 = 11u;
const FCP_W: u32 = 12u;
const FCP_B: u32 = 13u;
const LNF_W: u32 = 14u;
const LNF_B: u32 = 15u;

// Where a GEMV reads and writes.
const SRC_X: u32 = 0u;
const SRC_ACT: u32 = 1u;
const DST_ACT: u32 = 0u;
const DST_X: u32 = 1u;
const DST_LOGITS: u32 = 2u;

// A sample's staged input row, four inputs a word (K ≤ 2048).
var<workgroup> xs: array<vec4<f32>, 512>;
var<workgroup> red: array<f32, 256>;
var<workgroup> q_sh: array<f32, 128>;
var<workgroup> w_sh: array<f32, 256>;

// Tensor `kind` of layer l, `per` elements a layer.
fn at(kind: u32, l: u32, per: u32) -> u32 {
    return p.off[kind / 4u][kind % 4u] + l * per;
}

fn wg_sum(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

fn wg_max(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] = max(red[lid], red[lid + s]);
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

// Mean and 1/σ of sample s's residual row.
fn ln_stats(lid: u32, s: u32) -> vec2<f32> {
    let base = s * p.c;
    var acc = 0.0;
    for (var i = lid; i < p.c; i += WG) {
        acc += x[base + i];
    }
    let mean = wg_sum(lid, acc) / f32(p.c);
    var q = 0.0;
    for (var i = lid; i < p.c; i += WG) {
        let d = x[base + i] - mean;
        q = fma(d, d, q);
    }
    return vec2<f32>(mean, 1.0 / sqrt(wg_sum(lid, q) / f32(p.c) + EPS));
}

struct Gemv {
    src: u32,
    // Where the input starts in the sample's row.
    in_off: u32,
    k: u32,
    n: u32,
    // Offsets of W (N, K) and the bias (or NONE).
    w: u32,
    bias: u32,
    // The LayerNorm's weight and bias offsets, or NONE.
    ln_w: u32,
    ln_b: u32,
    dst: u32,
    out_off: u32,
    gelu: bool,
    // Read W from the f16 cache (with F16W; the tied head never does).
    half: bool,
}

fn load4(src: u32, o: u32) -> vec4<f32> {
    if (src == SRC_X) {
        return vec4<f32>(x[o], x[o + 1u], x[o + 2u], x[o + 3u]);
    }
    return vec4<f32>(act[o], act[o + 1u], act[o + 2u], act[o + 3u]);
}

fn param4(o: u32) -> vec4<f32> {
    return vec4<f32>(params[o], params[o + 1u], params[o + 2u], params[o + 3u]);
}

// Sample s's input row into `xs`, through the stage's LayerNorm.
fn stage_input(lid: u32, g: Gemv, s: u32) {
    var st = vec2<f32>(0.0, 1.0);
    if (g.ln_w != NONE) {
        st = ln_stats(lid, s);
    }
    let row = select(s * 8u * p.c, s * p.c, g.src == SRC_X) + g.in_off;
    for (var i = lid; i < g.k / 4u; i += WG) {
        var v = load4(g.src, row + 4u * i);
        if (g.ln_w != NONE) {
            v = (v - st.x) * st.y * param4(g.ln_w + 4u * i) + param4(g.ln_b + 4u * i);
        }
        xs[i] = v;
    }
    workgroupBarrier();
}

// Weights o4 … o4 + 3 (in fours).
fn weights(half: bool, o4: u32) -> vec4<f32> {
    if (F16W && half) {
        let q = h4[o4];
        return vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
    }
    return w4[o4];
}

// This lane's share of column `col`'s dot product with the staged row.
fn lane_dot(g: Gemv, col: u32, lane: u32) -> f32 {
    let k4 = g.k / 4u;
    let row = (g.w + col * g.k) / 4u;
    var acc = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var i = lane;
    for (; i + 3u * LANES < k4; i += 4u * LANES) {
        let w0 = weights(g.half, row + i);
        let w1 = weights(g.half, row + i + LANES);
        let w2 = weights(g.half, row + i + 2u * LANES);
        let w3 = weights(g.half, row + i + 3u * LANES);
        acc = fma(xs[i], w0, acc);
        acc1 = fma(xs[i + LANES], w1, acc1);
        acc = fma(xs[i + 2u * LANES], w2, acc);
        acc1 = fma(xs[i + 3u * LANES], w3, acc1);
    }
    for (; i < k4; i += LANES) {
        acc = fma(xs[i], weights(g.half, row + i), acc);
    }
    acc += acc1;
    return (acc.x + acc.y) + (acc.z + acc.w);
}

// Bias, GELU, then the write (or the add into x).
fn finish(g: Gemv, s: u32, col: u32, sum: f32) {
    var y = sum;
    if (g.bias != NONE) {
        y += params[g.bias + col];
    }
    if (g.gelu) {
        y = gelu_f32(y);
    }
    switch g.dst {
        case DST_ACT: {
            act[s * 8u * p.c + g.out_off + col] = y;
        }
        case DST_X: {
            let o = s * p.c + col;
            x[o] = x[o] + y;
        }
        default: {
            logits[s * p.v + col] = y;
        }
    }
}

fn gemv(lid: u32, wg: u32, groups: u32, g: Gemv) {
    let warp = lid / LANES;
    let lane = lid % LANES;
    let warps = groups * WARPS;
    let rounds = (g.n + warps - 1u) / warps;
    for (var s = 0u; s < p.batch; s++) {
        stage_input(lid, g, s);
        for (var r = 0u; r < rounds; r++) {
            let col = r * warps + wg * WARPS + warp;
            var part = 0.0;
            if (col < g.n) {
                part = lane_dot(g, col, lane);
            }
            red[lid] = part;
            workgroupBarrier();
            if (lane == 0u && col < g.n) {
                var sum = 0.0;
                for (var j = 0u; j < LANES; j++) {
                    sum += red[lid + j];
                }
                finish(g, s, col, sum);
            }
            workgroupBarrier();
        }
    }
}

// Sample s, head h at position P: append the token's K and V, attend over
// positions 0 … P, write its slice of atty.
fn attend(lid: u32, l: u32, s: u32, h: u32) {
    let hs = p.hs;
    let big_p = pos.x;
    let row = s * 8u * p.c + h * hs;
    let kb = ((l * p.batch + s) * p.nh + h) * 2u * p.t_max * hs;
    let vb = kb + p.t_max * hs;
    if (lid < hs) {
        q_sh[lid] = act[row + lid] * p.scale;
        kv[kb + lid * p.t_max + big_p] = act[row + p.c + lid];
        kv[vb + big_p * hs + lid] = act[row + 2u * p.c + lid];
    }
    storageBarrier();
    workgroupBarrier();
    // Thread (g, d), g < ng: dim d of the positions ≡ g (mod ng).
    let ng = WG / hs;
    let gi = lid / hs;
    let d = lid % hs;
    var m = NEG;
    var sum = 0.0;
    var o = 0.0;
    for (var c0 = 0u; c0 <= big_p; c0 += WG) {
        let t = c0 + lid;
        var score = NEG;
        if (t <= big_p) {
            var a = 0.0;
            for (var i = 0u; i < hs; i++) {
                a = fma(q_sh[i], kv[kb + i * p.t_max + t], a);
            }
            score = a;
        }
        let m_new = max(m, wg_max(lid, score));
        let e = select(0.0, exp(score - m_new), t <= big_p);
        let corr = exp(m - m_new);
        sum = sum * corr + wg_sum(lid, e);
        w_sh[lid] = e;
        workgroupBarrier();
        o *= corr;
        if (gi < ng) {
            let n = min(WG, big_p + 1u - c0);
            for (var j = gi; j < n; j += ng) {
                o = fma(w_sh[j], kv[vb + (c0 + j) * hs + d], o);
            }
        }
        workgroupBarrier();
        m = m_new;
    }
    red[lid] = o;
    workgroupBarrier();
    if (lid < hs) {
        var total = 0.0;
        for (var gj = 0u; gj < ng; gj++) {
            total += red[gj * hs + lid];
        }
        act[s * 8u * p.c + 3u * p.c + h * hs + lid] = total / sum;
    }
    workgroupBarrier();
}

fn attention(lid: u32, wg: u32, groups: u32, l: u32) {
    let tasks = p.batch * p.nh;
    for (var task = wg; task < tasks; task += groups) {
        attend(lid, l, task / p.nh, task % p.nh);
    }
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wgid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let wg = wgid.x;
    let groups = nwg.x;
    let c = p.c;
    for (var l = 0u; l < p.n_layer; l++) {
        let qkv = Gemv(SRC_X, 0u, c, 3u * c, at(QKV_W, l, 3u * c * c), at(QKV_B, l, 3u * c), at(LN1_W, l, c), at(LN1_B, l, c), DST_ACT, 0u, false, true);
        gemv(lid, wg, groups, qkv);
        grid_sync(lid, groups);
        attention(lid, wg, groups, l);
        grid_sync(lid, groups);
        let proj = Gemv(SRC_ACT, 3u * c, c, c, at(PROJ_W, l, c * c), at(PROJ_B, l, c), NONE, NONE, DST_X, 0u, false, true);
        gemv(lid, wg, groups, proj);
        grid_sync(lid, groups);
        let fc = Gemv(SRC_X, 0u, c, 4u * c, at(FC_W, l, 4u * c * c), at(FC_B, l, 4u * c), at(LN2_W, l, c), at(LN2_B, l, c), DST_ACT, 4u * c, true, true);
        gemv(lid, wg, groups, fc);
        grid_sync(lid, groups);
        let fcp = Gemv(SRC_ACT, 4u * c, 4u * c, c, at(FCP_W, l, 4u * c * c), at(FCP_B, l, c), NONE, NONE, DST_X, 0u, false, true);
        gemv(lid, wg, groups, fcp);
        grid_sync(lid, groups);
    }
    let head = Gemv(SRC_X, 0u, c, p.v, at(TOK_EMB, 0u, 0u), NONE, at(LNF_W, 0u, 0u), at(LNF_B, 0u, 0u), DST_LOGITS, 0u, false, false);
    gemv(lid, wg, groups, head);
}
