// matmul_coop_tiled.wgsl's operands read 16 bytes a load and its tiles
// one half an element: a block's copy stores its eight halves one by one,
// `step` apart (B_NK: a row of op(B)ᵀ into a column of op(B)'s tile). The
// A_KM and B_NK pipelines: run 60 measured their column-major loads and
// transposed copies slower from coop_tiles_vec.wgsl's tiles, run 61 these
// halves slower when loaded 8 bytes at a time.

@group(0) @binding(5) var<storage, read> a16: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> b16: array<vec4<u32>>;

alias Staged8 = vec4<u32>;

// Eight staged halves from half `at` (a multiple of 8).
fn fetch8(staged_a: bool, at: u32) -> Staged8 {
    if (staged_a) {
        return a16[at / 8u];
    }
    return b16[at / 8u];
}

const E: u32 = 1u;
// One block's tiles (TILES), two under DBUF.
override TILE_ELEMS: u32 = select(1u, 2u, DBUF) * TILES;
var<workgroup> tiles: array<f16, TILE_ELEMS>;

// Eight halves into the tiles at `at`, `at + step`, … `at + 7 · step`
// (through f32, which holds every f16 exactly: naga 30 has no bitcast to
// vec2<f16>).
fn put(at: u32, step: u32, w: Staged8) {
    let h0 = vec2<f16>(unpack2x16float(w.x));
    let h1 = vec2<f16>(unpack2x16float(w.y));
    let h2 = vec2<f16>(unpack2x16float(w.z));
    let h3 = vec2<f16>(unpack2x16float(w.w));
    tiles[at] = h0.x;
    tiles[at + step] = h0.y;
    tiles[at + 2u * step] = h1.x;
    tiles[at + 3u * step] = h1.y;
    tiles[at + 4u * step] = h2.x;
    tiles[at + 5u * step] = h2.y;
    tiles[at + 6u * step] = h3.x;
    tiles[at + 7u * step] = h3.y;
}
