// Tiled f32 matmul for small outputs: C (M, N) = op(A) · op(B) [+ bias (N)]
// [+ C], in the layouts of matmul.wgsl (see there for the layouts and for
// split K, which this kernel runs the same way), with matmul_common.wgsl
// appended.
//
// An output of few 64×64 tiles leaves most of a large GPU idle, and each of
// its workgroups then walks all of K one step at a time with nothing to
// hide the memory latency of each step. Here a workgroup computes a 32×32
// tile of C — four times as many workgroups — with four groups of 8×8
// threads. K advances 32 per step; group g sums its 8 of them (k0 + 8·g +
// 0..8) into its own 4×4 block per thread, so a thread's chain of steps is
// a quarter as long, and the operands of the next step are loaded into
// registers while the current one is computed. At the end the four groups'
// blocks are added in the fixed order g = 0, 1, 2, 3: deterministic, but
// not the 64×64 kernel's order, so results differ from it in the last bits.
// Every sum is f32. (Measured on the H200 at the tiny preset's shapes: a
// 64-wide K step, or operands loaded two or three steps ahead, were no
// faster.)

const TILE: u32 = 32u;
const KT: u32 = 32u;
// K per group and step.
const KG: u32 = 8u;

// SUMS_ROWS (a pipeline of its own, for split K: matmul_common.wgsl's
// ROW_SUMS): the workgroups of the first column of tiles also sum each row
// of op(A) over their K range — each invocation adds up the op(A) vec4 it
// stages, step after step, then a fixed tree adds the invocations — into
// the scratch after the slices, (slices, M). The pipelines without the
// constant compute as before.
override SUMS_ROWS: bool = false;

// Whether this workgroup sums op(A)'s rows: the same for all of its
// invocations.
fn sums_rows(wg: vec3<u32>) -> bool {
    return SUMS_ROWS && wg.x == 0u;
}

// Writes rows row + (0..4) of K slice z's row sums after the slices in the
// scratch bound as C.
fn store_row_sums(z: u32, row: u32, s: vec4<f32>) {
    let base = p.c_off + p.slices * p.m * p.n + z * p.m;
    for (var i = 0u; i < 4u; i++) {
        if (row + i < p.m) {
            c[base + row + i] = s[i];
        }
    }
}

// The A tile at [0, 256), the B tile at [256, 512): row kk of a tile holds
// the 8 vec4 op(A)[row0 + 4·i4 + (0..4), k0 + kk] (or op(B)[k0 + kk, col0 +
// 4·j4 + (0..4)]) at slot(kk, i4), XOR-swizzled so that the 8 threads
// storing neighbouring kk of one i4 hit distinct banks. After the K loop
// the whole array (16 KiB) holds the four groups' blocks.
const B_TILE: u32 = 256u;
var<workgroup> shm: array<vec4<f32>, 1024>;

fn slot(kk: u32, i4: u32) -> u32 {
    return kk * 8u + (i4 ^ (kk & 7u));
}

// op(A)[row, kk] and op(B)[kk, col], zero outside, as matmul_common.wgsl's
// op_a/op_b but with an index select, not a branch, so that a thread's
// loads are all in flight at once.
fn op_a_masked(row: u32, kk: u32) -> f32 {
    let inside = (row < p.m) & (kk < p.k);
    var i = p.a_off + row * p.k + kk;
    if ((p.flags & TRANS_A) != 0u) {
        i = p.a_off + kk * p.m + row;
    }
    return select(0.0, a[select(p.a_off, i, inside)], inside);
}

fn op_b_masked(kk: u32, col: u32) -> f32 {
    let inside = (kk < p.k) & (col < p.n);
    var i = p.b_off + kk * p.n + col;
    if ((p.flags & TRANS_B) != 0u) {
        i = p.b_off + col * p.k + kk;
    }
    return select(0.0, b[select(p.b_off, i, inside)], inside);
}

// Vec4 `v` (0..256) of a tile: its row kk and its index i4 in the row, in
// an order that follows the memory order of the source so that neighbouring
// threads read neighbouring addresses.
fn a_kk(v: u32) -> u32 {
    if ((p.flags & TRANS_A) != 0u) {
        return v / 8u;
    }
    return v % KT;
}

fn a_i4(v: u32) -> u32 {
    if ((p.flags & TRANS_A) != 0u) {
        return v % 8u;
    }
    return v / KT;
}

fn b_kk(v: u32) -> u32 {
    if ((p.flags & TRANS_B) != 0u) {
        return v % KT;
    }
    return v / 8u;
}

fn b_j4(v: u32) -> u32 {
    if ((p.flags & TRANS_B) != 0u) {
        return v / KT;
    }
    return v % 8u;
}

fn a_part(v: u32, row0: u32, k0: u32) -> vec4<f32> {
    let kk = k0 + a_kk(v);
    let row = row0 + 4u * a_i4(v);
    return vec4<f32>(op_a_masked(row, kk), op_a_masked(row + 1u, kk), op_a_masked(row + 2u, kk), op_a_masked(row + 3u, kk));
}

