// Linear forward with f16-stored weights, the tiled kernel (M > 1):
// C (M, N) = A (M, K) · Wᵀ [+ bias (N)], tiled like matmul.wgsl (64×64
// outputs per workgroup, K in steps of 16). The weights, the params, the
// bindings and the faults are f16w_common.wgsl's; the GEMVs for M = 1 are
// gemv_f16w.wgsl; ops/matmul/f16w.rs appends them all (with gemv_row.wgsl
// and erf.wgsl) into one source.

// The tile's staging and stores are f16w_tile.wgsl's (a_tile and b_tile
// are laid out as its TS says).
var<workgroup> a_tile: array<vec4<f32>, 272>;
var<workgroup> b_tile: array<vec4<f32>, 272>;

// What an all-f16 kernel would compute for acc + a·b: operands, product and
// sum each rounded to f16 (the f16-accumulation fault).
fn f16_fma(a: f32, b: vec4<f32>, acc: vec4<f32>) -> vec4<f32> {
    let ah = to_f16(a);
    return vec4<f32>(
        to_f16(acc.x + to_f16(ah * to_f16(b.x))),
        to_f16(acc.y + to_f16(ah * to_f16(b.y))),
        to_f16(acc.z + to_f16(ah * to_f16(b.z))),
        to_f16(acc.w + to_f16(ah * to_f16(b.w))),
    );
}

fn tiled(wg: vec3<u32>, lid: vec3<u32>, fault: u32) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let tid = lid.y * 16u + lid.x;
    let kmax = k_end(fault);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var k0 = 0u; k0 < kmax; k0 += KT) {
        a_tile[tile_slot(tid)] = a_quad(row0, tid, k0, kmax);
        if ((p.flags & W_ALIGNED) != 0u) {
            if (tid < 128u) {
                let q = w_pair_quads(col0, tid, k0, kmax);
                b_tile[pair_slot(tid)] = q[0];
                b_tile[pair_slot(tid) + TS] = q[1];
            }
        } else {
            b_tile[tile_slot(tid)] = w_quad(col0, tid, k0, kmax);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < KT; kk++) {
            let av = a_tile[kk * TS + lid.y];
            let bv = b_tile[kk * TS + lid.x];
            if (fault == FAULT_F16_ACC) {
                acc0 = f16_fma(av.x, bv, acc0);
                acc1 = f16_fma(av.y, bv, acc1);
                acc2 = f16_fma(av.z, bv, acc2);
                acc3 = f16_fma(av.w, bv, acc3);
            } else {
                acc0 = fma(vec4<f32>(av.x), bv, acc0);
                acc1 = fma(vec4<f32>(av.y), bv, acc1);
                acc2 = fma(vec4<f32>(av.z), bv, acc2);
                acc3 = fma(vec4<f32>(av.w), bv, acc3);
            }
        }
        workgroupBarrier();
    }
    store_block(row0, col0, lid, mat4x4<f32>(acc0, acc1, acc2, acc3));
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    tiled(wg, lid, FAULT);
}
