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
// One workgroup = one (b, h) and ROWS = 32 query rows, 128 threads. Keys come
// BC = 32 at a time, and the head dims in chunks of 32 (up to 4 chunks:
// HS ≤ 128; dims past HS read as zero), through workgroup memory. Thread
// (r, kq) = (tid / 8, tid % 8) scores query rows r and r + 16 against keys
// 4kq..4kq+3 of the tile, then owns dims 4kq..4kq+3 of every chunk of both
// rows' outputs, in registers indexed only by constants (dynamically
// indexed private memory gets spilled by some drivers); it also loads dims
// 4kq.. of rows r and r + 16 of each tile. Two rows a thread and four keys
// read 6 tile vectors for 8 products where one row and eight keys read 9
// (BENCHMARKS.md, issue #15).

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

const BC: u32 = 32u;
// Below any real score; exp(NEG − finite) is exactly 0, and NEG + finite
// cannot overflow the way −inf arithmetic would produce NaN.
const NEG: f32 = -1e30;

// q_sh[pw(r, d4)]: dims 4·d4.. of the chunk of query row r0 + r, pre-scaled.
var<workgroup> q_sh: array<vec4<f32>, 256>;
// k_sh[sw(j, d4)]: the same of key s0 + j while scoring; then the weights
// of the tile, k_sh[pw(r, j4)] for keys 4·j4.. of query row r (K is not
// read again before the next tile refills it). v_sh[sw(j, d4)]: V.
var<workgroup> k_sh: array<vec4<f32>, 256>;
var<workgroup> v_sh: array<vec4<f32>, 256>;
// The 8 partial maxima, then sums, of each row: red_*[r * 8 + kq].
var<workgroup> red_m: array<f32, 256>;
var<workgroup> red_l: array<f32, 256>;

// Appended to this source: attention_common.wgsl (qkv4, tile_at, qkv_row,
// sw, pw, keys4, values4, store_chunks), dropout_mask.wgsl
// and attention_dropout.wgsl (mix32, drop_key, drop1, drop4),
// attention_serial.wgsl.

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

// Dims 4·d4.. of chunk c of rows lr and lr + 16 of the query tile from
// r0 into q_sh (pre-scaled), of the key tile from s0 into k_sh, and with
// `vals` of the values into v_sh.
fn load_tiles(x: Tile, lr: u32, d4: u32, c: u32, s0: u32, vals: bool) {
    let d = c * 32u + d4 * 4u;
    for (var i = 0u; i < 2u; i++) {
        let j = lr + 16u * i;
        let t = x.r0 + j;
        q_sh[pw(j, d4)] = qkv4(qkv_row(x, t), d, t < p.t) * p.scale;
        let s = s0 + j;
        let k_base = qkv_row(x, s) + p.c;
        k_sh[sw(j, d4)] = qkv4(k_base, d, s < p.t);
        if (vals) {
            v_sh[sw(j, d4)] = qkv4(k_base + p.c, d, s < p.t);
        }
    }
}

// Dims 4·d4.. of chunk c of the values of keys s0 + lr and s0 + lr + 16.
fn load_values(x: Tile, lr: u32, d4: u32, c: u32, s0: u32) {
    for (var i = 0u; i < 2u; i++) {
        let j = lr + 16u * i;
        let s = s0 + j;
        v_sh[sw(j, d4)] = qkv4(qkv_row(x, s) + 2u * p.c, c * 32u + d4 * 4u, s < p.t);
    }
}

// A query row's running maximum and sum of the online softmax.
struct Row {
    m: f32,
    l: f32,
}

// Row r's 8 parts (at r * 8 in red) combined, in order.
fn row_max(r: u32, m: f32) -> f32 {
    var m_new = m;
    for (var i = 0u; i < 8u; i++) {
        m_new = max(m_new, red_m[r * 8u + i]);
    }
    return m_new;
}

fn row_sum(r: u32) -> f32 {
    var sum = 0.0;
    for (var i = 0u; i < 8u; i++) {
        sum += red_l[r * 8u + i];
    }
    return sum;
}

// Scores of query row t against keys `keys`, NEG where it cannot see them.
fn masked(sc: vec4<f32>, t: u32, keys: vec4<u32>) -> vec4<f32> {
    let visible = (keys <= vec4<u32>(t)) & (keys < vec4<u32>(p.t));
    return select(vec4<f32>(NEG), sc, visible);
}

