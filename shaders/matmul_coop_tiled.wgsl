// The cooperative-matrix matmul through workgroup memory ("tiled"): op(A)
// and op(B) staged as f16 by coop_stage.wgsl, a transposed operand in its
// storage order (the STORED flag); per 32-wide K block the 256 invocations
// copy the block of each operand into workgroup memory (16-byte loads, the
// next block's loaded while this one is multiplied), then each of the
// eight 32-wide subgroups loads its 2 + 4 fragments per 16-wide step from
// there — row-major, or column-major for a transposed operand — and sums
// a 32×64 block of C in f32 accumulators (a 128×128 tile per workgroup).
// coop_pad.wgsl and matmul_coop_common.wgsl (the epilogue) are appended,
// then matmul_common.wgsl. Strides inside the K loop are constants (naga
// 30's SPIR-V writer fails on a uniform read there), and the layouts are
// pipeline constants (one pipeline per pair, ops/matmul/kernels.rs).

enable f16;
enable wgpu_cooperative_matrix;

@group(0) @binding(5) var<storage, read> a16: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> b16: array<vec4<u32>>;

// op(A) staged as [K′][M′] (TRANS_A) and op(B) as [N′][K′] (TRANS_B).
override A_T: bool = false;
override B_T: bool = false;

// A block is copied as one of two tile shapes: "rows" — 128 rows (of M
// or N) × 32 K, row stride SR — or "ks" — 32 K × 128 columns, row stride
// SK; each row padded by 8 halves, which keeps every row 16-byte aligned
// and shifts consecutive rows across the banks. op(A)'s tile from 0,
// op(B)'s from TB.
const SR: u32 = 40u;
const SK: u32 = 136u;
const TB: u32 = 5120u; // 128 × SR ≥ 32 × SK
var<workgroup> tiles: array<f16, 10240>;

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

// What invocation `t` copies of an operand's blocks: two runs of 8 halves,
// at `g` and `g + g_far` of the staged operand (in halves, plus the
// block's K times `k_mul`), into the tiles at `at` and `at + at_far`.
struct Copy {
    g: u32,
    g_far: u32,
    k_mul: u32,
    at: u32,
    at_far: u32,
}

// `rows`: a "rows" tile of the staged rows from `first` (row length `ld`);
// else a "ks" tile of the columns from `first`.
fn plan(rows: bool, first: u32, ld: u32, t: u32, tile: u32) -> Copy {
    if (rows) {
        let r = t / 4u;
        let c = (t % 4u) * 8u;
        return Copy((first + r) * ld + c, 64u * ld, 1u, tile + r * SR + c, 64u * SR);
    }
    let r = t / 16u;
    let c = (t % 16u) * 8u;
    return Copy(r * ld + first + c, 16u * ld, ld, tile + r * SK + c, 16u * SK);
}

// The 16×16 fragment of op(A) at row `r` and K `kk` of the block.
fn frag_a(r: u32, kk: u32) -> coop_mat16x16<f16, A> {
    if (A_T) {
        return coopLoad<coop_mat16x16<f16, A>>(&tiles[kk * SK + r], SK);
    }
    return coopLoadT<coop_mat16x16<f16, A>>(&tiles[r * SR + kk], SR);
}

// The 16×16 fragment of op(B) at K `kk` of the block and column `c`.
fn frag_b(kk: u32, c: u32) -> coop_mat16x16<f16, B> {
    if (B_T) {
        return coopLoad<coop_mat16x16<f16, B>>(&tiles[TB + c * SR + kk], SR);
    }
    return coopLoadT<coop_mat16x16<f16, B>>(&tiles[TB + kk * SK + c], SK);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let kp = padded(p.k, PAD_K);
    let range = k_range(kp, wg.z, nwg.z);
    let ca = plan(!A_T, wg.y * 128u, select(kp, padded(p.m, PAD_M), A_T), t, 0u);
    let cb = plan(B_T, wg.x * 128u, select(padded(p.n, PAD_N), kp, B_T), t, TB);
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
    var wa0 = vec4<u32>();
    var wa1 = vec4<u32>();
    var wb0 = vec4<u32>();
    var wb1 = vec4<u32>();
    if (range.x < range.y) {
        wa0 = a16[(ca.g + range.x * ca.k_mul) / 8u];
        wa1 = a16[(ca.g + ca.g_far + range.x * ca.k_mul) / 8u];
        wb0 = b16[(cb.g + range.x * cb.k_mul) / 8u];
        wb1 = b16[(cb.g + cb.g_far + range.x * cb.k_mul) / 8u];
    }
    for (var k0 = range.x; k0 < range.y; k0 += PAD_K) {
        workgroupBarrier();
        put(ca.at, wa0);
        put(ca.at + ca.at_far, wa1);
        put(cb.at, wb0);
        put(cb.at + cb.at_far, wb1);
        workgroupBarrier();
        let kn = k0 + PAD_K;
        if (kn < range.y) {
            wa0 = a16[(ca.g + kn * ca.k_mul) / 8u];
            wa1 = a16[(ca.g + ca.g_far + kn * ca.k_mul) / 8u];
            wb0 = b16[(cb.g + kn * cb.k_mul) / 8u];
            wb1 = b16[(cb.g + cb.g_far + kn * cb.k_mul) / 8u];
        }
        for (var kk = 0u; kk < PAD_K; kk += 16u) {
            let a0 = frag_a(sr, kk);
            let a1 = frag_a(sr + 16u, kk);
            let b0 = frag_b(kk, sc);
            let b1 = frag_b(kk, sc + 16u);
            let b2 = frag_b(kk, sc + 32u);
            let b3 = frag_b(kk, sc + 48u);
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
