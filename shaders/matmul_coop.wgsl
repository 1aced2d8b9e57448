// The f32 matmul on cooperative matrices (tensor cores; the `+coop matrix`
// lever, native only): C (M, N) = op(A) · op(B) [+ bias] [+ C] with the
// flags and operand layouts of matmul_common.wgsl (appended), the operands
// rounded to f16 as they are staged in workgroup memory and every product
// summed in f32 (`coop_mat16x16<f32, C>` accumulators).
//
// A 256-invocation workgroup (8 subgroups of 32, which the lever's
// detection requires) computes a 128×128 tile of C in K steps of 32: all
// invocations stage op(A)'s 128×32 and op(B)'s 32×128 block as f16 (each
// read along the operand's contiguous dimension, zero outside the
// matrix), then each subgroup multiplies its 32×64 part as 2×4 16×16×16
// products per half step. The epilogue stores each accumulator through a
// 16×16 f32 scratch of the subgroup and writes it with the bias, the
// accumulation and the bounds of matmul_common's `store_row`.
//
// Every stride and offset a cooperative load or store reads is a constant
// or built from invocation ids: naga 30's SPIR-V writer fails on strides
// loaded from a uniform inside a loop.

enable f16;
enable wgpu_cooperative_matrix;

const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 32u;
const THREADS: u32 = 256u;
const LANES: u32 = 32u;

var<workgroup> a_tile: array<f16, 4096>; // BM × BK, [m][k]
var<workgroup> b_tile: array<f16, 4096>; // BK × BN, [k][n]
var<workgroup> scratch: array<f32, 2048>; // per subgroup 16 × 16

// op(A)'s block at (row0, k0) as f16 [m][k], read along A's contiguous
// dimension (K, or M when A is stored transposed).
fn stage_a(li: u32, row0: u32, k0: u32) {
    let by_m = (p.flags & TRANS_A) != 0u;
    for (var i = 0u; i < BM * BK / THREADS; i++) {
        let e = li + i * THREADS;
        var m = e / BK;
        var kk = e % BK;
        if (by_m) {
            m = e % BM;
            kk = e / BM;
        }
        a_tile[m * BK + kk] = f16(op_a(row0 + m, k0 + kk));
    }
}

// op(B)'s block at (k0, col0) as f16 [k][n], read along B's contiguous
// dimension (N, or K when B is stored (N, K)).
fn stage_b(li: u32, k0: u32, col0: u32) {
    let by_k = (p.flags & TRANS_B) != 0u;
    for (var i = 0u; i < BK * BN / THREADS; i++) {
        let e = li + i * THREADS;
        var kk = e / BN;
        var n = e % BN;
        if (by_k) {
            n = e / BK;
            kk = e % BK;
        }
        b_tile[kk * BN + n] = f16(op_b(k0 + kk, col0 + n));
    }
}

// One accumulator out: through the subgroup's scratch, then each lane
// writes its share with the bias and the accumulation, inside the matrix.
fn store_tile(t: coop_mat16x16<f32, C>, sg: u32, lane: u32, r0: u32, c0: u32) {
    let base = sg * 256u;
    coopStoreT(t, &scratch[base], 16u);
    workgroupBarrier();
    for (var i = lane; i < 256u; i += LANES) {
        let row = r0 + i / 16u;
        let col = c0 + i % 16u;
        if (row < p.m && col < p.n) {
            var v = scratch[base + i];
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
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) li: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    // This subgroup's 32 × 64 part of the tile.
    let wr = (sg / 2u) * 32u;
    let wc = (sg % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        stage_a(li, row0, k0);
        stage_b(li, k0, col0);
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[wr * BK + kk], BK);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&a_tile[(wr + 16u) * BK + kk], BK);
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[kk * BN + wc], BN);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[kk * BN + wc + 16u], BN);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[kk * BN + wc + 32u], BN);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&b_tile[kk * BN + wc + 48u], BN);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
        workgroupBarrier();
    }
    let r0 = row0 + wr;
    let r1 = r0 + 16u;
    let c0 = col0 + wc;
    store_tile(c00, sg, lane, r0, c0);
    store_tile(c01, sg, lane, r0, c0 + 16u);
    store_tile(c02, sg, lane, r0, c0 + 32u);
    store_tile(c03, sg, lane, r0, c0 + 48u);
    store_tile(c10, sg, lane, r1, c0);
    store_tile(c11, sg, lane, r1, c0 + 16u);
    store_tile(c12, sg, lane, r1, c0 + 32u);
    store_tile(c13, sg, lane, r1, c0 + 48u);
}
