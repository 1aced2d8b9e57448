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
// (b, h) and 32 query rows; keys 32 at a time; head dims in chunks of 32.
// Thread (r, kq) = (tid / 8, tid % 8) scores rows r and r + 16 against keys
// 4kq..4kq+3, then owns dims 4kq..4kq+3 of each chunk of both rows' dq in
// vec4 registers, and loads dims 4kq.. of rows r and r + 16 of each tile.

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

const BC: u32 = 32u;

// Query-row tiles (pw(r, d4)) of q (pre-scaled) and dout; before the first
// tile q_sh holds each thread's part of its row's D (in x, at tid).
var<workgroup> q_sh: array<vec4<f32>, 256>;
var<workgroup> dy_sh: array<vec4<f32>, 256>;
// Key-row tiles (swizzled, see sw) of K and V; once scored, v_sh holds the
// tile's ds at pw(r, j4) (keys 4·j4.. of query row r).
var<workgroup> k_sh: array<vec4<f32>, 256>;
var<workgroup> v_sh: array<vec4<f32>, 256>;

// Appended to this source: attention_common.wgsl (qkv4, tile_at, qkv_row,
// sw, pw, keys4, values4, store_chunks), dropout_mask.wgsl
// and attention_dropout.wgsl (mix32, drop_key, drop1, drop4),
// attention_serial.wgsl and attention_bwd_common.wgsl (dout4, store4,
// Scores).

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

// Dims 4·d4.. of chunk c of rows lr and lr + 16: q (pre-scaled) and dout of
// the query tile, K and V of the key tile from s0.
fn load_tiles(x: Tile, lr: u32, d4: u32, c: u32, s0: u32) {
    let d = c * 32u + d4 * 4u;
    for (var i = 0u; i < 2u; i++) {
        let j = lr + 16u * i;
        let t = x.r0 + j;
        q_sh[pw(j, d4)] = qkv4(qkv_row(x, t), d, t < p.t) * p.scale;
        dy_sh[pw(j, d4)] = dout4((x.seq + t) * p.c + x.head, d, t < p.t);
        let s = s0 + j;
        let k_base = qkv_row(x, s) + p.c;
        k_sh[sw(j, d4)] = qkv4(k_base, d, s < p.t);
        v_sh[sw(j, d4)] = qkv4(k_base + p.c, d, s < p.t);
    }
}

// Dims 4·d4.. of chunk c of K of keys s0 + lr and s0 + lr + 16.
fn load_keys(x: Tile, lr: u32, d4: u32, c: u32, s0: u32) {
    for (var i = 0u; i < 2u; i++) {
        let j = lr + 16u * i;
        let s = s0 + j;
        k_sh[sw(j, d4)] = qkv4(qkv_row(x, s) + p.c, c * 32u + d4 * 4u, s < p.t);
    }
}

// D_t = dout_t · out_t of row r: each of the row's 8 threads sums dims
// 4kq.. of every chunk, then the 8 parts are added in order.
fn row_term(x: Tile, r: u32, kq: u32) -> f32 {
    let t = x.r0 + r;
    let y_base = (x.seq + t) * p.c + x.head;
    var part = 0.0;
    for (var c = 0u; c < p.nch; c++) {
        let d = c * 32u + kq * 4u;
        part += dot(dout4(y_base, d, t < p.t), out4(y_base, d, t < p.t));
    }
    return part;
}

// Both rows' D, their 8 parts added through q_sh (x), which the first tile
// refills.
fn row_terms(x: Tile, r: u32, kq: u32) -> vec2<f32> {
    q_sh[r * 8u + kq].x = row_term(x, r, kq);
    q_sh[(r + 16u) * 8u + kq].x = row_term(x, r + 16u, kq);
    workgroupBarrier();
    var d = vec2<f32>(0.0);
    for (var i = 0u; i < 8u; i++) {
        d += vec2<f32>(q_sh[r * 8u + i].x, q_sh[(r + 16u) * 8u + i].x);
    }
    workgroupBarrier();
    return d;
}

