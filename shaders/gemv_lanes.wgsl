// The lane layout's dot products of gemv.wgsl: one output column to 32
// lanes, 8 columns a workgroup of 256 invocations. Appended to gemv.wgsl
// (whose entry points run them, a workgroup per 8 columns) and to
// decode_whole.wgsl (one workgroup running every column of a token's
// GEMVs, 8 at a time, in the same order: the same bits); the including
// kernel declares `p` (k, n, b_off …), `a` (the input rows) and `b` (the
// weights), and appends gemv_row.wgsl.

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
    return p.b_off + min(col, p.n - 1u) * p.k;
}

// `acc` plus the products of inputs k0 + lane, k0 + lane + 32, … < K one
// after another, four loads of weights in flight.
fn rest_dot(row: u32, k0: u32, lane: u32, acc_in: f32) -> f32 {
    var acc = acc_in;
    var k = k0 + lane;
    for (; k + 3u * LANES < p.k; k += 4u * LANES) {
        let w = ws(row, k);
        acc = fma(a[a_row + k], w.x, acc);
        acc = fma(a[a_row + k + LANES], w.y, acc);
        acc = fma(a[a_row + k + 2u * LANES], w.z, acc);
        acc = fma(a[a_row + k + 3u * LANES], w.w, acc);
    }
    for (; k < p.k; k += LANES) {
        acc = fma(a[a_row + k], b[row + k], acc);
    }
    return acc;
}

// This lane's share of its column's dot product: whole rounds, then the
// rest one input at a time.
fn lane_dot(row: u32, lane: u32) -> f32 {
    var acc = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var k0 = 0u;
    // Two rounds' weights loaded before either is used (the same products
    // in the same order as one round at a time).
    for (; k0 + 2u * BLOCK <= p.k; k0 += 2u * BLOCK) {
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
    for (; k0 + BLOCK <= p.k; k0 += BLOCK) {
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
    let whole = p.k - p.k % BLOCK;
    var acc = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < p.k; k0 += BLOCK) {
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
            for (; k0 + i + 3u * LANES < p.k; i += 4u * LANES) {
                let w = ws(row, k0 + i);
                acc.x = fma(red[i], w.x, acc.x);
                acc.x = fma(red[i + LANES], w.y, acc.x);
                acc.x = fma(red[i + 2u * LANES], w.z, acc.x);
                acc.x = fma(red[i + 3u * LANES], w.w, acc.x);
            }
            for (; k0 + i < p.k; i += LANES) {
                acc.x = fma(red[i], b[row + k0 + i], acc.x);
            }
        }
    }
    if (whole == p.k) {
        acc += acc1;
    }
    // Every lane is done with the staged inputs before the tree reuses `red`.
    workgroupBarrier();
    return (acc.x + acc.y) + (acc.z + acc.w);
}

// The lanes' addition (lanes_wg.wgsl, lanes_sg.wgsl): f32.
fn lane_add(x: f32, y: f32) -> f32 {
    return x + y;
}

// Adds the 32 lanes of each column (`lanes_sum`: a fixed tree) and writes
// the columns.
fn finish_lanes(lid: vec3<u32>, col: u32, v: f32) {
    let s = lanes_sum(lid, v);
    if (lid.x == 0u && col < p.n) {
        finish_col(col, s);
    }
}
