// Residual connections, element-wise:
//   `forward`     y = a + b
//   `accumulate`  acc += b   (the backward adds a branch's gradient into the
//                             stream's; `acc` and `b` must be distinct buffers)

struct Params {
    n: u32,
    a_off: u32,   // a, or acc for `accumulate`
    b_off: u32,
    y_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> acc: array<f32>;

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
    if (i < p.n) {
        y[p.y_off + i] = a[p.a_off + i] + b[p.b_off + i];
    }
}

@compute @workgroup_size(256)
fn accumulate(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = flat_index(wg, nwg, lid);
    if (i < p.n) {
        acc[p.a_off + i] += b[p.b_off + i];
    }
}
