// Causal attention backward, part 2 of 2: dK and dV, after attention_bwd_dq
// has written the row terms D_t into delta (B,NH,T).
//
// For each key row s, over the queries t ≥ s that can see it:
//   p_ts  = exp(scale·q_t·k_s − lse_t)      (recomputed, never stored)
//   dv_s  = Σ_t p_ts z_ts dout_t        (z_ts: the forward's dropout factor)
//   ds_ts = p_ts (z_ts dout_t · v_s − D_t)
//   dk_s  = scale Σ_t ds_ts q_t
// Written into the K and V columns of dqkv, overwriting them. Every sum has
// a fixed order: deterministic, no atomics.
//
// The forward's tiling with the roles of queries and keys swapped: one
// workgroup = one (b, h) and 16 key rows, 8 threads per key; the queries
// t ≥ (first key of the workgroup) come 32 at a time with their lse and D;
// head dims in chunks of 32. Thread (r, kq) scores key r against queries
// 4kq..4kq+3, then owns dims 4kq..4kq+3 of each chunk of dk_r and dv_r in
// vec4 registers.

struct Params {
    t: u32,
    c: u32,
    nh: u32,
    hs: u32,
    nch: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
    // Dropout on the attention weights (training only; threshold 0: none):
    // weight (t, s) of head h in sequence b is scaled by drop_scale when
    // mix32(key ^ mix32(((b·NH + h)·T + t)·T + s)) ≥ threshold, else 0,
    // with key = mix32(mix32(mix32(seed_lo ^ mix32(seed_hi)) ^ step) ^ site)
    // and step = state[0], as tinygpt_core::model::Dropout computes it.
    site: u32,
    threshold: u32,
    seed_lo: u32,
    seed_hi: u32,
    drop_scale: f32,
    _pad2: u32,
    _pad3: u32,
    _pad4: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read> delta: array<f32>;
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;
// ops::adamw::OptState: the step counter in word 0 (the dropout masks' step).
@group(0) @binding(6) var<storage, read> state: array<u32>;

const BK: u32 = 16u;
const BQ: u32 = 32u;

// Key-row tiles (r * 8 + d4) of k (pre-scaled) and v while scoring; then
// the same memory holds p (in k_sh) and ds (in v_sh) at pw(r, j4).
var<workgroup> k_sh: array<vec4<f32>, 128>;
var<workgroup> v_sh: array<vec4<f32>, 128>;
// Query-row tiles (swizzled, see sw) of q and dout.
var<workgroup> q_sh: array<vec4<f32>, 256>;
var<workgroup> dy_sh: array<vec4<f32>, 256>;
var<workgroup> lse_sh: array<f32, 32>;
var<workgroup> d_sh: array<f32, 32>;

// Appended to this source: attention_common.wgsl (qkv4), dropout_mask.wgsl
// and attention_dropout.wgsl (mix32, drop_key, drop1, drop4),
// attention_serial.wgsl and attention_bwd_common.wgsl (dout4, store4).

fn sw(j: u32, d4: u32) -> u32 {
    return j * 8u + (d4 ^ ((j >> 2u) & 7u));
}

fn pw(r: u32, j4: u32) -> u32 {
    return r * 8u + (j4 ^ (r & 7u));
}

// Loads dims [32c, 32c + 32) of query rows t0 + j (j < 32) of q and dout.
fn load_queries(seq: u32, head: u32, t0: u32, c: u32, r: u32, kq: u32) {
    let stride = 3u * p.c;
    for (var i = 0u; i < 2u; i++) {
        let j = r + 16u * i;
        let t = t0 + j;
        let d = c * 32u + kq * 4u;
        q_sh[sw(j, kq)] = qkv4((seq + t) * stride + head, d, t < p.t);
        dy_sh[sw(j, kq)] = dout4((seq + t) * p.c + head, d, t < p.t);
    }
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let b = wg.z;
    let h = wg.y;
    let k0 = wg.x * BK;
    let stride = 3u * p.c;
    let head = h * p.hs;
    let seq = b * p.t;
    let rows = (b * p.nh + h) * p.t;
    let r = tid / 8u;
    let kq = tid % 8u;
    let s = k0 + r;
    let live = s < p.t;
    let k_base = (seq + s) * stride + p.c + head;

    var dk0 = vec4<f32>(0.0);
    var dk1 = vec4<f32>(0.0);
    var dk2 = vec4<f32>(0.0);
    var dk3 = vec4<f32>(0.0);
    var dv0 = vec4<f32>(0.0);
    var dv1 = vec4<f32>(0.0);
    var dv2 = vec4<f32>(0.0);
    var dv3 = vec4<f32>(0.0);

    // The first key of this workgroup is seen by queries [k0, T).
    for (var t0 = k0; t0 < p.t; t0 += BQ) {
        if (tid < BQ) {
            var row_lse = 0.0;
            var row_d = 0.0;
            if (t0 + tid < p.t) {
                row_lse = lse[rows + t0 + tid];
                row_d = delta[rows + t0 + tid];
            }
            lse_sh[tid] = row_lse;
            d_sh[tid] = row_d;
        }
        // Scores (transposed: key r, queries 4kq + i) and dout_t · v_s.
        var sc = vec4<f32>(0.0);
        var dp = vec4<f32>(0.0);
        for (var c = 0u; c < p.nch; c++) {
            let d = c * 32u + kq * 4u;
            k_sh[r * 8u + kq] = qkv4(k_base, d, live) * p.scale;
            v_sh[r * 8u + kq] = qkv4(k_base + p.c, d, live);
            load_queries(seq, head, t0, c, r, kq);
            workgroupBarrier();
            for (var d4 = 0u; d4 < 8u; d4++) {
                let kv = k_sh[r * 8u + d4];
                let vv = v_sh[r * 8u + d4];
                let j = 4u * kq;
                sc.x += dot(kv, q_sh[sw(j, d4)]);
                sc.y += dot(kv, q_sh[sw(j + 1u, d4)]);
                sc.z += dot(kv, q_sh[sw(j + 2u, d4)]);
                sc.w += dot(kv, q_sh[sw(j + 3u, d4)]);
                dp.x += dot(vv, dy_sh[sw(j, d4)]);
                dp.y += dot(vv, dy_sh[sw(j + 1u, d4)]);
                dp.z += dot(vv, dy_sh[sw(j + 2u, d4)]);
                dp.w += dot(vv, dy_sh[sw(j + 3u, d4)]);
            }
            workgroupBarrier();
        }
        let j = 4u * kq;
        let queries = vec4<u32>(t0 + j) + vec4<u32>(0u, 1u, 2u, 3u);
        let visible = (queries >= vec4<u32>(s)) & (queries < vec4<u32>(p.t));
        let row_lse = vec4<f32>(lse_sh[j], lse_sh[j + 1u], lse_sh[j + 2u], lse_sh[j + 3u]);
        let row_d = vec4<f32>(d_sh[j], d_sh[j + 1u], d_sh[j + 2u], d_sh[j + 3u]);
        let pr = select(vec4<f32>(0.0), exp(sc - row_lse), visible);
        // k_sh and v_sh were last read before the barrier above.
        // Weights of (query 4kq + i, key s): one factor per query row.
        var z = vec4<f32>(1.0);
        if (p.threshold != 0u) {
            let key = drop_key();
            z = vec4<f32>(
                drop1(key, b, h, queries.x, s),
                drop1(key, b, h, queries.y, s),
                drop1(key, b, h, queries.z, s),
                drop1(key, b, h, queries.w, s),
            );
        }
        k_sh[pw(r, kq)] = pr * z;
        v_sh[pw(r, kq)] = pr * (dp * z - row_d);
        workgroupBarrier();

        // dv += p · dout, dk += ds · q, chunk by chunk from the last (still
        // in q_sh and dy_sh).
        for (var cc = 0u; cc < p.nch; cc++) {
            let c = p.nch - 1u - cc;
            if (cc > 0u) {
                load_queries(seq, head, t0, c, r, kq);
                workgroupBarrier();
            }
            var acc_v = vec4<f32>(0.0);
            var acc_k = vec4<f32>(0.0);
            for (var j4 = 0u; j4 < 8u; j4++) {
                let w = k_sh[pw(r, j4)];
                let g = v_sh[pw(r, j4)];
                let q = 4u * j4;
                acc_v = fma(vec4<f32>(w.x), dy_sh[sw(q, kq)], acc_v);
                acc_v = fma(vec4<f32>(w.y), dy_sh[sw(q + 1u, kq)], acc_v);
                acc_v = fma(vec4<f32>(w.z), dy_sh[sw(q + 2u, kq)], acc_v);
                acc_v = fma(vec4<f32>(w.w), dy_sh[sw(q + 3u, kq)], acc_v);
                acc_k = fma(vec4<f32>(g.x), q_sh[sw(q, kq)], acc_k);
                acc_k = fma(vec4<f32>(g.y), q_sh[sw(q + 1u, kq)], acc_k);
                acc_k = fma(vec4<f32>(g.z), q_sh[sw(q + 2u, kq)], acc_k);
                acc_k = fma(vec4<f32>(g.w), q_sh[sw(q + 3u, kq)], acc_k);
            }
            switch c {
                case 0u: { dv0 += acc_v; dk0 += acc_k; }
                case 1u: { dv1 += acc_v; dk1 += acc_k; }
                case 2u: { dv2 += acc_v; dk2 += acc_k; }
                default: { dv3 += acc_v; dk3 += acc_k; }
            }
            workgroupBarrier();
        }
    }

    if (live) {
        let v_base = k_base + p.c;
        store4(k_base, kq * 4u, dk0 * p.scale);
        store4(k_base, 32u + kq * 4u, dk1 * p.scale);
        store4(k_base, 64u + kq * 4u, dk2 * p.scale);
        store4(k_base, 96u + kq * 4u, dk3 * p.scale);
        store4(v_base, kq * 4u, dv0);
        store4(v_base, 32u + kq * 4u, dv1);
        store4(v_base, 64u + kq * 4u, dv2);
        store4(v_base, 96u + kq * 4u, dv3);
    }
}

// The kernel layout `Cpu` (CPU implementations of WebGPU): one invocation
// per key row (attention_serial.wgsl), queries t ≥ s in order, dk_s and
// dv_s in private arrays; no workgroup memory, no barrier.
@compute @workgroup_size(64)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let x = serial_row(wg, lid);
    let s = x.t;
    if (s >= p.t) {
        return;
    }
    let k_base = serial_qkv(x, s) + p.c;
    var k: array<f32, 128>;
    var v: array<f32, 128>;
    var dk: array<f32, 128>;
    var dv: array<f32, 128>;
    for (var d = 0u; d < p.hs; d++) {
        k[d] = qkv[k_base + d];
        v[d] = qkv[k_base + p.c + d];
        dk[d] = 0.0;
        dv[d] = 0.0;
    }
    let key = serial_drop_key();
    for (var t = s; t < p.t; t++) {
        let q_base = serial_qkv(x, t);
        let o_row = serial_out(x, t);
        let row = (x.b * p.nh + x.h) * p.t + t;
        var sc = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < p.hs; d++) {
            sc = fma(qkv[q_base + d] * p.scale, k[d], sc);
            dp = fma(dout[o_row + d], v[d], dp);
        }
        let z = serial_drop(key, x, t, s);
        let pr = exp(sc - lse[row]);
        let ds = pr * (z * dp - delta[row]);
        let pz = pr * z;
        for (var d = 0u; d < p.hs; d++) {
            dv[d] = fma(pz, dout[o_row + d], dv[d]);
            dk[d] = fma(ds, qkv[q_base + d], dk[d]);
        }
    }
    for (var d = 0u; d < p.hs; d++) {
        dqkv[k_base + d] = dk[d] * p.scale;
        dqkv[k_base + p.c + d] = dv[d];
    }
}
