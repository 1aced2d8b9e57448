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

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    var acc: array<f32, 16>;
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
            var av: array<f32, 4>;
            var bv: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                av[i] = a_tile[kk * TILE + lid.y * 4u + i];
                bv[i] = b_tile[kk * TILE + lid.x * 4u + i];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var j = 0u; j < 4u; j++) {
                    acc[i * 4u + j] = fma(av[i], bv[j], acc[i * 4u + j]);
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + lid.y * 4u + i;
        if (row >= p.m) {
            continue;
        }
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + lid.x * 4u + j;
            if (col >= p.n) {
                continue;
            }
            var v = acc[i * 4u + j];
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
}
