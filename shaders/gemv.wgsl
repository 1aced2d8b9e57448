// f32 GEMV, the M = 1 case of matmul.wgsl with B transposed (a linear
// weight W (N, K), rows contiguous): c (N) = a (K) · Wᵀ [+ bias (N)] [+ c],
// with the LayerNorm prologue (`main_ln`) and GELU epilogue of
// gemv_row.wgsl (appended to this source) for the decoder. It serves one
// decoded token, where a 64×64 tile would leave 63 of its 64 rows idle.
//
// One workgroup = 8 output columns × 32 lanes. Lane i of column j reads
// W[j, i], W[j, i + 32], … (a warp reads 128 neighbouring bytes of one row)
// in rounds of 256 inputs while whole ones fit (two rounds' sixteen loads
// in flight), the rest four loads ahead, then a fixed tree adds the 32
// lanes (lanes_wg.wgsl; lanes_sg.wgsl's shuffles give the same bits). A
// decoded token's GEMVs are bound by each lane's chain of loads, so the
// loops issue loads before they use them; the products keep the order of
// one input after another. Every product and sum is f32.
//
// `main_cols` is the layout for CPU implementations of WebGPU (SwiftShader,
// lavapipe, WARP): one invocation per output column summing its whole row
// alone, four products at a time — no workgroup memory, no barrier, and 64
// columns per workgroup. Those implementations pay per workgroup and per
// barrier far more than per load: on SwiftShader it runs a decoded token's
// GEMVs 24× faster than `main` (docs in BENCHMARKS.md); on a GPU its
// strided reads would be slow.

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 2: add bias, bit 3: accumulate into C (as matmul.wgsl); bit 6:
    // GELU epilogue (gemv_row.wgsl)
    flags: u32,
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
    ln_w_off: u32,
    ln_b_off: u32,
    // `main_ln`: groups of 8 columns a workgroup, one after another (0 or
    // 1: one), so that many rows' workgroups fit the GPU at once and share
    // a row's LayerNorm statistics; the high half: the input row's slots
    // (gemv_row.wgsl's `row_in`).
    groups: u32,
    // The subgroup size of the `lanes_sg.wgsl` form.
    sg: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const LANES: u32 = 32u;
const COLS: u32 = 8u;
// Inputs per round of the loop: eight per lane.
const BLOCK: u32 = 256u;

// Inputs k + 32i for i < 4.
fn xs(k: u32) -> vec4<f32> {
    let o = a_row + k;
    return vec4<f32>(a[o], a[o + LANES], a[o + 2u * LANES], a[o + 3u * LANES]);
}

// Staged inputs i + 32j for j < 4 (`*_ln`).
fn staged(i: u32) -> vec4<f32> {
    return vec4<f32>(red[i], red[i + LANES], red[i + 2u * LANES], red[i + 3u * LANES]);
}

// W[col, k + 32i] for i < 4, the row starting at `row`.
fn ws(row: u32, k: u32) -> vec4<f32> {
    let o = row + k;
    return vec4<f32>(b[o], b[o + LANES], b[o + 2u * LANES], b[o + 3u * LANES]);
}

fn column(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>) -> u32 {
    return (wg.y * nwg.x + wg.x) * COLS + lid.y;
}

// The column of group g of the workgroup's `groups` (`main_ln`).
fn group_column(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, g: u32, groups: u32) -> u32 {
    return ((wg.y * nwg.x + wg.x) * groups + g) * COLS + lid.y;
}

// Where a column's weights start; a column past N reads the last one's
// (and writes nothing), so that every lane runs the same loop.
fn row_of(col: u32) -> u32 {
    return p.b_off + min(col, p.n - 1u) * k_len();
}

// `acc` plus the products of inputs k0 + lane, k0 + lane + 32, … < K one
// after another, four loads of weights in flight.
fn rest_dot(row: u32, k0: u32, lane: u32, acc_in: f32) -> f32 {
    var acc = acc_in;
    var k = k0 + lane;
    for (; k + 3u * LANES < k_len(); k += 4u * LANES) {
        let w = ws(row, k);
        acc = fma(a[a_row + k], w.x, acc);
        acc = fma(a[a_row + k + LANES], w.y, acc);
        acc = fma(a[a_row + k + 2u * LANES], w.z, acc);
        acc = fma(a[a_row + k + 3u * LANES], w.w, acc);
    }
    for (; k < k_len(); k += LANES) {
        acc = fma(a[a_row + k], b[row + k], acc);
    }
    return acc;
}

