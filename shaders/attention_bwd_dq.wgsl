// Causal attention backward, part 1 of 2: dQ and the row terms D.
//
// With p_ts = exp(scale·q_t·k_s − lse_t) recomputed from the forward's lse,
//   D_t   = dout_t · out_t            (= Σ_s p_ts dp_ts, the softmax row term)
//   dp_ts = dout_t · v_s
//   ds_ts = p_ts (dp_ts − D_t)
//   dq_t  = scale Σ_{s≤t} ds_ts k_s
// This kernel writes dq_t into the Q columns of dqkv (overwriting them) and
// D_t into delta (B,NH,T) for part 2 (attention_bwd_dkv.wgsl), which must be
// dispatched after it. No T×T buffer, no atomics: each query row is summed
// by one thread in key order, so the result is deterministic.
//
// One workgroup = one (b, h) and 64 query rows, one per thread; K and V
// tiles stream through workgroup memory exactly as in the forward.

struct Params {
    t: u32,
    c: u32,
    nh: u32,
    hs: u32,
    kt: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> out: array<f32>;
@group(0) @binding(3) var<storage, read> dout: array<f32>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read_write> delta: array<f32>;
@group(0) @binding(6) var<storage, read_write> dqkv: array<f32>;

const ROWS: u32 = 64u;
const MAX_HS: u32 = 128u;

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

    var q: array<f32, MAX_HS>;
    var dy: array<f32, MAX_HS>;
    var dq: array<f32, MAX_HS>;
    var big_d = 0.0;
    var row_lse = 0.0;
    if (live) {
        let qo = (b * p.t + t) * stride + head;
        let yo = (b * p.t + t) * p.c + head;
        for (var d = 0u; d < hs; d++) {
            q[d] = qkv[qo + d] * p.scale;
            dy[d] = dout[yo + d];
            big_d = fma(dy[d], out[yo + d], big_d);
        }
        let r = (b * p.nh + h) * p.t + t;
        row_lse = lse[r];
        delta[r] = big_d;
    }

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
            for (var j = 0u; j < cnt; j++) {
                var x = 0.0;
                var dp = 0.0;
                for (var d = 0u; d < hs; d++) {
                    x = fma(q[d], k_tile[j * hs + d], x);
                    dp = fma(dy[d], v_tile[j * hs + d], dp);
                }
                let ds = exp(x - row_lse) * (dp - big_d);
                for (var d = 0u; d < hs; d++) {
                    dq[d] = fma(ds, k_tile[j * hs + d], dq[d]);
                }
            }
        }
        workgroupBarrier();
    }

    if (live) {
        let qo = (b * p.t + t) * stride + head;
        for (var d = 0u; d < hs; d++) {
            dqkv[qo + d] = dq[d] * p.scale;
        }
    }
}
