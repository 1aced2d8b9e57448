// The decode attention's reductions over its 256 threads (`WG`) through
// workgroup memory (`red`): the max, and the sum in a fixed tree — pairs
// 128 apart added first, then 64, … 1. The result in every thread; every
// thread calls them (barriers). reduce_sg.wgsl is the subgroup form with
// the same bits. Appended to attention_decode.wgsl.
//
// Two barriers a reduction (a level at a time took ten): eight threads
// each add the subtree under one of the tree's eight nodes at level 8
// (32 leaves, in the tree's order), then every thread adds those eight as
// the tree's last three levels — ln_sum.wgsl's scheme for 256 leaves. The
// nodes have their own array, so a reduction right after another needs no
// barrier between them: its leaves are written after every thread passed
// the other's second barrier (the leaves' last readers), its nodes after
// its own first (the other's nodes' last readers).

var<workgroup> red_nodes: array<f32, 8>;

fn reduce_op(a: f32, b: f32, is_max: bool) -> f32 {
    if (is_max) {
        return max(a, b);
    }
    return a + b;
}

// The tree's node j at level 32 (j < 32; level s's node j adds level
// 2s's nodes j and j + s), from its eight leaves.
fn reduce_node32(j: u32, is_max: bool) -> f32 {
    let a = reduce_op(red[j], red[j + 128u], is_max);
    let b = reduce_op(red[j + 64u], red[j + 192u], is_max);
    let c = reduce_op(red[j + 32u], red[j + 160u], is_max);
    let d = reduce_op(red[j + 96u], red[j + 224u], is_max);
    return reduce_op(reduce_op(a, b, is_max), reduce_op(c, d, is_max), is_max);
}

// Node j at level 16, from two at level 32.
fn reduce_node16(j: u32, is_max: bool) -> f32 {
    return reduce_op(reduce_node32(j, is_max), reduce_node32(j + 16u, is_max), is_max);
}

fn reduce_wg(tid: u32, v: f32, is_max: bool) -> f32 {
    red[tid] = v;
    workgroupBarrier();
    if (tid < 8u) {
        red_nodes[tid] = reduce_op(reduce_node16(tid, is_max), reduce_node16(tid + 8u, is_max), is_max);
    }
    workgroupBarrier();
    // The nodes at level 4, then 2, then the root.
    let f0 = reduce_op(red_nodes[0], red_nodes[4], is_max);
    let f1 = reduce_op(red_nodes[1], red_nodes[5], is_max);
    let f2 = reduce_op(red_nodes[2], red_nodes[6], is_max);
    let f3 = reduce_op(red_nodes[3], red_nodes[7], is_max);
    return reduce_op(reduce_op(f0, f2, is_max), reduce_op(f1, f3, is_max), is_max);
}

fn reduce_max(tid: u32, v: f32) -> f32 {
    return reduce_wg(tid, v, true);
}

fn reduce_sum(tid: u32, v: f32) -> f32 {
    return reduce_wg(tid, v, false);
}
