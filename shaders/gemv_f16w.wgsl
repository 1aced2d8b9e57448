// Linear forward with f16-stored weights, the GEMVs (M = 1, one decoded
// token), shaped like gemv.wgsl: 8 output columns × 32 lanes per
// workgroup, each lane reading whole words of its column's row with eight
// loads in flight, a fixed tree over the lanes, and gemv_row.wgsl's
// LayerNorm prologue (the `*_ln` entry points) and bias/GELU/accumulate
// epilogue. `gemv` needs rows starting at a multiple of four halves (W's
// offset and K multiples of 4) and A's offset a multiple of 4: a lane then
// reads four halves as one vec2<u32> and their four inputs as one
// vec4<f32>. `gemv_any` takes any offset and K: each lane reads the words
// under its pairs of halves, shifted into place when a row starts at an
// odd half. `gemv_cols` is gemv.wgsl's `main_cols` (one invocation per
// output column, no workgroup memory, no barrier: CPU implementations of
// WebGPU) for any offset and K, two pairs of halves per step. The params,
// bindings 0–4, the weights' loads and the FAULT variants are
// f16w_common.wgsl's; ops/matmul/f16w.rs appends them all (with
// matmul_f16w.wgsl, gemv_row.wgsl and erf.wgsl) into one source.

// The same buffers as `w` and `a`, four halves and four inputs at a time
// (`gemv`, whose rows and input are aligned to them).
@group(0) @binding(6) var<storage, read> w4: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read> a4: array<vec4<f32>>;

const LANES: u32 = 32u;
const COLS: u32 = 8u;
// Per round of the loops, eight loads per lane: 256 quads (1024 halves) in
// `gemv`, 256 pairs in `gemv_any`.
const BLOCK: u32 = 256u;

// acc + x·v in f32, or as an all-f16 kernel would (the f16-acc fault):
// operands, products and sums each rounded to f16.
fn step4(acc: vec4<f32>, x: vec4<f32>, v: vec4<f32>, fault: u32) -> vec4<f32> {
    if (fault == FAULT_F16_ACC) {
        return vec4<f32>(
            to_f16(acc.x + to_f16(to_f16(x.x) * to_f16(v.x))),
            to_f16(acc.y + to_f16(to_f16(x.y) * to_f16(v.y))),
            to_f16(acc.z + to_f16(to_f16(x.z) * to_f16(v.z))),
            to_f16(acc.w + to_f16(to_f16(x.w) * to_f16(v.w))),
        );
    }
    return fma(x, v, acc);
}

// x + y, rounded to f16 under the f16-acc fault.
fn add_f(x: f32, y: f32, fault: u32) -> f32 {
    if (fault == FAULT_F16_ACC) {
        return to_f16(x + y);
    }
    return x + y;
}

fn add4(x: vec4<f32>, y: vec4<f32>, fault: u32) -> vec4<f32> {
    return vec4<f32>(add_f(x.x, y.x, fault), add_f(x.y, y.y, fault), add_f(x.z, y.z, fault), add_f(x.w, y.w, fault));
}

// The four halves of two words, in element order.
fn halves(q: vec2<u32>) -> vec4<f32> {
    return vec4<f32>(unpack2x16float(q.x), unpack2x16float(q.y));
}

// Staged inputs i … i + 3, and i, i + 1 (`*_ln`).
fn staged4(i: u32) -> vec4<f32> {
    return vec4<f32>(red[i], red[i + 1u], red[i + 2u], red[i + 3u]);
}

fn staged2(i: u32) -> vec2<f32> {
    return vec2<f32>(red[i], red[i + 1u]);
}

// `gemv`: the row's first quad (four halves, one vec2<u32>); a column past
// N reads the last one's (and writes nothing), so that every lane runs the
// same loop.
fn quad_row(col: u32) -> u32 {
    return (p.w_off + min(col, p.n - 1u) * k_len()) / 4u;
}

