// One head's first LayerNorm, QKV GEMV and attention of a decoded token in
// one dispatch: the `Fused` decoder layout with f32 weights
// (model/decode/rows.rs), one dispatch a layer and token fewer than the
// QKV GEMV (gemv.wgsl's `main_ln`) followed by the decode attention
// (attention_decode.wgsl's `main`). A head's attention reads only its own
// q, k and v — 3·HS of the QKV row's 3C columns — so workgroup (h, b)
// computes those columns itself and needs no other workgroup's result
// (WGSL cannot order memory across the workgroups of one dispatch).
//
// The same bits as those two kernels, by construction:
//   - the row's mean and 1/σ are gemv_row.wgsl's `ln_stats`, each input
//     normalised by its `ln_x`, all K of them staged once in `xn`;
//   - each column's dot product is summed exactly as `lane_dot_ln` sums it:
//     lane i (of 32) takes inputs i + 32j in the same rounds of 256, the
//     same vec4 accumulators and the same scalar tail, then lanes_wg.wgsl's
//     tree adds the 32 lanes; + bias;
//   - q (scaled), k and v go where the attention's append puts them, and
//     attention_decode_common.wgsl's `attend` runs as in `main`.
// What changes is only who computes what: the 256 threads are 8 column
// slots × 32 lanes, and each thread carries four columns (slot + 8c,
// c < 4) at once, so that a lane has four columns' weight loads in flight
// where `lane_dot_ln` has one's. tests/decode.rs holds the decoder's
// logits to the separate kernels' bits.
//
// Workgroups: (NH, B), as the decode attention. Appended after it: gemv_row.wgsl
// (set_row, ln_stats, ln_x, the `lnp` binding 5), ln_sum.wgsl (`red`),
// lanes_wg.wgsl (lane_tree), erf.wgsl, attention_decode_common.wgsl and
// reduce_wg.wgsl or reduce_sg.wgsl. The host binds it only where K ≤ XN_MAX.

struct Params {
    // gemv_row.wgsl's: K = C, N = 3C, the flags (bias), offsets of the
    // input rows, W (3C, C), the bias, and the LayerNorm's weight and bias.
    m: u32,
    k: u32,
    n: u32,
    flags: u32,
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
    ln_w_off: u32,
    ln_b_off: u32,
    // The attention's.
    nh: u32,
    hs: u32,
    t_max: u32,
    scale: f32,
    // The subgroup size of the `reduce_sg.wgsl` form.
    sg: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// x: the query's position P; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
// The residual rows x (C per sample).
@group(0) @binding(2) var<storage, read> a: array<f32>;
// W and the bias of the QKV linear (the flat parameters).
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(6) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(7) var<storage, read_write> v_cache: array<f32>;
// The attention's output rows (C per sample).
@group(0) @binding(8) var<storage, read_write> out: array<f32>;
// gemv_row.wgsl's `finish_col` writes here; this kernel never calls it (an
// unused binding is not in the pipeline's layout).
@group(0) @binding(9) var<storage, read_write> c: array<f32>;

const LANES: u32 = 32u;
// Inputs per round of `lane_dot_ln`: eight per lane.
const BLOCK: u32 = 256u;
// Column slots of 32 lanes, and the columns a thread carries at once.
const SLOTS: u32 = 8u;
const CARRY: u32 = 4u;
// Inputs the workgroup stages (the host's limit on C).
const XN_MAX: u32 = 1024u;

// The LayerNorm's output row.
var<workgroup> xn: array<f32, XN_MAX>;

fn lane_add(x: f32, y: f32) -> f32 {
    return x + y;
}

// Normalised inputs k + 32i for i < 4.
fn xn4(k: u32) -> vec4<f32> {
    return vec4<f32>(xn[k], xn[k + LANES], xn[k + 2u * LANES], xn[k + 3u * LANES]);
}

// W[col, k + 32i] for i < 4, the row starting at `row`.
fn ws(row: u32, k: u32) -> vec4<f32> {
    return vec4<f32>(b[row + k], b[row + k + LANES], b[row + k + 2u * LANES], b[row + k + 3u * LANES]);
}

// Where head h's column j (q: j < HS, k, v after) starts in W (3C, C); a
// column past 3·HS reads the last one's (and is written nowhere).
fn head_row(h: u32, j: u32) -> u32 {
    let jj = min(j, 3u * p.hs - 1u);
    return p.b_off + ((jj / p.hs) * p.k + h * p.hs + jj % p.hs) * p.k;
}

// Lane `lane`'s shares of the four columns whose rows start at `r`, each
// summed as `lane_dot_ln` sums one: whole rounds into two vec4 accumulators,
// added, then the rest into the first component four and then one input at
// a time. The four columns' loads go together.
fn lane_dots(r: vec4<u32>, lane: u32) -> vec4<f32> {
    let whole = p.k - p.k % BLOCK;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var b0 = vec4<f32>(0.0);
    var b1 = vec4<f32>(0.0);
    var b2 = vec4<f32>(0.0);
    var b3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < whole; k0 += BLOCK) {
        let k = k0 + lane;
        let h = k + 4u * LANES;
        let w0 = ws(r.x, k);
        let w1 = ws(r.y, k);
        let w2 = ws(r.z, k);
        let w3 = ws(r.w, k);
        let v0 = ws(r.x, h);
        let v1 = ws(r.y, h);
        let v2 = ws(r.z, h);
        let v3 = ws(r.w, h);
        let x0 = xn4(k);
        let x1 = xn4(h);
        a0 = fma(x0, w0, a0);
        a1 = fma(x0, w1, a1);
        a2 = fma(x0, w2, a2);
        a3 = fma(x0, w3, a3);
        b0 = fma(x1, v0, b0);
        b1 = fma(x1, v1, b1);
        b2 = fma(x1, v2, b2);
        b3 = fma(x1, v3, b3);
    }
    a0 += b0;
    a1 += b1;
    a2 += b2;
    a3 += b3;
    // The four columns' first components, side by side.
    var t = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
    var i = whole + lane;
    for (; i + 3u * LANES < p.k; i += 4u * LANES) {
        let w0 = ws(r.x, i);
        let w1 = ws(r.y, i);
        let w2 = ws(r.z, i);
        let w3 = ws(r.w, i);
        let x = xn4(i);
        t = fma(vec4<f32>(x.x), vec4<f32>(w0.x, w1.x, w2.x, w3.x), t);
        t = fma(vec4<f32>(x.y), vec4<f32>(w0.y, w1.y, w2.y, w3.y), t);
        t = fma(vec4<f32>(x.z), vec4<f32>(w0.z, w1.z, w2.z, w3.z), t);
        t = fma(vec4<f32>(x.w), vec4<f32>(w0.w, w1.w, w2.w, w3.w), t);
    }
    for (; i < p.k; i += LANES) {
        t = fma(vec4<f32>(xn[i]), vec4<f32>(b[r.x + i], b[r.y + i], b[r.z + i], b[r.w + i]), t);
    }
    return vec4<f32>(
        (t.x + a0.y) + (a0.z + a0.w),
        (t.y + a1.y) + (a1.z + a1.w),
        (t.z + a2.y) + (a2.z + a2.w),
        (t.w + a3.y) + (a3.z + a3.w),
    );
}

