// Column sums in chunks of rows, the deterministic reduction behind the bias
// gradient (and LayerNorm's dw, db):
//   dst[chunk, col] (+)= Σ_{r in chunk} src[r, col],  src (rows, cols)
// A bias gradient db = Σ_rows dout runs it twice: chunks of rows into
// partials (chunks, cols), then all chunks into db. Workgroup z picks one
// of two (src, dst) pairs of the same shape, so that LayerNorm's dw and db
// finish in one dispatch.
//
// Workgroup (x, y) sums columns [32x, 32x + 32) of row chunk y with 8 lanes
// of 32 threads: lane k adds rows r0 + k, r0 + k + 8, … (a warp reads 32
// neighbouring columns of one row), four loads in flight per thread; then a
// fixed tree adds the 8 lanes. The order is fixed: deterministic.

struct Params {
    rows: u32,
    cols: u32,
    rows_per_chunk: u32,
    accumulate: u32,     // 1: dst += sum, 0: dst = sum
    // (src, dst) element offsets of pair 0 and, for workgroups z = 1, pair 1
    src_off: u32,
    dst_off: u32,
    src_off1: u32,
    dst_off1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

const COLS: u32 = 32u;
const LANES: u32 = 8u;
var<workgroup> red: array<f32, 256>;

fn at(src_off: u32, r: u32, col: u32) -> f32 {
    return src[src_off + r * p.cols + col];
}

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let src_off = select(p.src_off, p.src_off1, wg.z == 1u);
    let dst_off = select(p.dst_off, p.dst_off1, wg.z == 1u);
    let col = wg.x * COLS + lid.x;
    let lane = lid.y;
    let r0 = wg.y * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.rows);
    var acc = vec4<f32>(0.0);
    if (col < p.cols) {
        var r = r0 + lane;
        for (; r + 3u * LANES < r1; r += 4u * LANES) {
            acc += vec4<f32>(at(src_off, r, col), at(src_off, r + LANES, col), at(src_off, r + 2u * LANES, col), at(src_off, r + 3u * LANES, col));
        }
        for (; r < r1; r += LANES) {
            acc.x += at(src_off, r, col);
        }
    }
    let i = lane * COLS + lid.x;
    red[i] = (acc.x + acc.y) + (acc.z + acc.w);
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            red[i] += red[i + s * COLS];
        }
        workgroupBarrier();
    }
    if (lane == 0u && col < p.cols) {
        var sum = red[lid.x];
        let o = dst_off + wg.y * p.cols + col;
        if (p.accumulate != 0u) {
            sum = dst[o] + sum;
        }
        dst[o] = sum;
    }
}

// The kernel layout `Cpu` (CPU implementations of WebGPU): one invocation
// per column of a chunk, workgroups (⌈cols/64⌉, chunks, pairs), rows added
// in order; no workgroup memory, no barrier.
@compute @workgroup_size(64)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let col = wg.x * 64u + lid;
    if (col >= p.cols) {
        return;
    }
    let src_off = select(p.src_off, p.src_off1, wg.z == 1u);
    let dst_off = select(p.dst_off, p.dst_off1, wg.z == 1u);
    let r0 = wg.y * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.rows);
    var sum = 0.0;
    for (var r = r0; r < r1; r++) {
        sum += at(src_off, r, col);
    }
    let o = dst_off + wg.y * p.cols + col;
    if (p.accumulate != 0u) {
        sum = dst[o] + sum;
    }
    dst[o] = sum;
}
