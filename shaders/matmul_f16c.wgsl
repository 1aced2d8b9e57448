// Linear forward in f16 compute (shader-f16, `enable f16;` heads the
// source): C (M, N) = A (M, K) · Wᵀ [+ bias (N)] with both operands held
// as f16 in workgroup memory and registers — A rounded to f16 as it is
// staged (round-to-nearest-even in integer arithmetic, to_f16, so the
// conversion f16() below is exact whatever rounding the compiler's
// conversion uses), W read as the packed halves f16 storage reads — and
// every product summed in an f32 accumulator, **each multiply operand cast
// to f32 explicitly** (seed 003: some compilers demote temporaries to f16
// under `enable f16;`, whatever the accumulator's type). Tiled like
// matmul_f16w.wgsl: f16w_common.wgsl's params, bindings and faults,
// f16w_tile.wgsl's staging and stores; half the tile bytes.

var<workgroup> a_h: array<vec4<f16>, 272>;
var<workgroup> b_h: array<vec4<f16>, 272>;

// An f32 quad as f16, rounded to nearest even.
fn halve(q: vec4<f32>) -> vec4<f16> {
    return vec4<f16>(vec4<f32>(to_f16(q.x), to_f16(q.y), to_f16(q.z), to_f16(q.w)));
}

// acc + a·b for an f16 a and four f16 b (each already widened to f32,
// exactly): f32 products and sum, each operand an explicit f32. The
// f16-accumulation fault instead does what a kernel doing all its
// arithmetic in f16 does — f16 products summed in an f16 register.
fn mac(a: f32, b: vec4<f32>, acc: vec4<f32>, fault: u32) -> vec4<f32> {
    if (fault == FAULT_F16_ACC) {
        return vec4<f32>(fma(vec4<f16>(f16(a)), vec4<f16>(b), vec4<f16>(acc)));
    }
    return fma(vec4<f32>(a), b, acc);
}

fn tiled_f16(wg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    let kmax = k_end(fault);
    var acc = mat4x4<f32>();
    for (var k0 = 0u; k0 < kmax; k0 += KT) {
        a_h[tile_slot(tid)] = halve(a_quad(row0, tid, k0, kmax));
        if ((p.flags & W_ALIGNED) != 0u) {
            if (tid < 128u) {
                // Halves widened by unpack2x16float: exact back in f16.
                let q = w_pair_quads(col0, tid, k0, kmax);
                b_h[pair_slot(tid)] = vec4<f16>(q[0]);
                b_h[pair_slot(tid) + TS] = vec4<f16>(q[1]);
            }
        } else {
            b_h[tile_slot(tid)] = vec4<f16>(w_quad(col0, tid, k0, kmax));
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let av = vec4<f32>(a_h[kk * TS + lid.y]);
            let bv = vec4<f32>(b_h[kk * TS + lid.x]);
            acc[0] = mac(av.x, bv, acc[0], fault);
            acc[1] = mac(av.y, bv, acc[1], fault);
            acc[2] = mac(av.z, bv, acc[2], fault);
            acc[3] = mac(av.w, bv, acc[3], fault);
        }
        workgroupBarrier();
    }
    store_block(row0, col0, lid, acc);
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled_f16(wg, lid, FAULT);
}
