// The cooperative-matrix matmul through workgroup memory ("tiled"): op(A)
// and op(B) staged as f16 by coop_stage.wgsl; per 32-wide K block the 256
// invocations copy a 128 × 32 tile of op(A) and a 32 × 128 tile of op(B)
// into workgroup memory (16-byte loads, the next block's loaded while this
// one is multiplied), then each of the eight 32-wide subgroups loads its
// 2 + 4 fragments per 16-wide step from there and sums a 32×64 block of C
// in f32 accumulators (a 128×128 tile per workgroup). The tiles' file
// (coop_tiles_vec.wgsl or coop_tiles_half.wgsl), coop_pad.wgsl and
// matmul_coop_common.wgsl (the epilogue) are appended, then
// matmul_common.wgsl. Strides inside the K loop are constants (naga 30's
// SPIR-V writer fails on a uniform read there).

enable f16;
enable wgpu_cooperative_matrix;

// A_KM (a pipeline of its own): op(A) comes staged as op(A)ᵀ, [K′][M′] with
// M′ = padded(M, PAD_M) — a weight gradient dYᵀ·X reading the dY that the
// same layer's dX product staged ([N′][C′] for it), instead of staging dYᵀ
// again (ops/matmul/coop_stage.rs). Its block is copied as op(B)'s is, 32
// K rows × 128, and its fragments are loaded column-major: the same f16
// values in the same fragments, so the same products.
override A_KM: bool = false;

// B_NK (a pipeline of its own): op(B) comes staged as op(B)ᵀ, [N′][K″]
// with K″ = padded(K, PAD_N) — a dX product dY·W reading the Wᵀ that the
// weight's forward product (X·Wᵀ) staged, instead of staging W again. Each
// invocation copies 8 K of a row of it, as op(A)'s rows are copied, into
// op(B)'s tile transposed (8 halves a row apart): the same tile, so the
// same fragments and products.
override B_NK: bool = false;

// The block's tiles, in halves: op(A)'s (128 rows × 32 K, row stride SA)
// then op(B)'s from TB (32 K × 128 columns, row stride SB); each row
// padded by 8 halves, which keeps every row 16-byte aligned and shifts
// consecutive rows across the banks. The staged operands (`a16`, `b16`),
// `Staged8` (eight of their halves in registers), `fetch8`, `tiles`, `E`
// (halves an element of the tiles: a cooperative-matrix load counts its
// stride in elements) and `put` come from the file appended after this
// one: coop_tiles_vec.wgsl (four halves an element, a copy stored as it
// was loaded: the plain pipelines) or coop_tiles_half.wgsl (one half an
// element, a copy stored half by half, transposed under B_NK: the A_KM
// and B_NK pipelines, which runs 60 and 61 measured slower on the other).
const SA: u32 = 40u;
const SB: u32 = 136u;
const TB: u32 = 5120u; // 128 × SA

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let lda = padded(p.k, PAD_K);
    let ldb = padded(p.n, PAD_N);
    let range = k_range(lda, wg.z, nwg.z);
    // What this invocation copies of each block (in halves of the staged
    // operands, less the block's K): rows t/4 and t/4 + 64 of op(A)'s tile,
    // 8 halves from K (t % 4) · 8; K rows t/16 and t/16 + 16 of op(B)'s,
    // 8 halves from column (t % 16) · 8.
    let ar = t / 4u;
    let ak = (t % 4u) * 8u;
    let bk = t / 16u;
    let bc = (t % 16u) * 8u;
    var ga = (wg.y * 128u + ar) * lda + ak;
    var gb = bk * ldb + wg.x * 128u + bc;
    var ga_far = 64u * lda;
    // Halves from one K to the next in the staged op(A), and where the two
    // copies land in its tile.
    var a_step = 1u;
    var at = ar * SA + ak;
    var at_far = (ar + 64u) * SA + ak;
    if (A_KM) {
        let ldm = padded(p.m, PAD_M);
        ga = bk * ldm + wg.y * 128u + bc;
        ga_far = 16u * ldm;
        a_step = ldm;
        at = bk * SB + bc;
        at_far = (bk + 16u) * SB + bc;
    }
    var gb_far = 16u * ldb;
    // The same for op(B).
    var b_step = ldb;
    var bt = TB + bk * SB + bc;
    var bt_far = TB + (bk + 16u) * SB + bc;
    var b_put = 1u;
    if (B_NK) {
        let ldk = padded(p.k, PAD_N);
        gb = (wg.x * 128u + ar) * ldk + ak;
        gb_far = 64u * ldk;
        b_step = 1u;
        bt = TB + ak * SB + ar;
        bt_far = bt + 64u;
        b_put = SB;
    }
    // This subgroup's 32×64 block of the tile.
    let sr = (sg / 2u) * 32u;
    let sc = (sg % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var wa0 = Staged8();
    var wa1 = Staged8();
    var wb0 = Staged8();
    var wb1 = Staged8();
    if (range.x < range.y) {
        wa0 = fetch8(true, ga + range.x * a_step);
        wa1 = fetch8(true, ga + ga_far + range.x * a_step);
        wb0 = fetch8(false, gb + range.x * b_step);
        wb1 = fetch8(false, gb + gb_far + range.x * b_step);
    }
    for (var k0 = range.x; k0 < range.y; k0 += PAD_K) {
        workgroupBarrier();
        put(at, 1u, wa0);
        put(at_far, 1u, wa1);
        put(bt, b_put, wb0);
        put(bt_far, b_put, wb1);
        workgroupBarrier();
        let kn = k0 + PAD_K;
        if (kn < range.y) {
            wa0 = fetch8(true, ga + kn * a_step);
            wa1 = fetch8(true, ga + ga_far + kn * a_step);
            wb0 = fetch8(false, gb + kn * b_step);
            wb1 = fetch8(false, gb + gb_far + kn * b_step);
        }
        for (var kk = 0u; kk < PAD_K; kk += 16u) {
            // Fragment offsets in halves, then in the tiles' elements.
            var a0 = coop_mat16x16<f16, A>();
            var a1 = coop_mat16x16<f16, A>();
            if (A_KM) {
                let o = kk * SB + sr;
                a0 = coopLoad<coop_mat16x16<f16, A>>(&tiles[o / E], SB / E);
                a1 = coopLoad<coop_mat16x16<f16, A>>(&tiles[(o + 16u) / E], SB / E);
            } else {
                let o = sr * SA + kk;
                a0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[o / E], SA / E);
                a1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[(o + 16u * SA) / E], SA / E);
            }
            let o = TB + kk * SB + sc;
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[o / E], SB / E);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[(o + 16u) / E], SB / E);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[(o + 32u) / E], SB / E);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[(o + 48u) / E], SB / E);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
    }
    let r0 = wg.y * 128u + sr;
    let c0 = wg.x * 128u + sc;
    store_tile(c00, sg, lane, r0, c0, range.z);
    store_tile(c01, sg, lane, r0, c0 + 16u, range.z);
    store_tile(c02, sg, lane, r0, c0 + 32u, range.z);
    store_tile(c03, sg, lane, r0, c0 + 48u, range.z);
    store_tile(c10, sg, lane, r0 + 16u, c0, range.z);
    store_tile(c11, sg, lane, r0 + 16u, c0 + 16u, range.z);
    store_tile(c12, sg, lane, r0 + 16u, c0 + 32u, range.z);
    store_tile(c13, sg, lane, r0 + 16u, c0 + 48u, range.z);
}
