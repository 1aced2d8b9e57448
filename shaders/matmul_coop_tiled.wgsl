// The cooperative-matrix matmul through workgroup memory ("tiled"): op(A)
// and op(B) staged as f16 by coop_stage.wgsl; per 32-wide K block the WG
// invocations copy a TM × 32 tile of op(A) and a 32 × 128 tile of op(B)
// into workgroup memory (16-byte loads, the next block's loaded while this
// one is multiplied), then each 32-wide subgroup loads its fragments per
// 16-wide step from there and sums its block of the TM×128 tile of C in
// f32 accumulators: eight subgroups of 32×64 (WG 256) or four of 64×64
// (WG 128), or at TM 256 eight of 64×64; the tiles of one block or, under
// DBUF, two. The tiles' file (coop_tiles_vec.wgsl or
// coop_tiles_half.wgsl), coop_pad.wgsl and
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

// TM: rows of C a workgroup sums, 128 or (WG 256, the plain pipelines, one
// block's tiles) 256: each subgroup then sums 64×64 as at WG 128, with
// eight subgroups sharing each op(B) tile — a quarter less copied and
// loaded a product.
override TM: u32 = 128u;

// Rows of the tile a subgroup sums: 32 or 64 (four fragments of A a step).
override SUB_M: u32 = TM * 64u / WG;

// The block's tiles, in halves: op(A)'s (TM rows × 32 K, row stride SA)
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
override TB: u32 = TM * SA;
override TILES: u32 = TB + 32u * SB; // a block's tiles

// DBUF: two blocks' tiles, one barrier a block (the next block's copy goes
// into the other tiles while this one is multiplied; at AHEAD 1 the
// registers it leaves then load the block after it, a whole block of
// products ahead of that one's copy — run 126 measured 4096³ at 148
// TFLOP/s against 127 with the load issued before the products, and the
// same order at AHEAD 2 at 100 against 148); else one, with a barrier
// before and after each copy.
override DBUF: bool = false;

// WG: invocations a workgroup — 256 (eight subgroups, each summing a
// 32×64 block of the tile) or 128 (four, each a 64×64 block: more products
// per fragment loaded; each invocation copies twice as much).
override WG: u32 = 256u;

// AHEAD: how many blocks ahead of the tiles being multiplied the
// invocations load the staged operands into registers (1, 2 or 3). Run 94
// (BENCHMARKS.md): without the K loop's global loads the 4096³ product ran
// twice as fast, so one block of products does not hide a load's latency.
// The same products in the same order whatever the distance.
override AHEAD: u32 = 1u;

// Where one invocation's copies of a block come from and go (halves of the
// staged operands, less the block's K; halves of the tiles): pass i of
// op(A)'s copy reads ga + i · ga_far (passes 2 and 3 from ga_hi on) and
// writes at + i · at_far, op(B)'s likewise; `a_step`/`b_step` halves from
// one K to the next.
struct Copy {
    ga: u32, ga_far: u32, ga_hi: u32, a_step: u32, at: u32, at_far: u32,
    gb: u32, gb_far: u32, b_step: u32, bt: u32, bt_far: u32, b_put: u32,
}

// One block's copy in registers: two passes of each operand (four at
// WG 128; at TM 256 four of op(A)'s).
struct Block {
    a0: Staged8, a1: Staged8, a2: Staged8, a3: Staged8,
    b0: Staged8, b1: Staged8, b2: Staged8, b3: Staged8,
}

fn fetch_block(c: Copy, k: u32) -> Block {
    var w: Block;
    let ka = c.ga + k * c.a_step;
    let kb = c.gb + k * c.b_step;
    w.a0 = fetch8(true, ka);
    w.a1 = fetch8(true, ka + c.ga_far);
    w.b0 = fetch8(false, kb);
    w.b1 = fetch8(false, kb + c.gb_far);
    if (TM * 4u / WG == 4u) {
        let kh = c.ga_hi + k * c.a_step;
        w.a2 = fetch8(true, kh);
        w.a3 = fetch8(true, kh + c.ga_far);
    }
    if (WG == 128u) {
        w.b2 = fetch8(false, kb + 2u * c.gb_far);
        w.b3 = fetch8(false, kb + 3u * c.gb_far);
    }
    return w;
}

// The block into the tiles `off` halves in.
fn put_block(c: Copy, off: u32, w: Block) {
    put(off + c.at, 1u, w.a0);
    put(off + c.at + c.at_far, 1u, w.a1);
    put(off + c.bt, c.b_put, w.b0);
    put(off + c.bt + c.bt_far, c.b_put, w.b1);
    if (TM * 4u / WG == 4u) {
        put(off + c.at + 2u * c.at_far, 1u, w.a2);
        put(off + c.at + 3u * c.at_far, 1u, w.a3);
    }
    if (WG == 128u) {
        put(off + c.bt + 2u * c.bt_far, c.b_put, w.b2);
        put(off + c.bt + 3u * c.bt_far, c.b_put, w.b3);
    }
}

