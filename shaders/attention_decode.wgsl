// Causal attention for one new query at position P = pos.x over positions
// 0..=P of the KV cache. Each head owns a block of T_max·HS words of each
// cache: V holds position p's row at p·HS (NH, T_max, HS); K does so for
// `main_serial`, while `main` keeps its K block transposed (HS, T_max), dim
// i of position p at i·T_max + p, so that the threads scoring neighbouring
// positions read neighbouring words. q, k, v are the parts of the new
// token's qkv row (3C); each workgroup first appends its head's k and v at
// position P (only this workgroup reads that head's block, so a storage
// barrier is all it takes), which saves a dispatch per layer and token. The
// output row (C) has the heads concatenated, as in the forward.
//
// Samples decoded together (B rows, one query each at the same position)
// run as B rows of workgroups: workgroup (h, b) reads qkv row b (3C from
// 3C·b), appends to sample b's caches (B caches one after the other, each
// NH blocks) and writes output row b; the sums do not depend on B.
//
// One workgroup per head, 256 threads. Positions go 256 at a time: thread j
// scores position c0 + j, the head's key row read 16 dims a round (sixteen
// loads in flight; the products in the order of one dim after another);
// the chunk's max and sum are tree reductions (reduce_wg.wgsl, or
// reduce_sg.wgsl's shuffles: the same bits); the running max m and sum l
// fold chunks together (online softmax). For the weighted sum of values,
// thread (g, d4) with d4 = tid mod ⌈HS/4⌉ takes dims 4·d4 .. 4·d4 + 3 of
// the positions j ≡ g (mod G), G = min(⌊256 / ⌈HS/4⌉⌋, 64) (16 at
// HS = 64), four rows of values a round; the G groups are added in order
// at the end. A decode step is bound by how long one thread's chain of
// loads is, not by bandwidth: so every loop keeps several loads in flight
// (BENCHMARKS.md, "The decoder's chains of loads"). All sums run in a
// fixed order, in f32.
//
// `main_serial` is the layout for CPU implementations of WebGPU: one
// invocation per head does it all — append, the scores' max, then each
// weight exp(score − max) (its score recomputed) added into the output row
// with its value row, and a last division by the sum. No workgroup memory
// and no barrier, which those implementations pay for far more than for
// the 3·P·HS multiply-adds (BENCHMARKS.md, "The decoder on CPU devices").

struct Params {
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    scale: f32,
    // The subgroup size of the `reduce_sg.wgsl` form.
    sg: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// x: the query's position P; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const WG: u32 = 256u;
const NEG: f32 = -1e30;
// Groups of positions in the weighted sum of values, at most.
const MAX_GROUPS: u32 = 64u;

var<workgroup> q_sh: array<f32, 128>;
// The chunk's weights exp(score − m).
var<workgroup> w_sh: array<f32, 256>;
var<workgroup> red: array<f32, 256>;
// o_sh[g * ⌈HS/4⌉ + d4]: group g's share of output dims 4·d4 .. 4·d4 + 3.
var<workgroup> o_sh: array<vec4<f32>, 256>;

// Dims i .. i + 3 of the key at position s of the head's transposed key
// cache starting at `base` (`main`: dim i of every position at
// base + i·T_max, so that neighbouring threads, neighbouring positions,
// read neighbouring words).
fn k4t(base: u32, i: u32, s: u32) -> vec4<f32> {
    let o = base + i * p.t_max + s;
    return vec4<f32>(k_cache[o], k_cache[o + p.t_max], k_cache[o + 2u * p.t_max], k_cache[o + 3u * p.t_max]);
}

fn q4(i: u32) -> vec4<f32> {
    return vec4<f32>(q_sh[i], q_sh[i + 1u], q_sh[i + 2u], q_sh[i + 3u]);
}

// Dims 4·d4 .. 4·d4 + 3 of the value row at `row`, zero past HS.
fn v4(row: u32, d4: u32) -> vec4<f32> {
    let d = 4u * d4;
    var v = vec4<f32>(0.0);
    if (d + 3u < p.hs) {
        return vec4<f32>(v_cache[row + d], v_cache[row + d + 1u], v_cache[row + d + 2u], v_cache[row + d + 3u]);
    }
    for (var i = 0u; d + i < p.hs; i++) {
        v[i] = v_cache[row + d + i];
    }
    return v;
}

// The scaled query (q_sh) times the key of position s in the transposed
// cache at `base`: dims in order, four partial sums, sixteen loads issued
// before they are used.
fn score_t(base: u32, s: u32) -> f32 {
    let hs = p.hs;
    var x4 = vec4<f32>(0.0);
    var i = 0u;
    for (; i + 16u <= hs; i += 16u) {
        let k0 = k4t(base, i, s);
        let k1 = k4t(base, i + 4u, s);
        let k2 = k4t(base, i + 8u, s);
        let k3 = k4t(base, i + 12u, s);
        x4 = fma(q4(i), k0, x4);
        x4 = fma(q4(i + 4u), k1, x4);
        x4 = fma(q4(i + 8u), k2, x4);
        x4 = fma(q4(i + 12u), k3, x4);
    }
    for (; i + 4u <= hs; i += 4u) {
        x4 = fma(q4(i), k4t(base, i, s), x4);
    }
    for (; i < hs; i++) {
        x4.x = fma(q_sh[i], k_cache[base + i * p.t_max + s], x4.x);
    }
    return (x4.x + x4.y) + (x4.z + x4.w);
}

// Group g's weighted sum of the chunk's values at positions c0 + j,
// j ≡ g (mod gs), j < cnt, in increasing j; four rows a round.
fn weigh_values(base: u32, c0: u32, cnt: u32, g: u32, gs: u32, d4: u32, acc_in: vec4<f32>) -> vec4<f32> {
    let hs = p.hs;
    var acc = acc_in;
    var j = g;
    for (; j + 3u * gs < cnt; j += 4u * gs) {
        let v0 = v4(base + (c0 + j) * hs, d4);
        let v1 = v4(base + (c0 + j + gs) * hs, d4);
        let v2 = v4(base + (c0 + j + 2u * gs) * hs, d4);
        let v3 = v4(base + (c0 + j + 3u * gs) * hs, d4);
        acc = fma(vec4<f32>(w_sh[j]), v0, acc);
        acc = fma(vec4<f32>(w_sh[j + gs]), v1, acc);
        acc = fma(vec4<f32>(w_sh[j + 2u * gs]), v2, acc);
        acc = fma(vec4<f32>(w_sh[j + 3u * gs]), v3, acc);
    }
    for (; j < cnt; j += gs) {
        acc = fma(vec4<f32>(w_sh[j]), v4(base + (c0 + j) * hs, d4), acc);
    }
    return acc;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.x;
    let hs = p.hs;
    let base = (wg.y * p.nh + h) * p.t_max * hs;
    let q = 3u * p.c * wg.y + h * hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, p.t_max - 1u);
    if (tid < hs) {
        q_sh[tid] = qkv[q + tid] * p.scale;
        k_cache[base + tid * p.t_max + last] = qkv[q + p.c + tid];
        v_cache[base + last * hs + tid] = qkv[q + 2u * p.c + tid];
    }
    storageBarrier();
    workgroupBarrier();

