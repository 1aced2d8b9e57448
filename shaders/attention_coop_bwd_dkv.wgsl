// Causal attention backward on cooperative matrices, part 2 of 2: dK and
// dV (attention_bwd_dkv.wgsl's outputs), after part 1
// (attention_coop_bwd_dq.wgsl) wrote D into delta, with the products
// K·Qᵀ, V·doutᵀ, (P∘Z)ᵀ·dout and dSᵀ·Q on f16 tiles summed in f32:
//   dv_s = Σ_{t≥s} p_ts z_ts dout_t
//   dk_s = scale Σ_{t≥s} ds_ts q_t,  ds_ts = p_ts (z_ts dout_t·v_s − D_t)
// each weight and ds computed in f32 and rounded to f16 for its product,
// in units of the gradient scale g (dout staged as g·dout, D taken as g·D,
// dk and dv divided by g as written).
// One workgroup = one (b, h) and 64 key rows, a subgroup's 16 each; each
// subgroup keeps its keys' K and V as fragments, queries and their dout
// come 32 at a time from the workgroup's first key on. dk and dv
// overwrite the K and V columns of dqkv.

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(1) var<storage, read> qkv4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> dout4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> lse: array<f32>;
@group(0) @binding(4) var<storage, read> delta: array<f32>;
@group(0) @binding(5) var<storage, read_write> dqkv: array<f32>;
// ops::adamw::OptState: the step counter in word 0 (the dropout masks' step).
@group(0) @binding(6) var<storage, read> state: array<u32>;

// The tiles (attention_coop_bwd_common.wgsl): a block's queries (Y) and
// their dout (Z), each subgroup's 16 × 32 weights, then dS (W; under
// DS_TILE, dS in W2); before the first block the workgroup's 64 rows of K,
// then of V (X). Each subgroup's scores (S) and dp (P), the block's lse
// (R1) and D (R2).

// DS_TILE (pipelines of their own, where the device offers their 36,352
// bytes of workgroup memory: ops::attention::coop): dS gets a tile of its
// own, W2, so that one loop computes each element's weight once for both
// products — 294 µs a nanoGPT layer against 369 on the H100 (run 134,
// BENCHMARKS.md); else the weights, their product, then dS from the
// weights left in S, in 32 KiB.
override DS_TILE: bool = false;
const W2_AT: u32 = 7168u; // after W
override SH_LEN: u32 = select(7168u, 9728u, DS_TILE); // + 4 × 16 × PS

// Appended: attention_coop_bwd_common.wgsl, attention_coop_common.wgsl,
// dropout_mask.wgsl, attention_dropout.wgsl.

// Invocation t's copies of rows t0 … t0 + 31 of dout (fetch_qkv's).
fn fetch_dout(x: Tile, t0: u32, t: u32) -> Fetched {
    var f: Fetched;
    let d = 4u * (t % 16u);
    for (var i = 0u; i < BLOCK * 16u / WG; i++) {
        let r = t / 16u + i * (WG / 16u);
        if (d < hs() && t0 + r < p.t) {
            f[i] = dout4[((x.seq + t0 + r) * p.c + x.head + d) / 4u] * p.grad_scale;
        } else {
            f[i] = vec4<f32>();
        }
    }
    return f;
}

// The lse (R1) and D (R2) of rows t0 … t0 + 31; zero past T.
fn query_terms(x: Tile, t0: u32, tid: u32) {
    for (var j = tid; j < BLOCK; j += WG) {
        var l = 0.0;
        var d = 0.0;
        if (t0 + j < p.t) {
            let i = (x.b * p.nh + x.h) * p.t + t0 + j;
            l = lse[i];
            d = delta[i] * p.grad_scale;
        }
        sf[R1_AT + j] = l;
        sf[R2_AT + j] = d;
    }
}

