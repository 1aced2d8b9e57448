// Column sums in chunks of rows, the deterministic reduction behind the bias
// gradient (and LayerNorm's dw, db):
//   dst[chunk, col] (+)= Σ_{r in chunk} src[r, col],  src (rows, cols)
// A bias gradient db = Σ_rows dout runs it twice: chunks of rows into
// partials (chunks, cols), then all chunks into db. Workgroup z computes sum
// z of a table — its (src, dst) offsets, its columns and whether it adds
// onto dst — so that one dispatch finishes many sums of the same rows
// (LayerNorm's dw and db; every LayerNorm's and bias gradient's second
// stage at the end of a backward).
//
// Workgroup (x, y) sums columns [32x, 32x + 32) of row chunk y with 8 lanes
// of 32 threads: lane k adds rows r0 + k, r0 + k + 8, … (a warp reads 32
// neighbouring columns of one row), four loads in flight per thread; then a
// fixed tree adds the 8 lanes (column_chunk.wgsl, appended). The order is
// fixed: deterministic. Columns past a sum's own (the grid covers the
// widest) load and store nothing.

struct Params {
    rows: u32,
    rows_per_chunk: u32,
    _pad0: u32,
    _pad1: u32,
}

// Sum z: (src offset, dst offset, columns, 1: dst += sum / 0: dst = sum).
struct Sum {
    src_off: u32,
    dst_off: u32,
    cols: u32,
    accumulate: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<storage, read> sums: array<Sum>;

fn at(s: Sum, r: u32, col: u32) -> f32 {
    return src[s.src_off + r * s.cols + col];
}

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let s = sums[wg.z];
    let col = wg.x * COLS + lid.x;
    let lane = lid.y;
    let r0 = wg.y * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.rows);
    var acc = vec4<f32>(0.0);
    if (col < s.cols) {
        var r = r0 + lane;
        for (; r + 3u * LANES < r1; r += 4u * LANES) {
            acc += vec4<f32>(at(s, r, col), at(s, r + LANES, col), at(s, r + 2u * LANES, col), at(s, r + 3u * LANES, col));
        }
        for (; r < r1; r += LANES) {
            acc.x += at(s, r, col);
        }
    }
    let total = chunk_sum(acc, lane, lid.x);
    if (lane == 0u && col < s.cols) {
        var sum = total;
        let o = s.dst_off + wg.y * s.cols + col;
        if (s.accumulate != 0u) {
            sum = dst[o] + sum;
        }
        dst[o] = sum;
    }
}

// The kernel layout `Cpu` (CPU implementations of WebGPU): one invocation
// per column of a chunk, workgroups (⌈cols/64⌉, chunks, sums), rows added
// in order; no workgroup memory, no barrier.
@compute @workgroup_size(64)
fn main_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let s = sums[wg.z];
    let col = wg.x * 64u + lid;
    if (col >= s.cols) {
        return;
    }
    let r0 = wg.y * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.rows);
    var sum = 0.0;
    for (var r = r0; r < r1; r++) {
        sum += at(s, r, col);
    }
    let o = s.dst_off + wg.y * s.cols + col;
    if (s.accumulate != 0u) {
        sum = dst[o] + sum;
    }
    dst[o] = sum;
}
