// The cooperative-matrix matmul straight from storage: op(A) and op(B)
// staged as f16 by coop_stage.wgsl ([M′][K′], [K′][N′], zero-padded), each
// 32-wide subgroup computing a 32×64 block of C (four subgroups, a 64×128
// tile, per workgroup), loading its 2 + 4 16×16 fragments per 16-wide K
// step from storage and summing in f32 accumulators; the epilogue goes
// through a 16×16 f32 scratch of the subgroup for the bias, the
// accumulation and the bounds (matmul_common.wgsl, appended).
// The strides are read into `let`s before the K loop (naga 30's SPIR-V
// writer fails on a uniform read inside it).

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(5) var<storage, read> a16: array<f16>;
@group(0) @binding(6) var<storage, read> b16: array<f16>;

var<workgroup> scratch: array<f32, 1024>; // 4 subgroups × 16 × 16

// op(A) was staged scaled (coop_stage.wgsl): C is multiplied back.
const SCALED: u32 = 32u;

// Test-only (ops/matmul/fault.rs): 2 skips the last 16-wide K step.
override FAULT: u32 = 0u;

fn padded_to(x: u32, to: u32) -> u32 {
    return (x + to - 1u) / to * to;
}

// `slice`: the offset of this workgroup's K slice's (M, N) partial product
// (0 unsplit).
fn store_tile(t: coop_mat16x16<f32, C>, sg: u32, lane: u32, r0: u32, c0: u32, slice: u32) {
    let base = sg * 256u;
    coopStoreT(t, &scratch[base], 16u);
    workgroupBarrier();
    for (var i = lane; i < 256u; i += 32u) {
        let row = r0 + i / 16u;
        let col = c0 + i % 16u;
        if (row < p.m && col < p.n) {
            var v = scratch[base + i];
            if ((p.flags & SCALED) != 0u) {
                v *= bitcast<f32>(p.slices);
            }
            if ((p.flags & HAS_BIAS) != 0u) {
                v += bias[p.bias_off + col];
            }
            let o = p.c_off + slice + row * p.n + col;
            if ((p.flags & ACCUMULATE) != 0u) {
                v += c[o];
            }
            c[o] = v;
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(128)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let lda = padded_to(p.k, 16u);
    let ldb = padded_to(p.n, 128u);
    // Split K (ops/matmul/coop.rs): workgroup z sums its slice of whole
    // 16-wide steps into slice z of the scratch, reduce_slices adds them.
    let per_slice = (lda / 16u + nwg.z - 1u) / nwg.z * 16u;
    let kbegin = wg.z * per_slice;
    let klast = select(lda, lda - 16u, FAULT == 2u && lda > 16u);
    let kend = min(kbegin + per_slice, klast);
    let slice = wg.z * p.m * p.n;
    let r0 = wg.y * 64u + (sg / 2u) * 32u;
    let c0 = wg.x * 128u + (sg % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    for (var k0 = kbegin; k0 < kend; k0 += 16u) {
        let a0 = coopLoadT<coop_mat16x16<f16, A>>(&a16[r0 * lda + k0], lda);
        let a1 = coopLoadT<coop_mat16x16<f16, A>>(&a16[(r0 + 16u) * lda + k0], lda);
        let b0 = coopLoadT<coop_mat16x16<f16, B>>(&b16[k0 * ldb + c0], ldb);
        let b1 = coopLoadT<coop_mat16x16<f16, B>>(&b16[k0 * ldb + c0 + 16u], ldb);
        let b2 = coopLoadT<coop_mat16x16<f16, B>>(&b16[k0 * ldb + c0 + 32u], ldb);
        let b3 = coopLoadT<coop_mat16x16<f16, B>>(&b16[k0 * ldb + c0 + 48u], ldb);
        c00 = coopMultiplyAdd(a0, b0, c00);
        c01 = coopMultiplyAdd(a0, b1, c01);
        c02 = coopMultiplyAdd(a0, b2, c02);
        c03 = coopMultiplyAdd(a0, b3, c03);
        c10 = coopMultiplyAdd(a1, b0, c10);
        c11 = coopMultiplyAdd(a1, b1, c11);
        c12 = coopMultiplyAdd(a1, b2, c12);
        c13 = coopMultiplyAdd(a1, b3, c13);
    }
    store_tile(c00, sg, lane, r0, c0, slice);
    store_tile(c01, sg, lane, r0, c0 + 16u, slice);
    store_tile(c02, sg, lane, r0, c0 + 32u, slice);
    store_tile(c03, sg, lane, r0, c0 + 48u, slice);
    store_tile(c10, sg, lane, r0 + 16u, c0, slice);
    store_tile(c11, sg, lane, r0 + 16u, c0 + 16u, slice);
    store_tile(c12, sg, lane, r0 + 16u, c0 + 32u, slice);
    store_tile(c13, sg, lane, r0 + 16u, c0 + 48u, slice);
}
