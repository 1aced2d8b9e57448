// The GEMVs' sum over a column's 32 lanes through workgroup memory (the
// kernels' default; lanes_sg.wgsl is the subgroup form with the same
// bits). `lane_add` is the kernel's addition (gemv.wgsl: f32;
// gemv_f16w.wgsl: rounded to f16 under the f16-acc fault). Appended to
// the GEMV kernels' sources after gemv_row.wgsl (`red`, LANES).

// The lanes' tree over the 32 values from red[b], pairs 16 apart added
// first, then 8, … 1, in one invocation: one barrier instead of six.
fn lane_tree8(b: u32, j: u32) -> f32 {
    let lo = lane_add(red[b + j], red[b + j + 16u]);
    return lane_add(lo, lane_add(red[b + j + 8u], red[b + j + 24u]));
}

fn lane_tree4(b: u32, j: u32) -> f32 {
    return lane_add(lane_tree8(b, j), lane_tree8(b, j + 4u));
}

fn lane_tree(b: u32) -> f32 {
    let lo = lane_add(lane_tree4(b, 0u), lane_tree4(b, 2u));
    return lane_add(lo, lane_add(lane_tree4(b, 1u), lane_tree4(b, 3u)));
}

// The sum of `v` over the 32 lanes of column lid.y, in lane 0 (the others
// return 0). Every invocation calls it (a barrier).
fn lanes_sum(lid: vec3<u32>, v: f32) -> f32 {
    let b = lid.y * LANES;
    red[b + lid.x] = v;
    workgroupBarrier();
    var s = 0.0;
    if (lid.x == 0u) {
        s = lane_tree(b);
    }
    return s;
}
