// The LayerNorm's entry points, appended to layernorm.wgsl and
// layernorm_residual.wgsl: a first pass summing the row's inputs (the
// including kernel's `ln_input(row, col, key)`, with `ln_key()` computed
// once a row), then the mean, the centred variance (a second pass over
// x), y = (x − μ)·σ̂ · w + b and the row's μ and σ̂. The including kernel
// also provides `p` (n, c and the offsets of layernorm.wgsl's Params),
// `x`, `y`, `mean`, `rstd`, EPS and `ln_weight(i)`, `ln_bias(i)` (channel
// i of w and b), and copy16.wgsl's `copy16_write` (y's f16 copy) or
// copy16_none.wgsl's; each invocation reads back
// only the elements of x its own first pass read (or wrote).

// A workgroup of LN_THREADS invocations per row; each sums a strided
// slice, then ln_sum.wgsl's fixed tree combines the slices.
@compute @workgroup_size(128)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = wg.y * nwg.x + wg.x;
    if (row >= p.n) {
        return;
    }
    let key = ln_key();
    var s = 0.0;
    for (var i = lid; i < p.c; i += LN_THREADS) {
        s += ln_input(row, i, key);
    }
    ln_finish(row, lid, s);
}

// The same per row for CPU implementations of WebGPU (the kernel layout
// `Cpu`): one invocation per row summing its channels in order, no
// workgroup memory, no barrier. Other sums' order than the tree's, so the
// results differ from `forward`'s in the last bits.
@compute @workgroup_size(64)
fn forward_serial(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = (wg.y * nwg.x + wg.x) * 64u + lid;
    if (row >= p.n) {
        return;
    }
    let key = ln_key();
    var s = 0.0;
    for (var i = 0u; i < p.c; i++) {
        s += ln_input(row, i, key);
    }
    ln_finish_serial(row, s);
}

// A workgroup of LN_THREADS invocations per row (ln_sum.wgsl's tree).
fn ln_finish(row: u32, lid: u32, s: f32) {
    let x0 = p.x_off + row * p.c;
    let mu = ln_sum(lid, s, 0u) / f32(p.c);
    var q = 0.0;
    for (var i = lid; i < p.c; i += LN_THREADS) {
        let d = x[x0 + i] - mu;
        q += d * d;
    }
    let variance = ln_sum(lid, q, LN_REGION) / f32(p.c);
    let rs = 1.0 / sqrt(variance + EPS);
    let y0 = p.y_off + row * p.c;
    for (var i = lid; i < p.c; i += LN_THREADS) {
        let v = (x[x0 + i] - mu) * rs * ln_weight(i) + ln_bias(i);
        y[y0 + i] = v;
        copy16_write(row, i, p.c, v, 1.0);
    }
    if (lid == 0u) {
        mean[p.mean_off + row] = mu;
        rstd[p.rstd_off + row] = rs;
    }
}

// One invocation per row (CPU implementations), its sums in channel order.
fn ln_finish_serial(row: u32, s: f32) {
    let x0 = p.x_off + row * p.c;
    let mu = s / f32(p.c);
    var q = 0.0;
    for (var i = 0u; i < p.c; i++) {
        let d = x[x0 + i] - mu;
        q += d * d;
    }
    let rs = 1.0 / sqrt(q / f32(p.c) + EPS);
    let y0 = p.y_off + row * p.c;
    for (var i = 0u; i < p.c; i++) {
        let v = (x[x0 + i] - mu) * rs * ln_weight(i) + ln_bias(i);
        y[y0 + i] = v;
        copy16_write(row, i, p.c, v, 1.0);
    }
    mean[p.mean_off + row] = mu;
    rstd[p.rstd_off + row] = rs;
}
