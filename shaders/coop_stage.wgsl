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

// Element-wise: 256 invocations stage 2,048 consecutive elements, eight
// each at a stride of 256 (one element per invocation launched so many
// small workgroups that their scheduling, not memory, set the time:
// 145 µs a call at nanogpt's shapes); workgroups in rows of the grid's x.
const PER_GROUP: u32 = 2048u;

@compute @workgroup_size(256)
fn stage_a(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let kp = padded(p.k, 16u);
    let end = padded(p.m, 64u) * kp;
    var scale = 1.0;
    if ((p.flags & SCALED) != 0u) {
        scale = bitcast<f32>(p.k_chunk);
    }
    let base = (wg.y * nwg.x + wg.x) * PER_GROUP + t;
    for (var i = base; i < min(base + PER_GROUP, end); i += 256u) {
        staged[i] = f16(op_a(i / kp, i % kp) * scale);
    }
}

@compute @workgroup_size(256)
fn stage_b(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let np = padded(p.n, 128u);
    let end = padded(p.k, 16u) * np;
    let base = (wg.y * nwg.x + wg.x) * PER_GROUP + t;
    for (var i = base; i < min(base + PER_GROUP, end); i += 256u) {
        staged[i] = f16(op_b(i / np, i % np));
    }
}

// The transposed operands, through a tile of workgroup memory so that both
// the reads and the writes are contiguous (the element-wise entry points
// above read op(A)ᵀ / op(B)ᵀ with a stride of a whole row): `stage_a_t`
// for TRANS_A, 32 rows × 16 K of the staged A per workgroup (the grid's
// x × y); `stage_b_t` for TRANS_B, 16 K × 32 columns of the staged B.
var<workgroup> tile: array<f32, 544>; // 32 × 17 (A: 16 × 33)

@compute @workgroup_size(256)
fn stage_a_t(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let kp = padded(p.k, 16u);
    let r0 = wg.x * 32u;
    let k0 = wg.y * 16u;
    var scale = 1.0;
    if ((p.flags & SCALED) != 0u) {
        scale = bitcast<f32>(p.k_chunk);
    }
    // Reads: consecutive invocations, consecutive rows (op(A)ᵀ's storage).
    for (var k = t / 32u; k < 16u; k += 8u) {
        tile[k * 33u + t % 32u] = op_a(r0 + t % 32u, k0 + k) * scale;
    }
    workgroupBarrier();
    // Writes: consecutive invocations, consecutive K of a staged row.
    for (var r = t / 16u; r < 32u; r += 16u) {
        staged[(r0 + r) * kp + k0 + t % 16u] = f16(tile[(t % 16u) * 33u + r]);
    }
}

@compute @workgroup_size(256)
fn stage_b_t(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let np = padded(p.n, 128u);
    let n0 = wg.x * 32u;
    let k0 = wg.y * 16u;
    // Reads: consecutive invocations, consecutive K (op(B)ᵀ's storage).
    for (var n = t / 16u; n < 32u; n += 16u) {
        tile[n * 17u + t % 16u] = op_b(k0 + t % 16u, n0 + n);
    }
    workgroupBarrier();
    // Writes: consecutive invocations, consecutive columns of a staged row.
    for (var k = t / 32u; k < 16u; k += 8u) {
        staged[(k0 + k) * np + n0 + t % 32u] = f16(tile[(t % 32u) * 17u + k]);
    }
}