// Row t's output (o / l) and lse, the lse from its thread kq = 0.
fn finish_row(x: Tile, bh: vec2<u32>, t: u32, kq: u32, o: mat4x4<f32>, row: Row) {
    if (t < p.t) {
        store_chunks((x.seq + t) * p.c + x.head, 4u * kq, o * (1.0 / row.l));
        if (kq == 0u) {
            lse[(bh.x * p.nh + bh.y) * p.t + t] = row.m + log(row.l);
        }
    }
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let x = tile_at(wg);
    let b = wg.z;
    let h = wg.y;
    let r = tid / 8u;
    let kq = tid % 8u;
    let ta = x.r0 + r;
    let tb = ta + 16u;

    var ra = Row(NEG, 0.0);
    var rb = Row(NEG, 0.0);
    var oa = mat4x4<f32>();
    var ob = mat4x4<f32>();

    // The last query of this workgroup sees keys [0, s_end).
    let s_end = min(p.t, x.r0 + ROWS);
    for (var s0 = 0u; s0 < s_end; s0 += BC) {
        // Scores of keys 4kq + i, summed over the chunks of the head dims.
        var sa = vec4<f32>(0.0);
        var sb = vec4<f32>(0.0);
        for (var c = 0u; c < p.nch; c++) {
            // The last chunk's values come now, ready for the weighting.
            load_tiles(x, r, kq, c, s0, c + 1u == p.nch);
            workgroupBarrier();
            for (var d4 = 0u; d4 < 8u; d4++) {
                let k = keys4(kq, d4);
                sa += q_sh[pw(r, d4)] * k;
                sb += q_sh[pw(r + 16u, d4)] * k;
            }
            // q_sh and k_sh are refilled only by the next chunk (the weights
            // come after the barrier of the row maxima).
            if (c + 1u < p.nch) {
                workgroupBarrier();
            }
        }
        let keys = vec4<u32>(s0 + 4u * kq) + vec4<u32>(0u, 1u, 2u, 3u);
        sa = masked(sa, ta, keys);
        sb = masked(sb, tb, keys);

        // Row maxima over the 8 threads of each row, then the weights and
        // their sums.
        red_m[r * 8u + kq] = max(max(sa.x, sa.y), max(sa.z, sa.w));
        red_m[(r + 16u) * 8u + kq] = max(max(sb.x, sb.y), max(sb.z, sb.w));
        workgroupBarrier();
        let ma = row_max(r, ra.m);
        let mb = row_max(r + 16u, rb.m);
        let ea = exp(sa - vec4<f32>(ma));
        let eb = exp(sb - vec4<f32>(mb));
        // The sums keep every weight; the values see the dropped ones.
        k_sh[pw(r, kq)] = ea * drop4(b, h, vec4<u32>(ta), keys);
        k_sh[pw(r + 16u, kq)] = eb * drop4(b, h, vec4<u32>(tb), keys);
        red_l[r * 8u + kq] = (ea.x + ea.y) + (ea.z + ea.w);
        red_l[(r + 16u) * 8u + kq] = (eb.x + eb.y) + (eb.z + eb.w);
        workgroupBarrier();
        let ca = exp(ra.m - ma);
        let cb = exp(rb.m - mb);
        ra = Row(ma, ra.l * ca + row_sum(r));
        rb = Row(mb, rb.l * cb + row_sum(r + 16u));
        oa *= ca;
        ob *= cb;

        // o += Σ_j p_j v_j, chunk by chunk from the last (already loaded).
        for (var cc = 0u; cc < p.nch; cc++) {
            let c = p.nch - 1u - cc;
            if (cc > 0u) {
                load_values(x, r, kq, c, s0);
                workgroupBarrier();
            }
            var acc_a = vec4<f32>(0.0);
            var acc_b = vec4<f32>(0.0);
            for (var j4 = 0u; j4 < 8u; j4++) {
                let v = values4(j4, kq);
                acc_a += v * k_sh[pw(r, j4)];
                acc_b += v * k_sh[pw(r + 16u, j4)];
            }
            switch c {
                case 0u: { oa[0] += acc_a; ob[0] += acc_b; }
                case 1u: { oa[1] += acc_a; ob[1] += acc_b; }
                case 2u: { oa[2] += acc_a; ob[2] += acc_b; }
                default: { oa[3] += acc_a; ob[3] += acc_b; }
            }
            // Every tile is read before the next chunk or key tile refills it.
            workgroupBarrier();
        }
    }

    let bh = vec2<u32>(b, h);
    finish_row(x, bh, ta, kq, oa, ra);
    finish_row(x, bh, tb, kq, ob, rb);
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
