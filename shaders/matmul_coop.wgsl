// The cooperative-matrix matmul straight from storage ("direct"): op(A)
// and op(B) staged as f16 by coop_stage.wgsl, each 32-wide subgroup
// computing a 32×64 block of C (four subgroups, a 64×128 tile, per
// workgroup), loading its 2 + 4 16×16 fragments per 16-wide K step from
// storage and summing in f32 accumulators. coop_pad.wgsl and
// matmul_coop_common.wgsl (the epilogue) are appended, then
// matmul_common.wgsl. The strides are read into `let`s before the K loop
// (naga 30's SPIR-V writer fails on a uniform read inside it).

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(5) var<storage, read> a16: array<f16>;
@group(0) @binding(6) var<storage, read> b16: array<f16>;

@compute @workgroup_size(128)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let lda = padded(p.k, PAD_K);
    let ldb = padded(p.n, PAD_N);
    let range = k_range(lda, wg.z, nwg.z);
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
    for (var k0 = range.x; k0 < range.y; k0 += 16u) {
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
    store_tile(c00, sg, lane, r0, c0, range.z);
    store_tile(c01, sg, lane, r0, c0 + 16u, range.z);
    store_tile(c02, sg, lane, r0, c0 + 32u, range.z);
    store_tile(c03, sg, lane, r0, c0 + 48u, range.z);
    store_tile(c10, sg, lane, r0 + 16u, c0, range.z);
    store_tile(c11, sg, lane, r0 + 16u, c0 + 16u, range.z);
    store_tile(c12, sg, lane, r0 + 16u, c0 + 32u, range.z);
    store_tile(c13, sg, lane, r0 + 16u, c0 + 48u, range.z);
}
