// Causal attention backward, part 2 of 2: dK and dV, after attention_bwd_dq
// has written the row terms D_t into delta (B,NH,T).
//
// For each key row s, over the queries t ≥ s that can see it:
//   p_ts  = exp(scale·q_t·k_s − lse_t)      (recomputed, never stored)
//   dv_s  = Σ_t p_ts dout_t
//   ds_ts = p_ts (dout_t · v_s − D_t)
//   dk_s  = scale Σ_t ds_ts q_t
// Written into the K and V columns of dqkv, overwriting them. One thread
// owns one key row and sums in query order: deterministic, no atomics.
//
// One workgroup = one (b, h) and 64 key rows; Q and dout rows of the queries
// t ≥ (first key of the workgroup) stream through workgroup memory `kt` rows
// at a time, with their lse and D.

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
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read> delta: array<f32>;
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;

const ROWS: u32 = 64u;
const MAX_HS: u32 = 128u;
const MAX_KT: u32 = 32u;

// q_tile[j * hs + d] = Q[t0 + j, d] of this head; dy_tile likewise for dout.
var<workgroup> q_tile: array<f32, 1024>;
var<workgroup> dy_tile: array<f32, 1024>;
var<workgroup> lse_tile: array<f32, MAX_KT>;
var<workgroup> d_tile: array<f32, MAX_KT>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let b = wg.z;
    let h = wg.y;
    let row0 = wg.x * ROWS;
    let s = row0 + lid.x;
    let live = s < p.t;
    let hs = p.hs;
    let stride = 3u * p.c;
    let head = h * hs;
    let rows = (b * p.nh + h) * p.t;

    // k is pre-scaled so a score is a plain dot product.
    var k: array<f32, MAX_HS>;
    var v: array<f32, MAX_HS>;
    var dk: array<f32, MAX_HS>;
    var dv: array<f32, MAX_HS>;
    if (live) {
        let ko = (b * p.t + s) * stride + p.c + head;
        for (var d = 0u; d < hs; d++) {
            k[d] = qkv[ko + d] * p.scale;
            v[d] = qkv[ko + p.c + d];
        }
    }

    // The first key of this workgroup is seen by queries [row0, T).
    for (var t0 = row0; t0 < p.t; t0 += p.kt) {
        let n = min(p.kt, p.t - t0);
        for (var i = lid.x; i < n * hs; i += ROWS) {
            let row = b * p.t + t0 + i / hs;
            let d = i % hs;
            q_tile[i] = qkv[row * stride + head + d];
            dy_tile[i] = dout[row * p.c + head + d];
        }
        if (lid.x < n) {
            lse_tile[lid.x] = lse[rows + t0 + lid.x];
            d_tile[lid.x] = delta[rows + t0 + lid.x];
        }
        workgroupBarrier();
        if (live && t0 + n > s) {
            // Queries t0 + j with t0 + j ≥ s.
            for (var j = select(0u, s - t0, s > t0); j < n; j++) {
                var x = 0.0;
                var dp = 0.0;
                for (var d = 0u; d < hs; d++) {
                    x = fma(q_tile[j * hs + d], k[d], x);
                    dp = fma(dy_tile[j * hs + d], v[d], dp);
                }
                let pr = exp(x - lse_tile[j]);
                let ds = pr * (dp - d_tile[j]);
                for (var d = 0u; d < hs; d++) {
                    dv[d] = fma(pr, dy_tile[j * hs + d], dv[d]);
                    dk[d] = fma(ds, q_tile[j * hs + d], dk[d]);
                }
            }
        }
        workgroupBarrier();
    }

    if (live) {
        let ko = (b * p.t + s) * stride + p.c + head;
        for (var d = 0u; d < hs; d++) {
            dqkv[ko + d] = dk[d] * p.scale;
            dqkv[ko + p.c + d] = dv[d];
        }
    }
}