// `gemv`: lane's share of a column over quads j ≡ lane (mod 32): whole
// rounds, then the rest one quad at a time (in that order, loads ahead).
fn lane_dot_quads(row: u32, lane: u32, kmax: u32, fault: u32) -> vec4<f32> {
    let quads = kmax / 4u;
    let x0 = a_row / 4u + lane;
    var acc = acc_zero();
    var acc1 = acc_zero();
    var j0 = 0u;
    for (; j0 + BLOCK <= quads; j0 += BLOCK) {
        let j = row + j0 + lane;
        let q0 = w4[j];
        let q1 = w4[j + LANES];
        let q2 = w4[j + 2u * LANES];
        let q3 = w4[j + 3u * LANES];
        let q4 = w4[j + 4u * LANES];
        let q5 = w4[j + 5u * LANES];
        let q6 = w4[j + 6u * LANES];
        let q7 = w4[j + 7u * LANES];
        let x = x0 + j0;
        acc = step4(acc, a4[x], halves(q0), fault);
        acc1 = step4(acc1, a4[x + LANES], halves(q1), fault);
        acc = step4(acc, a4[x + 2u * LANES], halves(q2), fault);
        acc1 = step4(acc1, a4[x + 3u * LANES], halves(q3), fault);
        acc = step4(acc, a4[x + 4u * LANES], halves(q4), fault);
        acc1 = step4(acc1, a4[x + 5u * LANES], halves(q5), fault);
        acc = step4(acc, a4[x + 6u * LANES], halves(q6), fault);
        acc1 = step4(acc1, a4[x + 7u * LANES], halves(q7), fault);
    }
    // The rest one quad at a time, four quads' loads in flight.
    var j = j0 + lane;
    for (; j + 3u * LANES < quads; j += 4u * LANES) {
        let q0 = w4[row + j];
        let q1 = w4[row + j + LANES];
        let q2 = w4[row + j + 2u * LANES];
        let q3 = w4[row + j + 3u * LANES];
        let x = a_row / 4u + j;
        acc = step4(acc, a4[x], halves(q0), fault);
        acc = step4(acc, a4[x + LANES], halves(q1), fault);
        acc = step4(acc, a4[x + 2u * LANES], halves(q2), fault);
        acc = step4(acc, a4[x + 3u * LANES], halves(q3), fault);
    }
    for (; j < quads; j += LANES) {
        acc = step4(acc, a4[a_row / 4u + j], halves(w4[row + j]), fault);
    }
    return add4(acc, acc1, fault);
}

// `lane_dot_quads` of the normalised inputs, products in the same order,
// staged 64 quads (256 inputs) at a time; each stage's two weights per lane
// are loaded before the inputs are staged. One staging site: CPU
// implementations pay for each.
fn lane_dot_quads_ln(row: u32, t: u32, lane: u32, kmax: u32, st: vec2<f32>, fault: u32) -> vec4<f32> {
    let quads = kmax / 4u;
    let whole = quads - quads % BLOCK;
    var acc = acc_zero();
    var acc1 = acc_zero();
    for (var j0 = 0u; j0 < quads; j0 += 2u * LANES) {
        let j = j0 + lane;
        let live0 = j < quads;
        let live1 = j + LANES < quads;
        let q0 = w4[row + select(0u, j, live0)];
        let q1 = w4[row + select(0u, j + LANES, live1)];
        stage_ln(t, 4u * j0, st);
        let x0 = staged4(4u * lane);
        let x1 = staged4(4u * (lane + LANES));
        if (j0 < whole) {
            acc = step4(acc, x0, halves(q0), fault);
            acc1 = step4(acc1, x1, halves(q1), fault);
        } else {
            if (live0) {
                acc = step4(acc, x0, halves(q0), fault);
            }
            if (live1) {
                acc = step4(acc, x1, halves(q1), fault);
            }
        }
    }
    // Every lane is done with the staged inputs before the tree reuses `red`.
    workgroupBarrier();
    return add4(acc, acc1, fault);
}

// `gemv_ln`'s first group with K ≤ 512 (`ln_preloads`): a lane's quads
// lane + 32i in q_i, loaded before the row's statistics (a quad past the
// row reads its first, never used).
struct QPre {
    q0: vec2<u32>,
    q1: vec2<u32>,
    q2: vec2<u32>,
    q3: vec2<u32>,
}

fn q_preload(row: u32, lane: u32, kmax: u32) -> QPre {
    let quads = kmax / 4u;
    return QPre(
        w4[row + select(0u, lane, lane < quads)],
        w4[row + select(0u, lane + LANES, lane + LANES < quads)],
        w4[row + select(0u, lane + 2u * LANES, lane + 2u * LANES < quads)],
        w4[row + select(0u, lane + 3u * LANES, lane + 3u * LANES < quads)],
    );
}

