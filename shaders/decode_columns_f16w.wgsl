// decode_columns.wgsl's dot products with f16-stored weights:
// gemv_f16w.wgsl's `lane_dot_quads_ln` order (W's rows and K multiples of
// four halves) for four columns at once, with its FAULT variants. Appended
// after decode_columns.wgsl (`xn`) to the f16-storage kernels' source
// (`w4`, `halves`, `step4`, `add4`, `add_f`, `k_end`, LANES, BLOCK).

// Normalised inputs 4j … 4j + 3.
fn xq(j: u32) -> vec4<f32> {
    return vec4<f32>(xn[4u * j], xn[4u * j + 1u], xn[4u * j + 2u], xn[4u * j + 3u]);
}

// The column's sum of its four components, as `gemv_finish` adds them.
fn quad_total(a: vec4<f32>) -> f32 {
    return add_f(add_f(a.x, a.y, FAULT), add_f(a.z, a.w, FAULT), FAULT);
}

// Lane `lane`'s shares of the four columns `c4` of W, each summed as
// `lane_dot_quads_ln` sums one: stages of 64 quads, quads j and j + 32 of
// each; in whole rounds of 256 quads into two accumulators, past them
// into the first; the four columns' loads together.
fn lane_dots(c4: vec4<u32>, lane: u32) -> vec4<f32> {
    let r = (vec4<u32>(p.w_off) + c4 * p.k) / 4u;
    let quads = k_end(FAULT) / 4u;
    let whole = quads - quads % BLOCK;
    var a0 = vec4<f32>(0.0);
    var a1 = vec4<f32>(0.0);
    var a2 = vec4<f32>(0.0);
    var a3 = vec4<f32>(0.0);
    var b0 = vec4<f32>(0.0);
    var b1 = vec4<f32>(0.0);
    var b2 = vec4<f32>(0.0);
    var b3 = vec4<f32>(0.0);
    for (var j0 = 0u; j0 < quads; j0 += 2u * LANES) {
        let j = j0 + lane;
        let live0 = j < quads;
        let live1 = j + LANES < quads;
        let i0 = select(0u, j, live0);
        let i1 = select(0u, j + LANES, live1);
        let w0 = halves(w4[r.x + i0]);
        let w1 = halves(w4[r.y + i0]);
        let w2 = halves(w4[r.z + i0]);
        let w3 = halves(w4[r.w + i0]);
        let v0 = halves(w4[r.x + i1]);
        let v1 = halves(w4[r.y + i1]);
        let v2 = halves(w4[r.z + i1]);
        let v3 = halves(w4[r.w + i1]);
        let x0 = xq(i0);
        let x1 = xq(i1);
        if (j0 < whole) {
            a0 = step4(a0, x0, w0, FAULT);
            a1 = step4(a1, x0, w1, FAULT);
            a2 = step4(a2, x0, w2, FAULT);
            a3 = step4(a3, x0, w3, FAULT);
            b0 = step4(b0, x1, v0, FAULT);
            b1 = step4(b1, x1, v1, FAULT);
            b2 = step4(b2, x1, v2, FAULT);
            b3 = step4(b3, x1, v3, FAULT);
        } else {
            if (live0) {
                a0 = step4(a0, x0, w0, FAULT);
                a1 = step4(a1, x0, w1, FAULT);
                a2 = step4(a2, x0, w2, FAULT);
                a3 = step4(a3, x0, w3, FAULT);
            }
            if (live1) {
                a0 = step4(a0, x1, v0, FAULT);
                a1 = step4(a1, x1, v1, FAULT);
                a2 = step4(a2, x1, v2, FAULT);
                a3 = step4(a3, x1, v3, FAULT);
            }
        }
    }
    return vec4<f32>(
        quad_total(add4(a0, b0, FAULT)),
        quad_total(add4(a1, b1, FAULT)),
        quad_total(add4(a2, b2, FAULT)),
        quad_total(add4(a3, b3, FAULT)),
    );
}
