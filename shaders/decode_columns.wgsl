// A row's GEMV columns computed by one workgroup: what the decoder's fused
// kernels do before their own work — attention_decode_qkv.wgsl (a head's
// QKV columns, then its attention) and decode_head.wgsl (the logits, then
// the pick) — so that they need no other workgroup's result (WGSL cannot
// order memory across the workgroups of one dispatch).
//
// The same bits as the LayerNorm-prologue GEMV that computes each column
// in its own workgroup of 8 columns × 32 lanes (gemv.wgsl `main_ln`,
// gemv_f16w.wgsl `gemv_ln`): the row's mean and 1/σ are gemv_row.wgsl's
// `ln_stats`, each input normalised by its `ln_x`, all K of them staged
// once in `xn`; each column's lanes sum as the GEMV's do (`lane_dots`:
// decode_columns_f32.wgsl or decode_columns_f16w.wgsl), and lanes_wg.wgsl's
// tree adds the 32 lanes with the GEMV's `lane_add`. Only who computes what
// changes: the 256 invocations are 8 column slots × 32 lanes, and each
// carries four columns (slot + 8c, c < 4) at once, so that a lane has four
// columns' weight loads in flight where the GEMV has one's.
//
// Appended to the GEMV's whole source (gemv.wgsl or the f16-storage
// kernels, with gemv_row.wgsl, ln_sum.wgsl, lanes_wg.wgsl and erf.wgsl:
// the params `p`, `red`), before the storage's `lane_dots`; the kernel
// defines `column_of(j)` (the j-th column's row of W) and
// `put_column(j, s)` (what becomes of its sum). The host binds these
// kernels only where K ≤ XN_MAX.

// Column slots of 32 lanes, and the columns a slot carries at once.
const SLOTS: u32 = 8u;
const CARRY: u32 = 4u;
// Inputs the workgroup stages.
const XN_MAX: u32 = 1024u;

// The LayerNorm's output row.
var<workgroup> xn: array<f32, XN_MAX>;

// The LayerNorm of the workgroup's row (`set_row` first) into `xn`. Every
// invocation calls it (barriers).
fn stage_row(tid: u32) {
    let st = ln_stats(tid);
    for (var k = tid; k < p.k; k += SLOTS * LANES) {
        xn[k] = ln_x(k, st);
    }
}

// Columns 0 … n − 1 (n ≥ 1): each one's dot product with `xn`, handed to
// `put_column` by lane 0 of its slot. A slot past n computes the last
// column again and hands nothing. Every invocation calls it (barriers).
fn columns(n: u32, tid: u32) {
    let lane = tid % LANES;
    let slot = tid / LANES;
    let last = n - 1u;
    for (var j0 = 0u; j0 < n; j0 += SLOTS * CARRY) {
        // The staged row is written, and the last round's trees have read
        // `red`.
        workgroupBarrier();
        let j = j0 + slot;
        let c4 = vec4<u32>(
            column_of(min(j, last)),
            column_of(min(j + SLOTS, last)),
            column_of(min(j + 2u * SLOTS, last)),
            column_of(min(j + 3u * SLOTS, last)),
        );
        let dots = lane_dots(c4, lane);
        for (var c = 0u; c < CARRY; c++) {
            red[tid] = dots[c];
            workgroupBarrier();
            let jc = j + c * SLOTS;
            if (lane == 0u && jc < n) {
                put_column(jc, lane_tree(slot * LANES));
            }
            workgroupBarrier();
        }
    }
}