    // Threads per value row (HS ≤ 128: at most 32) and groups of positions.
    let nd4 = (hs + 3u) / 4u;
    let gs = min(WG / nd4, MAX_GROUPS);
    let g = tid / nd4;
    let d4 = tid % nd4;
    var m = NEG;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    for (var c0 = 0u; c0 <= last; c0 += WG) {
        let s = c0 + tid;
        var x = NEG;
        if (s <= last) {
            x = score_t(base, s);
        }
        let m_new = max(m, reduce_max(tid, x));
        let e = select(0.0, exp(x - m_new), s <= last);
        w_sh[tid] = e;
        let corr = exp(m - m_new);
        l = l * corr + reduce_sum(tid, e);
        m = m_new;
        acc *= corr;
        // reduce_sum's barriers made w_sh visible.
        if (g < gs) {
            acc = weigh_values(base, c0, min(WG, last + 1u - c0), g, gs, d4, acc);
        }
        // The next chunk overwrites w_sh.
        workgroupBarrier();
    }

    if (g < gs) {
        o_sh[tid] = acc;
    }
    workgroupBarrier();
    if (tid < nd4) {
        var sum = o_sh[tid];
        for (var i = 1u; i < gs; i++) {
            sum += o_sh[i * nd4 + tid];
        }
        let o = p.c * wg.y + h * hs + 4u * tid;
        let r = sum / l;
        for (var i = 0u; i < 4u && 4u * tid + i < hs; i++) {
            out[o + i] = r[i];
        }
    }
}

// The scaled score of position s for the query at qkv[q …] (`main_serial`).
fn score(q: u32, base: u32, s: u32) -> f32 {
    let hs = p.hs;
    let row = base + s * hs;
    var x4 = vec4<f32>(0.0);
    var i = 0u;
    for (; i + 4u <= hs; i += 4u) {
        let k = vec4<f32>(k_cache[row + i], k_cache[row + i + 1u], k_cache[row + i + 2u], k_cache[row + i + 3u]);
        x4 = fma(vec4<f32>(qkv[q + i], qkv[q + i + 1u], qkv[q + i + 2u], qkv[q + i + 3u]), k, x4);
    }
    for (; i < hs; i++) {
        x4.x = fma(qkv[q + i], k_cache[row + i], x4.x);
    }
    return ((x4.x + x4.y) + (x4.z + x4.w)) * p.scale;
}

@compute @workgroup_size(1)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>) {
    let h = wg.x;
    let hs = p.hs;
    let base = (wg.y * p.nh + h) * p.t_max * hs;
    let last = min(pos.x, p.t_max - 1u);
    let q = 3u * p.c * wg.y + h * hs;
    let o = p.c * wg.y + h * hs;
    for (var d = 0u; d < hs; d++) {
        let r = base + last * hs + d;
        k_cache[r] = qkv[q + p.c + d];
        v_cache[r] = qkv[q + 2u * p.c + d];
        out[o + d] = 0.0;
    }
    var m = NEG;
    for (var s = 0u; s <= last; s++) {
        m = max(m, score(q, base, s));
    }
    var l = 0.0;
    for (var s = 0u; s <= last; s++) {
        let e = exp(score(q, base, s) - m);
        l += e;
        let row = base + s * hs;
        for (var d = 0u; d < hs; d++) {
            out[o + d] = fma(e, v_cache[row + d], out[o + d]);
        }
    }
    for (var d = 0u; d < hs; d++) {
        out[o + d] /= l;
    }
}