// The subgroup's weights p·z (ds = false) or ds (true) of queries
// t0 … t0 + 31 as f16 (W, a key a row), from its scores (S) and dp (P).
// The first call leaves each weight p in S in place of its score, for the
// second.
fn key_terms(x: Tile, sg: u32, lane: u32, t0: u32, ds: bool) {
    for (var n = 0u; n < 512u / SW; n++) {
        let e = n * SW + lane;
        let r = e / 32u;
        let j = e % 32u;
        let s = x.r0 + sg * 16u + r;
        let t = t0 + j;
        var v = 0.0;
        if (s <= t && t < p.t) {
            let z = drop_at(x, t, s);
            if (ds) {
                v = sf[S_AT + sg * 512u + e] * (sf[P_AT + sg * 512u + e] * z - sf[R2_AT + j]);
            } else {
                let w = exp(sf[S_AT + sg * 512u + e] * p.scale - sf[R1_AT + j]);
                sf[S_AT + sg * 512u + e] = w;
                v = w * z;
            }
        }
        sh[W_AT + sg * 16u * PS + r * PS + j] = f16(v);
    }
}

// DS_TILE's key_terms: the weights p·z into W and ds into W2 in one loop,
// each element's weight p computed once for both (the same values).
fn key_terms_once(x: Tile, sg: u32, lane: u32, t0: u32) {
    for (var n = 0u; n < 512u / SW; n++) {
        let e = n * SW + lane;
        let r = e / 32u;
        let j = e % 32u;
        let s = x.r0 + sg * 16u + r;
        let t = t0 + j;
        var pz = 0.0;
        var ds = 0.0;
        if (s <= t && t < p.t) {
            let z = drop_at(x, t, s);
            let w = exp(sf[S_AT + sg * 512u + e] * p.scale - sf[R1_AT + j]);
            pz = w * z;
            ds = w * (sf[P_AT + sg * 512u + e] * z - sf[R2_AT + j]);
        }
        let at = sg * 16u * PS + r * PS + j;
        sh[W_AT + at] = f16(pz);
        sh[W2_AT + at] = f16(ds);
    }
}

// Columns 16·dc … of the subgroup's dk (scaled) and dv, each through its
// scratch (its own: only its lanes wait).
fn store_pair(dk: Sums, dv: Sums, x: Tile, sg: u32, lane: u32, dc: u32) {
    store_part(dk, x, sg, lane, 1u, dc);
    store_part(dv, x, sg, lane, 2u, dc);
}

