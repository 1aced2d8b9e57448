// Column sums in chunks of rows, the deterministic reduction behind the bias
// gradient (and LayerNorm's dw, db):
//   dst[chunk, col] (+)= Σ_{r in chunk} src[r, col],  src (rows, cols)
// A bias gradient db = Σ_rows dout runs it twice: chunks of ROWS rows into
// partials (chunks, cols), then all chunks into db. One invocation per
// output element; neighbouring threads read neighbouring columns.

struct Params {
    rows: u32,
    cols: u32,
    rows_per_chunk: u32,
    accumulate: u32,     // 1: dst += sum, 0: dst = sum
    src_off: u32,
    dst_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

// Workgroup (x, y): columns [64x, 64x + 64) of row chunk y.
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let col = wg.x * 64u + lid;
    if (col >= p.cols) {
        return;
    }
    let r0 = wg.y * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.rows);
    var acc = 0.0;
    for (var r = r0; r < r1; r++) {
        acc += src[p.src_off + r * p.cols + col];
    }
    let o = p.dst_off + wg.y * p.cols + col;
    if (p.accumulate != 0u) {
        acc = dst[o] + acc;
    }
    dst[o] = acc;
}
