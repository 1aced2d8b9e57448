// Causal attention backward on cooperative matrices, part 1 of 2: dQ and
// the row terms D (attention_bwd_dq.wgsl's outputs), with the products
// QKᵀ, dout·Vᵀ and dS·K on f16 tiles summed in f32:
//   D_t   = dout_t · out_t               (f32, from the f32 rows)
//   p_ts  = exp(scale·q_t·k_s − lse_t),  dp_ts = z_ts dout_t · v_s
//   ds_ts = p_ts (dp_ts − D_t)           (f32, rounded to f16 for dS·K)
//   dq_t  = scale Σ_{s≤t} ds_ts k_s
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

// The tiles: a block's keys (Y) and values (Z), each subgroup's 16 × 32
// dS (W); before the first block the workgroup's 64 rows of Q, then of
// dout (X, over them). Each subgroup's scores (S) and dp (P), each row's
// lse (R1) and D (R2): 31,232 bytes.
const X_AT: u32 = 0u;
const Y_AT: u32 = 0u;
const Z_AT: u32 = 2304u; // BLOCK × TS
const W_AT: u32 = 4608u; // + BLOCK × TS
var<workgroup> sh: array<f16, 7168>; // + 4 × 16 × PS
const S_AT: u32 = 0u;
const P_AT: u32 = 2048u;
const R1_AT: u32 = 4096u;
const R2_AT: u32 = 4160u;
var<workgroup> sf: array<f32, 4224>;

// Appended: attention_coop_common.wgsl, dropout_mask.wgsl,
// attention_dropout.wgsl.

// The workgroup's 64 rows of dout into the tile at `at`, as f16; zero
// past T.
fn load_dout(at: u32, x: Tile, tid: u32) {
    let quads = p.hs / 4u;
    for (var e = tid; e < ROWS * quads; e += WG) {
        let r = e / quads;
        let d = 4u * (e % quads);
        var v = vec4<f32>();
        if (x.r0 + r < p.t) {
            v = dout4[((x.seq + x.r0 + r) * p.c + x.head + d) / 4u];
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
            for (var k = 0u; k < p.hs / 4u; k++) {
                d += dot(dout4[o + k], out4[o + k]);
            }
            l = lse[(x.b * p.nh + x.h) * p.t + t];
            delta[(x.b * p.nh + x.h) * p.t + t] = d;
        }
        sf[R1_AT + i] = l;
        sf[R2_AT + i] = d;
    }
}

