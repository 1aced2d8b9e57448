// The LayerNorm's row sums over 128 invocations, in one fixed tree: the
// LayerNorm kernel's (layernorm.wgsl) and the GEMVs' LayerNorm prologue
// (gemv_row.wgsl), so that a LayerNorm folded into a GEMV gives the
// LayerNorm kernel's bits. Appended to both sources; the including kernel
// may use `red` for other things between the sums.

const LN_THREADS: u32 = 128u;
// Where the second of two sums in a row goes (`ln_sum`'s `b`).
const LN_REGION: u32 = 136u;
var<workgroup> red: array<f32, 272>;

// The tree over the 128 values from red[b]: the node at level s of leaf
// j < s (pairs 64 apart are added first, then 32, … 1).
fn ln_tree64(b: u32, j: u32) -> f32 {
    return red[b + j] + red[b + j + 64u];
}

fn ln_tree32(b: u32, j: u32) -> f32 {
    return ln_tree64(b, j) + ln_tree64(b, j + 32u);
}

fn ln_tree16(b: u32, j: u32) -> f32 {
    return ln_tree32(b, j) + ln_tree32(b, j + 16u);
}

// Sum of `v` over the first LN_THREADS invocations, added as the tree
// adds them, in two barriers instead of seven levels' worth (barriers are
// what CPU implementations pay for most, and what a GPU's one-row
// workgroups wait on): eight invocations add the subtrees under the
// tree's eight nodes at level 8, then every invocation adds those eight as
// the last three levels. The sums go to red[b …] and the eight nodes after
// them, so that the mean (b = 0) and the variance (b = LN_REGION) need no
// barrier between them. Every invocation calls it and gets the sum.
fn ln_sum(t: u32, v: f32, b: u32) -> f32 {
    if (t < LN_THREADS) {
        red[b + t] = v;
    }
    workgroupBarrier();
    let n = b + LN_THREADS;
    if (t < 8u) {
        red[n + t] = ln_tree16(b, t) + ln_tree16(b, t + 8u);
    }
    workgroupBarrier();
    return ((red[n] + red[n + 4u]) + (red[n + 2u] + red[n + 6u]))
        + ((red[n + 1u] + red[n + 5u]) + (red[n + 3u] + red[n + 7u]));
}
