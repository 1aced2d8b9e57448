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
    // a row's LayerNorm statistics.
    groups: u32,
    // The subgroup size of the `lanes_sg.wgsl` form.
    sg: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

// The lanes' dot products are in gemv_lanes.wgsl, appended.

@compute @workgroup_size(32, 8)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    set_row(wg);
    let col = column(wg, nwg, lid);
    finish_lanes(lid, col, lane_dot(row_of(col), lid.x));
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
    let st = ln_stats(t);
    let groups = max(p.groups, 1u);
    for (var g = 0u; g < groups; g++) {
        let col = group_column(wg, nwg, lid, g, groups);
        finish_lanes(lid, col, lane_dot_ln(row_of(col), t, lid.x, st));
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
    let row = p.b_off + col * p.k;
    var acc = vec4<f32>(0.0);
    var k = 0u;
    for (; k + 4u <= p.k; k += 4u) {
        let o = a_row + k;
        let x = vec4<f32>(a[o], a[o + 1u], a[o + 2u], a[o + 3u]);
        let v = vec4<f32>(b[row + k], b[row + k + 1u], b[row + k + 2u], b[row + k + 3u]);
        acc = fma(x, v, acc);
    }
    for (; k < p.k; k += 1u) {
        acc.x = fma(a[a_row + k], b[row + k], acc.x);
    }
    finish_col(col, (acc.x + acc.y) + (acc.z + acc.w));
}
