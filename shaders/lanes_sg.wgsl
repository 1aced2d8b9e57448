// The GEMVs' sum over a column's 32 lanes with subgroup shuffles (the
// subgroups fast path, gate/subgroups.rs): lanes_wg.wgsl's tree — pairs
// 16 apart added first, then 8, … 1, with the kernel's `lane_add` — so the
// same bits in lane 0, without the barrier where subgroups are 32 lanes or
// wider. `p.sg` is the adapter's one subgroup size; levels at least that
// far apart (CPU implementations run 4, 8 or 16 lanes) cross subgroups and
// go through workgroup memory first, the rest are shuffles: lane j adds
// lane j + s's partial sum.
//
// The shuffles assume that each column's 32 lanes (local invocations
// 32y … 32y + 31) fill their subgroups in order. Each shuffle also moves
// the lane's invocation index: where it does not bring lane j + s's, the
// sum becomes NaN, so a device laid out otherwise fails the gate instead
// of decoding wrong bits quietly. naga 30 has no `enable subgroups;` (it
// refuses the directive): a device with wgpu's SUBGROUP feature compiles
// the built-ins as they are.

fn lanes_sum(lid: vec3<u32>, v: f32) -> f32 {
    let b = lid.y * LANES;
    let sg = max(p.sg, 1u);
    var x = v;
    var s = LANES / 2u;
    if (sg < LANES) {
        red[b + lid.x] = v;
        workgroupBarrier();
        for (; s >= sg; s = s / 2u) {
            if (lid.x < s) {
                red[b + lid.x] = lane_add(red[b + lid.x], red[b + lid.x + s]);
            }
            workgroupBarrier();
        }
        x = red[b + lid.x];
    }
    let t = b + lid.x;
    for (; s > 0u; s = s / 2u) {
        x = lane_add(x, subgroupShuffleDown(x, s));
        if (subgroupShuffleDown(t, s) != t + s) {
            x = bitcast<f32>(0x7fc00000u);
        }
    }
    return x;
}
