// The tiles of the two tensor-core attention backward kernels
// (attention_coop_bwd_dq.wgsl, attention_coop_bwd_dkv.wgsl; appended to
// both): a block's two tiles of 32 rows (Y, Z), each subgroup's 16 × 32
// f16 terms (W; SH_LEN: each kernel's halves), and before the first block
// the workgroup's 64 rows (X, over them: each subgroup keeps its rows as
// fragments); each subgroup's two 16 × 32 f32 products
// (S, P; spill_block's layout) and, in their rows' padding, up to 64 rows'
// two terms (term_at): 32,768 bytes, the most Vulkan promises (dK/dV's
// DS_TILE pipelines 37,888).

const X_AT: u32 = 0u;
const Y_AT: u32 = 0u;
const Z_AT: u32 = 2304u; // BLOCK × TS
const W_AT: u32 = 4608u; // + BLOCK × TS
var<workgroup> sh: array<f16, SH_LEN>;
const S_AT: u32 = 0u;
const P_AT: u32 = 2304u; // 4 × SPL
var<workgroup> sf: array<f32, 4608>;

// A subgroup's 16 × 32 products, SPL floats at S_AT or P_AT + SPL · sg:
// row r at r · SPS, the block's first 16 rows (or columns) then its last
// 16. At SPS = 36 the lanes of a cooperative store of an accumulator fall
// on different banks (at 32, eight of them shared one).
const SPS: u32 = 36u;
const SPL: u32 = 576u;

fn spill_block(lo: Sums, hi: Sums, s_at: u32) {
    coopStoreT(lo, &sf[s_at], SPS);
    coopStoreT(hi, &sf[s_at + 16u], SPS);
}

// Where row term i (< 64) lies: in columns 32 … 35 of the first 8 rows of
// the first two subgroups' products in S (`region` S_AT: lse) or P
// (P_AT: D), which the spills never write; 32 consecutive terms on 32
// banks.
fn term_at(region: u32, i: u32) -> u32 {
    return region + (i / 32u) * SPL + (i % 8u) * SPS + 32u + (i % 32u) / 8u;
}
