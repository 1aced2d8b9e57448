
// What the cooperative-matrix kernels (matmul_coop.wgsl,
// matmul_coop_tiled.wgsl) share, appended to each (erf.wgsl after it): the
// fault override and the epilogue, which takes each 16×16 f32 accumulator
// through the subgroup's slice of a workgroup scratch for the scale, the
// bias, the accumulation, the bounds and (EPILOGUE 1) a GELU: C is a
// linear's output and, with the AUX32 flag, GELU(C) goes to `aux` (C's
// shape, from p.aux_off), and with the COPY16 flag its f16 copy to `aux16`
// as the next product
// stages its op(A) (copy16.wgsl's layout: row · K′ + col, K′ = N padded to
// PAD_K, four halves a write; the rows past C are the buffer's zeros). EPILOGUE is
// a pipeline constant, so a plain product's kernel carries no GELU code.
// Under DIRECT (below) a plain product's tiles inside C skip the scratch.

override EPILOGUE: u32 = 0u;

const COPY16: u32 = 256u;
const AUX32: u32 = 512u;

@group(0) @binding(8) var<storage, read_write> aux: array<f32>;
@group(0) @binding(9) var<storage, read_write> aux16: array<vec4<f16>>;

// Test-only (ops/matmul/fault.rs): 2 skips the last PAD_K-wide block of K
// (which always holds some of the real K).
override FAULT: u32 = 0u;

// Each subgroup's 16 × 16 slice of the scratch, its rows SS floats apart:
// at 20 (80 bytes) the lanes of a cooperative store of an accumulator
// fall on different banks (at 16, four of them shared one).
const SS: u32 = 20u;
var<workgroup> scratch: array<f32, 2560>; // up to 8 subgroups × 16 × SS

// Stores the accumulator `t` of subgroup `sg` at (r0, c0) of C; `slice`:
// the offset of this workgroup's K slice's (M, N) partial product (0
// unsplit). A tile store_direct can take goes straight to C; otherwise
// each subgroup passes its tiles through its own slice of the
// scratch, so only its own lanes wait for each other (subgroupBarrier: a
// 16×16 tile a workgroup barrier pair cost the nanoGPT linears, whose 12
// K blocks take 24, 16 more).
fn store_tile(t: coop_mat16x16<f32, C>, sg: u32, lane: u32, r0: u32, c0: u32, slice: u32) {
    store_tile_with(t, sg, lane, r0, c0, slice, column_bias(sg, lane, c0));
}

// store_tile with the bias tile of its columns (`column_bias`) at hand: a
// kernel that stores a column of tiles loads it once for all of them.
fn store_tile_with(
    t: coop_mat16x16<f32, C>, sg: u32, lane: u32, r0: u32, c0: u32, slice: u32,
    b: coop_mat16x16<f32, C>,
) {
    if (stores_direct(r0, c0, slice)) {
        store_direct(t, r0, c0, slice, b);
        return;
    }
    let base = sg * 16u * SS;
    coopStoreT(t, &scratch[base], SS);
    subgroupBarrier();
    for (var i = lane; i < 256u; i += 32u) {
        let row = r0 + i / 16u;
        let col = c0 + i % 16u;
        let at = base + (i / 16u) * SS + i % 16u;
        if (row < p.m && col < p.n) {
            var v = scratch[at];
            if ((p.flags & SCALED) != 0u) {
                v *= bitcast<f32>(p.slices);
            }
            if ((p.flags & HAS_BIAS) != 0u) {
                v += bias[p.bias_off + col];
            }
            let e = row * p.n + col;
            let o = p.c_off + slice + e;
            if ((p.flags & ACCUMULATE) != 0u) {
                v += c[o];
            }
            c[o] = v;
            if (EPILOGUE == 1u) {
                let g = gelu_f32(v);
                if ((p.flags & AUX32) != 0u) {
                    aux[p.aux_off + e] = g;
                }
                scratch[at] = g;
            }
        }
    }
    subgroupBarrier();
    if (EPILOGUE == 1u && (p.flags & COPY16) != 0u) {
        copy_gelu_tile(base, lane, r0, c0);
    }
}

// DIRECT (a pipeline constant): the tiles inside C leave straight from
// their accumulators (store_direct); else every tile goes through the
// scratch. Runs 128 and 129 (BENCHMARKS.md): it took `tiled-tall-ahead2`
// at 4096³ from 149 to 170 TFLOP/s and `tiled-ahead3` from 148 to 102
// (its three blocks ahead fill its registers; without the bias tile, 101
// and a slower step), and the weight gradients' A_KM pipelines slowed the
// step, so those two keep the scratch.
override DIRECT: bool = false;

