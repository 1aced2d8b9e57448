// Causal attention backward, part 1 of 2: dQ and the row terms D.
//
// With p_ts = exp(scale·q_t·k_s − lse_t) recomputed from the forward's lse,
//   D_t   = dout_t · out_t            (= Σ_s p_ts dp_ts, the softmax row term)
//   dp_ts = z_ts dout_t · v_s          (z_ts: the forward's dropout factor)
//   ds_ts = p_ts (dp_ts − D_t)
//   dq_t  = scale Σ_{s≤t} ds_ts k_s
// This kernel writes dq_t into the Q columns of dqkv (overwriting them) and
// D_t into delta (B,NH,T) for part 2 (attention_bwd_dkv.wgsl), which must be
// dispatched after it. No T×T buffer, no atomics: every sum has a fixed
// order, so the result is deterministic.
//
// The tiling is the forward's (attention_fwd.wgsl): one workgroup = one
// (b, h) and 16 query rows, 8 threads per row; keys 32 at a time; head dims
// in chunks of 32. Thread (r, kq) scores row r against keys 4kq..4kq+3, then
// owns dims 4kq..4kq+3 of each chunk of dq_r in vec4 registers.

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
@group(0) @binding(2) var<storage, read> out: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read_write> delta: array<f32>;
@group(0) @binding(6) var<storage, read_write> dqkv: array<f32>;
// ops::adamw::OptState: the step counter in word 0 (the dropout masks' step).
@group(0) @binding(7) var<storage, read> state: array<u32>;

const BR: u32 = 16u;
const BC: u32 = 32u;

// Query-row tiles (r * 8 + d4) of q (pre-scaled) and dout.
var<workgroup> q_sh: array<vec4<f32>, 128>;
var<workgroup> dy_sh: array<vec4<f32>, 128>;
// Key-row tiles (swizzled, see sw) of K and V.
var<workgroup> k_sh: array<vec4<f32>, 256>;
var<workgroup> v_sh: array<vec4<f32>, 256>;
// ds_sh[pw(r, j4)]: ds of keys 4·j4.. of query row r.
var<workgroup> ds_sh: array<vec4<f32>, 128>;
// The 8 partial dot products of each row's D.
var<workgroup> red: array<f32, 128>;

// Appended to this source: attention_common.wgsl (qkv4), dropout_mask.wgsl
// and attention_dropout.wgsl (mix32, drop_key, drop1, drop4),
// attention_serial.wgsl and attention_bwd_common.wgsl (dout4, store4).

fn sw(j: u32, d4: u32) -> u32 {
    return j * 8u + (d4 ^ ((j >> 2u) & 7u));
}

fn pw(r: u32, j4: u32) -> u32 {
    return r * 8u + (j4 ^ (r & 7u));
}

fn out_at(i: u32, ok: bool) -> f32 {
    if (ok) {
        return out[i];
    }
    return 0.0;
}

