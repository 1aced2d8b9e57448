// Exact GELU, element-wise:
//   forward   y  = x·Φ(x) = ½x(1 + erf(x/√2))
//   backward  dx (+)= dy·(Φ(x) + x·φ(x)),  φ(x) = e^{−x²/2}/√(2π)
// `gelu_f32` and `gelu_grad_f32` are in erf.wgsl, appended to this source.

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

const WG: u32 = 256u;

fn flat_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * WG + lid;
}

@compute @workgroup_size(256)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wg, nwg, lid);
    if (i >= p.n) {
        return;
    }
    let v = x[p.x_off + i];
    y[p.y_off + i] = gelu_f32(v);
}

@compute @workgroup_size(256)
fn backward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wg, nwg, lid);
    if (i >= p.n) {
        return;
    }
    var d = dy[p.dy_off + i] * gelu_grad_f32(x[p.x_off + i]);
    let o = p.dx_off + i;
    if (p.accumulate != 0u) {
        d = dx[o] + d;
    }
    dx[o] = d;
}