// Whether the tile at (r0, c0) goes straight from its accumulator to C:
// no GELU, the whole tile inside C, and C's rows at 16-byte alignment (a
// cooperative-matrix store's pointer and stride must be). Else the
// scratch's element-by-element path above.
fn stores_direct(r0: u32, c0: u32, slice: u32) -> bool {
    let aligned = p.n % 4u == 0u && (p.c_off + slice) % 4u == 0u;
    return DIRECT && EPILOGUE == 0u && r0 + 16u <= p.m && c0 + 16u <= p.n && aligned;
}

// The tile's scale, bias (`b`, column_bias') and accumulation as
// cooperative-matrix arithmetic (element by element, in store_tile's
// order: the same bits), then one store: no scratch, no barriers.
fn store_direct(t: coop_mat16x16<f32, C>, r0: u32, c0: u32, slice: u32, b: coop_mat16x16<f32, C>) {
    var v = t;
    if ((p.flags & SCALED) != 0u) {
        v = v * bitcast<f32>(p.slices);
    }
    if ((p.flags & HAS_BIAS) != 0u) {
        v = v + b;
    }
    // (The stride a `let` used before the store: naga 30's SPIR-V writer
    // fails on a uniform read first met as a store's argument.)
    let ld = p.n;
    let o = p.c_off + slice + r0 * ld + c0;
    if ((p.flags & ACCUMULATE) != 0u) {
        v = v + coopLoadT<coop_mat16x16<f32, C>>(&c[o], ld);
    }
    coopStoreT(v, &c[o], ld);
}

// The bias tile store_direct adds to the tiles of columns c0 … c0 + 15
// (zero where none of them can take that path or there is no bias).
// Every lane of the subgroup calls it (its barriers).
fn column_bias(sg: u32, lane: u32, c0: u32) -> coop_mat16x16<f32, C> {
    if (DIRECT && EPILOGUE == 0u && (p.flags & HAS_BIAS) != 0u && c0 + 16u <= p.n) {
        return bias_tile(sg * 16u * SS, lane, c0);
    }
    return coop_mat16x16<f32, C>();
}

// Columns c0 … c0 + 15 of the bias in each of 16 rows, through the
// subgroup's scratch slice at `base`.
fn bias_tile(base: u32, lane: u32, c0: u32) -> coop_mat16x16<f32, C> {
    for (var i = lane; i < 256u; i += 32u) {
        scratch[base + (i / 16u) * SS + i % 16u] = bias[p.bias_off + c0 + i % 16u];
    }
    subgroupBarrier();
    let b = coopLoadT<coop_mat16x16<f32, C>>(&scratch[base], SS);
    subgroupBarrier();
    return b;
}

// GELU(C)'s f16 copy of one 16×16 tile from the subgroup's scratch slice
// (where store_tile left the GELU of each element of C): four halves a
// write, zero past C's columns; then the slice is free again.
fn copy_gelu_tile(base: u32, lane: u32, r0: u32, c0: u32) {
    let kp = padded(p.n, PAD_K);
    for (var q = lane; q < 64u; q += 32u) {
        let row = r0 + q / 4u;
        let col = c0 + (q % 4u) * 4u;
        if (row < p.m && col < p.n) {
            let s = base + (q / 4u) * SS + (q % 4u) * 4u;
            let g = vec4(scratch[s], scratch[s + 1u], scratch[s + 2u], scratch[s + 3u]);
            let inside = vec4(col, col + 1u, col + 2u, col + 3u) < vec4(p.n);
            aux16[(row * kp + col) / 4u] = vec4<f16>(select(vec4(0.0), g, inside));
        }
    }
    subgroupBarrier();
}

// This workgroup's K range [begin, end) — its slice of whole PAD_K-wide
// blocks when split along K (workgroup z of num_workgroups.z; reduce_slices
// adds the slices' products), less the last block under the droptail
// fault — and the offset of its partial product.
fn k_range(lda: u32, wgz: u32, nz: u32) -> vec3<u32> {
    let per_slice = (lda / PAD_K + nz - 1u) / nz * PAD_K;
    let begin = wgz * per_slice;
    let last = select(lda, lda - PAD_K, FAULT == 2u && lda > PAD_K);
    return vec3<u32>(begin, min(begin + per_slice, last), wgz * p.m * p.n);
}
