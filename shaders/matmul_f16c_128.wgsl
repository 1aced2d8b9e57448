// The f16-compute linear for large outputs (appended after
// matmul_f16c.wgsl): a 128×128 tile of C per workgroup, as matmul_128.wgsl
// tiles the f32 matmul — each of the 16×16 threads owns an 8×8 block (rows
// 4·ty + (0..4) and 64 + 4·ty + (0..4), columns likewise with tx), K in
// steps of 8, the next step's operands loaded into registers while the
// current one is computed — with both tiles held as f16 (A rounded to
// nearest even as it is staged, W's halves as stored): half the tile bytes
// of the f32 kernel. Every product and sum in f32, each output summed over
// K in order, like the 64×64 kernel.

const TILE_L: u32 = 128u;
const KT_L: u32 = 8u;
// Stride of 33 quads: the 8 threads filling neighbouring K of one quad of
// rows (or columns) land on distinct banks.
const TS_L: u32 = 33u;
var<workgroup> a_l: array<vec4<f16>, 264>;
var<workgroup> b_l: array<vec4<f16>, 264>;

// Thread `tid`'s quad of each tile for the K step at k: four rows of A (or
// four columns of W) at one K, neighbouring threads reading neighbouring K.
fn slot_l(tid: u32) -> u32 {
    return (tid % KT_L) * TS_L + tid / KT_L;
}

fn a_part_l(tid: u32, row0: u32, k: u32, kmax: u32) -> vec4<f16> {
    let row = row0 + 4u * (tid / KT_L);
    let kk = k + tid % KT_L;
    return halve(vec4<f32>(a_at(row, kk, kmax), a_at(row + 1u, kk, kmax), a_at(row + 2u, kk, kmax), a_at(row + 3u, kk, kmax)));
}

fn b_part_l(tid: u32, col0: u32, k: u32, kmax: u32) -> vec4<f16> {
    let col = col0 + 4u * (tid / KT_L);
    let kk = k + tid % KT_L;
    // Halves widened by w_el: exact back in f16.
    return vec4<f16>(vec4<f32>(w_el(col, kk, kmax), w_el(col + 1u, kk, kmax), w_el(col + 2u, kk, kmax), w_el(col + 3u, kk, kmax)));
}

// The 8×8 block's sums: rows low/high × columns low/high, each 4×4.
struct Block {
    ll: mat4x4<f32>,
    lh: mat4x4<f32>,
    hl: mat4x4<f32>,
    hh: mat4x4<f32>,
}

// One K of a 4×4 quarter: rows a, columns b (constant indices only, so
// the sums stay in registers).
fn quarter(acc: mat4x4<f32>, a: vec4<f32>, b: vec4<f32>, fault: u32) -> mat4x4<f32> {
    return mat4x4<f32>(
        mac(a.x, b, acc[0], fault),
        mac(a.y, b, acc[1], fault),
        mac(a.z, b, acc[2], fault),
        mac(a.w, b, acc[3], fault),
    );
}

fn tiled_f16_large(wg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let row0 = wg.y * TILE_L;
    let col0 = wg.x * TILE_L;
    let tid = lid.y * 16u + lid.x;
    let kmax = k_end(fault);
    var acc = Block();
    let at = slot_l(tid);
    var next_a = a_part_l(tid, row0, 0u, kmax);
    var next_b = b_part_l(tid, col0, 0u, kmax);
    for (var k0 = 0u; k0 < kmax; k0 += KT_L) {
        a_l[at] = next_a;
        b_l[at] = next_b;
        workgroupBarrier();
        // The next step's loads are in flight while this one computes.
        if (k0 + KT_L < kmax) {
            next_a = a_part_l(tid, row0, k0 + KT_L, kmax);
            next_b = b_part_l(tid, col0, k0 + KT_L, kmax);
        }
        for (var kk = 0u; kk < KT_L; kk++) {
            let a0 = vec4<f32>(a_l[kk * TS_L + lid.y]);
            let a1 = vec4<f32>(a_l[kk * TS_L + lid.y + 16u]);
            let b0 = vec4<f32>(b_l[kk * TS_L + lid.x]);
            let b1 = vec4<f32>(b_l[kk * TS_L + lid.x + 16u]);
            acc.ll = quarter(acc.ll, a0, b0, fault);
            acc.lh = quarter(acc.lh, a0, b1, fault);
            acc.hl = quarter(acc.hl, a1, b0, fault);
            acc.hh = quarter(acc.hh, a1, b1, fault);
        }
        workgroupBarrier();
    }
    store_block(row0, col0, lid, acc.ll);
    store_block(row0, col0 + 64u, lid, acc.lh);
    store_block(row0 + 64u, col0, lid, acc.hl);
    store_block(row0 + 64u, col0 + 64u, lid, acc.hh);
}

@compute @workgroup_size(16, 16)
fn main_128(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled_f16_large(wg, lid, FAULT);
}