fn out4(base: u32, d: u32, live: bool) -> vec4<f32> {
    return vec4<f32>(
        out_at(base + d, live && d < p.hs),
        out_at(base + d + 1u, live && d + 1u < p.hs),
        out_at(base + d + 2u, live && d + 2u < p.hs),
        out_at(base + d + 3u, live && d + 3u < p.hs),
    );
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let b = wg.z;
    let h = wg.y;
    let q0 = wg.x * BR;
    let stride = 3u * p.c;
    let head = h * p.hs;
    let seq = b * p.t;
    let r = tid / 8u;
    let kq = tid % 8u;
    let t = q0 + r;
    let live = t < p.t;
    let q_base = (seq + t) * stride + head;
    let y_base = (seq + t) * p.c + head;

    // D_t: each of the row's 8 threads sums dims 4kq.. of every chunk, then
    // the 8 partials are added in order.
    var part = 0.0;
    for (var c = 0u; c < p.nch; c++) {
        let d = c * 32u + kq * 4u;
        part += dot(dout4(y_base, d, live), out4(y_base, d, live));
    }
    red[tid] = part;
    workgroupBarrier();
    var big_d = 0.0;
    for (var i = 0u; i < 8u; i++) {
        big_d += red[r * 8u + i];
    }
    var row_lse = 0.0;
    if (live) {
        let row = (b * p.nh + h) * p.t + t;
        row_lse = lse[row];
        if (kq == 0u) {
            delta[row] = big_d;
        }
    }

    var dq0 = vec4<f32>(0.0);
    var dq1 = vec4<f32>(0.0);
    var dq2 = vec4<f32>(0.0);
    var dq3 = vec4<f32>(0.0);
    let s_end = min(p.t, q0 + BR);
    for (var s0 = 0u; s0 < s_end; s0 += BC) {
        var sc = vec4<f32>(0.0);
        var dp = vec4<f32>(0.0);
        for (var c = 0u; c < p.nch; c++) {
            let d = c * 32u + kq * 4u;
            q_sh[r * 8u + kq] = qkv4(q_base, d, live) * p.scale;
            dy_sh[r * 8u + kq] = dout4(y_base, d, live);
            for (var i = 0u; i < 2u; i++) {
                let j = r + 16u * i;
                let s = s0 + j;
                let k_base = (seq + s) * stride + p.c + head;
                k_sh[sw(j, kq)] = qkv4(k_base, d, s < p.t);
                v_sh[sw(j, kq)] = qkv4(k_base + p.c, d, s < p.t);
            }
            workgroupBarrier();
            for (var d4 = 0u; d4 < 8u; d4++) {
                let qv = q_sh[r * 8u + d4];
                let yv = dy_sh[r * 8u + d4];
                let j = 4u * kq;
                sc.x += dot(qv, k_sh[sw(j, d4)]);
                sc.y += dot(qv, k_sh[sw(j + 1u, d4)]);
                sc.z += dot(qv, k_sh[sw(j + 2u, d4)]);
                sc.w += dot(qv, k_sh[sw(j + 3u, d4)]);
                dp.x += dot(yv, v_sh[sw(j, d4)]);
                dp.y += dot(yv, v_sh[sw(j + 1u, d4)]);
                dp.z += dot(yv, v_sh[sw(j + 2u, d4)]);
                dp.w += dot(yv, v_sh[sw(j + 3u, d4)]);
            }
            workgroupBarrier();
        }
        let keys = vec4<u32>(s0 + 4u * kq) + vec4<u32>(0u, 1u, 2u, 3u);
        let visible = (keys <= vec4<u32>(t)) & (keys < vec4<u32>(p.t));
        let pr = select(vec4<f32>(0.0), exp(sc - vec4<f32>(row_lse)), visible);
        ds_sh[pw(r, kq)] = pr * (dp * drop4(b, h, t, keys) - vec4<f32>(big_d));
        workgroupBarrier();

        // dq += ds · K, chunk by chunk from the last (still in k_sh).
        for (var cc = 0u; cc < p.nch; cc++) {
            let c = p.nch - 1u - cc;
            if (cc > 0u) {
                for (var i = 0u; i < 2u; i++) {
                    let j = r + 16u * i;
                    let s = s0 + j;
                    let k_base = (seq + s) * stride + p.c + head;
                    k_sh[sw(j, kq)] = qkv4(k_base, c * 32u + kq * 4u, s < p.t);
                }
                workgroupBarrier();
            }
            var acc = vec4<f32>(0.0);
            for (var j4 = 0u; j4 < 8u; j4++) {
                let w = ds_sh[pw(r, j4)];
                acc = fma(vec4<f32>(w.x), k_sh[sw(4u * j4, kq)], acc);
                acc = fma(vec4<f32>(w.y), k_sh[sw(4u * j4 + 1u, kq)], acc);
                acc = fma(vec4<f32>(w.z), k_sh[sw(4u * j4 + 2u, kq)], acc);
                acc = fma(vec4<f32>(w.w), k_sh[sw(4u * j4 + 3u, kq)], acc);
            }
            switch c {
                case 0u: { dq0 += acc; }
                case 1u: { dq1 += acc; }
                case 2u: { dq2 += acc; }
                default: { dq3 += acc; }
            }
            workgroupBarrier();
        }
    }

    if (live) {
        store4(q_base, kq * 4u, dq0 * p.scale);
        store4(q_base, 32u + kq * 4u, dq1 * p.scale);
        store4(q_base, 64u + kq * 4u, dq2 * p.scale);
        store4(q_base, 96u + kq * 4u, dq3 * p.scale);
    }
}

// The kernel layout `Cpu` (CPU implementations of WebGPU): one invocation
// per query row (attention_serial.wgsl), keys s ≤ t in order, dq_t in a
// private array; no workgroup memory, no barrier.
@compute @workgroup_size(64)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let x = serial_row(wg, lid);
    let t = x.t;
    if (t >= p.t) {
        return;
    }
    let q_base = serial_qkv(x, t);
    let o_row = serial_out(x, t);
    var q: array<f32, 128>;
    var dy: array<f32, 128>;
    var dq: array<f32, 128>;
    var big_d = 0.0;
    for (var d = 0u; d < p.hs; d++) {
        q[d] = qkv[q_base + d] * p.scale;
        dy[d] = dout[o_row + d];
        dq[d] = 0.0;
        big_d = fma(dy[d], out[o_row + d], big_d);
    }
    let row = (x.b * p.nh + x.h) * p.t + t;
    delta[row] = big_d;
    let row_lse = lse[row];
    let key = serial_drop_key();
    for (var s = 0u; s <= t; s++) {
        let k_base = serial_qkv(x, s) + p.c;
        var sc = 0.0;
        var dp = 0.0;
        for (var d = 0u; d < p.hs; d++) {
            sc = fma(q[d], qkv[k_base + d], sc);
            dp = fma(dy[d], qkv[k_base + p.c + d], dp);
        }
        dp *= serial_drop(key, x, t, s);
        let ds = exp(sc - row_lse) * (dp - big_d);
        for (var d = 0u; d < p.hs; d++) {
            dq[d] = fma(ds, qkv[k_base + d], dq[d]);
        }
    }
    for (var d = 0u; d < p.hs; d++) {
        dqkv[q_base + d] = dq[d] * p.scale;
    }
}
