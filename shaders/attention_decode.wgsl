// Causal attention for one new query at position P = pos.x over positions
// 0..=P of the KV cache. Each head owns a block of T_max·HS words of each
// cache: V holds position p's row at p·HS (NH, T_max, HS); K does so for
// `main_serial`, while `main` keeps its K block transposed (HS, T_max), dim
// i of position p at i·T_max + p, so that the threads scoring neighbouring
// positions read neighbouring words. q, k, v are the parts of the new
// token's qkv row (3C); each workgroup first appends its head's k and v at
// position P, which saves a dispatch per layer and token, and keeps them in
// workgroup memory too, where it reads position P from (only later
// dispatches read the cache at P: no storage barrier). The output row (C)
// has the heads concatenated, as in the forward.
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
// HS = 64), eight, then four, then one row of values a round; the new
// position's key and value are read from workgroup memory, its score and
// its product (its group's last) outside the loops; the G groups are added
// in order
// at the end. A decode step is bound by how long one thread's chain of
// loads is, not by bandwidth: so every loop keeps several loads in flight
// (BENCHMARKS.md, "The decoder's chains of loads"). All sums run in a
// fixed order, in f32. The 256-thread body after the append is
// attention_decode_common.wgsl's `attend` (appended to this source, with
// reduce_wg.wgsl or reduce_sg.wgsl).
//
// Workgroups past the NH heads (wg.x ≥ NH, in the first row) load the
// weights of the kernels after this one into the L2 cache
// (l2_ahead.wgsl, appended), while the heads' few workgroups leave the
// rest of the GPU idle.
//
// `main_serial` is the layout for CPU implementations of WebGPU: one
// invocation per head does it all — append, the scores' max, then each
// weight exp(score − max) (its score recomputed) added into the output row
// with its value row, and a last division by the sum. No workgroup memory
// and no barrier, which those implementations pay for far more than for
// the 3·P·HS multiply-adds (BENCHMARKS.md, "The decoder on CPU devices").

@group(0) @binding(0) var<uniform> ap: DecodeParams;
// x: the query's position P; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

var<workgroup> red: array<f32, 256>;

// `attend`'s output: the output rows.
fn put_out(at: u32, d: u32, v: f32) {
    out[at] = v;
}


@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    // Workgroups past the heads load the next kernels' weights into L2
    // (l2_ahead.wgsl), in the first row of workgroups only.
    if (wg.x >= ap.nh) {
        if (wg.y == 0u) {
            let acc = load_ahead(wg.x - ap.nh, tid, WG);
            if (ahead.sink != 0u) {
                out[0] = bitcast<f32>(acc);
            }
        }
        return;
    }
    let h = wg.x;
    let hs = head_dim();
    let base = (wg.y * ap.nh + h) * ap.t_max * hs;
    let q = 3u * ap.c * wg.y + h * hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, ap.t_max - 1u);
    if (tid < hs) {
        q_sh[tid] = qkv[q + tid] * ap.scale;
        let k = qkv[q + ap.c + tid];
        let v = qkv[q + 2u * ap.c + tid];
        k_cache[base + tid * ap.t_max + last] = k;
        v_cache[base + last * hs + tid] = v;
        k_new[tid] = k;
        v_new[tid] = v;
    }
    workgroupBarrier();
    attend(base, last, ap.c * wg.y + h * hs, tid);
}

// The scaled score of position s for the query at qkv[q …] (`main_serial`).
fn score(q: u32, base: u32, s: u32) -> f32 {
    let hs = ap.hs;
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
    return ((x4.x + x4.y) + (x4.z + x4.w)) * ap.scale;
}

@compute @workgroup_size(1)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>) {
    let h = wg.x;
    let hs = ap.hs;
    let base = (wg.y * ap.nh + h) * ap.t_max * hs;
    let last = min(pos.x, ap.t_max - 1u);
    let q = 3u * ap.c * wg.y + h * hs;
    let o = ap.c * wg.y + h * hs;
    for (var d = 0u; d < hs; d++) {
        let r = base + last * hs + d;
        k_cache[r] = qkv[q + ap.c + d];
        v_cache[r] = qkv[q + 2u * ap.c + d];
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