// The blocks loaded ahead move up one (w1 into w, w2 into w1) and the
// block at K `kf`, if before `end`, is loaded into the last of them.
fn advance(
    c: Copy, kf: u32, end: u32,
    w: ptr<function, Block>, w1: ptr<function, Block>, w2: ptr<function, Block>,
) {
    if (AHEAD == 1u) {
        if (kf < end) {
            *w = fetch_block(c, kf);
        }
    } else if (AHEAD == 2u) {
        *w = *w1;
        if (kf < end) {
            *w1 = fetch_block(c, kf);
        }
    } else {
        *w = *w1;
        *w1 = *w2;
        if (kf < end) {
            *w2 = fetch_block(c, kf);
        }
    }
}

// This invocation's copies: rows t/4 (+ WG/4 a pass) of op(A)'s tile, 8
// halves from K (t % 4) · 8; K rows t/16 (+ WG/16 a pass) of op(B)'s, 8
// halves from column (t % 16) · 8 (A_KM: op(A)ᵀ's rows copied as op(B)'s;
// B_NK: op(B)ᵀ's as op(A)'s, into columns of op(B)'s tile).
fn copy_plan(t: u32, wg: vec3<u32>, lda: u32, ldb: u32) -> Copy {
    let ar = t / 4u;
    let ak = (t % 4u) * 8u;
    let bk = t / 16u;
    let bc = (t % 16u) * 8u;
    let rows = WG / 4u;
    let krows = WG / 16u;
    var c = Copy(
        (wg.y * TM + ar) * lda + ak, rows * lda, 0u, 1u, ar * SA + ak, rows * SA,
        bk * ldb + wg.x * 128u + bc, krows * ldb, ldb, TB + bk * SB + bc, krows * SB, 1u,
    );
    if (A_KM) {
        let ldm = padded(p.m, PAD_M);
        c.ga = bk * ldm + wg.y * TM + bc;
        c.ga_far = krows * ldm;
        c.a_step = ldm;
        c.at = bk * SB + bc;
        c.at_far = krows * SB;
    }
    // Passes 2 and 3 (WG 128, or TM 256) after op(A)'s layout is set.
    c.ga_hi = c.ga + 2u * c.ga_far;
    // TM 256, the last row of workgroups when M′ is an odd multiple of 128:
    // the tile's last 128 rows lie past op(A)'s staged rows, and C has no
    // such rows, so their passes read the first rows' again.
    if (TM == 256u && wg.y * TM + 128u >= padded(p.m, PAD_M)) {
        c.ga_hi = c.ga;
    }
    if (B_NK) {
        let ldk = padded(p.k, PAD_N);
        c.gb = (wg.x * 128u + ar) * ldk + ak;
        c.gb_far = rows * ldk;
        c.b_step = 1u;
        c.bt = TB + ak * SB + ar;
        c.bt_far = rows;
        c.b_put = SB;
    }
    return c;
}

