// Stages one operand of the cooperative-matrix matmul (matmul_coop*.wgsl)
// as f16: op(A) as [M′][K′] and op(B) as [K′][N′] row-major (M′ a multiple
// of PAD_M, K′ of PAD_K, N′ of PAD_N: coop_pad.wgsl, appended), each
// element rounded to f16 by the device's f32 → f16 conversion, zero
// outside the matrix, so the matmul's loads never leave their operand.
// With the SCALED flag op(A) is multiplied by a power of two first (k_chunk
// holds it as f32 bits) — gradients near 1/(B·T) would otherwise sit in
// f16's subnormals — and the matmul multiplies C back. op_a / op_b and the
// Params uniform are matmul_common.wgsl's (appended).

enable f16;

@group(0) @binding(5) var<storage, read_write> staged: array<f16>;
// The same buffer four halves at a time (the element-wise entry points).
@group(0) @binding(7) var<storage, read_write> staged4: array<vec4<f16>>;

// Element-wise: 256 invocations stage 2,048 consecutive elements, four
// consecutive ones of a row (K′ and N′ are multiples of 4) as one 8-byte
// write, twice, at a stride of 256 quads (one element per invocation
// launched so many small workgroups that their scheduling, not memory, set
// the time: 145 µs a call at nanogpt's shapes; one f16 write per element
// measured 42); workgroups in rows of the grid's x.
const PER_GROUP: u32 = 2048u;

@compute @workgroup_size(256)
fn stage_a(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let kp = padded(p.k, PAD_K);
    let end = padded(p.m, PAD_M) * kp / 4u;
    var scale = 1.0;
    if ((p.flags & SCALED) != 0u) {
        scale = bitcast<f32>(p.k_chunk);
    }
    let base = (wg.y * nwg.x + wg.x) * (PER_GROUP / 4u) + t;
    for (var q = base; q < min(base + PER_GROUP / 4u, end); q += 256u) {
        let r = q * 4u / kp;
        let k = q * 4u % kp;
        let v = vec4(op_a(r, k), op_a(r, k + 1u), op_a(r, k + 2u), op_a(r, k + 3u));
        staged4[q] = vec4<f16>(v * scale);
    }
}

@compute @workgroup_size(256)
fn stage_b(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let np = padded(p.n, PAD_N);
    let end = padded(p.k, PAD_K) * np / 4u;
    let base = (wg.y * nwg.x + wg.x) * (PER_GROUP / 4u) + t;
    for (var q = base; q < min(base + PER_GROUP / 4u, end); q += 256u) {
        let k = q * 4u / np;
        let n = q * 4u % np;
        let v = vec4(op_b(k, n), op_b(k, n + 1u), op_b(k, n + 2u), op_b(k, n + 3u));
        staged4[q] = vec4<f16>(v);
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
    let kp = padded(p.k, PAD_K);
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
    let np = padded(p.n, PAD_N);
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
