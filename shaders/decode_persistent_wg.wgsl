// decode_persistent.wgsl's `finish_round` through workgroup memory: each
// lane's four partial sums into this round's half of part_sh (rounds
// alternate halves, so the next round's writes need no second barrier),
// one barrier, then thread t < 128 adds column t's 8 lanes as a fixed
// tree and writes it.

fn finish_round(t: u32, g: u32, lane: u32, r0: u32, a: Acc, n: u32, b_off: u32, gelu_on: bool, dst: u32) {
    let pb = ((r0 / ROUND) % 2u) * ROUND * LANES;
    part_sh[pb + g * LANES + lane] = lane_sum(a.a0);
    part_sh[pb + (g + 32u) * LANES + lane] = lane_sum(a.a1);
    part_sh[pb + (g + 64u) * LANES + lane] = lane_sum(a.a2);
    part_sh[pb + (g + 96u) * LANES + lane] = lane_sum(a.a3);
    workgroupBarrier();
    let col = r0 + t;
    if (t < ROUND && col < n) {
        let q = pb + t * LANES;
        let v = ((part_sh[q] + part_sh[q + 1u]) + (part_sh[q + 2u] + part_sh[q + 3u]))
            + ((part_sh[q + 4u] + part_sh[q + 5u]) + (part_sh[q + 6u] + part_sh[q + 7u]));
        put_col(col, v, b_off, gelu_on, dst);
    }
}
