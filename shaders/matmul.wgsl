// Tiled f32 matmul: C (M, N) = op(A) · op(B) [+ bias (N)] [+ C].
//
// op(A) is A (M, K) or, with TRANS_A, A stored (K, M); op(B) is B (K, N) or,
// with TRANS_B, B stored (N, K) — the (out, in) layout of every linear weight,
// so `x · Wᵀ` is TRANS_B. Training needs all three layouts: A·B, A·Bᵀ, Aᵀ·B.
// Products are summed in f32 registers; nothing narrower ever accumulates.
//
// One workgroup computes a 64×64 tile of C; each of its 16×16 threads owns a
// 4×4 block. K advances 16 at a time through two workgroup tiles.

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 0: TRANS_A, bit 1: TRANS_B, bit 2: add bias, bit 3: accumulate into C
    flags: u32,
    // Element offsets of each operand in its buffer (parameters and their
    // gradients are views into one flat buffer each).
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const TILE: u32 = 64u;
const KT: u32 = 16u;
const TRANS_A: u32 = 1u;
const TRANS_B: u32 = 2u;
const HAS_BIAS: u32 = 4u;
const ACCUMULATE: u32 = 8u;

// a_tile[kk * TILE + i] = op(A)[row0 + i, k0 + kk]
var<workgroup> a_tile: array<f32, 1024>;
// b_tile[kk * TILE + j] = op(B)[k0 + kk, col0 + j]
var<workgroup> b_tile: array<f32, 1024>;

fn op_a(row: u32, kk: u32) -> f32 {
    if (row >= p.m || kk >= p.k) {
        return 0.0;
    }
    if ((p.flags & TRANS_A) != 0u) {
        return a[p.a_off + kk * p.m + row];
    }
    return a[p.a_off + row * p.k + kk];
}

fn op_b(kk: u32, col: u32) -> f32 {
    if (kk >= p.k || col >= p.n) {
        return 0.0;
    }
    if ((p.flags & TRANS_B) != 0u) {
        return b[p.b_off + col * p.k + kk];
    }
    return b[p.b_off + kk * p.n + col];
}

// Writes one row of a thread's 4×4 block (accumulators are vectors, never
// dynamically indexed private arrays, which drivers spill to memory).
fn store_row(row: u32, col0: u32, acc: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    for (var j = 0u; j < 4u; j++) {
        let col = col0 + j;
        if (col >= p.n) {
            return;
        }
        var v = acc[j];
        if ((p.flags & HAS_BIAS) != 0u) {
            v += bias[p.bias_off + col];
        }
        let o = p.c_off + row * p.n + col;
        if ((p.flags & ACCUMULATE) != 0u) {
            v += c[o];
        }
        c[o] = v;
    }
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
    for (var k0 = 0u; k0 < p.k; k0 += KT) {
        // 256 threads fill 1024 entries of each tile. The index order follows
        // the memory order of the source so that neighbouring threads read
        // neighbouring addresses.
        for (var r = 0u; r < 4u; r++) {
            let idx = tid + r * 256u;
            if ((p.flags & TRANS_A) != 0u) {
                let i = idx % TILE;
                let kk = idx / TILE;
                a_tile[kk * TILE + i] = op_a(row0 + i, k0 + kk);
            } else {
                let kk = idx % KT;
                let i = idx / KT;
                a_tile[kk * TILE + i] = op_a(row0 + i, k0 + kk);
            }
            if ((p.flags & TRANS_B) != 0u) {
                let kk = idx % KT;
                let j = idx / KT;
                b_tile[kk * TILE + j] = op_b(k0 + kk, col0 + j);
            } else {
                let j = idx % TILE;
                let kk = idx / TILE;
                b_tile[kk * TILE + j] = op_b(k0 + kk, col0 + j);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let ai = kk * TILE + lid.y * 4u;
            let bi = kk * TILE + lid.x * 4u;
            let av = vec4<f32>(a_tile[ai], a_tile[ai + 1u], a_tile[ai + 2u], a_tile[ai + 3u]);
            let bv = vec4<f32>(b_tile[bi], b_tile[bi + 1u], b_tile[bi + 2u], b_tile[bi + 3u]);
            acc0 = fma(vec4<f32>(av.x), bv, acc0);
            acc1 = fma(vec4<f32>(av.y), bv, acc1);
            acc2 = fma(vec4<f32>(av.z), bv, acc2);
            acc3 = fma(vec4<f32>(av.w), bv, acc3);
        }
        workgroupBarrier();
    }
    let row = row0 + lid.y * 4u;
    let col = col0 + lid.x * 4u;
    store_row(row, col, acc0);
    store_row(row + 1u, col, acc1);
    store_row(row + 2u, col, acc2);
    store_row(row + 3u, col, acc3);
}
