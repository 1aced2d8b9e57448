// decode_columns.wgsl's dot products with f32 weights: gemv.wgsl's
// `lane_dot_ln` order for four columns at once. Appended after
// decode_columns.wgsl (`xn`) to gemv.wgsl's source (`b`, `ws`, LANES,
// BLOCK).

// Normalised inputs k + 32i for i < 4.
fn xn4(k: u32) -> vec4<f32> {
    return vec4<f32>(xn[k], xn[k + LANES], xn[k + 2u * LANES], xn[k + 3u * LANES]);
}

// Lane `lane`'s shares of the four columns `c4` of W, each summed as
// `lane_dot_ln` sums one: whole rounds of 256 inputs into two vec4
// accumulators, added, then the rest into the first component four inputs
// and then one at a time, and the components last. The four columns'
// loads go together.
fn lane_dots(c4: vec4<u32>, lane: u32) -> vec4<f32> {
    let r = vec4<u32>(p.b_off) + c4 * p.k;
    let whole = p.k - p.k % BLOCK;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var b0 = vec4<f32>(0.0);
    var b1 = vec4<f32>(0.0);
    var b2 = vec4<f32>(0.0);
    var b3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < whole; k0 += BLOCK) {
        let k = k0 + lane;
        let h = k + 4u * LANES;
        let w0 = ws(r.x, k);
        let w1 = ws(r.y, k);
        let w2 = ws(r.z, k);
        let w3 = ws(r.w, k);
        let v0 = ws(r.x, h);
        let v1 = ws(r.y, h);
        let v2 = ws(r.z, h);
        let v3 = ws(r.w, h);
        let x0 = xn4(k);
        let x1 = xn4(h);
        a0 = fma(x0, w0, a0);
        a1 = fma(x0, w1, a1);
        a2 = fma(x0, w2, a2);
        a3 = fma(x0, w3, a3);
        b0 = fma(x1, v0, b0);
        b1 = fma(x1, v1, b1);
        b2 = fma(x1, v2, b2);
        b3 = fma(x1, v3, b3);
    }
    a0 += b0;
    a1 += b1;
    a2 += b2;
    a3 += b3;
    // The four columns' first components, side by side.
    var t = vec4<f32>(a0.x, a1.x, a2.x, a3.x);
    var i = whole + lane;
    for (; i + 3u * LANES < p.k; i += 4u * LANES) {
        let w0 = ws(r.x, i);
        let w1 = ws(r.y, i);
        let w2 = ws(r.z, i);
        let w3 = ws(r.w, i);
        let x = xn4(i);
        t = fma(vec4<f32>(x.x), vec4<f32>(w0.x, w1.x, w2.x, w3.x), t);
        t = fma(vec4<f32>(x.y), vec4<f32>(w0.y, w1.y, w2.y, w3.y), t);
        t = fma(vec4<f32>(x.z), vec4<f32>(w0.z, w1.z, w2.z, w3.z), t);
        t = fma(vec4<f32>(x.w), vec4<f32>(w0.w, w1.w, w2.w, w3.w), t);
    }
    for (; i < p.k; i += LANES) {
        t = fma(vec4<f32>(xn[i]), vec4<f32>(b[r.x + i], b[r.y + i], b[r.z + i], b[r.w + i]), t);
    }
    return vec4<f32>(
        (t.x + a0.y) + (a0.z + a0.w),
        (t.y + a1.y) + (a1.z + a1.w),
        (t.z + a2.y) + (a2.z + a2.w),
        (t.w + a3.y) + (a3.z + a3.w),
    );
}
