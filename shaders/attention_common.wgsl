// What the three attention training kernels share (attention_fwd.wgsl,
// attention_bwd_dq.wgsl, attention_bwd_dkv.wgsl; appended to each by
// ops/attention/mod.rs): the guarded loads of a head's columns from `qkv`,
// where a workgroup's rows start, the tiles' swizzles and reads (each
// kernel declares k_sh and v_sh: 32 rows of 8 vec4) and the chunked store
// (through the kernel's own store4).

fn qkv_at(i: u32, ok: bool) -> f32 {
    if (ok) {
        return qkv[i];
    }
    return 0.0;
}

// Dims [d, d + 4) of the head row starting at `base`; zero past HS or for a
// row outside the sequence.
fn qkv4(base: u32, d: u32, live: bool) -> vec4<f32> {
    return vec4<f32>(
        qkv_at(base + d, live && d < p.hs),
        qkv_at(base + d + 1u, live && d + 1u < p.hs),
        qkv_at(base + d + 2u, live && d + 2u < p.hs),
        qkv_at(base + d + 3u, live && d + 3u < p.hs),
    );
}

// Query (or key) rows of a workgroup: two per thread of 128, 8 threads a
// row pair.
const ROWS: u32 = 32u;

// Where a workgroup's rows and head start.
struct Tile {
    r0: u32,
    seq: u32,
    head: u32,
}

// Workgroup (row block, h, b) of the grid (⌈T/32⌉, NH, B).
fn tile_at(wg: vec3<u32>) -> Tile {
    return Tile(wg.x * ROWS, wg.z * p.t, wg.y * p.hs);
}

// qkv index of row t's Q columns (its K columns C later, its V 2C later).
fn qkv_row(x: Tile, t: u32) -> u32 {
    return (x.seq + t) * 3u * p.c + x.head;
}

// Row j of a 32-row tile, XOR-swizzled so that the 8 threads reading rows
// 4kq + i (scoring) and the 8 reading dims d4 of one row hit distinct
// banks.
fn sw(j: u32, d4: u32) -> u32 {
    return j * 8u + (d4 ^ ((j >> 2u) & 7u));
}

// Swizzled row r of a tile whose rows a quarter of a subgroup reads one at
// a time (queries, keys, weights).
fn pw(r: u32, j4: u32) -> u32 {
    return r * 8u + (j4 ^ (r & 7u));
}

// Keys (or values) 4·j4..4·j4+3 of the tile, dims 4·d4.. of a chunk: a
// column each.
fn keys4(j4: u32, d4: u32) -> mat4x4<f32> {
    let j = 4u * j4;
    return mat4x4<f32>(k_sh[sw(j, d4)], k_sh[sw(j + 1u, d4)], k_sh[sw(j + 2u, d4)], k_sh[sw(j + 3u, d4)]);
}

fn values4(j4: u32, d4: u32) -> mat4x4<f32> {
    let j = 4u * j4;
    return mat4x4<f32>(v_sh[sw(j, d4)], v_sh[sw(j + 1u, d4)], v_sh[sw(j + 2u, d4)], v_sh[sw(j + 3u, d4)]);
}

// Dims d.., 32 + d.., 64 + d.. and 96 + d.. of the kernel's output from
// `base`: the columns of m, those inside the head only (store4).
fn store_chunks(base: u32, d: u32, m: mat4x4<f32>) {
    store4(base, d, m[0]);
    store4(base, 32u + d, m[1]);
    store4(base, 64u + d, m[2]);
    store4(base, 96u + d, m[3]);
}
