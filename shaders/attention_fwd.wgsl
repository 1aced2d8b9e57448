// Causal multi-head attention forward, flash style: no (B,NH,T,T) buffer.
//
// qkv (B,T,3C): Q in columns [0,C), K in [C,2C), V in [2C,3C); head h owns
// columns [h·HS, (h+1)·HS) of each part. For every query row t:
//   out_t = Σ_{s≤t} softmax_s(scale·q_t·k_s) z_ts v_s  written to out (B,T,C)
//   lse_t = log Σ_{s≤t} exp(scale·q_t·k_s)             written to lse (B,NH,T)
// The softmax is online: per key tile a running max m and sum l, and the
// output rescaled by exp(m_old − m_new). Everything accumulates in f32.
// z_ts is the dropout factor of the weight (see Params), 1 when not training.
//
// One workgroup = one (b, h) and BR = 16 query rows, 128 threads: 8 per row.
// Keys come BC = 32 at a time, and the head dims in chunks of 32 (up to 4
// chunks: HS ≤ 128; dims past HS read as zero), through workgroup memory.
// Thread (r, kq) scores query row r against keys 4kq..4kq+3 of the tile,
// then owns dims 4kq..4kq+3 of every chunk of row r's output, in vec4
// registers o0..o3 indexed only by constants (dynamically indexed private
// arrays get spilled to memory by some drivers).

