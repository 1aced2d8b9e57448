// LayerNorm forward, one workgroup per row of C channels:
//   y = (x − μ)·σ̂ · w + b,  σ̂ = 1/√(var + 1e-5), var biased,
// keeping μ and σ̂ per row for the backward. Two passes over the row (mean,
// then the centred variance) like the CPU reference; each thread sums a
// strided slice, then a fixed tree combines the slices (ln_sum.wgsl,
// appended; two barriers a sum): deterministic, and the tree the GEMVs'
// LayerNorm prologue adds with. The passes after the first are
// ln_rows.wgsl's, appended (layernorm_residual.wgsl shares them).

struct Params {
    n: u32,          // rows N
    c: u32,          // channels C
    x_off: u32,      // x (N, C)
    w_off: u32,      // w (C)
    b_off: u32,      // b (C)
    y_off: u32,      // y (N, C)
    mean_off: u32,   // mean (N)
    rstd_off: u32,   // rstd (N)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> rstd: array<f32>;

const WG: u32 = 128u;
const EPS: f32 = 1e-5;

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
    let x0 = p.x_off + row * p.c;
    var s = 0.0;
    for (var i = lid; i < p.c; i += WG) {
        s += x[x0 + i];
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
    let x0 = p.x_off + row * p.c;
    var s = 0.0;
    for (var i = 0u; i < p.c; i++) {
        s += x[x0 + i];
    }
    ln_finish_serial(row, s);
}
