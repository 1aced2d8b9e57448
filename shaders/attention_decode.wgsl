// Causal attention for one new query at position P = pos.x over the KV
// cache (NH, T_max, HS) rows 0..=P. q, k, v are the parts of the new token's
// qkv row (3C); each workgroup first appends its head's k and v as row P of
// the caches (only this workgroup reads that head's rows, so a storage
// barrier is all it takes), which saves a dispatch per layer and token. The
// output row (C) has the heads concatenated, as in the forward.
//
// Samples decoded together (B rows, one query each at the same position)
// run as B rows of workgroups: workgroup (h, b) reads qkv row b (3C from
// 3C·b), appends to sample b's caches (B caches one after the other, each
// (NH, T_max, HS)) and writes output row b; the sums do not depend on B.
//
// One workgroup per head, 256 threads. Positions go 256 at a time: thread j
// scores position c0 + j; the chunk's max and sum are tree reductions; the
// running max m and sum l fold chunks together (online softmax). For the
// weighted sum of values, thread (g, d) with g = tid / 64 takes dims d and
// d + 64 (so HS ≤ 128) of the positions j ≡ g (mod 4), and the four groups
// are added at the end. All sums run in a fixed order, in f32.
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
    _pad0: u32,
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
const GROUPS: u32 = 4u;
const NEG: f32 = -1e30;

var<workgroup> q_sh: array<f32, 128>;
// The chunk's weights exp(score − m).
var<workgroup> w_sh: array<f32, 256>;
var<workgroup> red: array<f32, 256>;
// o_sh[g * 128 + d]: group g's share of output dim d.
var<workgroup> o_sh: array<f32, 512>;

fn reduce_max(tid: u32, v: f32) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red[tid] = max(red[tid], red[tid + s]);
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

fn reduce_sum(tid: u32, v: f32) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
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
        let o = base + last * hs + tid;
        k_cache[o] = qkv[q + p.c + tid];
        v_cache[o] = qkv[q + 2u * p.c + tid];
    }
    storageBarrier();
    workgroupBarrier();

    let g = tid / 64u;
    let d = tid % 64u;
    var m = NEG;
    var l = 0.0;
    var acc0 = 0.0;
    var acc1 = 0.0;
    for (var c0 = 0u; c0 <= last; c0 += WG) {
        let s = c0 + tid;
        var x = NEG;
        if (s <= last) {
            // Four partial sums keep four loads in flight.
            let row = base + s * hs;
            var x4 = vec4<f32>(0.0);
            var i = 0u;
            for (; i + 4u <= hs; i += 4u) {
                let k = vec4<f32>(k_cache[row + i], k_cache[row + i + 1u], k_cache[row + i + 2u], k_cache[row + i + 3u]);
                x4 = fma(vec4<f32>(q_sh[i], q_sh[i + 1u], q_sh[i + 2u], q_sh[i + 3u]), k, x4);
            }
            for (; i < hs; i++) {
                x4.x = fma(q_sh[i], k_cache[row + i], x4.x);
            }
            x = (x4.x + x4.y) + (x4.z + x4.w);
        }
        let m_new = max(m, reduce_max(tid, x));
        let e = select(0.0, exp(x - m_new), s <= last);
        w_sh[tid] = e;
        let corr = exp(m - m_new);
        l = l * corr + reduce_sum(tid, e);
        m = m_new;
        acc0 *= corr;
        acc1 *= corr;
        // reduce_sum's barriers made w_sh visible.
        let cnt = min(WG, last + 1u - c0);
        for (var j = g; j < cnt; j += GROUPS) {
            let w = w_sh[j];
            let row = base + (c0 + j) * hs;
            if (d < hs) {
                acc0 = fma(w, v_cache[row + d], acc0);
            }
            if (d + 64u < hs) {
                acc1 = fma(w, v_cache[row + d + 64u], acc1);
            }
        }
        // The next chunk overwrites w_sh.
        workgroupBarrier();
    }

    o_sh[g * 128u + d] = acc0;
    o_sh[g * 128u + 64u + d] = acc1;
    workgroupBarrier();
    if (tid < hs) {
        let sum = ((o_sh[tid] + o_sh[128u + tid]) + o_sh[256u + tid]) + o_sh[384u + tid];
        out[p.c * wg.y + h * hs + tid] = sum / l;
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
