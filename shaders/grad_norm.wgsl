// Global L2 norm of a flat gradient buffer, in two deterministic stages:
//   `partials`: workgroup g sums g_i² over i ≡ g·256 + lid (mod groups·256),
//               strided so neighbouring threads read neighbouring floats
//               (`partials_serial`: invocation g over i ≡ g (mod groups));
//   `finish`:   one workgroup sums the partials and writes √Σ to norm[0].
// NaN or Inf anywhere in the gradients makes the norm non-finite, which the
// optimiser's schedule kernel turns into a skipped step.

struct Params {
    n: u32,          // gradient elements
    grads_off: u32,
    groups: u32,     // workgroups of `partials`, and partial sums
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> grads: array<f32>;
@group(0) @binding(2) var<storage, read_write> partial_sums: array<f32>;
@group(0) @binding(3) var<storage, read_write> norm: array<f32>;

const WG: u32 = 256u;
var<workgroup> red: array<f32, 256>;

fn workgroup_sum(lid: u32, v: f32) -> f32 {
    red[lid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            red[lid] += red[lid + s];
        }
        workgroupBarrier();
    }
    return red[0];
}

@compute @workgroup_size(256)
fn partials(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = wg.x * WG + lid; i < p.n; i += p.groups * WG) {
        let g = grads[p.grads_off + i];
        s = fma(g, g, s);
    }
    let total = workgroup_sum(lid, s);
    if (lid == 0u) {
        partial_sums[wg.x] = total;
    }
}

// `partials` for CPU implementations of WebGPU (the kernel layout `Cpu`):
// partial g is one invocation's sum over i ≡ g (mod groups), no workgroup
// memory, no barrier.
@compute @workgroup_size(64)
fn partials_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wg.x * 64u + lid;
    if (g >= p.groups) {
        return;
    }
    var s = 0.0;
    for (var i = g; i < p.n; i += p.groups) {
        let v = grads[p.grads_off + i];
        s = fma(v, v, s);
    }
    partial_sums[g] = s;
}

@compute @workgroup_size(256)
fn finish(@builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    for (var i = lid; i < p.groups; i += WG) {
        s += partial_sums[i];
    }
    let total = workgroup_sum(lid, s);
    if (lid == 0u) {
        norm[0] = sqrt(total);
    }
}
