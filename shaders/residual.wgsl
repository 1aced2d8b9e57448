// Residual connections, element-wise:
//   `forward`     y = a + b
//   `accumulate`  acc += b   (the backward adds a branch's gradient into the
//                             stream's; `acc` and `b` must be distinct buffers)
// in elementwise.wgsl's layout (appended).

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

@compute @workgroup_size(256)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i0 = first_index(wg, nwg, lid);
    var s: array<f32, MAX_PER_INVOCATION>;
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = clamped(i0 + j * EW_WG, p.n);
        s[j] = a[p.a_off + i] + b[p.b_off + i];
    }
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = i0 + j * EW_WG;
        if (i < p.n) {
            y[p.y_off + i] = s[j];
        }
    }
}

@compute @workgroup_size(256)
fn accumulate(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i0 = first_index(wg, nwg, lid);
    var s: array<f32, MAX_PER_INVOCATION>;
    for (var j = 0u; j < PER_INVOCATION; j++) {
        s[j] = b[p.b_off + clamped(i0 + j * EW_WG, p.n)];
    }
    // `acc` only where this invocation owns the element.
    for (var j = 0u; j < PER_INVOCATION; j++) {
        let i = i0 + j * EW_WG;
        if (i < p.n) {
            acc[p.a_off + i] += s[j];
        }
    }
}