// The subgroup's dS of keys s0 … s0 + 31 as f16 (W), from its scores (S)
// and dp (P).
fn ds_block(x: Tile, sg: u32, lane: u32, sw: u32, s0: u32) {
    for (var e = lane; e < 512u; e += sw) {
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

// Columns 16·dc … of the subgroup's dq rows, scaled, from the scratch.
fn write_dq(x: Tile, sg: u32, lane: u32, sw: u32, dc: u32) {
    for (var e = lane; e < 256u; e += sw) {
        let t = x.r0 + sg * 16u + e / 16u;
        if (t < p.t) {
            dqkv[qkv_at(x, t, 0u, dc * 16u + e % 16u)] = sf[S_AT + sg * 512u + e] * p.scale;
        }
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(subgroup_size) sw: u32,
) {
    let x = tile_at(wg);
    let nd = p.hs / 16u;
    let blocks = (min(p.t, x.r0 + ROWS) + BLOCK - 1u) / BLOCK;
    let row_at = X_AT + sg * 16u * TS;
    row_terms(x, tid);
    load_qkv(X_AT, x, x.r0, ROWS, 0u, tid);
    workgroupBarrier();
    let q0 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at], TS);
    let q1 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at + 16u], TS);
    let q2 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at + 32u], TS);
    let q3 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at + 48u], TS);
    workgroupBarrier();
    load_dout(X_AT, x, tid);
    workgroupBarrier();
    let g0 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at], TS);
    let g1 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at + 16u], TS);
    let g2 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at + 32u], TS);
    let g3 = coopLoadT<coop_mat16x16<f16, A>>(&sh[row_at + 48u], TS);
    workgroupBarrier();
    var dq0 = coop_mat16x16<f32, C>();
    var dq1 = coop_mat16x16<f32, C>();
    var dq2 = coop_mat16x16<f32, C>();
    var dq3 = coop_mat16x16<f32, C>();
    let s_at = S_AT + sg * 512u;
    let p_at = P_AT + sg * 512u;
    let w_at = W_AT + sg * 16u * PS;
    for (var kb = 0u; kb < blocks; kb++) {
        load_qkv(Y_AT, x, kb * BLOCK, BLOCK, 1u, tid);
        load_qkv(Z_AT, x, kb * BLOCK, BLOCK, 2u, tid);
        workgroupBarrier();
        // Scores and dp: the row fragments against each tile's two halves.
        var s0 = coopMultiplyAdd(q0, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT], TS), coop_mat16x16<f32, C>());
        var s1 = coopMultiplyAdd(q0, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS], TS), coop_mat16x16<f32, C>());
        var p0 = coopMultiplyAdd(g0, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT], TS), coop_mat16x16<f32, C>());
        var p1 = coopMultiplyAdd(g0, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 16u * TS], TS), coop_mat16x16<f32, C>());
        if (nd > 1u) {
            s0 = coopMultiplyAdd(q1, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u], TS), s0);
            s1 = coopMultiplyAdd(q1, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS + 16u], TS), s1);
            p0 = coopMultiplyAdd(g1, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 16u], TS), p0);
            p1 = coopMultiplyAdd(g1, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 16u * TS + 16u], TS), p1);
        }
        if (nd > 2u) {
            s0 = coopMultiplyAdd(q2, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 32u], TS), s0);
            s1 = coopMultiplyAdd(q2, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS + 32u], TS), s1);
            p0 = coopMultiplyAdd(g2, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 32u], TS), p0);
            p1 = coopMultiplyAdd(g2, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 16u * TS + 32u], TS), p1);
        }
        if (nd > 3u) {
            s0 = coopMultiplyAdd(q3, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 48u], TS), s0);
            s1 = coopMultiplyAdd(q3, coopLoad<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS + 48u], TS), s1);
            p0 = coopMultiplyAdd(g3, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 48u], TS), p0);
            p1 = coopMultiplyAdd(g3, coopLoad<coop_mat16x16<f16, B>>(&sh[Z_AT + 16u * TS + 48u], TS), p1);
        }
        coopStoreT(s0, &sf[s_at], 32u);
        coopStoreT(s1, &sf[s_at + 16u], 32u);
        coopStoreT(p0, &sf[p_at], 32u);
        coopStoreT(p1, &sf[p_at + 16u], 32u);
        workgroupBarrier();
        ds_block(x, sg, lane, sw, kb * BLOCK);
        workgroupBarrier();
        // dq += dS · K: the block's two halves of keys.
        let w0 = coopLoadT<coop_mat16x16<f16, A>>(&sh[w_at], PS);
        let w1 = coopLoadT<coop_mat16x16<f16, A>>(&sh[w_at + 16u], PS);
        dq0 = coopMultiplyAdd(w0, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT], TS), dq0);
        dq0 = coopMultiplyAdd(w1, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS], TS), dq0);
        if (nd > 1u) {
            dq1 = coopMultiplyAdd(w0, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u], TS), dq1);
            dq1 = coopMultiplyAdd(w1, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS + 16u], TS), dq1);
        }
        if (nd > 2u) {
            dq2 = coopMultiplyAdd(w0, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 32u], TS), dq2);
            dq2 = coopMultiplyAdd(w1, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS + 32u], TS), dq2);
        }
        if (nd > 3u) {
            dq3 = coopMultiplyAdd(w0, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 48u], TS), dq3);
            dq3 = coopMultiplyAdd(w1, coopLoadT<coop_mat16x16<f16, B>>(&sh[Y_AT + 16u * TS + 48u], TS), dq3);
        }
        workgroupBarrier();
    }
    coopStoreT(dq0, &sf[s_at], 16u);
    workgroupBarrier();
    write_dq(x, sg, lane, sw, 0u);
    workgroupBarrier();
    if (nd > 1u) {
        coopStoreT(dq1, &sf[s_at], 16u);
        workgroupBarrier();
        write_dq(x, sg, lane, sw, 1u);
        workgroupBarrier();
    }
    if (nd > 2u) {
        coopStoreT(dq2, &sf[s_at], 16u);
        workgroupBarrier();
        write_dq(x, sg, lane, sw, 2u);
        workgroupBarrier();
    }
    if (nd > 3u) {
        coopStoreT(dq3, &sf[s_at], 16u);
        workgroupBarrier();
        write_dq(x, sg, lane, sw, 3u);
    }
}