// Stage r of `lane_dot_quads_ln` (a partial round: quads below 256) from
// preloaded quads.
fn quads_stage(acc_in: vec4<f32>, pre: LnPre, r: u32, t: u32, quads: u32, st: vec2<f32>, q0: vec2<u32>, q1: vec2<u32>, fault: u32) -> vec4<f32> {
    var acc = acc_in;
    let lane = t % LANES;
    let j = r * 2u * LANES + lane;
    stage_ln_pre(t, r, st, pre);
    let x0 = staged4(4u * lane);
    let x1 = staged4(4u * (lane + LANES));
    if (j < quads) {
        acc = step4(acc, x0, halves(q0), fault);
    }
    if (j + LANES < quads) {
        acc = step4(acc, x1, halves(q1), fault);
    }
    return acc;
}

// `lane_dot_quads_ln` with the quads and the staged values preloaded
// (K ≤ 512: at most two stages, each a partial round): the same products
// in the same order.
fn lane_dot_quads_ln_pre(q: QPre, pre: LnPre, t: u32, kmax: u32, st: vec2<f32>, fault: u32) -> vec4<f32> {
    let quads = kmax / 4u;
    var acc = quads_stage(acc_zero(), pre, 0u, t, quads, st, q.q0, q.q1, fault);
    if (quads > 2u * LANES) {
        acc = quads_stage(acc, pre, 1u, t, quads, st, q.q2, q.q3, fault);
    }
    // Every lane is done with the staged inputs before the tree reuses `red`.
    workgroupBarrier();
    return add4(acc, acc_zero(), fault);
}

// Halves 2j and 2j + 1 of the row starting at half `r`: one word when r is
// even, else the high half of one word and the low half of the next.
fn w_pair_at(r: u32, j: u32) -> vec2<f32> {
    let i = (r >> 1u) + j;
    if ((r & 1u) == 0u) {
        return unpack2x16float(w[i]);
    }
    return unpack2x16float((w[i] >> 16u) | (w[i + 1u] << 16u));
}

// Inputs 2j and 2j + 1.
fn x_pair(j: u32) -> vec2<f32> {
    return vec2<f32>(a[a_row + 2u * j], a[a_row + 2u * j + 1u]);
}

// `gemv_any`: the row's first half, clamped as `quad_row`.
fn half_row(col: u32) -> u32 {
    return p.w_off + min(col, p.n - 1u) * k_len();
}

// `gemv_any`: lane's share of a column over pairs j ≡ lane (mod 32): whole
// rounds, the rest one pair at a time, and lane 0 adds the last half of an
// odd K.
fn lane_dot_pairs(r: u32, lane: u32, kmax: u32, fault: u32) -> vec4<f32> {
    let pairs = kmax / 2u;
    var acc = acc_zero();
    var acc1 = acc_zero();
    var j0 = 0u;
    for (; j0 + BLOCK <= pairs; j0 += BLOCK) {
        let j = j0 + lane;
        let v0 = w_pair_at(r, j);
        let v1 = w_pair_at(r, j + LANES);
        let v2 = w_pair_at(r, j + 2u * LANES);
        let v3 = w_pair_at(r, j + 3u * LANES);
        let v4 = w_pair_at(r, j + 4u * LANES);
        let v5 = w_pair_at(r, j + 5u * LANES);
        let v6 = w_pair_at(r, j + 6u * LANES);
        let v7 = w_pair_at(r, j + 7u * LANES);
        acc = step4(acc, vec4<f32>(x_pair(j), x_pair(j + LANES)), vec4<f32>(v0, v1), fault);
        acc1 = step4(acc1, vec4<f32>(x_pair(j + 2u * LANES), x_pair(j + 3u * LANES)), vec4<f32>(v2, v3), fault);
        acc = step4(acc, vec4<f32>(x_pair(j + 4u * LANES), x_pair(j + 5u * LANES)), vec4<f32>(v4, v5), fault);
        acc1 = step4(acc1, vec4<f32>(x_pair(j + 6u * LANES), x_pair(j + 7u * LANES)), vec4<f32>(v6, v7), fault);
    }
    for (var j = j0 + lane; j < pairs; j += LANES) {
        acc = step4(acc, vec4<f32>(x_pair(j), 0.0, 0.0), vec4<f32>(w_pair_at(r, j), 0.0, 0.0), fault);
    }
    if ((kmax & 1u) == 1u && lane == 0u) {
        let k = kmax - 1u;
        let x = vec4<f32>(0.0, 0.0, a[a_row + k], 0.0);
        acc = step4(acc, x, vec4<f32>(0.0, 0.0, w_at(r + k), 0.0), fault);
    }
    return add4(acc, acc1, fault);
}

