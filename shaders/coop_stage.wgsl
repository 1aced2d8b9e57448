// Stages one operand of the cooperative-matrix matmul (matmul_coop.wgsl)
// as f16: op(A) as [M′][K′] and op(B) as [K′][N′] row-major (M′ a multiple
// of 64, K′ of 16, N′ of 128), each element rounded to f16 by the device's
// f32 → f16 conversion, zero outside the matrix, so the matmul's
// cooperative loads never leave their operand. With the SCALED flag op(A)
// is multiplied by a power of two first (k_chunk holds it as f32 bits) —
// gradients near 1/(B·T) would otherwise sit in f16's subnormals — and the
// matmul divides it out of C (matmul_coop.wgsl). op_a / op_b and the
// Params uniform are matmul_common.wgsl's (appended).

enable f16;

// Flag bit of the Params: op(A) staged times bitcast<f32>(p.k_chunk), C
// times bitcast<f32>(p.slices) (its inverse; both powers of two).
const SCALED: u32 = 32u;

@group(0) @binding(5) var<storage, read_write> staged: array<f16>;

fn padded(x: u32, to: u32) -> u32 {
    return (x + to - 1u) / to * to;
}

// One invocation per staged element, rows of the grid's x × 64.
@compute @workgroup_size(64)
fn stage_a(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let kp = padded(p.k, 16u);
    let i = gid.y * nwg.x * 64u + gid.x;
    if (i >= padded(p.m, 64u) * kp) {
        return;
    }
    var v = op_a(i / kp, i % kp);
    if ((p.flags & SCALED) != 0u) {
        v *= bitcast<f32>(p.k_chunk);
    }
    staged[i] = f16(v);
}

@compute @workgroup_size(64)
fn stage_b(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let np = padded(p.n, 128u);
    let i = gid.y * nwg.x * 64u + gid.x;
    if (i >= padded(p.k, 16u) * np) {
        return;
    }
    staged[i] = f16(op_b(i / np, i % np));
}