fn store_part(v: Sums, x: Tile, sg: u32, lane: u32, part: u32, dc: u32) {
    coopStoreT(v, &sf[S_AT + sg * 512u], 16u);
    subgroupBarrier();
    let f = select(1.0, p.scale, part == 1u) / p.grad_scale;
    for (var n = 0u; n < 256u / SW; n++) {
        let e = n * SW + lane;
        let s = x.r0 + sg * 16u + e / 16u;
        if (s < p.t) {
            let v = sf[S_AT + sg * 512u + e] * f;
            let d = dc * 16u + e % 16u;
            dqkv[qkv_at(x, s, part, d)] = v;
            copy_out(x, s, part * p.c + x.head + d, 3u * p.c, v, p.grad_scale);
        }
    }
    subgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let x = tile_at(wg);
    let nd = hs() / 16u;
    let first = x.r0 / BLOCK;
    let blocks = (p.t + BLOCK - 1u) / BLOCK;
    let row_at = X_AT + sg * 16u * TS;
    load_qkv(X_AT, x, x.r0, ROWS, 1u, tid);
    workgroupBarrier();
    let k0 = coopLoadT<Rows>(&sh[row_at], TS);
    let k1 = coopLoadT<Rows>(&sh[row_at + 16u], TS);
    let k2 = coopLoadT<Rows>(&sh[row_at + 32u], TS);
    let k3 = coopLoadT<Rows>(&sh[row_at + 48u], TS);
    workgroupBarrier();
    load_qkv(X_AT, x, x.r0, ROWS, 2u, tid);
    workgroupBarrier();
    let v0 = coopLoadT<Rows>(&sh[row_at], TS);
    let v1 = coopLoadT<Rows>(&sh[row_at + 16u], TS);
    let v2 = coopLoadT<Rows>(&sh[row_at + 32u], TS);
    let v3 = coopLoadT<Rows>(&sh[row_at + 48u], TS);
    workgroupBarrier();
    var dk0 = Sums();
    var dk1 = Sums();
    var dk2 = Sums();
    var dk3 = Sums();
    var dv0 = Sums();
    var dv1 = Sums();
    var dv2 = Sums();
    var dv3 = Sums();
    let w_at = W_AT + sg * 16u * PS;
    for (var qb = first; qb < blocks; qb++) {
        let t0 = qb * BLOCK;
        put_block(Y_AT, fetch_qkv(x, t0, 0u, tid), tid);
        put_block(Z_AT, fetch_dout(x, t0, tid), tid);
        query_terms(x, t0, tid);
        workgroupBarrier();
        // Sᵀ = K·Qᵀ and dpᵀ = V·doutᵀ (before the dropout factor).
        spill_block(rows_by_rows(k0, k1, k2, k3, Y_AT), rows_by_rows(k0, k1, k2, k3, Y_AT + 16u * TS), S_AT + sg * 512u);
        spill_block(rows_by_rows(v0, v1, v2, v3, Z_AT), rows_by_rows(v0, v1, v2, v3, Z_AT + 16u * TS), P_AT + sg * 512u);
        // Up to the next block's copy, the scratch (S, P) and the terms
        // (W) are the subgroup's own: only its lanes wait.
        subgroupBarrier();
        if (DS_TILE) {
            key_terms_once(x, sg, lane, t0);
        } else {
            key_terms(x, sg, lane, t0, false);
        }
        subgroupBarrier();
        // dv += (P∘Z)ᵀ · dout.
        var w0 = coopLoadT<Rows>(&sh[w_at], PS);
        var w1 = coopLoadT<Rows>(&sh[w_at + 16u], PS);
        dv0 = weights_by_block(w0, w1, Z_AT, 0u, dv0);
        if (nd > 1u) {
            dv1 = weights_by_block(w0, w1, Z_AT, 1u, dv1);
        }
        if (nd > 2u) {
            dv2 = weights_by_block(w0, w1, Z_AT, 2u, dv2);
        }
        if (nd > 3u) {
            dv3 = weights_by_block(w0, w1, Z_AT, 3u, dv3);
        }
        // dk += dSᵀ · Q (scaled when written).
        var ds_at = w_at + W2_AT - W_AT;
        if (!DS_TILE) {
            subgroupBarrier();
            key_terms(x, sg, lane, t0, true);
            subgroupBarrier();
            ds_at = w_at;
        }
        w0 = coopLoadT<Rows>(&sh[ds_at], PS);
        w1 = coopLoadT<Rows>(&sh[ds_at + 16u], PS);
        dk0 = weights_by_block(w0, w1, Y_AT, 0u, dk0);
        if (nd > 1u) {
            dk1 = weights_by_block(w0, w1, Y_AT, 1u, dk1);
        }
        if (nd > 2u) {
            dk2 = weights_by_block(w0, w1, Y_AT, 2u, dk2);
        }
        if (nd > 3u) {
            dk3 = weights_by_block(w0, w1, Y_AT, 3u, dk3);
        }
        workgroupBarrier();
    }
    store_pair(dk0, dv0, x, sg, lane, 0u);
    if (nd > 1u) {
        store_pair(dk1, dv1, x, sg, lane, 1u);
    }
    if (nd > 2u) {
        store_pair(dk2, dv2, x, sg, lane, 2u);
    }
    if (nd > 3u) {
        store_pair(dk3, dv3, x, sg, lane, 3u);
    }
}
