// decode_persistent.wgsl's `finish_round` with subgroup shuffles (the
// subgroups fast path): a column's 8 lanes (invocations 8g … 8g + 7, which
// fill their subgroup in order where subgroups hold 8 or more lanes, as
// lanes_sg.wgsl assumes) added by shuffles down 1, 2, 4 — in lane 0 the
// workgroup-memory form's tree ((p0 + p1) + (p2 + p3)) + ((p4 + p5) +
// (p6 + p7)), so the same bits — and written by lane 0; no barrier. Each
// shuffle also moves the invocation index: where it does not bring
// t + s's, the sum becomes NaN (a device laid out otherwise fails its
// tests and gate instead of decoding wrong bits quietly).

fn down(x: f32, t: u32, s: u32) -> f32 {
    let y = subgroupShuffleDown(x, s);
    if (subgroupShuffleDown(t, s) != t + s) {
        return bitcast<f32>(0x7fc00000u);
    }
    return y;
}

fn lanes8(v: f32, t: u32) -> f32 {
    let a = v + down(v, t, 1u);
    let b = a + down(a, t, 2u);
    return b + down(b, t, 4u);
}

fn finish_round(t: u32, g: u32, lane: u32, r0: u32, a: Acc, n: u32, b_off: u32, gelu_on: bool, dst: u32) {
    let s0 = lanes8(lane_sum(a.a0), t);
    let s1 = lanes8(lane_sum(a.a1), t);
    let s2 = lanes8(lane_sum(a.a2), t);
    let s3 = lanes8(lane_sum(a.a3), t);
    if (lane == 0u) {
        let c0 = r0 + g;
        if (c0 < n) {
            put_col(c0, s0, b_off, gelu_on, dst);
        }
        if (c0 + 32u < n) {
            put_col(c0 + 32u, s1, b_off, gelu_on, dst);
        }
        if (c0 + 64u < n) {
            put_col(c0 + 64u, s2, b_off, gelu_on, dst);
        }
        if (c0 + 96u < n) {
            put_col(c0 + 96u, s3, b_off, gelu_on, dst);
        }
    }
}
