// Causal attention backward on cooperative matrices, part 1 of 2: dQ and
// the row terms D (attention_bwd_dq.wgsl's outputs), with the products
// QKᵀ, dout·Vᵀ and dS·K on f16 tiles summed in f32:
//   D_t   = dout_t · out_t               (f32, from the f32 rows)
//   p_ts  = exp(scale·q_t·k_s − lse_t),  dp_ts = z_ts dout_t · v_s
//   ds_ts = p_ts (dp_ts − D_t)           (f32, rounded to f16 for dS·K)
//   dq_t  = scale Σ_{s≤t} ds_ts k_s
// in units of the gradient scale g (attention_coop_common.wgsl's Params:
// dout staged as g·dout, D taken as g·D, dq divided by g as written).
// One workgroup = one (b, h) and 64 query rows, a subgroup's 16 each;
// each subgroup keeps its rows' Q and dout as fragments, keys and values
// come 32 at a time. dq overwrites the Q columns of dqkv; D goes to delta
// for part 2 (attention_coop_bwd_dkv.wgsl).

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(1) var<storage, read> qkv4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> out4: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> dout4: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read_write> delta: array<f32>;
@group(0) @binding(6) var<storage, read_write> dqkv: array<f32>;
// ops::adamw::OptState: the step counter in word 0 (the dropout masks' step).
@group(0) @binding(7) var<storage, read> state: array<u32>;

const SH_LEN: u32 = 7168u; // + 4 × 16 × PS

// The tiles (attention_coop_bwd_common.wgsl): a block's keys (Y) and
// values (Z), each subgroup's 16 × 32 dS (W); before the first block the
// workgroup's 64 rows of Q, then of dout (X). Each subgroup's scores (S)
// and dp (P), each row's lse (R1) and D (R2).

// Appended: attention_coop_bwd_common.wgsl, attention_coop_common.wgsl,
// dropout_mask.wgsl, attention_dropout.wgsl.

// The workgroup's 64 rows of dout into the tile at `at`, as f16; zero
// past T.
// (As load_qkv copies a tile.)
fn load_dout(at: u32, x: Tile, tid: u32) {
    let d = 4u * (tid % 16u);
    for (var i = 0u; i < ROWS * 16u / WG; i++) {
        let r = tid / 16u + i * (WG / 16u);
        var v = vec4<f32>();
        if (d < hs() && x.r0 + r < p.t) {
            v = dout4[((x.seq + x.r0 + r) * p.c + x.head + d) / 4u] * p.grad_scale;
        }
        put4(at + r * TS + d, v);
    }
}

// Each row's lse (R1) and D = dout·out (R2, and delta), in f32.
fn row_terms(x: Tile, tid: u32) {
    for (var i = tid; i < ROWS; i += WG) {
        let t = x.r0 + i;
        var d = 0.0;
        var l = 0.0;
        if (t < p.t) {
            let o = ((x.seq + t) * p.c + x.head) / 4u;
            for (var k = 0u; k < hs() / 4u; k++) {
                d += dot(dout4[o + k], out4[o + k]);
            }
            l = lse[(x.b * p.nh + x.h) * p.t + t];
            delta[(x.b * p.nh + x.h) * p.t + t] = d;
        }
        sf[R1_AT + i] = l;
        sf[R2_AT + i] = d * p.grad_scale;
    }
}

// The subgroup's dS of keys s0 … s0 + 31 as f16 (W), from its scores (S)
// and dp (P).
fn ds_block(x: Tile, sg: u32, lane: u32, s0: u32) {
    for (var n = 0u; n < 512u / SW; n++) {
        let e = n * SW + lane;
        let r = e / 32u;
        let j = e % 32u;
        let i = sg * 16u + r;
        let t = x.r0 + i;
        var ds = 0.0;
        if (s0 + j <= t && t < p.t) {
            let w = exp(sf[S_AT + sg * 512u + e] * p.scale - sf[R1_AT + i]);
            let dp = sf[P_AT + sg * 512u + e] * drop_at(x, t, s0 + j);
            ds = w * (dp - sf[R2_AT + i]);
        }
        sh[W_AT + sg * 16u * PS + r * PS + j] = f16(ds);
    }
}

