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
// neighbouring words. The `*_fault_*` entry points are deliberately wrong
// variants that exist only so tests can prove the gate catches them.

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

var<workgroup> a_tile: array<f32, 1024>;
var<workgroup> b_tile: array<f32, 1024>;
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

// The K extent summed: the drop-tail fault skips the last col_partial K tile.
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

fn tiled(wg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    let kmax = k_end(fault);
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < kmax; k0 += KT) {
        for (var r = 0u; r < 4u; r++) {
            let idx = tid + r * 256u;
            let kk = idx % KT;
            let i = idx / KT;
            let row = row0 + i;
            var av = 0.0;
            if (row < p.m && k0 + kk < kmax) {
                av = a[p.a_off + row * p.k + k0 + kk];
            }
            a_tile[kk * TILE + i] = av;
        }
        if ((p.flags & W_ALIGNED) != 0u) {
            // 64 columns × 8 K-pairs: one word per thread per round.
            for (var r = 0u; r < 2u; r++) {
                let idx = tid + r * 256u;
                let pr = idx % 8u;
                let j = idx / 8u;
                let col = col0 + j;
                let kk = 2u * pr;
                var v = vec2<f32>(0.0, 0.0);
                if (col < p.n && k0 + kk < kmax) {
                    v = unpack2x16float(w[(p.w_off + col * p.k + k0 + kk) >> 1u]);
                }
                b_tile[kk * TILE + j] = v.x;
                b_tile[(kk + 1u) * TILE + j] = v.y;
            }
        } else {
            for (var r = 0u; r < 4u; r++) {
                let idx = tid + r * 256u;
                let kk = idx % KT;
                let j = idx / KT;
                let col = col0 + j;
                var v = 0.0;
                if (col < p.n && k0 + kk < kmax) {
                    v = w_at(p.w_off + col * p.k + k0 + kk);
                }
                b_tile[kk * TILE + j] = v;
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
                    if (fault == FAULT_F16_ACC) {
                        // An all-f16 kernel: operands, product and sum in f16.
                        let prod = to_f16(to_f16(av[i]) * to_f16(bv[j]));
                        acc[i * 4u + j] = to_f16(acc[i * 4u + j] + prod);
                    } else {
                        acc[i * 4u + j] = fma(av[i], bv[j], acc[i * 4u + j]);
                    }
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + lid.y * 4u + i;
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + lid.x * 4u + j;
            if (row < p.m && col < p.n) {
                finish(row, col, acc[i * 4u + j]);
            }
        }
    }
}

fn gemv_col(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let col = wg.y * nwg.x + wg.x;
    let kmax = k_end(fault);
    let row_off = p.w_off + col * p.k;
    var acc = 0.0;
    if (col < p.n) {
        if ((p.flags & W_ALIGNED) != 0u) {
            for (var kk = 2u * lid.x; kk < kmax; kk += 128u) {
                let v = unpack2x16float(w[(row_off + kk) >> 1u]);
                let x0 = a[p.a_off + kk];
                var x1 = 0.0;
                if (kk + 1u < kmax) {
                    x1 = a[p.a_off + kk + 1u];
                }
                if (fault == FAULT_F16_ACC) {
                    acc = to_f16(acc + to_f16(to_f16(x0) * to_f16(v.x)));
                    acc = to_f16(acc + to_f16(to_f16(x1) * to_f16(v.y)));
                } else {
                    acc = fma(x0, v.x, acc);
                    acc = fma(x1, v.y, acc);
                }
            }
        } else {
            for (var kk = lid.x; kk < kmax; kk += 64u) {
                let x = a[p.a_off + kk];
                let v = w_at(row_off + kk);
                if (fault == FAULT_F16_ACC) {
                    acc = to_f16(acc + to_f16(to_f16(x) * to_f16(v)));
                } else {
                    acc = fma(x, v, acc);
                }
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
