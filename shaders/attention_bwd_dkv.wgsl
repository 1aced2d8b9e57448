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
// workgroup = one (b, h) and 32 key rows; the queries t ≥ (first key of the
// workgroup) come 32 at a time with their lse and D; head dims in chunks of
// 32. Thread (r, kq) = (tid / 8, tid % 8) scores key rows r and r + 16
// against queries 4kq..4kq+3, then owns dims 4kq..4kq+3 of each chunk of
// both rows' dk and dv in registers, and loads dims 4kq.. of rows r and
// r + 16 of each tile. (Two key rows a thread and four queries read 12 tile
// vectors for 16 products where one key and eight queries read 18, and 16
// key rows a workgroup, one a thread, 10 for 8: BENCHMARKS.md, issue #15.)

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

const BQ: u32 = 32u;

// Key-row tiles (pw(r, d4)) of k (pre-scaled) and v while scoring; then
// the same memory holds p (in k_sh) and ds (in v_sh) at pw(r, j4).
var<workgroup> k_sh: array<vec4<f32>, 256>;
var<workgroup> v_sh: array<vec4<f32>, 256>;
// Query-row tiles (swizzled, see sw) of q and dout.
var<workgroup> q_sh: array<vec4<f32>, 256>;
var<workgroup> dy_sh: array<vec4<f32>, 256>;

// Appended to this source: attention_common.wgsl (qkv4, tile_at, qkv_row,
// sw, pw, keys4, values4, store_chunks), dropout_mask.wgsl
// and attention_dropout.wgsl (mix32, drop_key, drop1, drop4),
// attention_serial.wgsl and attention_bwd_common.wgsl (dout4, store4,
// Scores).

// Dims 4·d4.. of chunk c of key rows r0 + lr and r0 + lr + 16: k
// (pre-scaled) and v.
fn load_keys(x: Tile, lr: u32, d4: u32, c: u32) {
    let d = c * 32u + d4 * 4u;
    for (var i = 0u; i < 2u; i++) {
        let j = lr + 16u * i;
        let s = x.r0 + j;
        let k_base = qkv_row(x, s) + p.c;
        k_sh[pw(j, d4)] = qkv4(k_base, d, s < p.t) * p.scale;
        v_sh[pw(j, d4)] = qkv4(k_base + p.c, d, s < p.t);
    }
}

// The same of query rows t0 + lr and t0 + lr + 16: q and dout.
fn load_queries(x: Tile, lr: u32, d4: u32, c: u32, t0: u32) {
    let d = c * 32u + d4 * 4u;
    for (var i = 0u; i < 2u; i++) {
        let j = lr + 16u * i;
        let t = t0 + j;
        q_sh[sw(j, d4)] = qkv4(qkv_row(x, t), d, t < p.t);
        dy_sh[sw(j, d4)] = dout4((x.seq + t) * p.c + x.head, d, t < p.t);
    }
}

// lse and D of query rows qs of this (b, h), whose rows start at `rows`;
// zero past T.
struct RowTerms {
    lse: vec4<f32>,
    d: vec4<f32>,
}

fn row_term(rows: u32, t: u32) -> vec2<f32> {
    if (t < p.t) {
        return vec2<f32>(lse[rows + t], delta[rows + t]);
    }
    return vec2<f32>(0.0);
}

fn row_terms(rows: u32, qs: vec4<u32>) -> RowTerms {
    let x = row_term(rows, qs.x);
    let y = row_term(rows, qs.y);
    let z = row_term(rows, qs.z);
    let w = row_term(rows, qs.w);
    return RowTerms(vec4<f32>(x.x, y.x, z.x, w.x), vec4<f32>(x.y, y.y, z.y, w.y));
}

// p and ds of (queries qs, key s) into row r of k_sh and v_sh.
fn weights(r: u32, kq: u32, qs: vec4<u32>, s: u32, sc: Scores, tm: RowTerms, bh: vec2<u32>) {
    let visible = (qs >= vec4<u32>(s)) & (qs < vec4<u32>(p.t));
    let pr = select(vec4<f32>(0.0), exp(sc.s - tm.lse), visible);
    // One dropout factor per query row.
    let z = drop4(bh.x, bh.y, qs, vec4<u32>(s));
    k_sh[pw(r, kq)] = pr * z;
    v_sh[pw(r, kq)] = pr * (sc.dp * z - tm.d);
}

