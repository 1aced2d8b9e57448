// Causal multi-head attention forward on cooperative matrices (tensor
// cores): attention_fwd.wgsl's outputs — out (B,T,C) and lse (B,NH,T) —
// with the products QKᵀ and PV on f16 tiles summed in f32.
//
// One workgroup = one (b, h) and 64 query rows, a subgroup's 16 each
// (attention_coop_common.wgsl). One pass over the keys, 32 at a time
// (FlashAttention-2's): each block is scored (S = QKᵀ), each row keeps a
// reference m_t and a running sum l_t = Σ exp(scale·s_ts − m_t) in f32,
// and the values are weighted with
//   p_ts = exp(scale·s_ts − m_t) · z_ts
// rounded to f16 for the PV product (z_ts: the dropout factor), summed in
// f32 accumulators; out_t = O_t / l_t and lse_t = m_t + log l_t at the
// end. m_t moves only when a block's row max passes it by more than TAU
// (FlashAttention-4's lazy rescaling): the weights then stay ≤ e^TAU
// (f16 holds them at its full relative precision), and the accumulators'
// rows are rescaled by exp(m_old − m_new) (1 where m stayed) — through
// the subgroup's scratch, cooperative matrices having no per-row product
// — every block after the first: run 137's form, which rescaled only
// under a branch on whether some row of the workgroup moved, computed
// wrong outputs on the card (right on lavapipe), and one on a subgroupAny
// of whether a row of the subgroup moved gave rows of zeros on Mesa 26's
// lavapipe (run 149). The outputs go out
// through the subgroup's scratch, 16 columns at a time, divided by l_t.

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
// subgroup's scores (S, SR floats: spill_scores' layout; its accumulators
// pass through there to be rescaled or stored), each row's reference m
// (R1), sum l (R2) and rescale factor (R3): 25,600 bytes.
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
const R3_AT: u32 = 2752u;
var<workgroup> sf: array<f32, 2816>;
// How far a block's row max may pass the row's reference before it moves:
// ln 256, the weights ≤ 256.
const TAU: f32 = 5.545177444479562;

// Appended: attention_coop_common.wgsl, dropout_mask.wgsl,
// attention_dropout.wgsl, copy16_write.wgsl.

// A subgroup's 16 × 32 scores into its scratch at s_at, each half column
// by column: score (r, j) at s_at + (j / 16) · HI_AT + (j % 16) · CS + r.
// softmax_block's two lanes a row then read 32 different banks at each
// step (row by row, at a stride of 32, its 32 lanes fell on two banks),
// as do the lanes of each cooperative store (CS = 20: at 16, four of them
// shared a bank).
fn spill_scores(lo: Sums, hi: Sums, s_at: u32) {
    coopStore(lo, &sf[s_at], CS);
    coopStore(hi, &sf[s_at + HI_AT], CS);
}

// Where score (r, j) of subgroup sg lies (spill_scores).
fn score_at(sg: u32, r: u32, j: u32) -> u32 {
    return S_AT + sg * SR + (j / 16u) * HI_AT + (j % 16u) * CS + r;
}

// The rows of subgroup sg against keys s0 … s0 + 31 (their scores in S;
// the valid ones s ≤ t < T): each row's reference m (R1) moved to the
// block's row max where that passes it by more than TAU (or where the row
// had none), its rescale factor exp(m_old − m_new) (R3; 1 where m stays),
// its sum l (R2) rescaled and added to, and the weights p·z as f16 (W).
// Two lanes a row, 16 keys each (max and sum combined by a shuffle; run
// 99 measured a row a lane slower). Every lane calls it.
fn softmax_block(x: Tile, sg: u32, lane: u32, s0: u32) {
    for (var e0 = 0u; e0 < 32u; e0 += SW) {
        let e = e0 + lane;
        let live = e < 32u;
        let r = min(e / 2u, 15u);
        let half = e % 2u;
        let i = sg * 16u + r;
        let t = x.r0 + i;
        let col = score_at(sg, r, half * 16u);
        let j0 = s0 + half * 16u;
        var s: array<f32, 16>;
        var hi = NEG;
        for (var j = 0u; j < 16u; j++) {
            s[j] = NEG;
            if (live && j0 + j <= t && t < p.t) {
                s[j] = sf[col + j * CS] * p.scale;
            }
            hi = max(hi, s[j]);
        }
        hi = max(hi, subgroupShuffleXor(hi, 1u));
        let m = sf[R1_AT + i];
        var m_new = m;
        var alpha = 1.0;
        if (hi != NEG && (m == NEG || hi > m + TAU)) {
            m_new = hi;
            if (m != NEG) {
                alpha = exp(m - m_new);
            }
        }
        var part = 0.0;
        let w_at = W_AT + sg * 16u * PS + r * PS + half * 16u;
        for (var j = 0u; j < 16u; j++) {
            var w = 0.0;
            if (s[j] != NEG) {
                w = exp(s[j] - m_new);
                part += w;
                w *= drop_at(x, t, j0 + j);
            }
            if (live) {
                sh[w_at + j] = f16(w);
            }
        }
        let sum = part + subgroupShuffleXor(part, 1u);
        if (live && half == 0u) {
            sf[R1_AT + i] = m_new;
            sf[R2_AT + i] = sf[R2_AT + i] * alpha + sum;
            sf[R3_AT + i] = alpha;
        }
    }
}

