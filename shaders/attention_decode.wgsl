// Causal attention for one new query at position P = pos.x over the KV
// cache (NH, T_max, HS) rows 0..=P (attention_kv_append.wgsl must have
// written row P first). q is the Q part of the qkv row (3C); the output row
// (C) has the heads concatenated, as in the forward.
//
// One workgroup per head, 64 threads. Positions go 64 at a time: thread j
// scores position c0 + j, then every thread folds the chunk into the same
// running max m and sum l (online softmax) and into the output dims it owns
// (d = lid and lid + 64, so HS ≤ 128). All sums run in a fixed order, in f32.

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
@group(0) @binding(3) var<storage, read> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read> v_cache: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const CHUNK: u32 = 64u;
const NEG: f32 = -1e30;

var<workgroup> q_sh: array<f32, 128>;
var<workgroup> score: array<f32, CHUNK>;
var<workgroup> weight: array<f32, CHUNK>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.x;
    let hs = p.hs;
    let base = h * p.t_max * hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, p.t_max - 1u);
    for (var d = lid.x; d < hs; d += CHUNK) {
        q_sh[d] = qkv[h * hs + d] * p.scale;
    }
    workgroupBarrier();

    var m = NEG;
    var l = 0.0;
    var acc = array<f32, 2>(0.0, 0.0);
    for (var c0 = 0u; c0 <= last; c0 += CHUNK) {
        let s = c0 + lid.x;
        var x = NEG;
        if (s <= last) {
            x = 0.0;
            for (var d = 0u; d < hs; d++) {
                x = fma(q_sh[d], k_cache[base + s * hs + d], x);
            }
        }
        score[lid.x] = x;
        workgroupBarrier();
        var m_new = m;
        for (var j = 0u; j < CHUNK; j++) {
            m_new = max(m_new, score[j]);
        }
        weight[lid.x] = exp(x - m_new);
        workgroupBarrier();
        let corr = exp(m - m_new);
        l *= corr;
        acc[0] *= corr;
        acc[1] *= corr;
        let cnt = min(CHUNK, last + 1u - c0);
        for (var j = 0u; j < cnt; j++) {
            let e = weight[j];
            l += e;
            let row = base + (c0 + j) * hs;
            if (lid.x < hs) {
                acc[0] = fma(e, v_cache[row + lid.x], acc[0]);
            }
            if (lid.x + CHUNK < hs) {
                acc[1] = fma(e, v_cache[row + lid.x + CHUNK], acc[1]);
            }
        }
        m = m_new;
        // The next chunk overwrites score and weight.
        workgroupBarrier();
    }

    let inv = 1.0 / l;
    if (lid.x < hs) {
        out[h * hs + lid.x] = acc[0] * inv;
    }
    if (lid.x + CHUNK < hs) {
        out[h * hs + lid.x + CHUNK] = acc[1] * inv;
    }
}
