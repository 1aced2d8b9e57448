
// A chunk's column sums in a fixed order, shared by bias_grad.wgsl's
// column sum and gelu.wgsl's backward with the bias gradient's first stage
// (appended to each): a workgroup of (COLS, LANES) invocations takes COLS
// columns of a chunk of rows, lane k adding rows r0 + k, r0 + k + LANES, …
// four at a time into the four components of its sum (a warp reads COLS
// neighbouring columns of one row); then `chunk_sum`'s fixed tree adds the
// lanes.

const COLS: u32 = 32u;
const LANES: u32 = 8u;
var<workgroup> red: array<f32, 256>;

// The sum over the lanes of column `x` of the workgroup's partial sums
// `acc` (lane `lane`'s), returned to lane 0; every invocation calls it (its
// barriers).
fn chunk_sum(acc: vec4<f32>, lane: u32, x: u32) -> f32 {
    let i = lane * COLS + x;
    red[i] = (acc.x + acc.y) + (acc.z + acc.w);
    workgroupBarrier();
    for (var half = LANES / 2u; half > 0u; half >>= 1u) {
        if (lane < half) {
            red[i] += red[i + half * COLS];
        }
        workgroupBarrier();
    }
    return red[x];
}