// A subgroup's tiles of columns c … c + 15 (rows r0 … r0 + SUB_M − 1)
// into C, their bias tile (column_bias) loaded once for all of them.
fn store_column(
    t0: coop_mat16x16<f32, C>, t1: coop_mat16x16<f32, C>,
    t2: coop_mat16x16<f32, C>, t3: coop_mat16x16<f32, C>,
    sg: u32, lane: u32, r0: u32, c: u32, slice: u32,
) {
    let b = column_bias(sg, lane, c);
    store_tile_with(t0, sg, lane, r0, c, slice, b);
    store_tile_with(t1, sg, lane, r0 + 16u, c, slice, b);
    if (SUB_M == 64u) {
        store_tile_with(t2, sg, lane, r0 + 32u, c, slice, b);
        store_tile_with(t3, sg, lane, r0 + 48u, c, slice, b);
    }
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let lda = padded(p.k, PAD_K);
    let range = k_range(lda, wg.z, nwg.z);
    let cp = copy_plan(t, wg, lda, padded(p.n, PAD_N));
    // This subgroup's block of the tile: SUB_M rows × 64.
    let sr = (sg / 2u) * SUB_M;
    let sc = (sg % 2u) * 64u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c02 = coop_mat16x16<f32, C>();
    var c03 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    var c12 = coop_mat16x16<f32, C>();
    var c13 = coop_mat16x16<f32, C>();
    var c20 = coop_mat16x16<f32, C>();
    var c21 = coop_mat16x16<f32, C>();
    var c22 = coop_mat16x16<f32, C>();
    var c23 = coop_mat16x16<f32, C>();
    var c30 = coop_mat16x16<f32, C>();
    var c31 = coop_mat16x16<f32, C>();
    var c32 = coop_mat16x16<f32, C>();
    var c33 = coop_mat16x16<f32, C>();
    // w: the block to copy next; w1, w2: the ones after it (AHEAD 2, 3).
    var w = Block();
    var w1 = Block();
    var w2 = Block();
    if (range.x < range.y) {
        w = fetch_block(cp, range.x);
    }
    if (AHEAD >= 2u && range.x + PAD_K < range.y) {
        w1 = fetch_block(cp, range.x + PAD_K);
    }
    if (AHEAD >= 3u && range.x + 2u * PAD_K < range.y) {
        w2 = fetch_block(cp, range.x + 2u * PAD_K);
    }
    // The tiles being read (an offset in halves); under DBUF the next
    // block goes into the other ones while these are read.
    var cur = 0u;
    if (DBUF) {
        put_block(cp, 0u, w);
        if (AHEAD == 1u) {
            advance(cp, range.x + PAD_K, range.y, &w, &w1, &w2);
        }
        workgroupBarrier();
    }
    for (var k0 = range.x; k0 < range.y; k0 += PAD_K) {
        if (!DBUF) {
            workgroupBarrier();
            put_block(cp, 0u, w);
            workgroupBarrier();
        }
        // The next block moves up; the one AHEAD blocks on is loaded (at
        // DBUF and AHEAD 1: after the next block's copy, below).
        if (!DBUF || AHEAD > 1u) {
            advance(cp, k0 + AHEAD * PAD_K, range.y, &w, &w1, &w2);
        }
        for (var kk = 0u; kk < PAD_K; kk += 16u) {
            // Fragment offsets in halves, then in the tiles' elements.
            var a0 = coop_mat16x16<f16, A>();
            var a1 = coop_mat16x16<f16, A>();
            var a2 = coop_mat16x16<f16, A>();
            var a3 = coop_mat16x16<f16, A>();
            if (A_KM) {
                let o = cur + kk * SB + sr;
                a0 = coopLoad<coop_mat16x16<f16, A>>(&tiles[o / E], SB / E);
                a1 = coopLoad<coop_mat16x16<f16, A>>(&tiles[(o + 16u) / E], SB / E);
                if (SUB_M == 64u) {
                    a2 = coopLoad<coop_mat16x16<f16, A>>(&tiles[(o + 32u) / E], SB / E);
                    a3 = coopLoad<coop_mat16x16<f16, A>>(&tiles[(o + 48u) / E], SB / E);
                }
            } else {
                let o = cur + sr * SA + kk;
                a0 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[o / E], SA / E);
                a1 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[(o + 16u * SA) / E], SA / E);
                if (SUB_M == 64u) {
                    a2 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[(o + 32u * SA) / E], SA / E);
                    a3 = coopLoadT<coop_mat16x16<f16, A>>(&tiles[(o + 48u * SA) / E], SA / E);
                }
            }
            let o = cur + TB + kk * SB + sc;
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
            if (SUB_M == 64u) {
                c20 = coopMultiplyAdd(a2, b0, c20);
                c21 = coopMultiplyAdd(a2, b1, c21);
                c22 = coopMultiplyAdd(a2, b2, c22);
                c23 = coopMultiplyAdd(a2, b3, c23);
                c30 = coopMultiplyAdd(a3, b0, c30);
                c31 = coopMultiplyAdd(a3, b1, c31);
                c32 = coopMultiplyAdd(a3, b2, c32);
                c33 = coopMultiplyAdd(a3, b3, c33);
            }
        }
        if (DBUF) {
            // The other tiles were last read before the previous barrier.
            // At AHEAD 1 the block after the next is loaded once the next
            // one is in the tiles: a whole block of products ahead of its
            // copy.
            cur = TILES - cur;
            put_block(cp, cur, w);
            if (AHEAD == 1u) {
                advance(cp, k0 + 2u * PAD_K, range.y, &w, &w1, &w2);
            }
            workgroupBarrier();
        }
    }
    let r0 = wg.y * TM + sr;
    let c0 = wg.x * 128u + sc;
    // A column of tiles at a time, its bias tile loaded once.
    store_column(c00, c10, c20, c30, sg, lane, r0, c0, range.z);
    store_column(c01, c11, c21, c31, sg, lane, r0, c0 + 16u, range.z);
    store_column(c02, c12, c22, c32, sg, lane, r0, c0 + 32u, range.z);
    store_column(c03, c13, c23, c33, sg, lane, r0, c0 + 48u, range.z);
}
