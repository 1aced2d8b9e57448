// Dropout of a training step, element-wise (crates/core/src/model/dropout.rs
// is the reference and computes the same bits):
//   out[i] = [base[i] +] (keep(i) ? y[i] · scale : 0)
// with keep(i) = mix32(key ^ mix32(i)) ≥ threshold and
// key = mix32(mix32(mix32(seed_lo ^ mix32(seed_hi)) ^ step) ^ site).
// `step` is the optimiser's step counter on the GPU (ops::adamw::OptState),
// read here so that the masks change every step without a host write.
// Forward: the embedding output (no base) and each residual branch before
// its add (base = the stream). Backward: a branch's gradient through its
// mask (no base).

struct Params {
    n: u32,
    site: u32,
    threshold: u32,
    flags: u32,      // bit 0: add base
    seed_lo: u32,
    seed_hi: u32,
    scale_bits: u32, // f32 bits of 1 / (1 - p)
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> state: array<u32>;
@group(0) @binding(2) var<storage, read> base: array<f32>;
@group(0) @binding(3) var<storage, read> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const WG: u32 = 256u;
const ADD_BASE: u32 = 1u;

// mix32 and drop_key: dropout_mask.wgsl, appended to this source.

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid;
    if (i >= p.n) {
        return;
    }
    let key = drop_key();
    var v = 0.0;
    if (mix32(key ^ mix32(i)) >= p.threshold) {
        v = y[i] * bitcast<f32>(p.scale_bits);
    }
    if ((p.flags & ADD_BASE) != 0u) {
        v = base[i] + v;
    }
    out[i] = v;
}
