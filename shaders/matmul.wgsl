// Tiled f32 matmul: C (M, N) = op(A) · op(B) [+ bias (N)] [+ C].
//
// op(A) is A (M, K) or, with TRANS_A, A stored (K, M); op(B) is B (K, N) or,
// with TRANS_B, B stored (N, K) — the (out, in) layout of every linear weight,
// so `x · Wᵀ` is TRANS_B. Training needs all three layouts: A·B, A·Bᵀ, Aᵀ·B.
// Products are summed in f32 registers; nothing narrower ever accumulates.
//
// One workgroup computes a 64×64 tile of C; each of its 16×16 threads owns a
// 4×4 block. K advances 16 at a time through two workgroup tiles of vec4.
//
// Split K (for a small C with a long K, such as a weight gradient summed
// over B·T rows): workgroup z sums only K range [z·k_chunk, (z+1)·k_chunk)
// and writes its partial C, without bias or accumulation, to slice z of a
// scratch buffer bound as C; `reduce_slices` then adds the slices in order.
//
// Params, bindings, flags, operand loaders and the row store:
// matmul_common.wgsl, appended.

const TILE: u32 = 64u;
const KT: u32 = 16u;

// a_tile[kk * TS + i4] = op(A)[row0 + 4·i4 + (0..4), k0 + kk], as a vec4 so
// that one 16-byte read feeds four rows; b_tile[kk * TS + j4] likewise holds
// op(B)[k0 + kk, col0 + 4·j4 + (0..4)]. The stride of 17 vec4 keeps the 16
// threads that fill neighbouring kk of one tile row on distinct banks.
const TS: u32 = 17u;
var<workgroup> a_tile: array<vec4<f32>, 272>;
var<workgroup> b_tile: array<vec4<f32>, 272>;

// op(A)[row + (0..4), kk] and op(B)[kk, col + (0..4)], zero outside.
fn a4(row: u32, kk: u32) -> vec4<f32> {
    return vec4<f32>(op_a(row, kk), op_a(row + 1u, kk), op_a(row + 2u, kk), op_a(row + 3u, kk));
}

fn b4(kk: u32, col: u32) -> vec4<f32> {
    return vec4<f32>(op_b(kk, col), op_b(kk, col + 1u), op_b(kk, col + 2u), op_b(kk, col + 3u));
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    let k_begin = wg.z * p.k_chunk;
    let k_end = min(p.k, k_begin + p.k_chunk);
    for (var k0 = k_begin; k0 < k_end; k0 += KT) {
        // Each thread fills one vec4 of each tile. The thread order follows
        // the memory order of the source so that neighbouring threads read
        // neighbouring addresses.
        if ((p.flags & TRANS_A) != 0u) {
            let i4 = tid % 16u;
            let kk = tid / 16u;
            a_tile[kk * TS + i4] = a4(row0 + 4u * i4, k0 + kk);
        } else {
            let kk = tid % KT;
            let i4 = tid / KT;
            a_tile[kk * TS + i4] = a4(row0 + 4u * i4, k0 + kk);
        }
        if ((p.flags & TRANS_B) != 0u) {
            let kk = tid % KT;
            let j4 = tid / KT;
            b_tile[kk * TS + j4] = b4(k0 + kk, col0 + 4u * j4);
        } else {
            let j4 = tid % 16u;
            let kk = tid / 16u;
            b_tile[kk * TS + j4] = b4(k0 + kk, col0 + 4u * j4);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let av = a_tile[kk * TS + lid.y];
            let bv = b_tile[kk * TS + lid.x];
            acc0 = fma(vec4<f32>(av.x), bv, acc0);
            acc1 = fma(vec4<f32>(av.y), bv, acc1);
            acc2 = fma(vec4<f32>(av.z), bv, acc2);
            acc3 = fma(vec4<f32>(av.w), bv, acc3);
        }
        workgroupBarrier();
    }
    let row = row0 + lid.y * 4u;
    let col = col0 + lid.x * 4u;
    let c_base = p.c_off + wg.z * p.m * p.n;
    store_row(c_base, row, col, acc0);
    store_row(c_base, row + 1u, col, acc1);
    store_row(c_base, row + 2u, col, acc2);
    store_row(c_base, row + 3u, col, acc3);
}

// Split K, second stage: C (+)= Σ_z slice z [+ bias], with the slices (M, N)
// one after another in `a` from a_off, added in order z = 0, 1, … One
// invocation per element of C, and with ROW_SUMS one more per row of C for
// the row sums (matmul_common.wgsl).
fn reduce_row_sums(q: Params, row: u32) {
    var v = 0.0;
    for (var z = 0u; z < q.slices; z++) {
        v += a[q.a_off + q.slices * q.m * q.n + z * q.m + row];
    }
    let o = q.aux_off + row;
    if ((q.flags & ACCUMULATE) != 0u) {
        v += c[o];
    }
    c[o] = v;
}

// Element (or, past C, row sum) i of the split product q.
fn reduce_at(q: Params, i: u32) {
    let len = q.m * q.n;
    if (i >= len) {
        if ((q.flags & ROW_SUMS) != 0u && i < len + q.m) {
            reduce_row_sums(q, i - len);
        }
        return;
    }
    var v = 0.0;
    for (var z = 0u; z < q.slices; z++) {
        v += a[q.a_off + z * len + i];
    }
    if ((q.flags & HAS_BIAS) != 0u) {
        v += bias[q.bias_off + i % q.n];
    }
    let o = q.c_off + i;
    if ((q.flags & ACCUMULATE) != 0u) {
        v += c[o];
    }
    c[o] = v;
}

@compute @workgroup_size(256)
fn reduce_slices(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    reduce_at(p, (wg.y * nwg.x + wg.x) * 256u + lid);
}

// Many split products' second stages in one dispatch (a backward's weight
// gradients, at its end): workgroup z reduces reductions[z] (p.slices of
// them), each with its slices in `a` and its C in `c` (no bias); the grid
// covers the largest.
@group(0) @binding(5) var<storage, read> reductions: array<Params>;

@compute @workgroup_size(256)
fn reduce_slices_table(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if (wg.z < p.slices) {
        reduce_at(reductions[wg.z], (wg.y * nwg.x + wg.x) * 256u + lid);
    }
}
