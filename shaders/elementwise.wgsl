// What the element-wise kernels (gelu.wgsl, residual.wgsl) share, appended
// to each: a workgroup of 256 invocations takes 256 · PER_INVOCATION
// consecutive elements, each invocation PER_INVOCATION of them 256 apart
// (neighbouring invocations read neighbouring elements), its loads issued
// before it computes. PER_INVOCATION is a pipeline constant, 1 or 8
// (ops/common.rs's `elementwise_per_invocation` picks): at nanoGPT's
// shapes one element an invocation launched so many workgroups that
// scheduling them, not memory, set the GELU's time (as for
// coop_stage.wgsl), while at small shapes eight left the GPU idle. The
// per-element arithmetic is the same either way. Workgroups in rows of the
// grid's x.

override PER_INVOCATION: u32 = 1u;
const EW_WG: u32 = 256u;
// The largest PER_INVOCATION (the private arrays' size).
const MAX_PER_INVOCATION: u32 = 8u;

// This invocation's first element; its others follow every EW_WG.
fn first_index(wg: vec3<u32>, nwg: vec3<u32>, lid: u32) -> u32 {
    return (wg.y * nwg.x + wg.x) * EW_WG * PER_INVOCATION + lid;
}

// Index i clamped into n elements: an invocation past the end loads the
// last element and writes nothing.
fn clamped(i: u32, n: u32) -> u32 {
    return min(i, n - 1u);
}
