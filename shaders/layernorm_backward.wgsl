// LayerNorm backward. With x̂ = (x − μ)·σ̂ and g = dout ⊙ w:
//   dx = σ̂ · (g − mean(g) − x̂ · mean(g ⊙ x̂))      (`dx`, one workgroup per row)
//   dw = Σ_rows dout ⊙ x̂,  db = Σ_rows dout         (`dwdb_partials`, then
//                                                      the column sum)
// The weight sums run in two deterministic stages: `dwdb_partials` sums
// chunks of rows per column into partials (2, chunks, C) — dw's chunks
// first, then db's — and the column-sum kernel (bias_grad.wgsl) adds the
// chunks of each column into dw and db. `dx_dwdb_rows` (at the end) is
// `dx_rows` and `dwdb_partials` in one dispatch, with their bits.

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
    _pad0: u32,
    _pad1: u32,
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
        partials[chunk * p.c + col] = sums.x;
        partials[(chunks + chunk) * p.c + col] = sums.y;
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
    partials[chunk * p.c + col] = sums.x;
    partials[(chunks + chunk) * p.c + col] = sums.y;
}

// `dx_rows` and `dwdb_partials` in one dispatch (the kernel layout `Gpu`,
// C ≤ FUSED_MAX_C): workgroup `chunk` (x) runs the rows of its chunk, warp y
// of 8 taking rows r0 + y, r0 + y + 8, … — the rows dwdb_partials' lane y
// takes — one row an iteration, its 32 lanes holding columns l, l + 32, ….
// Same bits as the two kernels: a row's sums go through `dx_rows`' tree
// (lane l keeps the four threads' sums l, l + 32, l + 64, l + 96 of the
// 128-thread kernel and adds their first two levels; the other levels are
// read from workgroup memory), and a column's (dout·x̂, dout) terms go to
// dwdb_partials' two accumulators (a: iterations 0, 2, …; b: 1, 3, …),
// added over the warps by its tree.
const FUSED_MAX_C: u32 = 512u;
const FUSED_COLS: u32 = FUSED_MAX_C / COLS;
// Each warp's 32 tree nodes at level 32, twice: a row's iteration writes
// one half while the last iteration's readers may still read the other.
var<workgroup> row_nodes: array<vec2<f32>, 512>;

// (g, g·x̂) of column i of the row at d0 / x0.
fn row_term(d0: u32, x0: u32, i: u32, mu: f32, rs: f32) -> vec2<f32> {
    let g = dout[d0 + i] * w[p.w_off + i];
    let xhat = (x[x0 + i] - mu) * rs;
    return vec2<f32>(g, g * xhat);
}

// Lane l's node of level 32 of `dx_rows`' tree: (s_l + s_{l+64}) +
// (s_{l+32} + s_{l+96}), s_t summing columns t, t + 128, … in order.
fn lane_node(d0: u32, x0: u32, l: u32, mu: f32, rs: f32) -> vec2<f32> {
    var s = array<vec2<f32>, 4>();
    for (var i0 = l; i0 < p.c; i0 += WG) {
        for (var q = 0u; q < 4u; q++) {
            let i = i0 + q * COLS;
            if (i < p.c) {
                s[q] += row_term(d0, x0, i, mu, rs);
            }
        }
    }
    return (s[0] + s[2]) + (s[1] + s[3]);
}

// The row's (Σ g, Σ g·x̂) from the warp's 32 nodes at `base`, as
// `workgroup_sum2` adds its eight level-8 nodes.
fn row_sum(base: u32) -> vec2<f32> {
    var n: array<vec2<f32>, 8>;
    for (var j = 0u; j < 8u; j++) {
        let t = base + j;
        n[j] = (row_nodes[t] + row_nodes[t + 16u]) + (row_nodes[t + 8u] + row_nodes[t + 24u]);
    }
    return ((n[0] + n[4]) + (n[2] + n[6])) + ((n[1] + n[5]) + (n[3] + n[7]));
}

@compute @workgroup_size(32, 8)
fn dx_dwdb_rows(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let l = lid.x;
    let y = lid.y;
    let chunk = wg.x;
    let chunks = (p.n + p.rows_per_chunk - 1u) / p.rows_per_chunk;
    let r0 = chunk * p.rows_per_chunk;
    let r1 = min(r0 + p.rows_per_chunk, p.n);
    var a: array<vec2<f32>, FUSED_COLS>;
    var b: array<vec2<f32>, FUSED_COLS>;
    let rounds = (r1 - r0 + LANES - 1u) / LANES;
    for (var it = 0u; it < rounds; it++) {
        let row = r0 + y + it * LANES;
        let live = row < r1;
        let r = select(r0, row, live);
        let mu = mean[p.mean_off + r];
        let rs = rstd[p.rstd_off + r];
        let d0 = p.dout_off + r * p.c;
        let x0 = p.x_off + r * p.c;
        let base = (it & 1u) * 256u + y * COLS;
        row_nodes[base + l] = lane_node(d0, x0, l, mu, rs);
        workgroupBarrier();
        let means = row_sum(base) / f32(p.c);
        if (live) {
            let o0 = p.dx_off + row * p.c;
            for (var m = 0u; m * COLS + l < p.c; m++) {
                let i = m * COLS + l;
                let dy = dout[d0 + i];
                let g = dy * w[p.w_off + i];
                let xhat = (x[x0 + i] - mu) * rs;
                var d = rs * (g - means.x - xhat * means.y);
                if (p.accumulate != 0u) {
                    d += dx[o0 + i];
                }
                dx[o0 + i] = d;
                let t = vec2<f32>(dy * xhat, dy);
                if ((it & 1u) == 0u) {
                    a[m] += t;
                } else {
                    b[m] += t;
                }
            }
        }
    }
    // dwdb_partials' tree over the warps, 32 columns at a time.
    let i = y * COLS + l;
    for (var m = 0u; m < FUSED_COLS; m++) {
        if (m * COLS >= p.c) {
            break;
        }
        red_cols[i] = a[m] + b[m];
        workgroupBarrier();
        let col = m * COLS + l;
        if (y == 0u && col < p.c) {
            let v = ((red_cols[l] + red_cols[l + 4u * COLS]) + (red_cols[l + 2u * COLS] + red_cols[l + 6u * COLS]))
                + ((red_cols[l + COLS] + red_cols[l + 5u * COLS]) + (red_cols[l + 3u * COLS] + red_cols[l + 7u * COLS]));
            partials[chunk * p.c + col] = v.x;
            partials[(chunks + chunk) * p.c + col] = v.y;
        }
        workgroupBarrier();
    }
}
