// Exact GELU, element-wise:
//   forward   y  = x·Φ(x) = ½x(1 + erf(x/√2))
//   backward  dx (+)= dy·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)
// `gelu_f32` and `gelu_grad_f32` are in erf.wgsl, and the element-wise
// kernels' layout in elementwise.wgsl, both appended to this source.

struct Params {
    n: u32,
    accumulate: u32,   // backward: 1 adds into dx, 0 overwrites it
    x_off: u32,
    y_off: u32,        // forward output
    dy_off: u32,       // backward: upstream gradient
    dx_off: u32,       // backward output
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<storage, read> dy: array<f32>;
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;

@compute @workgroup_size(256)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i0 = first_index(wg, nwg, lid);
    var v: array<f32, MAX_PER_INVOCATION>;
    for (var j = 0u; j < PER_INVOCATION; j++) {
        v[j] = x[p.x_off + clamped(i0 + j * EW_WG, p.n)];
    }
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = i0 + j * EW_WG;
        if (i < p.n) {
            y[p.y_off + i] = gelu_f32(v[j]);
        }
    }
}

@compute @workgroup_size(256)
fn backward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i0 = first_index(wg, nwg, lid);
    var xs: array<f32, MAX_PER_INVOCATION>;
    var ds: array<f32, MAX_PER_INVOCATION>;
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = clamped(i0 + j * EW_WG, p.n);
        xs[j] = x[p.x_off + i];
        ds[j] = dy[p.dy_off + i];
    }
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = i0 + j * EW_WG;
        if (i < p.n) {
            var d = ds[j] * gelu_grad_f32(xs[j]);
            let o = p.dx_off + i;
            if (p.accumulate != 0u) {
                d = dx[o] + d;
            }
            dx[o] = d;
        }
    }
}
