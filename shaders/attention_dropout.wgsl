// Dropout on the attention weights, appended (after dropout_mask.wgsl) to
// the three attention kernels, whose Params carry `nh`, `t`, `threshold`
// and `drop_scale`.

// The dropout factor of weight (query t, key s) of head h, sequence b.
fn drop1(key: u32, b: u32, h: u32, t: u32, s: u32) -> f32 {
    let i = ((b * p.nh + h) * p.t + t) * p.t + s;
    return select(0.0, p.drop_scale, mix32(key ^ mix32(i)) >= p.threshold);
}

// The factors of weights (ts[i], ss[i]) (queries, keys): all 1 without
// dropout.
fn drop4(b: u32, h: u32, ts: vec4<u32>, ss: vec4<u32>) -> vec4<f32> {
    if (p.threshold == 0u) {
        return vec4<f32>(1.0);
    }
    let key = drop_key();
    return vec4<f32>(
        drop1(key, b, h, ts.x, ss.x),
        drop1(key, b, h, ts.y, ss.y),
        drop1(key, b, h, ts.z, ss.z),
        drop1(key, b, h, ts.w, ss.w),
    );
}
