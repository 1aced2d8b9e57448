// What the tiled f16-weight kernels share (matmul_f16w.wgsl, f32 tiles;
// matmul_f16c.wgsl, f16 tiles): the 64×64 tile of outputs a workgroup of
// 16×16 threads computes, 4×4 each, K in steps of KT, and how a tile's
// operands are read and its outputs written. Appended after
// f16w_common.wgsl by ops/matmul/f16w.rs.

const TILE: u32 = 64u;
const W_ALIGNED: u32 = 16u;

// a_tile[kk * TS + i4] = A[row0 + 4·i4 + (0..4), k0 + kk] and b_tile[kk * TS
// + j4] = W[col0 + 4·j4 + (0..4), k0 + kk], as in matmul.wgsl: one 16-byte
// read feeds four rows or columns; the stride of 17 spreads the banks.
const TS: u32 = 17u;
fn finish(row: u32, col: u32, acc: f32) {
    var v = acc;
    if ((p.flags & HAS_BIAS) != 0u) {
        v += bias[p.bias_off + col];
    }
    c[p.c_off + row * p.n + col] = v;
}

// Writes one row of a thread's 4×4 block (accumulators are vectors, never
// dynamically indexed private arrays, which drivers spill to memory).
fn store_row(row: u32, col0: u32, acc: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    for (var j = 0u; j < 4u; j++) {
        if (col0 + j >= p.n) {
            return;
        }
        finish(row, col0 + j, acc[j]);
    }
}

// A[row, k], zero outside A or past `kmax`.
fn a_at(row: u32, k: u32, kmax: u32) -> f32 {
    if (row < p.m && k < kmax) {
        return a[p.a_off + row * p.k + k];
    }
    return 0.0;
}

// W[col, k] and W[col, k + 1] from one word (W_ALIGNED: k even), zero
// outside W or from `kmax` on.
fn w_pair(col: u32, k: u32, kmax: u32) -> vec2<f32> {
    if (col < p.n && k < kmax) {
        return unpack2x16float(w[(p.w_off + col * p.k + k) >> 1u]);
    }
    return vec2<f32>(0.0, 0.0);
}

// W[col, k], zero outside W or past `kmax`.
fn w_el(col: u32, k: u32, kmax: u32) -> f32 {
    if (col < p.n && k < kmax) {
        return w_at(p.w_off + col * p.k + k);
    }
    return 0.0;
}

// Staging one K step (k0) of a tile, thread `tid` of 256. A: one quad of
// rows per thread, neighbouring threads reading neighbouring K, at
// a_tile[tile_slot(tid)].
fn tile_slot(tid: u32) -> u32 {
    return (tid % KT) * TS + tid / KT;
}

fn a_quad(row0: u32, tid: u32, k0: u32, kmax: u32) -> vec4<f32> {
    let kk = tid % KT;
    let i4 = tid / KT;
    return vec4<f32>(
        a_at(row0 + 4u * i4, k0 + kk, kmax),
        a_at(row0 + 4u * i4 + 1u, k0 + kk, kmax),
        a_at(row0 + 4u * i4 + 2u, k0 + kk, kmax),
        a_at(row0 + 4u * i4 + 3u, k0 + kk, kmax),
    );
}

// W when its rows start on whole words (W_ALIGNED): 16 column quads × 8
// K-pairs, four words (one per column) for each of the first 128 threads,
// neighbouring threads reading neighbouring words of a column; the pair's
// two quads go to b_tile[pair_slot(tid)] and the slot TS after it.
fn pair_slot(tid: u32) -> u32 {
    return 2u * (tid % 8u) * TS + tid / 8u;
}

fn w_pair_quads(col0: u32, tid: u32, k0: u32, kmax: u32) -> mat2x4<f32> {
    let k = k0 + 2u * (tid % 8u);
    let c = col0 + 4u * (tid / 8u);
    let w0 = w_pair(c, k, kmax);
    let w1 = w_pair(c + 1u, k, kmax);
    let w2 = w_pair(c + 2u, k, kmax);
    let w3 = w_pair(c + 3u, k, kmax);
    return mat2x4<f32>(vec4<f32>(w0.x, w1.x, w2.x, w3.x), vec4<f32>(w0.y, w1.y, w2.y, w3.y));
}

// W otherwise: one quad of columns per thread at b_tile[tile_slot(tid)].
fn w_quad(col0: u32, tid: u32, k0: u32, kmax: u32) -> vec4<f32> {
    let kk = tid % KT;
    let j4 = tid / KT;
    return vec4<f32>(
        w_el(col0 + 4u * j4, k0 + kk, kmax),
        w_el(col0 + 4u * j4 + 1u, k0 + kk, kmax),
        w_el(col0 + 4u * j4 + 2u, k0 + kk, kmax),
        w_el(col0 + 4u * j4 + 3u, k0 + kk, kmax),
    );
}

// Writes a thread's 4×4 block of the tile at (row0, col0).
fn store_block(row0: u32, col0: u32, lid: vec3<u32>, acc: mat4x4<f32>) {
    let row = row0 + lid.y * 4u;
    let col = col0 + lid.x * 4u;
    store_row(row, col, acc[0]);
    store_row(row + 1u, col, acc[1]);
    store_row(row + 2u, col, acc[2]);
    store_row(row + 3u, col, acc[3]);
}
