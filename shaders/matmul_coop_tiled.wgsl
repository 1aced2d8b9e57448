// The cooperative-matrix matmul through workgroup memory ("tiled"): op(A)
// and op(B) staged as f16 by coop_stage.wgsl; per BK-wide K block (a
// pipeline constant, 32 or 64) the 256 invocations copy a 128 × BK tile of
// op(A) and a BK × 128 tile of op(B) into workgroup memory (16-byte loads,
// the next block's loaded while this one is multiplied), then each of the
// eight 32-wide subgroups loads its 2 + 4 fragments per 16-wide step from
// there and sums a 32×64 block of C in f32 accumulators (a 128×128 tile
// per workgroup). coop_pad.wgsl and matmul_coop_common.wgsl (the
// epilogue) are appended, then matmul_common.wgsl. Strides inside the K
// loop are constants (naga 30's SPIR-V writer fails on a uniform read
// there).

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(5) var<storage, read> a16: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> b16: array<vec4<u32>>;

// K per block; PAD_K (coop_pad.wgsl) is a multiple of it.
override BK: u32 = 32u;

// The block's tiles, op(A)'s (128 rows × BK, row stride SA) then op(B)'s
// (BK × 128 columns, row stride SB, from TB); each row padded by 8
// halves, which keeps every row 16-byte aligned and shifts consecutive
// rows across the banks. Sized for the largest BK (64).
const SB: u32 = 136u;
override SA: u32 = BK + 8u;
override TB: u32 = 128u * SA;
var<workgroup> tiles: array<f16, 17920>; // 128 × 72 + 64 × 136

// Eight halves (one 16-byte load) into the tiles at `at` (through f32,
// which holds every f16 exactly: naga 30 has no bitcast to vec2<f16>).
fn put(at: u32, w: vec4<u32>) {
    let h0 = vec2<f16>(unpack2x16float(w.x));
    let h1 = vec2<f16>(unpack2x16float(w.y));
    let h2 = vec2<f16>(unpack2x16float(w.z));
    let h3 = vec2<f16>(unpack2x16float(w.w));
    tiles[at] = h0.x;
    tiles[at + 1u] = h0.y;
    tiles[at + 2u] = h1.x;
    tiles[at + 3u] = h1.y;
    tiles[at + 4u] = h2.x;
    tiles[at + 5u] = h2.y;
    tiles[at + 6u] = h3.x;
    tiles[at + 7u] = h3.y;
}

// The global (in vec4s) and tile indices of copy `i` (of BK / 16) of
// invocation `t` for the block at K 0: op(A)'s rows from `r0` (row length
// `lda`), op(B)'s columns from `c0` (row length `ldb`).
fn copy_a(i: u32, t: u32, r0: u32, lda: u32) -> vec2<u32> {
    let j = t + 256u * i;
    let row = j / (BK / 8u);
    let col = j % (BK / 8u) * 8u;
    return vec2<u32>(((r0 + row) * lda + col) / 8u, row * SA + col);
}

fn copy_b(i: u32, t: u32, c0: u32, ldb: u32) -> vec2<u32> {
    let j = t + 256u * i;
    let row = j / 16u;
    let col = j % 16u * 8u;
    return vec2<u32>((row * ldb + c0 + col) / 8u, TB + row * SB + col);
}

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
    // A block at K k0 is at +k0 / 8 (op(A)) and +k0 · ldb / 8 (op(B)) of
    // the K-0 indices.
    var ga: array<vec2<u32>, 4>;
    var gb: array<vec2<u32>, 4>;
    for (var i = 0u; i < BK / 16u; i++) {
        ga[i] = copy_a(i, t, wg.y * 128u, lda);
        gb[i] = copy_b(i, t, wg.x * 128u, ldb);
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
    var wa: array<vec4<u32>, 4>;
    var wb: array<vec4<u32>, 4>;
    if (range.x < range.y) {
        for (var i = 0u; i < BK / 16u; i++) {
            wa[i] = a16[ga[i].x + range.x / 8u];
            wb[i] = b16[gb[i].x + range.x * ldb / 8u];
        }
    }
    for (var k0 = range.x; k0 < range.y; k0 += BK) {
        workgroupBarrier();
        for (var i = 0u; i < BK / 16u; i++) {
            put(ga[i].y, wa[i]);
            put(gb[i].y, wb[i]);
        }
        workgroupBarrier();
        let kn = k0 + BK;
        if (kn < range.y) {
            for (var i = 0u; i < BK / 16u; i++) {
                wa[i] = a16[ga[i].x + kn / 8u];
                wb[i] = b16[gb[i].x + kn * ldb / 8u];
            }
        }
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[sr * SA + kk], SA);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[(sr + 16u) * SA + kk], SA);
            let bt = TB + kk * SB + sc;
            let b0 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[bt], SB);
            let b1 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[bt + 16u], SB);
            let b2 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[bt + 32u], SB);
            let b3 = coopLoadT<coop_mat16x16<f16, B>>(&tiles[bt + 48u], SB);
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
