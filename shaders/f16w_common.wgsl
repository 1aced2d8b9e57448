// What the f16-storage kernels share (matmul_f16w.wgsl: the tiled kernel;
// gemv_f16w.wgsl: the GEMVs), appended with them into one source by
// ops/matmul/f16w.rs. The op: C (M, N) = A (M, K) · Wᵀ [+ bias (N)].
//
// W is stored (N, K) — the (out, in) layout of a linear weight — as packed
// halves: word i of `w` holds elements 2i (low half) and 2i+1 (high half) of
// the flat parameter buffer, read with the core built-in unpack2x16float (no
// `enable f16` needed). A, bias and C are f32, and every product is summed in
// an f32 register: only the storage of W is narrow (see docs/precision.md).
//
// Every entry point has deliberately wrong variants, selected by the
// pipeline-overridable FAULT, that exist only so tests can prove the gate
// catches them (ops/matmul/f16w.rs registers them under keys of their own).

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 2: add bias; bit 3: accumulate into C (GEMV only); bit 4 (tiled
    // kernel): W's element offset and K are both even, so a K-pair never
    // straddles two words; bit 6: GELU epilogue (GEMV only, gemv_row.wgsl).
    flags: u32,
    a_off: u32,
    // Offset of W in halves (elements of the flat parameter buffer).
    w_off: u32,
    bias_off: u32,
    c_off: u32,
    ln_w_off: u32,
    ln_b_off: u32,
    // The `*_ln` GEMVs: groups of 8 columns a workgroup, one after another
    // (0 or 1: one), sharing the row's LayerNorm statistics; the high
    // half: the input row's slots (gemv_row.wgsl's `row_in`).
    groups: u32,
    // The subgroup size of the GEMVs' `lanes_sg.wgsl` form.
    sg: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

// K per step of the tiled kernel; the drop-tail fault skips the last
// partial step of K in every kernel.
const KT: u32 = 16u;

// Fault selectors: the pipeline-overridable FAULT picks a deliberately
// wrong test-only variant of every entry point (0, the default, is none).
const FAULT_NONE: u32 = 0u;
const FAULT_F16_ACC: u32 = 1u;
const FAULT_DROP_TAIL: u32 = 2u;
override FAULT: u32 = FAULT_NONE;

// Element e of the flat half buffer.
fn w_at(e: u32) -> f32 {
    let pair = unpack2x16float(w[e >> 1u]);
    return select(pair.x, pair.y, (e & 1u) == 1u);
}

// The K extent summed: the drop-tail fault skips the last partial K tile.
fn k_end(fault: u32) -> u32 {
    if (fault == FAULT_DROP_TAIL) {
        return (k_len() / KT) * KT;
    }
    return k_len();
}
