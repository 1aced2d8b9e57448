// The tiles of the two tensor-core attention backward kernels
// (attention_coop_bwd_dq.wgsl, attention_coop_bwd_dkv.wgsl; appended to
// both): a block's two tiles of 32 rows (Y, Z), each subgroup's 16 × 32
// f16 terms (W; SH_LEN: each kernel's halves), and before the first block
// the workgroup's 64 rows (X, over them: each subgroup keeps its rows as
// fragments); each subgroup's two 16 × 32 f32 products (S, P) and 64
// rows' two terms (R1, R2): 31,232 bytes (dK/dV's DS_TILE pipelines
// 36,352).

const X_AT: u32 = 0u;
const Y_AT: u32 = 0u;
const Z_AT: u32 = 2304u; // BLOCK × TS
const W_AT: u32 = 4608u; // + BLOCK × TS
var<workgroup> sh: array<f16, SH_LEN>;
const S_AT: u32 = 0u;
const P_AT: u32 = 2048u;
const R1_AT: u32 = 4096u;
const R2_AT: u32 = 4160u;
var<workgroup> sf: array<f32, 4224>;

// A subgroup's 16 × 32 products into its scratch (at s_at, row stride 32):
// the block's first 16 rows' and its last 16's.
fn spill_block(lo: Sums, hi: Sums, s_at: u32) {
    coopStoreT(lo, &sf[s_at], 32u);
    coopStoreT(hi, &sf[s_at + 16u], 32u);
}
