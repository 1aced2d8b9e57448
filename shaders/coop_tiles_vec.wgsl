// matmul_coop_tiled.wgsl's operands and tiles four halves an element: a
// block's copy stores what each invocation's two 8-byte loads brought, as
// they brought it (the plain pipelines, whose copies are contiguous:
// `step` is 1). Runs 60 and 61: 4096³ at 136 TFLOP/s on these tiles
// against 101 on coop_tiles_half.wgsl's.

@group(0) @binding(5) var<storage, read> a16: array<vec4<f16>>;
@group(0) @binding(6) var<storage, read> b16: array<vec4<f16>>;

alias Staged8 = array<vec4<f16>, 2>;

// Eight staged halves from half `at` (a multiple of 8).
fn fetch8(staged_a: bool, at: u32) -> Staged8 {
    let i = at / 4u;
    if (staged_a) {
        return Staged8(a16[i], a16[i + 1u]);
    }
    return Staged8(b16[i], b16[i + 1u]);
}

const E: u32 = 4u;
// One block's tiles (TILES / 4 elements), two under DBUF.
override TILE_ELEMS: u32 = select(1u, 2u, DBUF) * TILES / 4u;
var<workgroup> tiles: array<vec4<f16>, TILE_ELEMS>;

// Eight halves into the tiles from half `at` (a multiple of 8).
fn put(at: u32, step: u32, w: Staged8) {
    tiles[at / 4u] = w[0];
    tiles[at / 4u + 1u] = w[1];
}
