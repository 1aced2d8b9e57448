// The decode attention's reductions over its 256 threads (`WG`) through
// workgroup memory (`red`): the max, and the sum in a fixed tree — pairs
// 128 apart added first, then 64, … 1. The result in every thread; every
// thread calls them (barriers). reduce_sg.wgsl is the subgroup form with
// the same bits. Appended to attention_decode.wgsl.

fn reduce_max(tid: u32, v: f32) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red[tid] = max(red[tid], red[tid + s]);
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}

fn reduce_sum(tid: u32, v: f32) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red[tid] += red[tid + s];
        }
        workgroupBarrier();
    }
    let total = red[0];
    workgroupBarrier();
    return total;
}
