// Tiled f32 matmul for large outputs: C (M, N) = op(A) · op(B) [+ bias (N)]
// [+ C], in the layouts of matmul.wgsl (which serves small outputs and
// split K; see there for the layouts), with matmul_common.wgsl appended.
//
// One workgroup computes a 128×128 tile of C; each of its 16×16 threads owns
// an 8×8 block: rows 4·ty + (0..4) and 64 + 4·ty + (0..4), columns likewise
// with tx, so that its operands are two 16-byte reads each from workgroup
// tiles of vec4. Per step of K, four 16-byte reads feed 64 FMAs (matmul.wgsl:
// two feed 16). K advances 8 at a time; the next step's operands are loaded
// from memory into registers while the current step is computed. The 64
// accumulators are 16 vec4 registers indexed only by constants; every sum
// is f32.

const TILE: u32 = 128u;
const KT: u32 = 8u;

// a_tile[kk * TS + i4] = op(A)[row0 + 4·i4 + (0..4), k0 + kk]; b_tile[kk *
// TS + j4] = op(B)[k0 + kk, col0 + 4·j4 + (0..4)]. The stride of 33 vec4
// keeps the 8 threads that fill neighbouring kk of one tile row on distinct
// banks.
const TS: u32 = 33u;
var<workgroup> a_tile: array<vec4<f32>, 264>;
var<workgroup> b_tile: array<vec4<f32>, 264>;

// The vec4 of each tile that thread `tid` fills for the K step at k0, in an
// order that follows the memory order of the source so that neighbouring
// threads read neighbouring addresses: (tile index, value).
fn a_part(tid: u32, row0: u32, k0: u32) -> vec4<f32> {
    var i4 = tid / KT;
    var kk = tid % KT;
    if ((p.flags & TRANS_A) != 0u) {
        i4 = tid % 32u;
        kk = tid / 32u;
    }
    let row = row0 + 4u * i4;
    return vec4<f32>(op_a(row, k0 + kk), op_a(row + 1u, k0 + kk), op_a(row + 2u, k0 + kk), op_a(row + 3u, k0 + kk));
}

fn a_slot(tid: u32) -> u32 {
    if ((p.flags & TRANS_A) != 0u) {
        return (tid / 32u) * TS + tid % 32u;
    }
    return (tid % KT) * TS + tid / KT;
}

fn b_part(tid: u32, col0: u32, k0: u32) -> vec4<f32> {
    var j4 = tid % 32u;
    var kk = tid / 32u;
    if ((p.flags & TRANS_B) != 0u) {
        j4 = tid / KT;
        kk = tid % KT;
    }
    let col = col0 + 4u * j4;
    return vec4<f32>(op_b(k0 + kk, col), op_b(k0 + kk, col + 1u), op_b(k0 + kk, col + 2u), op_b(k0 + kk, col + 3u));
}

fn b_slot(tid: u32) -> u32 {
    if ((p.flags & TRANS_B) != 0u) {
        return (tid % KT) * TS + tid / KT;
    }
    return (tid / 32u) * TS + tid % 32u;
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    var c0l = vec4<f32>(0.0);
    var c0h = vec4<f32>(0.0);
    var c1l = vec4<f32>(0.0);
    var c1h = vec4<f32>(0.0);
    var c2l = vec4<f32>(0.0);
    var c2h = vec4<f32>(0.0);
    var c3l = vec4<f32>(0.0);
    var c3h = vec4<f32>(0.0);
    var c4l = vec4<f32>(0.0);
    var c4h = vec4<f32>(0.0);
    var c5l = vec4<f32>(0.0);
    var c5h = vec4<f32>(0.0);
    var c6l = vec4<f32>(0.0);
    var c6h = vec4<f32>(0.0);
    var c7l = vec4<f32>(0.0);
    var c7h = vec4<f32>(0.0);
    let a_at = a_slot(tid);
    let b_at = b_slot(tid);
    var next_a = a_part(tid, row0, 0u);
    var next_b = b_part(tid, col0, 0u);
    for (var k0 = 0u; k0 < p.k; k0 += KT) {
        a_tile[a_at] = next_a;
        b_tile[b_at] = next_b;
        workgroupBarrier();
        // The next step's loads are in flight while this one computes.
        if (k0 + KT < p.k) {
            next_a = a_part(tid, row0, k0 + KT);
            next_b = b_part(tid, col0, k0 + KT);
        }
        for (var kk = 0u; kk < KT; kk++) {
            let a0 = a_tile[kk * TS + lid.y];
            let a1 = a_tile[kk * TS + lid.y + 16u];
            let b0 = b_tile[kk * TS + lid.x];
            let b1 = b_tile[kk * TS + lid.x + 16u];
            c0l = fma(vec4<f32>(a0.x), b0, c0l);
            c0h = fma(vec4<f32>(a0.x), b1, c0h);
            c1l = fma(vec4<f32>(a0.y), b0, c1l);
            c1h = fma(vec4<f32>(a0.y), b1, c1h);
            c2l = fma(vec4<f32>(a0.z), b0, c2l);
            c2h = fma(vec4<f32>(a0.z), b1, c2h);
            c3l = fma(vec4<f32>(a0.w), b0, c3l);
            c3h = fma(vec4<f32>(a0.w), b1, c3h);
            c4l = fma(vec4<f32>(a1.x), b0, c4l);
            c4h = fma(vec4<f32>(a1.x), b1, c4h);
            c5l = fma(vec4<f32>(a1.y), b0, c5l);
            c5h = fma(vec4<f32>(a1.y), b1, c5h);
            c6l = fma(vec4<f32>(a1.z), b0, c6l);
            c6h = fma(vec4<f32>(a1.z), b1, c6h);
            c7l = fma(vec4<f32>(a1.w), b0, c7l);
            c7h = fma(vec4<f32>(a1.w), b1, c7h);
        }
        workgroupBarrier();
    }
    let c_base = p.c_off;
    let row = row0 + lid.y * 4u;
    let row_hi = row + 64u;
    let col = col0 + lid.x * 4u;
    let col_hi = col + 64u;
    store_row(c_base, row + 0u, col, c0l);
    store_row(c_base, row + 0u, col_hi, c0h);
    store_row(c_base, row + 1u, col, c1l);
    store_row(c_base, row + 1u, col_hi, c1h);
    store_row(c_base, row + 2u, col, c2l);
    store_row(c_base, row + 2u, col_hi, c2h);
    store_row(c_base, row + 3u, col, c3l);
    store_row(c_base, row + 3u, col_hi, c3h);
    store_row(c_base, row_hi + 0u, col, c4l);
    store_row(c_base, row_hi + 0u, col_hi, c4h);
    store_row(c_base, row_hi + 1u, col, c5l);
    store_row(c_base, row_hi + 1u, col_hi, c5h);
    store_row(c_base, row_hi + 2u, col, c6l);
    store_row(c_base, row_hi + 2u, col_hi, c6h);
    store_row(c_base, row_hi + 3u, col, c7l);
    store_row(c_base, row_hi + 3u, col_hi, c7h);
}
