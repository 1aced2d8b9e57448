// What the element-wise kernels (gelu.wgsl, residual.wgsl) share, appended
// to each: a workgroup of 256 invocations takes PER_GROUP consecutive
// elements, each invocation PER_INVOCATION of them 256 apart (neighbouring
// invocations read neighbouring elements), its loads issued before it
// computes. One element an invocation launched so many workgroups that
// scheduling them, not memory, set the time (as for coop_stage.wgsl); the
// per-element arithmetic is the same either way. Workgroups in rows of the
// grid's x (ops/common.rs's `elementwise_grid`).

const EW_WG: u32 = 256u;
const PER_INVOCATION: u32 = 8u;
const PER_GROUP: u32 = 2048u;

// This invocation's first element; its others follow every EW_WG.
fn first_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * PER_GROUP + lid;
}

// Index i clamped into n elements: an invocation past the end loads the
// last element and writes nothing.
fn clamped(i: u32, n: u32) -> u32 {
    return min(i, n - 1u);
}
