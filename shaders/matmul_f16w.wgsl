// Linear forward with f16-stored weights, the tiled kernel (M > 1):
// C (M, N) = A (M, K) · Wᵀ [+ bias (N)], tiled like matmul.wgsl (64×64
// outputs per workgroup, K in steps of 16). The weights, the params, the
// bindings and the faults are f16w_common.wgsl's; the GEMVs for M = 1 are
// gemv_f16w.wgsl; ops/matmul/f16w.rs appends them all (with gemv_row.wgsl
// and erf.wgsl) into one source.

const TILE: u32 = 64u;
const W_ALIGNED: u32 = 16u;

// a_tile[kk * TS + i4] = A[row0 + 4·i4 + (0..4), k0 + kk] and b_tile[kk * TS
// + j4] = W[col0 + 4·j4 + (0..4), k0 + kk], as in matmul.wgsl: one 16-byte
// read feeds four rows or columns; the stride of 17 spreads the banks.
const TS: u32 = 17u;
var<workgroup> a_tile: array<vec4<f32>, 272>;
var<workgroup> b_tile: array<vec4<f32>, 272>;

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

// What an all-f16 kernel would compute for acc + a·b: operands, product and
// sum each rounded to f16 (the f16-accumulation fault).
fn f16_fma(a: f32, b: vec4<f32>, acc: vec4<f32>) -> vec4<f32> {
    let ah = to_f16(a);
    return vec4<f32>(
        to_f16(acc.x + to_f16(ah * to_f16(b.x))),
        to_f16(acc.y + to_f16(ah * to_f16(b.y))),
        to_f16(acc.z + to_f16(ah * to_f16(b.z))),
        to_f16(acc.w + to_f16(ah * to_f16(b.w))),
    );
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

fn tiled(wg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    let kmax = k_end(fault);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < kmax; k0 += KT) {
        // One vec4 of A per thread: neighbouring threads read neighbouring K.
        let kk = tid % KT;
        let i4 = tid / KT;
        a_tile[kk * TS + i4] = vec4<f32>(
            a_at(row0 + 4u * i4, k0 + kk, kmax),
            a_at(row0 + 4u * i4 + 1u, k0 + kk, kmax),
            a_at(row0 + 4u * i4 + 2u, k0 + kk, kmax),
            a_at(row0 + 4u * i4 + 3u, k0 + kk, kmax),
        );
        if ((p.flags & W_ALIGNED) != 0u) {
            // 16 column quads × 8 K-pairs: four words (one per column) for
            // each of the first 128 threads, neighbouring threads reading
            // neighbouring words of a column.
            if (tid < 128u) {
                let pr = tid % 8u;
                let j4 = tid / 8u;
                let k = k0 + 2u * pr;
                let w0 = w_pair(col0 + 4u * j4, k, kmax);
                let w1 = w_pair(col0 + 4u * j4 + 1u, k, kmax);
                let w2 = w_pair(col0 + 4u * j4 + 2u, k, kmax);
                let w3 = w_pair(col0 + 4u * j4 + 3u, k, kmax);
                b_tile[2u * pr * TS + j4] = vec4<f32>(w0.x, w1.x, w2.x, w3.x);
                b_tile[(2u * pr + 1u) * TS + j4] = vec4<f32>(w0.y, w1.y, w2.y, w3.y);
            }
        } else {
            let j4 = tid / KT;
            b_tile[kk * TS + j4] = vec4<f32>(
                w_el(col0 + 4u * j4, k0 + kk, kmax),
                w_el(col0 + 4u * j4 + 1u, k0 + kk, kmax),
                w_el(col0 + 4u * j4 + 2u, k0 + kk, kmax),
                w_el(col0 + 4u * j4 + 3u, k0 + kk, kmax),
            );
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let av = a_tile[kk * TS + lid.y];
            let bv = b_tile[kk * TS + lid.x];
            if (fault == FAULT_F16_ACC) {
                acc0 = f16_fma(av.x, bv, acc0);
                acc1 = f16_fma(av.y, bv, acc1);
                acc2 = f16_fma(av.z, bv, acc2);
                acc3 = f16_fma(av.w, bv, acc3);
            } else {
                acc0 = fma(vec4<f32>(av.x), bv, acc0);
                acc1 = fma(vec4<f32>(av.y), bv, acc1);
                acc2 = fma(vec4<f32>(av.z), bv, acc2);
                acc3 = fma(vec4<f32>(av.w), bv, acc3);
            }
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

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled(wg, lid, FAULT);
}