// The subgroup's accumulator `o` with each row times its rescale factor
// (R3), through its scratch (its own: only its lanes wait).
fn rescale(o: Sums, sg: u32, lane: u32) -> Sums {
    let at = S_AT + sg * SR;
    coopStoreT(o, &sf[at], 16u);
    subgroupBarrier();
    for (var n = 0u; n < 256u / SW; n++) {
        let e = n * SW + lane;
        sf[at + e] *= sf[R3_AT + sg * 16u + e / 16u];
    }
    subgroupBarrier();
    let v = coopLoadT<Sums>(&sf[at], 16u);
    subgroupBarrier();
    return v;
}

// Columns 16·dc … of the subgroup's output rows, each divided by its sum
// l (R2), through its scratch (its own: only its lanes wait).
fn store_out(o: Sums, x: Tile, sg: u32, lane: u32, dc: u32) {
    coopStoreT(o, &sf[S_AT + sg * SR], 16u);
    subgroupBarrier();
    for (var n = 0u; n < 256u / SW; n++) {
        let e = n * SW + lane;
        let i = sg * 16u + e / 16u;
        let t = x.r0 + i;
        if (t < p.t) {
            let o = sf[S_AT + sg * SR + e] / sf[R2_AT + i];
            let col = x.head + dc * 16u + e % 16u;
            out[(x.seq + t) * p.c + col] = o;
            copy_out(x, t, col, p.c, o, 1.0);
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
    // The keys' and values' tiles lie over the query rows.
    workgroupBarrier();
    let s_at = S_AT + sg * SR;
    let w_at = W_AT + sg * 16u * PS;
    var o0 = Sums();
    var o1 = Sums();
    var o2 = Sums();
    var o3 = Sums();
    for (var kb = 0u; kb < blocks; kb++) {
        put_block(Y_AT, fetch_qkv(x, kb * BLOCK, 1u, tid), tid);
        put_block(Z_AT, fetch_qkv(x, kb * BLOCK, 2u, tid), tid);
        workgroupBarrier();
        spill_scores(rows_by_rows(q0, q1, q2, q3, Y_AT), rows_by_rows(q0, q1, q2, q3, Y_AT + 16u * TS), s_at);
        // The scores (S), weights (W) and row terms are the subgroup's
        // own: only its lanes wait.
        subgroupBarrier();
        softmax_block(x, sg, lane, kb * BLOCK);
        // The rescale factors and weights are the subgroup's own rows':
        // only its lanes wait.
        subgroupBarrier();
        if (kb > 0u) {
            o0 = rescale(o0, sg, lane);
            if (nd > 1u) {
                o1 = rescale(o1, sg, lane);
            }
            if (nd > 2u) {
                o2 = rescale(o2, sg, lane);
            }
            if (nd > 3u) {
                o3 = rescale(o3, sg, lane);
            }
        }
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
    for (var i = tid; i < ROWS; i += WG) {
        if (x.r0 + i < p.t) {
            let v = sf[R1_AT + i] + log(sf[R2_AT + i]);
            lse[(x.b * p.nh + x.h) * p.t + x.r0 + i] = v;
        }
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