// `lane_dot_pairs` of the normalised inputs, products in the same order,
// staged 128 pairs (256 inputs) at a time as `lane_dot_quads_ln` does.
fn lane_dot_pairs_ln(r: u32, t: u32, lane: u32, kmax: u32, st: vec2<f32>, fault: u32) -> vec4<f32> {
    let pairs = kmax / 2u;
    let whole = pairs - pairs % BLOCK;
    var acc = acc_zero();
    var acc1 = acc_zero();
    for (var j0 = 0u; 2u * j0 < kmax; j0 += 4u * LANES) {
        let j = j0 + lane;
        let live = vec4<bool>(j < pairs, j + LANES < pairs, j + 2u * LANES < pairs, j + 3u * LANES < pairs);
        let v0 = w_pair_at(r, select(0u, j, live.x));
        let v1 = w_pair_at(r, select(0u, j + LANES, live.y));
        let v2 = w_pair_at(r, select(0u, j + 2u * LANES, live.z));
        let v3 = w_pair_at(r, select(0u, j + 3u * LANES, live.w));
        stage_ln(t, 2u * j0, st);
        let x0 = staged2(2u * lane);
        let x1 = staged2(2u * (lane + LANES));
        let x2 = staged2(2u * (lane + 2u * LANES));
        let x3 = staged2(2u * (lane + 3u * LANES));
        if (j0 < whole) {
            acc = step4(acc, vec4<f32>(x0, x1), vec4<f32>(v0, v1), fault);
            acc1 = step4(acc1, vec4<f32>(x2, x3), vec4<f32>(v2, v3), fault);
        } else {
            let z = vec2<f32>(0.0);
            if (live.x) {
                acc = step4(acc, vec4<f32>(x0, z), vec4<f32>(v0, z), fault);
            }
            if (live.y) {
                acc = step4(acc, vec4<f32>(x1, z), vec4<f32>(v1, z), fault);
            }
            if (live.z) {
                acc = step4(acc, vec4<f32>(x2, z), vec4<f32>(v2, z), fault);
            }
            if (live.w) {
                acc = step4(acc, vec4<f32>(x3, z), vec4<f32>(v3, z), fault);
            }
            // The last half of an odd K, in the last stage.
            if ((kmax & 1u) == 1u && lane == 0u && kmax <= 2u * j0 + 8u * LANES) {
                let k = kmax - 1u;
                let x = vec4<f32>(0.0, 0.0, red[k - 2u * j0], 0.0);
                acc = step4(acc, x, vec4<f32>(0.0, 0.0, w_at(r + k), 0.0), fault);
            }
        }
    }
    // Every lane is done with the staged inputs before the tree reuses `red`.
    workgroupBarrier();
    return add4(acc, acc1, fault);
}

fn gemv_column(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>) -> u32 {
    return (wg.y * nwg.x + wg.x) * COLS + lid.y;
}

// The column of group g of the workgroup's `groups` (the `*_ln` GEMVs).
fn group_column(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, g: u32, groups: u32) -> u32 {
    return ((wg.y * nwg.x + wg.x) * groups + g) * COLS + lid.y;
}

// The lanes' addition (lanes_wg.wgsl, lanes_sg.wgsl): rounded to f16
// under the f16-acc fault.
fn lane_add(x: f32, y: f32) -> f32 {
    return add_f(x, y, FAULT);
}

// Adds the 32 lanes of each column (`lanes_sum`: a fixed tree) and writes
// the columns.
fn gemv_finish(lid: vec3<u32>, col: u32, acc: vec4<f32>, fault: u32, e: Epi) {
    let s = lanes_sum(lid, add_f(add_f(acc.x, acc.y, fault), add_f(acc.z, acc.w, fault), fault));
    if (lid.x == 0u && col < p.n) {
        finish_col_with(col, s, e);
    }
}

// The entry points' bodies; `fault` is a constant at each.
fn gemv_quads(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    set_row(wg);
    let col = gemv_column(wg, nwg, lid);
    let e = epilogue_loads(col);
    gemv_finish(lid, col, lane_dot_quads(quad_row(col), lid.x, k_end(fault), fault), fault, e);
}