// This lane's share of its column's dot product: whole rounds, then the
// rest one input at a time.
fn lane_dot(row: u32, lane: u32) -> f32 {
    var acc = acc_zero();
    var acc1 = acc_zero();
    var k0 = 0u;
    // Two rounds' weights loaded before either is used (the same products
    // in the same order as one round at a time).
    for (; k0 + 2u * BLOCK <= k_len(); k0 += 2u * BLOCK) {
        let k = k0 + lane;
        let w0 = ws(row, k);
        let w1 = ws(row, k + 4u * LANES);
        let w2 = ws(row, k + BLOCK);
        let w3 = ws(row, k + BLOCK + 4u * LANES);
        acc = fma(xs(k), w0, acc);
        acc1 = fma(xs(k + 4u * LANES), w1, acc1);
        acc = fma(xs(k + BLOCK), w2, acc);
        acc1 = fma(xs(k + BLOCK + 4u * LANES), w3, acc1);
    }
    for (; k0 + BLOCK <= k_len(); k0 += BLOCK) {
        let k = k0 + lane;
        acc = fma(xs(k), ws(row, k), acc);
        acc1 = fma(xs(k + 4u * LANES), ws(row, k + 4u * LANES), acc1);
    }
    acc += acc1;
    acc.x = rest_dot(row, k0, lane, acc.x);
    return (acc.x + acc.y) + (acc.z + acc.w);
}

// `lane_dot` of the normalised inputs, products in the same order, staged
// a round (256 inputs) at a time; each round's weights are loaded before
// its inputs are staged. One staging site: CPU implementations pay for
// each.
fn lane_dot_ln(row: u32, t: u32, lane: u32, st: vec2<f32>) -> f32 {
    let whole = k_len() - k_len() % BLOCK;
    var acc = acc_zero();
    var acc1 = acc_zero();
    for (var k0 = 0u; k0 < k_len(); k0 += BLOCK) {
        let k = k0 + lane;
        // A round's weights, or (past the whole rounds) the first row's.
        let kw = select(0u, k, k0 < whole);
        let w0 = ws(row, kw);
        let w1 = ws(row, kw + 4u * LANES);
        stage_ln(t, k0, st);
        if (k0 < whole) {
            acc = fma(staged(lane), w0, acc);
            acc1 = fma(staged(lane + 4u * LANES), w1, acc1);
        } else {
            // The one partial round, last: the rest one input at a time.
            acc += acc1;
            var i = lane;
            for (; k0 + i + 3u * LANES < k_len(); i += 4u * LANES) {
                let w = ws(row, k0 + i);
                acc.x = fma(red[i], w.x, acc.x);
                acc.x = fma(red[i + LANES], w.y, acc.x);
                acc.x = fma(red[i + 2u * LANES], w.z, acc.x);
                acc.x = fma(red[i + 3u * LANES], w.w, acc.x);
            }
            for (; k0 + i < k_len(); i += LANES) {
                acc.x = fma(red[i], b[row + k0 + i], acc.x);
            }
        }
    }
    if (whole == k_len()) {
        acc += acc1;
    }
    // Every lane is done with the staged inputs before the tree reuses `red`.
    workgroupBarrier();
    return (acc.x + acc.y) + (acc.z + acc.w);
}

// `main_ln`'s first group with K a multiple of 128 up to 512: a lane's
// weights, inputs lane + 32i + 128j in w_j, loaded before the row's
// statistics (a slot past K reads the row's first weights, never used).
struct WPre {
    w0: vec4<f32>,
    w1: vec4<f32>,
    w2: vec4<f32>,
    w3: vec4<f32>,
}

fn w_preloads() -> bool {
    return ln_preloads() && KC % (BLOCK / 2u) == 0u;
}

fn w_preload(row: u32, lane: u32) -> WPre {
    let k = k_len();
    return WPre(
        ws(row, lane),
        ws(row, select(0u, lane + 4u * LANES, lane + 7u * LANES < k)),
        ws(row, select(0u, lane + 8u * LANES, lane + 11u * LANES < k)),
        ws(row, select(0u, lane + 12u * LANES, lane + 15u * LANES < k)),
    );
}

