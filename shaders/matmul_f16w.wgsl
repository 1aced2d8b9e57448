// Linear forward with f16-stored weights: C (M, N) = A (M, K) · Wᵀ [+ bias (N)].
//
// W is stored (N, K) — the (out, in) layout of a linear weight — as packed
// halves: word i of `w` holds elements 2i (low half) and 2i+1 (high half) of
// the flat parameter buffer, read with the core built-in unpack2x16float (no
// `enable f16` needed). A, bias and C are f32, and every product is summed in
// an f32 register: only the storage of W is narrow (see docs/precision.md).
//
// `main` tiles like matmul.wgsl (64×64 outputs per workgroup, K in steps of
// 16); `gemv` serves M = 1 (one decoded token): one workgroup of 64 threads
// per output column, striding along K so neighbouring threads read
// neighbouring words, four words in flight per thread. The `*_fault_*`
// entry points are deliberately wrong variants that exist only so tests can
// prove the gate catches them.

struct Params {
    m: u32,
    k: u32,
    n: u32,
    // bit 2: add bias; bit 4: W's element offset and K are both even, so a
    // K-pair never straddles two words.
    flags: u32,
    a_off: u32,
    // Offset of W in halves (elements of the flat parameter buffer).
    w_off: u32,
    bias_off: u32,
    c_off: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;

const TILE: u32 = 64u;
const KT: u32 = 16u;
const HAS_BIAS: u32 = 4u;
const W_ALIGNED: u32 = 16u;

// Fault selectors (test-only variants).
const FAULT_NONE: u32 = 0u;
const FAULT_F16_ACC: u32 = 1u;
const FAULT_DROP_TAIL: u32 = 2u;

// a_tile[kk * TS + i4] = A[row0 + 4·i4 + (0..4), k0 + kk] and b_tile[kk * TS
// + j4] = W[col0 + 4·j4 + (0..4), k0 + kk], as in matmul.wgsl: one 16-byte
// read feeds four rows or columns; the stride of 17 spreads the banks.
const TS: u32 = 17u;
var<workgroup> a_tile: array<vec4<f32>, 272>;
var<workgroup> b_tile: array<vec4<f32>, 272>;
var<workgroup> col_partial: array<f32, 64>;

// Element e of the flat half buffer.
fn w_at(e: u32) -> f32 {
    let pair = unpack2x16float(w[e >> 1u]);
    return select(pair.x, pair.y, (e & 1u) == 1u);
}

// What an f16 register would hold: round to f16, saturating to ±inf past
// the f16 range as f16 hardware does (pack2x16float leaves that case
// undefined, so it is spelled out).
fn to_f16(x: f32) -> f32 {
    if (abs(x) >= 65520.0) {
        return bitcast<f32>((bitcast<u32>(x) & 0x80000000u) | 0x7f800000u);
    }
    return unpack2x16float(pack2x16float(vec2<f32>(x, 0.0))).x;
}

// The K extent summed: the drop-tail fault skips the last partial K tile.
fn k_end(fault: u32) -> u32 {
    if (fault == FAULT_DROP_TAIL) {
        return (p.k / KT) * KT;
    }
    return p.k;
}

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

// acc + x·v in f32, or as an all-f16 kernel would (the f16-acc fault).
fn gemv_step(acc: f32, x: f32, v: f32, fault: u32) -> f32 {
    if (fault == FAULT_F16_ACC) {
        return to_f16(acc + to_f16(to_f16(x) * to_f16(v)));
    }
    return fma(x, v, acc);
}

fn gemv_col(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let col = wg.y * nwg.x + wg.x;
    let kmax = k_end(fault);
    let row_off = p.w_off + col * p.k;
    var acc = 0.0;
    if (col < p.n) {
        if ((p.flags & W_ALIGNED) != 0u) {
            // Four words (and their eight inputs) are loaded before they are
            // added, in the same order as one at a time.
            var kk = 2u * lid.x;
            for (; kk + 384u < kmax; kk += 512u) {
                let v0 = unpack2x16float(w[(row_off + kk) >> 1u]);
                let v1 = unpack2x16float(w[(row_off + kk + 128u) >> 1u]);
                let v2 = unpack2x16float(w[(row_off + kk + 256u) >> 1u]);
                let v3 = unpack2x16float(w[(row_off + kk + 384u) >> 1u]);
                let o = p.a_off + kk;
                let x0 = vec2<f32>(a[o], a[o + 1u]);
                let x1 = vec2<f32>(a[o + 128u], a[o + 129u]);
                let x2 = vec2<f32>(a[o + 256u], a[o + 257u]);
                let x3 = vec2<f32>(a[o + 384u], a[o + 385u]);
                acc = gemv_step(acc, x0.x, v0.x, fault);
                acc = gemv_step(acc, x0.y, v0.y, fault);
                acc = gemv_step(acc, x1.x, v1.x, fault);
                acc = gemv_step(acc, x1.y, v1.y, fault);
                acc = gemv_step(acc, x2.x, v2.x, fault);
                acc = gemv_step(acc, x2.y, v2.y, fault);
                acc = gemv_step(acc, x3.x, v3.x, fault);
                acc = gemv_step(acc, x3.y, v3.y, fault);
            }
            for (; kk < kmax; kk += 128u) {
                let v = unpack2x16float(w[(row_off + kk) >> 1u]);
                let x0 = a[p.a_off + kk];
                var x1 = 0.0;
                if (kk + 1u < kmax) {
                    x1 = a[p.a_off + kk + 1u];
                }
                acc = gemv_step(acc, x0, v.x, fault);
                acc = gemv_step(acc, x1, v.y, fault);
            }
        } else {
            var kk = lid.x;
            for (; kk + 192u < kmax; kk += 256u) {
                let o = p.a_off + kk;
                let x = vec4<f32>(a[o], a[o + 64u], a[o + 128u], a[o + 192u]);
                let v = vec4<f32>(w_at(row_off + kk), w_at(row_off + kk + 64u), w_at(row_off + kk + 128u), w_at(row_off + kk + 192u));
                acc = gemv_step(acc, x.x, v.x, fault);
                acc = gemv_step(acc, x.y, v.y, fault);
                acc = gemv_step(acc, x.z, v.z, fault);
                acc = gemv_step(acc, x.w, v.w, fault);
            }
            for (; kk < kmax; kk += 64u) {
                acc = gemv_step(acc, a[p.a_off + kk], w_at(row_off + kk), fault);
            }
        }
    }
    col_partial[lid.x] = acc;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s >>= 1u) {
        if (lid.x < s) {
            var v = col_partial[lid.x] + col_partial[lid.x + s];
            if (fault == FAULT_F16_ACC) {
                v = to_f16(v);
            }
            col_partial[lid.x] = v;
        }
        workgroupBarrier();
    }
    if (lid.x == 0u && col < p.n) {
        finish(0u, col, col_partial[0]);
    }
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled(wg, lid, FAULT_NONE);
}

@compute @workgroup_size(16, 16)
fn main_fault_f16acc(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled(wg, lid, FAULT_F16_ACC);
}

@compute @workgroup_size(16, 16)
fn main_fault_droptail(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled(wg, lid, FAULT_DROP_TAIL);
}

@compute @workgroup_size(64)
fn gemv(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_col(wg, nwg, lid, FAULT_NONE);
}

@compute @workgroup_size(64)
fn gemv_fault_f16acc(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_col(wg, nwg, lid, FAULT_F16_ACC);
}

@compute @workgroup_size(64)
fn gemv_fault_droptail(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    gemv_col(wg, nwg, lid, FAULT_DROP_TAIL);
}
