// LayerNorm backward. With x̂ = (x − μ)·σ̂ and g = dout ⊙ w:
//   dx = σ̂ · (g − mean(g) − x̂ · mean(g ⊙ x̂))      (`dx`, one workgroup per row)
//   dw = Σ_rows dout ⊙ x̂,  db = Σ_rows dout         (`dwdb_partials`, then
//                                                      the column sum)
// The weight sums run in two deterministic stages: `dwdb_partials` sums
// chunks of rows per column into partials (2, chunks, C) — dw's chunks
// first, then db's — and the column-sum kernel (bias_grad.wgsl) adds the
// chunks of each column into dw and db.

struct Params {
    n: u32,              // rows N
    c: u32,              // channels C
    accumulate: u32,     // 1: dx += …, 0: dx = …
    rows_per_chunk: u32, // rows summed per partial
    dout_off: u32,       // dout (N, C)
    x_off: u32,          // x (N, C)
    mean_off: u32,       // mean (N)
    rstd_off: u32,       // rstd (N)
    w_off: u32,          // w (C)
    dx_off: u32,         // dx (N, C)
    partials_off: u32,   // partials (2, chunks, C)
    copy_scale: u32,     // dx's f16 copy (copy16.wgsl): f32 bits of its scale
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> dout: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read> mean: array<f32>;
@group(0) @binding(4) var<storage, read> rstd: array<f32>;
@group(0) @binding(5) var<storage, read> w: array<f32>;
@group(0) @binding(6) var<storage, read_write> dx: array<f32>;
@group(0) @binding(7) var<storage, read_write> partials: array<f32>;

const WG: u32 = 128u;
// The 128 threads' pairs, then the tree's eight nodes at level 8.
var<workgroup> red: array<vec2<f32>, 136>;

// The tree over the 128 pairs: the node at level s of leaf j < s (pairs
// 64 apart added first, then 32, … 1), as ln_sum.wgsl adds the forward's.
fn tree64(j: u32) -> vec2<f32> {
    return red[j] + red[j + 64u];
}

fn tree32(j: u32) -> vec2<f32> {
    return tree64(j) + tree64(j + 32u);
}

fn tree16(j: u32) -> vec2<f32> {
    return tree32(j) + tree32(j + 16u);
}

// (Σ g, Σ g·x̂) over the workgroup, returned to every thread: eight
// threads add the subtrees under the level-8 nodes, then every thread the
// last three levels — two barriers instead of eight.
fn workgroup_sum2(lid: u32, v: vec2<f32>) -> vec2<f32> {
    red[lid] = v;
    workgroupBarrier();
    if (lid < 8u) {
        red[WG + lid] = tree16(lid) + tree16(lid + 8u);
    }
    workgroupBarrier();
    let n = WG;
    return ((red[n] + red[n + 4u]) + (red[n + 2u] + red[n + 6u]))
        + ((red[n + 1u] + red[n + 5u]) + (red[n + 3u] + red[n + 7u]));
}

@compute @workgroup_size(128)
fn dx_rows(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wg.y * nwg.x + wg.x;
    if (row >= p.n) {
        return;
    }
    let mu = mean[p.mean_off + row];
    let rs = rstd[p.rstd_off + row];
    let d0 = p.dout_off + row * p.c;
    let x0 = p.x_off + row * p.c;
    var acc = vec2<f32>(0.0, 0.0);
    for (var i = lid; i < p.c; i += WG) {
        let g = dout[d0 + i] * w[p.w_off + i];
        let xhat = (x[x0 + i] - mu) * rs;
        acc += vec2<f32>(g, g * xhat);
    }
    let means = workgroup_sum2(lid, acc) / f32(p.c);
    let o0 = p.dx_off + row * p.c;
    for (var i = lid; i < p.c; i += WG) {
        let g = dout[d0 + i] * w[p.w_off + i];
        let xhat = (x[x0 + i] - mu) * rs;
        var d = rs * (g - means.x - xhat * means.y);
        if (p.accumulate != 0u) {
            d += dx[o0 + i];
        }
        dx[o0 + i] = d;
        copy16_write(row, i, p.c, d, bitcast<f32>(p.copy_scale));
    }
}

// `dx_rows` for CPU implementations of WebGPU (the kernel layout `Cpu`):
// one invocation per row, its sums in channel order, no workgroup memory,
// no barrier.
@compute @workgroup_size(64)
fn dx_serial(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = (wg.y * nwg.x + wg.x) * 64u + lid;
    if (row >= p.n) {
        return;
    }
    let mu = mean[p.mean_off + row];
    let rs = rstd[p.rstd_off + row];
    let d0 = p.dout_off + row * p.c;
    let x0 = p.x_off + row * p.c;
    var acc = vec2<f32>(0.0, 0.0);
    for (var i = 0u; i < p.c; i++) {
        let g = dout[d0 + i] * w[p.w_off + i];
        let xhat = (x[x0 + i] - mu) * rs;
        acc += vec2<f32>(g, g * xhat);
    }
    let means = acc / f32(p.c);
    let o0 = p.dx_off + row * p.c;
    for (var i = 0u; i < p.c; i++) {
        let g = dout[d0 + i] * w[p.w_off + i];
        let xhat = (x[x0 + i] - mu) * rs;
        var d = rs * (g - means.x - xhat * means.y);
        if (p.accumulate != 0u) {
            d += dx[o0 + i];
        }
        dx[o0 + i] = d;
        copy16_write(row, i, p.c, d, bitcast<f32>(p.copy_scale));
    }
}

// Workgroup (x, y): columns [32x, 32x + 32) of row chunk y, as the column
// sum (bias_grad.wgsl) tiles it: lane k of 8 takes rows r0 + k, r0 + k + 8, …
// (a warp reads 32 neighbouring columns of one row), then a fixed tree adds
// the lanes.
const COLS: u32 = 32u;
const LANES: u32 = 8u;
var<workgroup> red_cols: array<vec2<f32>, 256>;

// (dout·x̂, dout) of row r, column col.
fn dwdb_term(r: u32, col: u32) -> vec2<f32> {
    let dy = dout[p.dout_off + r * p.c + col];
    let xhat = (x[p.x_off + r * p.c + col] - mean[p.mean_off + r]) * rstd[p.rstd_off + r];
    return vec2<f32>(dy * xhat, dy);
}

@compute @workgroup_size(32, 8)
fn dwdb_partials(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let col = wg.x * COLS + lid.x;
    let lane = lid.y;
    let chunk = wg.y;
    let chunks = (p.n + p.rows_per_chunk - 1u) / p.rows_per_chunk;
    let r0 = chunk * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.n);
    var a = vec2<f32>(0.0);
    var b = vec2<f32>(0.0);
    if (col < p.c) {
        var r = r0 + lane;
        for (; r + LANES < r1; r += 2u * LANES) {
            a += dwdb_term(r, col);
            b += dwdb_term(r + LANES, col);
        }
        if (r < r1) {
            a += dwdb_term(r, col);
        }
    }
    let i = lane * COLS + lid.x;
    red_cols[i] = a + b;
    workgroupBarrier();
    for (var s = LANES / 2u; s > 0u; s >>= 1u) {
        if (lane < s) {
            red_cols[i] += red_cols[i + s * COLS];
        }
        workgroupBarrier();
    }
    if (lane == 0u && col < p.c) {
        let sums = red_cols[lid.x];
        partials[p.partials_off + chunk * p.c + col] = sums.x;
        partials[p.partials_off + (chunks + chunk) * p.c + col] = sums.y;
    }
}

// `dwdb_partials` in the kernel layout `Cpu` (CPU implementations of
// WebGPU): one invocation per column of a row chunk, workgroups (⌈C/64⌉,
// chunks), rows in order; no workgroup memory, no barrier.
@compute @workgroup_size(64)
fn dwdb_partials_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let col = wg.x * 64u + lid;
    if (col >= p.c) {
        return;
    }
    let chunk = wg.y;
    let chunks = (p.n + p.rows_per_chunk - 1u) / p.rows_per_chunk;
    let r0 = chunk * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.n);
    var sums = vec2<f32>(0.0);
    for (var r = r0; r < r1; r++) {
        sums += dwdb_term(r, col);
    }
    partials[p.partials_off + chunk * p.c + col] = sums.x;
    partials[p.partials_off + (chunks + chunk) * p.c + col] = sums.y;
}