// The rest loop of `lane_dot_ln` over a partial round of 128 inputs: one
// quad, into acc.x one input after another.
fn partial_quad(acc_in: vec4<f32>, lane: u32, w: vec4<f32>) -> vec4<f32> {
    var acc = acc_in;
    acc.x = fma(red[lane], w.x, acc.x);
    acc.x = fma(red[lane + LANES], w.y, acc.x);
    acc.x = fma(red[lane + 2u * LANES], w.z, acc.x);
    acc.x = fma(red[lane + 3u * LANES], w.w, acc.x);
    return acc;
}

// `lane_dot_ln` with the weights and the staged values preloaded
// (`w_preloads`): the same products in the same order.
fn lane_dot_ln_pre(w: WPre, ln: LnPre, t: u32, lane: u32, st: vec2<f32>) -> f32 {
    let k = k_len();
    var acc = acc_zero();
    var acc1 = acc_zero();
    stage_ln_pre(t, 0u, st, ln);
    if (k >= BLOCK) {
        acc = fma(staged(lane), w.w0, acc);
        acc1 = fma(staged(lane + 4u * LANES), w.w1, acc1);
    } else {
        acc = partial_quad(acc + acc1, lane, w.w0);
    }
    if (k > BLOCK) {
        stage_ln_pre(t, 1u, st, ln);
        if (k >= 2u * BLOCK) {
            acc = fma(staged(lane), w.w2, acc);
            acc1 = fma(staged(lane + 4u * LANES), w.w3, acc1);
        } else {
            acc = partial_quad(acc + acc1, lane, w.w2);
        }
    }
    if (k % BLOCK == 0u) {
        acc += acc1;
    }
    workgroupBarrier();
    return (acc.x + acc.y) + (acc.z + acc.w);
}

// The lanes' addition (lanes_wg.wgsl, lanes_sg.wgsl): f32.
fn lane_add(x: f32, y: f32) -> f32 {
    return x + y;
}

// Adds the 32 lanes of each column (`lanes_sum`: a fixed tree) and writes
// the columns, with the epilogue's loads `e`.
fn finish_lanes(lid: vec3<u32>, col: u32, v: f32, e: Epi) {
    let s = lanes_sum(lid, v);
    if (lid.x == 0u && col < p.n) {
        finish_col_with(col, s, e);
    }
}

@compute @workgroup_size(32, 8)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    set_row(wg);
    let col = column(wg, nwg, lid);
    let e = epilogue_loads(col);
    finish_lanes(lid, col, lane_dot(row_of(col), lid.x), e);
}

// With the LayerNorm prologue: the row's statistics once, then each group
// of 8 columns as `main` would (the same bits for every column).
@compute @workgroup_size(32, 8)
fn main_ln(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    set_row(wg);
    let t = lid.y * LANES + lid.x;
    let groups = ln_groups();
    // Loads ahead of the statistics (used where `w_preloads`).
    let ln = ln_preload(t);
    let col0 = group_column(wg, nwg, lid, 0u, groups);
    let w = w_preload(row_of(col0), lid.x);
    let e0 = epilogue_loads(col0);
    let st = ln_stats(t);
    for (var g = 0u; g < groups; g++) {
        let col = group_column(wg, nwg, lid, g, groups);
        var dot = 0.0;
        if (g == 0u && w_preloads()) {
            dot = lane_dot_ln_pre(w, ln, t, lid.x, st);
        } else {
            dot = lane_dot_ln(row_of(col), t, lid.x, st);
        }
        var e = e0;
        if (g > 0u) {
            e = epilogue_loads(col);
        }
        finish_lanes(lid, col, dot, e);
        // The lanes' tree has read `red` before the next group stages there.
        workgroupBarrier();
    }
}

// Columns per workgroup of `main_cols`.
const COL_GROUP: u32 = 64u;

@compute @workgroup_size(64)
fn main_cols(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    set_row(wg);
    let col = (wg.y * nwg.x + wg.x) * COL_GROUP + lid.x;
    if (col >= p.n) {
        return;
    }
    let row = p.b_off + col * k_len();
    var acc = acc_zero();
    var k = 0u;
    for (; k + 4u <= k_len(); k += 4u) {
        let o = a_row + k;
        let x = vec4<f32>(a[o], a[o + 1u], a[o + 2u], a[o + 3u]);
        let v = vec4<f32>(b[row + k], b[row + k + 1u], b[row + k + 2u], b[row + k + 3u]);
        acc = fma(x, v, acc);
    }
    for (; k < k_len(); k += 1u) {
        acc.x = fma(a[a_row + k], b[row + k], acc.x);
    }
    finish_col(col, (acc.x + acc.y) + (acc.z + acc.w));
}
