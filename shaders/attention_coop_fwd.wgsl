// Causal multi-head attention forward on cooperative matrices (tensor
// cores): attention_fwd.wgsl's outputs — out (B,T,C) and lse (B,NH,T) —
// with the products QKᵀ and PV on f16 tiles summed in f32.
//
// One workgroup = one (b, h) and 64 query rows, a subgroup's 16 each
// (attention_coop_common.wgsl). Two passes over the keys, 32 at a time, so
// that no output is ever rescaled: the first scores them (S = QKᵀ) and
// keeps each row's running max m and sum l (online, in f32); the second
// scores them again and weights the values with
//   p_ts = exp(scale·s_ts − lse_t) · z_ts,  lse_t = m_t + log l_t,
// rounded to f16 for the PV product (z_ts: the dropout factor). The
// outputs go out through the subgroup's scratch, 16 columns at a time.

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(1) var<storage, read> qkv4: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> lse: array<f32>;
// ops::adamw::OptState: the step counter in word 0 (the dropout masks' step).
@group(0) @binding(4) var<storage, read> state: array<u32>;

// The tiles: a block's keys (Y) and values (Z), each subgroup's 16 × 32
// weights (W), and before the first block the workgroup's 64 query rows
// (X, over Y and Z: each subgroup keeps its rows as fragments); each
// subgroup's scores (S, SR floats: spill_scores' layout), each row's max
// then lse (R1) and sum (R2): 25,344 bytes.
const X_AT: u32 = 0u;
const Y_AT: u32 = 0u;
const Z_AT: u32 = 2304u; // BLOCK × TS
const W_AT: u32 = 4608u; // + BLOCK × TS
var<workgroup> sh: array<f16, 7168>; // + 4 × 16 × PS
const S_AT: u32 = 0u;
const CS: u32 = 20u;
const HI_AT: u32 = 336u;
const SR: u32 = 656u;
const R1_AT: u32 = 2624u; // 4 × SR
const R2_AT: u32 = 2688u;
var<workgroup> sf: array<f32, 2752>;

// Appended: attention_coop_common.wgsl, dropout_mask.wgsl,
// attention_dropout.wgsl.

// A subgroup's 16 × 32 scores into its scratch at s_at, each half column
// by column: score (r, j) at s_at + (j / 16) · HI_AT + (j % 16) · CS + r.
// fold_rows' two lanes a row then read 32 different banks at each step
// (row by row, at a stride of 32, its 32 lanes fell on two banks), as do
// weights' 32 lanes (16 rows of keys j and j + 16 a step) and the lanes of
// each cooperative store (CS = 20: at 16, four of them shared a bank).
fn spill_scores(lo: Sums, hi: Sums, s_at: u32) {
    coopStore(lo, &sf[s_at], CS);
    coopStore(hi, &sf[s_at + HI_AT], CS);
}

// Where score (r, j) of subgroup sg lies (spill_scores).
fn score_at(sg: u32, r: u32, j: u32) -> u32 {
    return S_AT + sg * SR + (j / 16u) * HI_AT + (j % 16u) * CS + r;
}

// The rows of subgroup sg: each one's running max (R1) and sum (R2)
// folded with its scores of keys s0 … s0 + 31 (S), the valid ones
// (s ≤ t < T); two lanes a row, 16 keys each, their max and sum combined
// by a shuffle (run 99 measured a row a lane at 503 µs a nanoGPT layer,
// the rows across all the subgroup's lanes at 643). Every lane calls it.
fn fold_rows(x: Tile, sg: u32, lane: u32, s0: u32) {
    for (var e0 = 0u; e0 < 32u; e0 += SW) {
        let e = e0 + lane;
        let live = e < 32u;
        let r = min(e / 2u, 15u);
        let half = e % 2u;
        let i = sg * 16u + r;
        let t = x.r0 + i;
        let col = score_at(sg, r, half * 16u);
        let j0 = s0 + half * 16u;
        var hi = NEG;
        for (var j = 0u; j < 16u; j++) {
            if (live && j0 + j <= t && t < p.t) {
                hi = max(hi, sf[col + j * CS] * p.scale);
            }
        }
        hi = max(hi, subgroupShuffleXor(hi, 1u));
        let m = sf[R1_AT + i];
        let m_new = max(m, hi);
        var part = 0.0;
        for (var j = 0u; j < 16u; j++) {
            if (live && hi != NEG && j0 + j <= t && t < p.t) {
                part += exp(sf[col + j * CS] * p.scale - m_new);
            }
        }
        let sum = part + subgroupShuffleXor(part, 1u);
        if (live && half == 0u && hi != NEG) {
            sf[R1_AT + i] = m_new;
            sf[R2_AT + i] = sf[R2_AT + i] * exp(m - m_new) + sum;
        }
    }
}

