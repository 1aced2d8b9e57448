// reduce_wg.wgsl's reductions with subgroup shuffles (the subgroups fast
// path, gate/subgroups.rs): the sum adds the same pairs in the same order
// — pairs 128 apart first, then 64, … 1 — so the same bits, with three
// barriers instead of ten where subgroups hold 32 lanes; the max is the
// same maximum (any order gives it). The first 32 threads add levels 128,
// 64 and 32 from workgroup memory at once; levels 16 … ap.sg apart (the
// narrower subgroups of CPU implementations) go through workgroup memory
// one at a time; the rest are shuffles in the first subgroup, lane j
// adding lane j + s. Each shuffle also moves the thread's index: where it
// does not bring thread j + s's (subgroups laid out otherwise), the
// result is NaN, so the gate fails rather than the output going quietly
// wrong. Appended to attention_decode.wgsl (`ap.sg`, `WG` = 256, `red`).

fn reduce_op(a: f32, b: f32, is_max: bool) -> f32 {
    if (is_max) {
        return max(a, b);
    }
    return a + b;
}

// Thread j's node at level 32: pairs 128 apart, then 64, then 32.
fn reduce_leaves(j: u32, is_max: bool) -> f32 {
    let a = reduce_op(reduce_op(red[j], red[j + 128u], is_max), reduce_op(red[j + 64u], red[j + 192u], is_max), is_max);
    let b = reduce_op(reduce_op(red[j + 32u], red[j + 160u], is_max), reduce_op(red[j + 96u], red[j + 224u], is_max), is_max);
    return reduce_op(a, b, is_max);
}

fn reduce_sg(tid: u32, v: f32, is_max: bool) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    var x = 0.0;
    if (tid < 32u) {
        x = reduce_leaves(tid, is_max);
    }
    let sg = max(ap.sg, 1u);
    var s = 16u;
    if (sg < 32u) {
        workgroupBarrier();
        if (tid < 32u) {
            red[tid] = x;
        }
        workgroupBarrier();
        for (; s >= sg; s = s / 2u) {
            if (tid < s) {
                red[tid] = reduce_op(red[tid], red[tid + s], is_max);
            }
            workgroupBarrier();
        }
        x = red[tid];
    }
    for (; s > 0u; s = s / 2u) {
        x = reduce_op(x, subgroupShuffleDown(x, s), is_max);
        if (subgroupShuffleDown(tid, s) != tid + s) {
            x = bitcast<f32>(0x7fc00000u);
        }
    }
    // Only thread 0 reads red[0] above: no barrier before it writes there.
    if (tid == 0u) {
        red[0] = x;
    }
    workgroupBarrier();
    let total = red[0];
    workgroupBarrier();
    return total;
}

fn reduce_max(tid: u32, v: f32) -> f32 {
    return reduce_sg(tid, v, true);
}

fn reduce_sum(tid: u32, v: f32) -> f32 {
    return reduce_sg(tid, v, false);
}