// The row's LayerNorm statistics once, then each group of 8 columns (the
// `*_ln` GEMVs); the lanes' tree reads `red` before the next group stages
// there.
fn gemv_quads_ln(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    set_row(wg);
    let t = lid.y * LANES + lid.x;
    let groups = ln_groups();
    let kmax = k_end(fault);
    // Loads ahead of the statistics (used where `ln_preloads`).
    let ln = ln_preload(t);
    let col0 = group_column(wg, nwg, lid, 0u, groups);
    let q = q_preload(quad_row(col0), lid.x, kmax);
    let e0 = epilogue_loads(col0);
    let st = ln_stats(t);
    for (var g = 0u; g < groups; g++) {
        let col = group_column(wg, nwg, lid, g, groups);
        var acc = acc_zero();
        if (g == 0u && ln_preloads()) {
            acc = lane_dot_quads_ln_pre(q, ln, t, kmax, st, fault);
        } else {
            acc = lane_dot_quads_ln(quad_row(col), t, lid.x, kmax, st, fault);
        }
        var e = e0;
        if (g > 0u) {
            e = epilogue_loads(col);
        }
        gemv_finish(lid, col, acc, fault, e);
        workgroupBarrier();
    }
}

fn gemv_pairs(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    set_row(wg);
    let col = gemv_column(wg, nwg, lid);
    let e = epilogue_loads(col);
    gemv_finish(lid, col, lane_dot_pairs(half_row(col), lid.x, k_end(fault), fault), fault, e);
}

fn gemv_pairs_ln(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    set_row(wg);
    let t = lid.y * LANES + lid.x;
    let st = ln_stats(t);
    let groups = ln_groups();
    for (var g = 0u; g < groups; g++) {
        let col = group_column(wg, nwg, lid, g, groups);
        let acc = lane_dot_pairs_ln(half_row(col), t, lid.x, k_end(fault), st, fault);
        gemv_finish(lid, col, acc, fault, epilogue_loads(col));
        workgroupBarrier();
    }
}

@compute @workgroup_size(32, 8)
fn gemv(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_quads(wg, nwg, lid, FAULT);
}

@compute @workgroup_size(32, 8)
fn gemv_ln(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_quads_ln(wg, nwg, lid, FAULT);
}

@compute @workgroup_size(32, 8)
fn gemv_any(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_pairs(wg, nwg, lid, FAULT);
}

@compute @workgroup_size(32, 8)
fn gemv_any_ln(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_pairs_ln(wg, nwg, lid, FAULT);
}

// Columns per workgroup of `gemv_cols`.
const COL_GROUP: u32 = 64u;

// `gemv_cols`: the whole dot product of the row starting at half `r`, two
// pairs per step, then a last pair and the last half of an odd K.
fn col_dot(r: u32, kmax: u32, fault: u32) -> f32 {
    let pairs = kmax / 2u;
    var acc = acc_zero();
    var j = 0u;
    for (; j + 2u <= pairs; j += 2u) {
        let x = vec4<f32>(x_pair(j), x_pair(j + 1u));
        acc = step4(acc, x, vec4<f32>(w_pair_at(r, j), w_pair_at(r, j + 1u)), fault);
    }
    if (j < pairs) {
        acc = step4(acc, vec4<f32>(x_pair(j), 0.0, 0.0), vec4<f32>(w_pair_at(r, j), 0.0, 0.0), fault);
    }
    if ((kmax & 1u) == 1u) {
        let k = kmax - 1u;
        acc = step4(acc, vec4<f32>(0.0, 0.0, a[a_row + k], 0.0), vec4<f32>(0.0, 0.0, w_at(r + k), 0.0), fault);
    }
    return add_f(add_f(acc.x, acc.y, fault), add_f(acc.z, acc.w, fault), fault);
}

fn gemv_cols_body(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    set_row(wg);
    let col = (wg.y * nwg.x + wg.x) * COL_GROUP + lid.x;
    if (col >= p.n) {
        return;
    }
    finish_col(col, col_dot(p.w_off + col * k_len(), k_end(fault), fault));
}

@compute @workgroup_size(64)
fn gemv_cols(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_cols_body(wg, nwg, lid, FAULT);
}