fn b_part(v: u32, col0: u32, k0: u32) -> vec4<f32> {
    let kk = k0 + b_kk(v);
    let col = col0 + 4u * b_j4(v);
    return vec4<f32>(op_b_masked(kk, col), op_b_masked(kk, col + 1u), op_b_masked(kk, col + 2u), op_b_masked(kk, col + 3u));
}

@compute @workgroup_size(8, 8, 4)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let t64 = lid.y * 8u + lid.x;
    let g = lid.z;
    // The vec4 of each tile this thread fills per step.
    let v = g * 64u + t64;
    let sa = slot(a_kk(v), a_i4(v));
    let sb = B_TILE + slot(b_kk(v), b_j4(v));
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    // SUMS_ROWS: the op(A) values this thread stages, added up.
    let sums = sums_rows(wg);
    var rs = vec4<f32>(0.0);
    let k_begin = wg.z * p.k_chunk;
    let k_end = min(p.k, k_begin + p.k_chunk);
    var next_a = a_part(v, row0, k_begin);
    var next_b = b_part(v, col0, k_begin);
    for (var k0 = k_begin; k0 < k_end; k0 += KT) {
        shm[sa] = next_a;
        shm[sb] = next_b;
        if (sums) {
            rs += next_a;
        }
        workgroupBarrier();
        // The next step's loads are in flight while this one computes.
        if (k0 + KT < k_end) {
            next_a = a_part(v, row0, k0 + KT);
            next_b = b_part(v, col0, k0 + KT);
        }
        for (var q = 0u; q < KG; q++) {
            let kk = g * KG + q;
            let av = shm[slot(kk, lid.y)];
            let bv = shm[B_TILE + slot(kk, lid.x)];
            acc0 = fma(vec4<f32>(av.x), bv, acc0);
            acc1 = fma(vec4<f32>(av.y), bv, acc1);
            acc2 = fma(vec4<f32>(av.z), bv, acc2);
            acc3 = fma(vec4<f32>(av.w), bv, acc3);
        }
        workgroupBarrier();
    }
    // Every group's 4×4 blocks, then group g adds row g of the four blocks
    // in order and writes it.
    let o = (g * 64u + t64) * 4u;
    shm[o] = acc0;
    shm[o + 1u] = acc1;
    shm[o + 2u] = acc2;
    shm[o + 3u] = acc3;
    workgroupBarrier();
    var sum = shm[t64 * 4u + g];
    for (var h = 1u; h < 4u; h++) {
        sum += shm[(h * 64u + t64) * 4u + g];
    }
    let c_base = p.c_off + wg.z * p.m * p.n;
    store_row(c_base, row0 + lid.y * 4u + g, col0 + lid.x * 4u, sum);
    if (sums) {
        // Each thread's sums at (kk, i4), added over kk by a fixed tree.
        workgroupBarrier();
        let kk = a_kk(v);
        let i4 = a_i4(v);
        shm[kk * 8u + i4] = rs;
        workgroupBarrier();
        for (var s = KT / 2u; s > 0u; s >>= 1u) {
            if (kk < s) {
                shm[kk * 8u + i4] += shm[(kk + s) * 8u + i4];
            }
            workgroupBarrier();
        }
        if (kk == 0u) {
            store_row_sums(wg.z, row0 + 4u * i4, shm[i4]);
        }
    }
}

// The cell layout for CPU implementations of WebGPU (SwiftShader, lavapipe,
// WARP): one invocation per 4×4 block of C summing all of K in order, no
// workgroup memory and no barrier. A CPU implementation runs a workgroup's
// invocations a few SIMD lanes at a time and switches between them at
// every barrier, so there the tiles above cost most of a training step
// (BENCHMARKS.md, "Training on CPU implementations"). K is summed 0, 1, 2, … in f32: another
// order than the tiles', so results differ from theirs in the last bits.
// No split K (workgroup z unused).
const CELL_GROUP: u32 = 64u;

@compute @workgroup_size(64)
fn main_cells(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) li: u32) {
    let blocks = (p.n + 3u) / 4u;
    let cell = (wg.y * nwg.x + wg.x) * CELL_GROUP + li;
    if (cell >= ((p.m + 3u) / 4u) * blocks) {
        return;
    }
    let row0 = (cell / blocks) * 4u;
    let col0 = (cell % blocks) * 4u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var kk = 0u; kk < p.k; kk++) {
        let bv = vec4<f32>(op_b_masked(kk, col0), op_b_masked(kk, col0 + 1u), op_b_masked(kk, col0 + 2u), op_b_masked(kk, col0 + 3u));
        acc0 = fma(vec4<f32>(op_a_masked(row0, kk)), bv, acc0);
        acc1 = fma(vec4<f32>(op_a_masked(row0 + 1u, kk)), bv, acc1);
        acc2 = fma(vec4<f32>(op_a_masked(row0 + 2u, kk)), bv, acc2);
        acc3 = fma(vec4<f32>(op_a_masked(row0 + 3u, kk)), bv, acc3);
    }
    store_row(p.c_off, row0, col0, acc0);
    store_row(p.c_off, row0 + 1u, col0, acc1);
    store_row(p.c_off, row0 + 2u, col0, acc2);
    store_row(p.c_off, row0 + 3u, col0, acc3);
}
