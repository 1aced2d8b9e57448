// Exact GELU, element-wise:
//   forward   y  = x·Φ(x) = ½x(1 + erf(x/√2))
//   backward  dx (+)= dy·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)
// `gelu_f32` and `gelu_grad_f32` are in erf.wgsl, appended to this source
// (and column_chunk.wgsl, for `backward_columns`);
// the backward's dx has an f16 copy with copy16.wgsl prepended and
// copy16_write.wgsl appended (the tensor-core path's), none with
// copy16_none.wgsl appended.
//
// A workgroup of 256 invocations takes 256 · PER_INVOCATION consecutive
// elements, each invocation PER_INVOCATION of them 256 apart (neighbouring
// invocations read neighbouring elements), its loads issued before it
// computes. PER_INVOCATION is a pipeline constant, 1 or 8 (ops/gelu.rs's
// `per_invocation` picks): at nanoGPT's shapes one element an invocation
// launched so many workgroups that scheduling them, not memory, set the
// time (as for coop_stage.wgsl), while at small shapes eight left the GPU
// idle. The per-element arithmetic is the same either way. Workgroups in
// rows of the grid's x.

struct Params {
    n: u32,
    accumulate: u32,   // backward: 1 adds into dx, 0 overwrites it
    x_off: u32,
    y_off: u32,        // forward output
    dy_off: u32,       // backward: upstream gradient
    dx_off: u32,       // backward output
    copy_width: u32,   // backward: dx's f16 copy (copy16.wgsl), its width
    copy_scale: u32,   // backward: f32 bits of the copy's scale
    // backward_columns: dx is (rows, copy_width); its column sums of chunks
    // of rows_per_chunk rows go to `sums` from sums_off.
    rows: u32,
    rows_per_chunk: u32,
    sums_off: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;
@group(0) @binding(5) var<storage, read_write> sums: array<f32>;

override PER_INVOCATION: u32 = 1u;
const WG: u32 = 256u;
// The largest PER_INVOCATION (the private arrays' size).
const MAX_PER_INVOCATION: u32 = 8u;

// This invocation's first element; its others follow every WG.
fn first_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * WG * PER_INVOCATION + lid;
}

// Index i clamped into the n elements: an invocation past the end loads
// the last element and writes nothing.
fn clamped(i: u32) -> u32 {
    return min(i, p.n - 1u);
}

@compute @workgroup_size(256)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i0 = first_index(wg, nwg, lid);
    var v: array<f32, MAX_PER_INVOCATION>;
    for (var j = 0u; j < PER_INVOCATION; j++) {
        v[j] = x[p.x_off + clamped(i0 + j * WG)];
    }
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = i0 + j * WG;
        if (i < p.n) {
            y[p.y_off + i] = gelu_f32(v[j]);
        }
    }
}

@compute @workgroup_size(256)
fn backward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i0 = first_index(wg, nwg, lid);
    var xs: array<f32, MAX_PER_INVOCATION>;
    var ds: array<f32, MAX_PER_INVOCATION>;
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = clamped(i0 + j * WG);
        xs[j] = x[p.x_off + i];
        ds[j] = dy[p.dy_off + i];
    }
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = i0 + j * WG;
        if (i < p.n) {
            var d = ds[j] * gelu_grad_f32(xs[j]);
            let o = p.dx_off + i;
            if (p.accumulate != 0u) {
                d = dx[o] + d;
            }
            dx[o] = d;
            copy16_write_flat(i, p.copy_width, d, bitcast<f32>(p.copy_scale));
        }
    }
}

// Element i of dx (+)= dy · gelu'(x), written with its f16 copy as
// `backward` writes it; returns the value written.
fn grad_at(i: u32) -> f32 {
    var d = dy[p.dy_off + i] * gelu_grad_f32(x[p.x_off + i]);
    let o = p.dx_off + i;
    if (p.accumulate != 0u) {
        d = dx[o] + d;
    }
    dx[o] = d;
    copy16_write_flat(i, p.copy_width, d, bitcast<f32>(p.copy_scale));
    return d;
}

// `backward` of a (rows, cols = copy_width) matrix with the first stage of
// its column sums — the bias gradient of the linear whose output this GELU
// took — in bias_grad.wgsl's layout and order (column_chunk.wgsl,
// appended): workgroup (x, y) takes columns [32x, 32x + 32) of row chunk
// y, and the chunk's sums go to sums[sums_off + y · cols + col]: the
// column sum's bits, without its reading dx again.
@compute @workgroup_size(32, 8)
fn backward_columns(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let cols = p.copy_width;
    let col = wg.x * COLS + lid.x;
    let lane = lid.y;
    let r0 = wg.y * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.rows);
    var acc = vec4<f32>(0.0);
    if (col < cols) {
        var r = r0 + lane;
        for (; r + 3u * LANES < r1; r += 4u * LANES) {
            let a = grad_at(r * cols + col);
            let b = grad_at((r + LANES) * cols + col);
            let c = grad_at((r + 2u * LANES) * cols + col);
            let d = grad_at((r + 3u * LANES) * cols + col);
            acc += vec4<f32>(a, b, c, d);
        }
        for (; r < r1; r += LANES) {
            acc.x += grad_at(r * cols + col);
        }
    }
    let total = chunk_sum(acc, lane, lid.x);
    if (lane == 0u && col < cols) {
        sums[p.sums_off + wg.y * cols + col] = total;
    }
}