// Columns 16·dc … of the subgroup's dq rows, scaled, through its scratch
// (its own: only its lanes wait).
fn store_dq(dq: Sums, x: Tile, sg: u32, lane: u32, dc: u32) {
    coopStoreT(dq, &sf[S_AT + sg * 512u], 16u);
    subgroupBarrier();
    for (var n = 0u; n < 256u / SW; n++) {
        let e = n * SW + lane;
        let t = x.r0 + sg * 16u + e / 16u;
        if (t < p.t) {
            let v = sf[S_AT + sg * 512u + e] * p.scale / p.grad_scale;
            let d = dc * 16u + e % 16u;
            dqkv[qkv_at(x, t, 0u, d)] = v;
            copy_out(x, t, x.head + d, 3u * p.c, v, p.grad_scale);
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
    let blocks = (min(p.t, x.r0 + ROWS) + BLOCK - 1u) / BLOCK;
    let row_at = X_AT + sg * 16u * TS;
    row_terms(x, tid);
    load_qkv(X_AT, x, x.r0, ROWS, 0u, tid);
    workgroupBarrier();
    let q0 = coopLoadT<Rows>(&sh[row_at], TS);
    let q1 = coopLoadT<Rows>(&sh[row_at + 16u], TS);
    let q2 = coopLoadT<Rows>(&sh[row_at + 32u], TS);
    let q3 = coopLoadT<Rows>(&sh[row_at + 48u], TS);
    workgroupBarrier();
    load_dout(X_AT, x, tid);
    workgroupBarrier();
    let g0 = coopLoadT<Rows>(&sh[row_at], TS);
    let g1 = coopLoadT<Rows>(&sh[row_at + 16u], TS);
    let g2 = coopLoadT<Rows>(&sh[row_at + 32u], TS);
    let g3 = coopLoadT<Rows>(&sh[row_at + 48u], TS);
    workgroupBarrier();
    var dq0 = Sums();
    var dq1 = Sums();
    var dq2 = Sums();
    var dq3 = Sums();
    let w_at = W_AT + sg * 16u * PS;
    for (var kb = 0u; kb < blocks; kb++) {
        put_block(Y_AT, fetch_qkv(x, kb * BLOCK, 1u, tid), tid);
        put_block(Z_AT, fetch_qkv(x, kb * BLOCK, 2u, tid), tid);
        workgroupBarrier();
        // Scores (Q·Kᵀ) and dp (dout·Vᵀ) of the block's keys.
        spill_block(rows_by_rows(q0, q1, q2, q3, Y_AT), rows_by_rows(q0, q1, q2, q3, Y_AT + 16u * TS), S_AT + sg * 512u);
        spill_block(rows_by_rows(g0, g1, g2, g3, Z_AT), rows_by_rows(g0, g1, g2, g3, Z_AT + 16u * TS), P_AT + sg * 512u);
        // The scratch (S, P) and the weights (W) between are the
        // subgroup's own: only its lanes wait.
        subgroupBarrier();
        ds_block(x, sg, lane, kb * BLOCK);
        subgroupBarrier();
        // dq += dS · K.
        let w0 = coopLoadT<Rows>(&sh[w_at], PS);
        let w1 = coopLoadT<Rows>(&sh[w_at + 16u], PS);
        dq0 = weights_by_block(w0, w1, Y_AT, 0u, dq0);
        if (nd > 1u) {
            dq1 = weights_by_block(w0, w1, Y_AT, 1u, dq1);
        }
        if (nd > 2u) {
            dq2 = weights_by_block(w0, w1, Y_AT, 2u, dq2);
        }
        if (nd > 3u) {
            dq3 = weights_by_block(w0, w1, Y_AT, 3u, dq3);
        }
        workgroupBarrier();
    }
    store_dq(dq0, x, sg, lane, 0u);
    if (nd > 1u) {
        store_dq(dq1, x, sg, lane, 1u);
    }
    if (nd > 2u) {
        store_dq(dq2, x, sg, lane, 2u);
    }
    if (nd > 3u) {
        store_dq(dq3, x, sg, lane, 3u);
    }
}