// The subgroup's weights of keys s0 … s0 + 31 as f16 (sh at W_AT), from
// its scores and its rows' lse (R1); 16 rows of keys j and j + 16 a step.
fn weights(x: Tile, sg: u32, lane: u32, s0: u32) {
    for (var n = 0u; n < 512u / SW; n++) {
        let e = n * SW + lane;
        let r = e % 16u;
        let j = (e / 16u) % 2u * 16u + e / 32u;
        let t = x.r0 + sg * 16u + r;
        var w = 0.0;
        if (s0 + j <= t && t < p.t) {
            w = exp(sf[score_at(sg, r, j)] * p.scale - sf[R1_AT + sg * 16u + r]);
            w *= drop_at(x, t, s0 + j);
        }
        sh[W_AT + sg * 16u * PS + r * PS + j] = f16(w);
    }
}

// Columns 16·dc … of the subgroup's output rows, through its scratch (its
// own: only its lanes wait).
fn store_out(o: Sums, x: Tile, sg: u32, lane: u32, dc: u32) {
    coopStoreT(o, &sf[S_AT + sg * SR], 16u);
    subgroupBarrier();
    for (var n = 0u; n < 256u / SW; n++) {
        let e = n * SW + lane;
        let t = x.r0 + sg * 16u + e / 16u;
        if (t < p.t) {
            out[(x.seq + t) * p.c + x.head + dc * 16u + e % 16u] = sf[S_AT + sg * SR + e];
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
    let nd = p.hs / 16u;
    let blocks = (min(p.t, x.r0 + ROWS) + BLOCK - 1u) / BLOCK;
    load_qkv(X_AT, x, x.r0, ROWS, 0u, tid);
    for (var i = tid; i < ROWS; i += WG) {
        sf[R1_AT + i] = NEG;
        sf[R2_AT + i] = 0.0;
    }
    workgroupBarrier();
    // The subgroup's 16 query rows, as fragments of 16 columns.
    let q_at = X_AT + sg * 16u * TS;
    let q0 = coopLoadT<Rows>(&sh[q_at], TS);
    let q1 = coopLoadT<Rows>(&sh[q_at + 16u], TS);
    let q2 = coopLoadT<Rows>(&sh[q_at + 32u], TS);
    let q3 = coopLoadT<Rows>(&sh[q_at + 48u], TS);
    // The keys' tiles lie over the query rows.
    workgroupBarrier();
    let s_at = S_AT + sg * SR;
    var keys = fetch_qkv(x, 0u, 1u, tid);
    for (var kb = 0u; kb < blocks; kb++) {
        put_block(Y_AT, keys, tid);
        if (kb + 1u < blocks) {
            keys = fetch_qkv(x, (kb + 1u) * BLOCK, 1u, tid);
        }
        workgroupBarrier();
        spill_scores(rows_by_rows(q0, q1, q2, q3, Y_AT), rows_by_rows(q0, q1, q2, q3, Y_AT + 16u * TS), s_at);
        workgroupBarrier();
        // No barrier after: the next block's copy touches only the tiles,
        // and this subgroup's scratch and rows only it reads and writes.
        fold_rows(x, sg, lane, kb * BLOCK);
    }
    workgroupBarrier();
    for (var i = tid; i < ROWS; i += WG) {
        let v = sf[R1_AT + i] + log(sf[R2_AT + i]);
        sf[R1_AT + i] = v;
        if (x.r0 + i < p.t) {
            lse[(x.b * p.nh + x.h) * p.t + x.r0 + i] = v;
        }
    }
    var o0 = Sums();
    var o1 = Sums();
    var o2 = Sums();
    var o3 = Sums();
    let w_at = W_AT + sg * 16u * PS;
    keys = fetch_qkv(x, 0u, 1u, tid);
    var values = fetch_qkv(x, 0u, 2u, tid);
    for (var kb = 0u; kb < blocks; kb++) {
        put_block(Y_AT, keys, tid);
        put_block(Z_AT, values, tid);
        if (kb + 1u < blocks) {
            keys = fetch_qkv(x, (kb + 1u) * BLOCK, 1u, tid);
            values = fetch_qkv(x, (kb + 1u) * BLOCK, 2u, tid);
        }
        workgroupBarrier();
        spill_scores(rows_by_rows(q0, q1, q2, q3, Y_AT), rows_by_rows(q0, q1, q2, q3, Y_AT + 16u * TS), s_at);
        // The scores (S) and weights (W) are the subgroup's own: only its
        // lanes wait.
        subgroupBarrier();
        weights(x, sg, lane, kb * BLOCK);
        subgroupBarrier();
        let w0 = coopLoadT<Rows>(&sh[w_at], PS);
        let w1 = coopLoadT<Rows>(&sh[w_at + 16u], PS);
        o0 = weights_by_block(w0, w1, Z_AT, 0u, o0);
        if (nd > 1u) {
            o1 = weights_by_block(w0, w1, Z_AT, 1u, o1);
        }
        if (nd > 2u) {
            o2 = weights_by_block(w0, w1, Z_AT, 2u, o2);
        }
        if (nd > 3u) {
            o3 = weights_by_block(w0, w1, Z_AT, 3u, o3);
        }
        workgroupBarrier();
    }
    store_out(o0, x, sg, lane, 0u);
    if (nd > 1u) {
        store_out(o1, x, sg, lane, 1u);
    }
    if (nd > 2u) {
        store_out(o2, x, sg, lane, 2u);
    }
    if (nd > 3u) {
        store_out(o3, x, sg, lane, 3u);
    }
}