// Queries (or their output gradients) 4·j4..4·j4+3 of the tile, dims
// 4·d4.. of a chunk: a column each.
fn queries4(j4: u32, d4: u32) -> mat4x4<f32> {
    let j = 4u * j4;
    return mat4x4<f32>(q_sh[sw(j, d4)], q_sh[sw(j + 1u, d4)], q_sh[sw(j + 2u, d4)], q_sh[sw(j + 3u, d4)]);
}

fn douts4(j4: u32, d4: u32) -> mat4x4<f32> {
    let j = 4u * j4;
    return mat4x4<f32>(dy_sh[sw(j, d4)], dy_sh[sw(j + 1u, d4)], dy_sh[sw(j + 2u, d4)], dy_sh[sw(j + 3u, d4)]);
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let b = wg.z;
    let h = wg.y;
    let x = tile_at(wg);
    let rows = (b * p.nh + h) * p.t;
    let r = tid / 8u;
    let kq = tid % 8u;
    let sa = x.r0 + r;
    let sb = sa + 16u;
    let bh = vec2<u32>(b, h);

    var dka = mat4x4<f32>();
    var dkb = mat4x4<f32>();
    var dva = mat4x4<f32>();
    var dvb = mat4x4<f32>();

    // The first key of this workgroup is seen by queries [r0, T).
    for (var t0 = x.r0; t0 < p.t; t0 += BQ) {
        let qs = vec4<u32>(t0 + 4u * kq) + vec4<u32>(0u, 1u, 2u, 3u);
        // Scores (transposed: key, queries 4kq + i) and dout_t · v_s.
        var ska = Scores(vec4<f32>(0.0), vec4<f32>(0.0));
        var skb = ska;
        for (var c = 0u; c < p.nch; c++) {
            load_keys(x, r, kq, c);
            load_queries(x, r, kq, c, t0);
            workgroupBarrier();
            for (var d4 = 0u; d4 < 8u; d4++) {
                let q = queries4(kq, d4);
                let y = douts4(kq, d4);
                ska = Scores(ska.s + k_sh[pw(r, d4)] * q, ska.dp + v_sh[pw(r, d4)] * y);
                skb = Scores(skb.s + k_sh[pw(r + 16u, d4)] * q, skb.dp + v_sh[pw(r + 16u, d4)] * y);
            }
            // Every tile is read before the next chunk refills it or the
            // weights take k_sh and v_sh.
            workgroupBarrier();
        }
        let tm = row_terms(rows, qs);
        weights(r, kq, qs, sa, ska, tm, bh);
        weights(r + 16u, kq, qs, sb, skb, tm, bh);
        workgroupBarrier();

        // dv += p · dout, dk += ds · q, chunk by chunk from the last (still
        // in q_sh and dy_sh).
        for (var cc = 0u; cc < p.nch; cc++) {
            let c = p.nch - 1u - cc;
            if (cc > 0u) {
                load_queries(x, r, kq, c, t0);
                workgroupBarrier();
            }
            var va = vec4<f32>(0.0);
            var vb = vec4<f32>(0.0);
            var ka = vec4<f32>(0.0);
            var kb = vec4<f32>(0.0);
            for (var j4 = 0u; j4 < 8u; j4++) {
                let y = douts4(j4, kq);
                let q = queries4(j4, kq);
                va += y * k_sh[pw(r, j4)];
                ka += q * v_sh[pw(r, j4)];
                vb += y * k_sh[pw(r + 16u, j4)];
                kb += q * v_sh[pw(r + 16u, j4)];
            }
            // Constant indices: dynamically indexed private memory gets
            // spilled by some drivers.
            switch c {
                case 0u: { dva[0] += va; dvb[0] += vb; dka[0] += ka; dkb[0] += kb; }
                case 1u: { dva[1] += va; dvb[1] += vb; dka[1] += ka; dkb[1] += kb; }
                case 2u: { dva[2] += va; dvb[2] += vb; dka[2] += ka; dkb[2] += kb; }
                default: { dva[3] += va; dvb[3] += vb; dka[3] += ka; dkb[3] += kb; }
            }
            workgroupBarrier();
        }
    }

    let d = 4u * kq;
    if (sa < p.t) {
        let k_base = qkv_row(x, sa) + p.c;
        store_chunks(k_base, d, dka * p.scale);
        store_chunks(k_base + p.c, d, dva);
    }
    if (sb < p.t) {
        let k_base = qkv_row(x, sb) + p.c;
        store_chunks(k_base, d, dkb * p.scale);
        store_chunks(k_base + p.c, d, dvb);
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
