// Causal multi-head attention forward, flash style: no (B,NH,T,T) buffer.
//
// qkv (B,T,3C): Q in columns [0,C), K in [C,2C), V in [2C,3C); head h owns
// columns [h·HS, (h+1)·HS) of each part. For every query row t:
//   out_t = Σ_{s≤t} softmax_s(scale·q_t·k_s) v_s       written to out (B,T,C)
//   lse_t = log Σ_{s≤t} exp(scale·q_t·k_s)             written to lse (B,NH,T)
// The softmax is online: a running max m and sum l, and the output
// accumulator is rescaled by exp(m_old − m_new) whenever the max grows, once
// per key tile. Everything accumulates in f32.
//
// One workgroup = one (b, h) and 64 consecutive query rows, one per thread.
// K and V rows of that head stream through workgroup memory `kt` keys at a
// time (kt·HS ≤ 1024), shared by all 64 queries.

struct Params {
    t: u32,
    c: u32,
    nh: u32,
    hs: u32,
    // keys per workgroup tile: min(32, 1024 / hs)
    kt: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;

const ROWS: u32 = 64u;
const MAX_HS: u32 = 128u;
const MAX_KT: u32 = 32u;
// Below any real score; exp(NEG − finite) is exactly 0, and NEG + finite
// cannot overflow the way −inf arithmetic would produce NaN.
const NEG: f32 = -1e30;

// k_tile[j * hs + d] = K[s0 + j, d] of this head; v_tile likewise.
var<workgroup> k_tile: array<f32, 1024>;
var<workgroup> v_tile: array<f32, 1024>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let b = wg.z;
    let h = wg.y;
    let row0 = wg.x * ROWS;
    let t = row0 + lid.x;
    let live = t < p.t;
    let hs = p.hs;
    let stride = 3u * p.c;
    let head = h * hs;

    // q is pre-scaled so a score is a plain dot product.
    var q: array<f32, MAX_HS>;
    var acc: array<f32, MAX_HS>;
    if (live) {
        let qo = (b * p.t + t) * stride + head;
        for (var d = 0u; d < hs; d++) {
            q[d] = qkv[qo + d] * p.scale;
        }
    }
    var m = NEG;
    var l = 0.0;

    // The last query of this workgroup sees keys [0, s_end).
    let s_end = min(p.t, row0 + ROWS);
    for (var s0 = 0u; s0 < s_end; s0 += p.kt) {
        let n = min(p.kt, s_end - s0);
        for (var i = lid.x; i < n * hs; i += ROWS) {
            let o = (b * p.t + s0 + i / hs) * stride + head + i % hs;
            k_tile[i] = qkv[o + p.c];
            v_tile[i] = qkv[o + 2u * p.c];
        }
        workgroupBarrier();
        if (live && s0 <= t) {
            let cnt = min(n, t + 1u - s0);
            var sc: array<f32, MAX_KT>;
            var m_new = m;
            for (var j = 0u; j < cnt; j++) {
                var x = 0.0;
                for (var d = 0u; d < hs; d++) {
                    x = fma(q[d], k_tile[j * hs + d], x);
                }
                sc[j] = x;
                m_new = max(m_new, x);
            }
            let corr = exp(m - m_new);
            l *= corr;
            for (var d = 0u; d < hs; d++) {
                acc[d] *= corr;
            }
            for (var j = 0u; j < cnt; j++) {
                let e = exp(sc[j] - m_new);
                l += e;
                for (var d = 0u; d < hs; d++) {
                    acc[d] = fma(e, v_tile[j * hs + d], acc[d]);
                }
            }
            m = m_new;
        }
        workgroupBarrier();
    }

    if (live) {
        let inv = 1.0 / l;
        let oo = (b * p.t + t) * p.c + head;
        for (var d = 0u; d < hs; d++) {
            out[oo + d] = acc[d] * inv;
        }
        lse[(b * p.nh + h) * p.t + t] = m + log(l);
    }
}