// ds of query row r (at t, with lse and D in tm) against keys `keys` into
// v_sh.
fn ds_row(r: u32, kq: u32, t: u32, keys: vec4<u32>, sc: Scores, tm: vec2<f32>, bh: vec2<u32>) {
    let visible = (keys <= vec4<u32>(t)) & (keys < vec4<u32>(p.t));
    let pr = select(vec4<f32>(0.0), exp(sc.s - vec4<f32>(tm.x)), visible);
    v_sh[pw(r, kq)] = pr * (sc.dp * drop4(bh.x, bh.y, vec4<u32>(t), keys) - vec4<f32>(tm.y));
}

// lse of row t of this (b, h), zero past T.
fn lse_of(b: u32, h: u32, t: u32) -> f32 {
    if (t < p.t) {
        return lse[(b * p.nh + h) * p.t + t];
    }
    return 0.0;
}

@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let b = wg.z;
    let h = wg.y;
    let x = tile_at(wg);
    let r = tid / 8u;
    let kq = tid % 8u;
    let ta = x.r0 + r;
    let tb = ta + 16u;
    let bh = vec2<u32>(b, h);

    let big_d = row_terms(x, r, kq);
    let tma = vec2<f32>(lse_of(b, h, ta), big_d.x);
    let tmb = vec2<f32>(lse_of(b, h, tb), big_d.y);
    if (kq == 0u) {
        let row = (b * p.nh + h) * p.t;
        if (ta < p.t) {
            delta[row + ta] = big_d.x;
        }
        if (tb < p.t) {
            delta[row + tb] = big_d.y;
        }
    }

    var dqa = mat4x4<f32>();
    var dqb = mat4x4<f32>();
    let s_end = min(p.t, x.r0 + ROWS);
    for (var s0 = 0u; s0 < s_end; s0 += BC) {
        var sa = Scores(vec4<f32>(0.0), vec4<f32>(0.0));
        var sb = sa;
        for (var c = 0u; c < p.nch; c++) {
            load_tiles(x, r, kq, c, s0);
            workgroupBarrier();
            for (var d4 = 0u; d4 < 8u; d4++) {
                let k = keys4(kq, d4);
                let v = values4(kq, d4);
                sa.s += q_sh[pw(r, d4)] * k;
                sa.dp += dy_sh[pw(r, d4)] * v;
                sb.s += q_sh[pw(r + 16u, d4)] * k;
                sb.dp += dy_sh[pw(r + 16u, d4)] * v;
            }
            // Every tile is read before the next chunk refills it or v_sh
            // takes the ds.
            workgroupBarrier();
        }
        let keys = vec4<u32>(s0 + 4u * kq) + vec4<u32>(0u, 1u, 2u, 3u);
        ds_row(r, kq, ta, keys, sa, tma, bh);
        ds_row(r + 16u, kq, tb, keys, sb, tmb, bh);
        workgroupBarrier();

        // dq += ds · K, chunk by chunk from the last (still in k_sh).
        for (var cc = 0u; cc < p.nch; cc++) {
            let c = p.nch - 1u - cc;
            if (cc > 0u) {
                load_keys(x, r, kq, c, s0);
                workgroupBarrier();
            }
            var acc_a = vec4<f32>(0.0);
            var acc_b = vec4<f32>(0.0);
            for (var j4 = 0u; j4 < 8u; j4++) {
                let k = keys4(j4, kq);
                acc_a += k * v_sh[pw(r, j4)];
                acc_b += k * v_sh[pw(r + 16u, j4)];
            }
            // Constant indices: dynamically indexed private memory gets
            // spilled by some drivers.
            switch c {
                case 0u: { dqa[0] += acc_a; dqb[0] += acc_b; }
                case 1u: { dqa[1] += acc_a; dqb[1] += acc_b; }
                case 2u: { dqa[2] += acc_a; dqb[2] += acc_b; }
                default: { dqa[3] += acc_a; dqb[3] += acc_b; }
            }
            workgroupBarrier();
        }
    }

    let d = 4u * kq;
    if (ta < p.t) {
        store_chunks(qkv_row(x, ta), d, dqa * p.scale);
    }
    if (tb < p.t) {
        store_chunks(qkv_row(x, tb), d, dqb * p.scale);
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