// Puts head h's column j (its dot product `dot`, + bias) where the decode
// attention's append puts it: q scaled into q_sh, k and v into the caches
// at position `last`.
fn put_column(h: u32, j: u32, dot: f32, base: u32, last: u32) {
    let part = j / p.hs;
    let d = j % p.hs;
    var v = dot;
    if ((p.flags & HAS_BIAS) != 0u) {
        v += bias[p.bias_off + part * p.k + h * p.hs + d];
    }
    if (part == 0u) {
        q_sh[d] = v * p.scale;
    } else if (part == 1u) {
        k_cache[base + d * p.t_max + last] = v;
    } else {
        v_cache[base + last * p.hs + d] = v;
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.x;
    set_row(vec3<u32>(0u, 0u, wg.y));
    let st = ln_stats(tid);
    for (var k = tid; k < p.k; k += WG) {
        xn[k] = ln_x(k, st);
    }
    let base = (wg.y * p.nh + h) * p.t_max * p.hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, p.t_max - 1u);
    let lane = tid % LANES;
    let slot = tid / LANES;
    let cols = 3u * p.hs;
    for (var j0 = 0u; j0 < cols; j0 += SLOTS * CARRY) {
        // ln_sum's reads of `red` and the staged row are done; the last
        // round's trees have read `red`.
        workgroupBarrier();
        let j = j0 + slot;
        let r = vec4<u32>(head_row(h, j), head_row(h, j + SLOTS), head_row(h, j + 2u * SLOTS), head_row(h, j + 3u * SLOTS));
        let dots = lane_dots(r, lane);
        for (var c4 = 0u; c4 < CARRY; c4++) {
            red[tid] = dots[c4];
            workgroupBarrier();
            let jc = j + c4 * SLOTS;
            if (lane == 0u && jc < cols) {
                put_column(h, jc, lane_tree(slot * LANES), base, last);
            }
            workgroupBarrier();
        }
    }
    storageBarrier();
    workgroupBarrier();
    attend(base, last, p.k * wg.y + h * p.hs, tid);
}