struct Params {
    t: u32,
    c: u32,
    nh: u32,
    hs: u32,
    // head-dim chunks of 32: ceil(hs / 32)
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
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
// ops::adamw::OptState: the step counter in word 0 (the dropout masks' step).
@group(0) @binding(4) var<storage, read> state: array<u32>;

const BR: u32 = 16u;
const BC: u32 = 32u;
// Below any real score; exp(NEG − finite) is exactly 0, and NEG + finite
// cannot overflow the way −inf arithmetic would produce NaN.
const NEG: f32 = -1e30;

// q_sh[r * 8 + d4]: dims 4·d4.. of the chunk of query row q0 + r, pre-scaled.
var<workgroup> q_sh: array<vec4<f32>, 128>;
// k_sh[sw(j, d4)]: the same of key s0 + j; v_sh likewise for V.
var<workgroup> k_sh: array<vec4<f32>, 256>;
var<workgroup> v_sh: array<vec4<f32>, 256>;
// p_sh[pw(r, j4)]: the weights of keys 4·j4.. of query row r.
var<workgroup> p_sh: array<vec4<f32>, 128>;
// The 8 partial maxima, then sums, of each row: red_*[r * 8 + kq].
var<workgroup> red_m: array<f32, 128>;
var<workgroup> red_l: array<f32, 128>;

// Row j of a 32-row tile, XOR-swizzled so that both the 8 threads reading
// rows 4kq + i (scoring) and the 8 reading dims d4 of one row hit distinct
// banks.
// Appended to this source: attention_common.wgsl (qkv4), dropout_mask.wgsl
// and attention_dropout.wgsl (mix32, drop_key, drop1, drop4),
// attention_serial.wgsl.

fn sw(j: u32, d4: u32) -> u32 {
    return j * 8u + (d4 ^ ((j >> 2u) & 7u));
}

// Swizzled row r of a 16-row tile of key weights.
fn pw(r: u32, j4: u32) -> u32 {
    return r * 8u + (j4 ^ (r & 7u));
}

fn store4(base: u32, d: u32, v: vec4<f32>) {
    if (d < p.hs) {
        out[base + d] = v.x;
    }
    if (d + 1u < p.hs) {
        out[base + d + 1u] = v.y;
    }
    if (d + 2u < p.hs) {
        out[base + d + 2u] = v.z;
    }
    if (d + 3u < p.hs) {
        out[base + d + 3u] = v.w;
    }
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

    var m = NEG;
    var l = 0.0;
    var o0 = vec4<f32>(0.0);
    var o1 = vec4<f32>(0.0);
    var o2 = vec4<f32>(0.0);
    var o3 = vec4<f32>(0.0);

    // The last query of this workgroup sees keys [0, s_end).
    let s_end = min(p.t, q0 + BR);
    for (var s0 = 0u; s0 < s_end; s0 += BC) {
        // Scores of keys 4kq + i, summed over the chunks of the head dims.
        var sc = vec4<f32>(0.0);
        for (var c = 0u; c < p.nch; c++) {
            let d = c * 32u + kq * 4u;
            q_sh[r * 8u + kq] = qkv4(q_base, d, live) * p.scale;
            let last = c + 1u == p.nch;
            for (var i = 0u; i < 2u; i++) {
                let j = r + 16u * i;
                let s = s0 + j;
                let k_base = (seq + s) * stride + p.c + head;
                k_sh[sw(j, kq)] = qkv4(k_base, d, s < p.t);
                // The last chunk's values come now, ready for the weighting.
                if (last) {
                    v_sh[sw(j, kq)] = qkv4(k_base + p.c, d, s < p.t);
                }
            }
            workgroupBarrier();
            for (var d4 = 0u; d4 < 8u; d4++) {
                let qv = q_sh[r * 8u + d4];
                sc.x += dot(qv, k_sh[sw(4u * kq, d4)]);
                sc.y += dot(qv, k_sh[sw(4u * kq + 1u, d4)]);
                sc.z += dot(qv, k_sh[sw(4u * kq + 2u, d4)]);
                sc.w += dot(qv, k_sh[sw(4u * kq + 3u, d4)]);
            }
            // q_sh and k_sh are refilled only by the next chunk.
            if (!last) {
                workgroupBarrier();
            }
        }
        let keys = vec4<u32>(s0 + 4u * kq) + vec4<u32>(0u, 1u, 2u, 3u);
        let visible = (keys <= vec4<u32>(t)) & (keys < vec4<u32>(p.t));
        sc = select(vec4<f32>(NEG), sc, visible);

        // Row max over the 8 threads of the row, then the weights and their sum.
        red_m[tid] = max(max(sc.x, sc.y), max(sc.z, sc.w));
        workgroupBarrier();
        var m_new = m;
        for (var i = 0u; i < 8u; i++) {
            m_new = max(m_new, red_m[r * 8u + i]);
        }
        let e = exp(sc - vec4<f32>(m_new));
        // The sum keeps every weight; the values see the dropped ones.
        p_sh[pw(r, kq)] = e * drop4(b, h, t, keys);
        red_l[tid] = (e.x + e.y) + (e.z + e.w);
        workgroupBarrier();
        var sum = 0.0;
        for (var i = 0u; i < 8u; i++) {
            sum += red_l[r * 8u + i];
        }
        let corr = exp(m - m_new);
        m = m_new;
        l = l * corr + sum;
        o0 *= corr;
        o1 *= corr;
        o2 *= corr;
        o3 *= corr;

        // o += Σ_j p_j v_j, chunk by chunk from the last (already loaded).
        for (var cc = 0u; cc < p.nch; cc++) {
            let c = p.nch - 1u - cc;
            if (cc > 0u) {
                for (var i = 0u; i < 2u; i++) {
                    let j = r + 16u * i;
                    let s = s0 + j;
                    let v_base = (seq + s) * stride + 2u * p.c + head;
                    v_sh[sw(j, kq)] = qkv4(v_base, c * 32u + kq * 4u, s < p.t);
                }
                workgroupBarrier();
            }
            var acc = vec4<f32>(0.0);
            for (var j4 = 0u; j4 < 8u; j4++) {
                let w = p_sh[pw(r, j4)];
                acc = fma(vec4<f32>(w.x), v_sh[sw(4u * j4, kq)], acc);
                acc = fma(vec4<f32>(w.y), v_sh[sw(4u * j4 + 1u, kq)], acc);
                acc = fma(vec4<f32>(w.z), v_sh[sw(4u * j4 + 2u, kq)], acc);
                acc = fma(vec4<f32>(w.w), v_sh[sw(4u * j4 + 3u, kq)], acc);
            }
            switch c {
                case 0u: { o0 += acc; }
                case 1u: { o1 += acc; }
                case 2u: { o2 += acc; }
                default: { o3 += acc; }
            }
            // Every tile is read before the next chunk or key tile refills it.
            workgroupBarrier();
        }
    }

    if (live) {
        let inv = 1.0 / l;
        let o_base = (seq + t) * p.c + head;
        store4(o_base, kq * 4u, o0 * inv);
        store4(o_base, 32u + kq * 4u, o1 * inv);
        store4(o_base, 64u + kq * 4u, o2 * inv);
        store4(o_base, 96u + kq * 4u, o3 * inv);
        if (kq == 0u) {
            lse[(b * p.nh + h) * p.t + t] = m + log(l);
        }
    }
}

// The kernel layout `Cpu` (CPU implementations of WebGPU): one invocation
// per query row (attention_serial.wgsl). Keys in order with the online
// softmax updated per key, the head's output in a private array; no
// workgroup memory, no barrier. Sums in another order than `main`'s.
@compute @workgroup_size(64)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let x = serial_row(wg, lid);
    let t = x.t;
    if (t >= p.t) {
        return;
    }
    let q_base = serial_qkv(x, t);
    var q: array<f32, 128>;
    var o: array<f32, 128>;
    for (var d = 0u; d < p.hs; d++) {
        q[d] = qkv[q_base + d] * p.scale;
        o[d] = 0.0;
    }
    let key = serial_drop_key();
    var m = NEG;
    var l = 0.0;
    for (var s = 0u; s <= t; s++) {
        let k_base = serial_qkv(x, s) + p.c;
        var sc = 0.0;
        for (var d = 0u; d < p.hs; d++) {
            sc = fma(q[d], qkv[k_base + d], sc);
        }
        let m_new = max(m, sc);
        let corr = exp(m - m_new);
        let e = exp(sc - m_new);
        l = l * corr + e;
        m = m_new;
        // The sum keeps every weight; the values see the dropped ones.
        let w = e * serial_drop(key, x, t, s);
        for (var d = 0u; d < p.hs; d++) {
            o[d] = fma(w, qkv[k_base + p.c + d], o[d] * corr);
        }
    }
    let inv = 1.0 / l;
    let o_base = serial_out(x, t);
    for (var d = 0u; d < p.hs; d++) {
        out[o_base + d] = o[d] * inv;
    }
    lse[(x.b * p.nh + x.h) * p.t + t] = m + log(l);
}
