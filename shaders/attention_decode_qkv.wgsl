// One head's first LayerNorm, QKV GEMV and attention of a decoded token in
// one dispatch: the `Fused` decoder layout (model/decode/rows.rs), one
// dispatch a layer and token fewer than the LayerNorm-prologue QKV GEMV
// followed by the decode attention (attention_decode.wgsl's `main`). A
// head's attention reads only its own q, k and v — 3·HS of the QKV row's
// 3C columns — so workgroup (h, b) computes those columns itself and needs
// no other workgroup's result (WGSL cannot order memory across the
// workgroups of one dispatch).
//
// The same bits as those two kernels, by construction:
//   - the row's mean and 1/σ are gemv_row.wgsl's `ln_stats`, each input
//     normalised by its `ln_x`, all K of them staged once in `xn`;
//   - each column's dot product is summed exactly as the GEMV's
//     LayerNorm-prologue form sums it (`lane_dots`: decode_qkv_f32.wgsl for
//     gemv.wgsl's `lane_dot_ln`, decode_qkv_f16w.wgsl for gemv_f16w.wgsl's
//     `lane_dot_quads_ln`), then lanes_wg.wgsl's tree adds the 32 lanes with
//     the GEMV's `lane_add`; + bias;
//   - q (scaled), k and v go where the attention's append puts them, and
//     attention_decode_common.wgsl's `attend` runs as in `main`.
// Only who computes what changes: the 256 threads are 8 column slots × 32
// lanes, and each thread carries four columns (slot + 8c, c < 4) at once,
// so that a lane has four columns' weight loads in flight where the GEMV
// has one's. tests/decode_qkv.rs holds it to the two kernels' bits.
//
// Workgroups: (NH, B), as the decode attention. Appended to the GEMV's
// whole source (gemv.wgsl or the f16-storage kernels, with gemv_row.wgsl,
// ln_sum.wgsl, lanes_wg.wgsl and erf.wgsl: the params `p`, bindings 0–7),
// with the storage's `lane_dots`, attention_decode_common.wgsl and
// reduce_wg.wgsl or reduce_sg.wgsl. The host binds it only where C ≤ XN_MAX.

@group(0) @binding(10) var<uniform> ap: DecodeParams;
// x: the query's position P; y, z, w unused.
@group(0) @binding(11) var<uniform> pos: vec4<u32>;
@group(0) @binding(12) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(13) var<storage, read_write> v_cache: array<f32>;
// The attention's output rows (C per sample).
@group(0) @binding(14) var<storage, read_write> out: array<f32>;

// Column slots of 32 lanes, and the columns a thread carries at once.
const SLOTS: u32 = 8u;
const CARRY: u32 = 4u;
// Inputs the workgroup stages (the host's limit on C).
const XN_MAX: u32 = 1024u;

// The LayerNorm's output row.
var<workgroup> xn: array<f32, XN_MAX>;

// Head h's column j of the QKV linear (q: j < HS, then k, then v): its
// column of W (3C, C); a column past 3·HS is the last one's (computed, and
// written nowhere).
fn head_col(h: u32, j: u32) -> u32 {
    let jj = min(j, 3u * ap.hs - 1u);
    return (jj / ap.hs) * ap.c + h * ap.hs + jj % ap.hs;
}

// Puts head h's column j (its dot product `dot`, + bias) where the decode
// attention's append puts it: q scaled into q_sh, k and v into the caches
// at position `last`.
fn put_column(h: u32, j: u32, dot: f32, base: u32, last: u32) {
    let part = j / ap.hs;
    let d = j % ap.hs;
    var v = dot;
    if ((p.flags & HAS_BIAS) != 0u) {
        v += bias[p.bias_off + head_col(h, j)];
    }
    if (part == 0u) {
        q_sh[d] = v * ap.scale;
    } else if (part == 1u) {
        k_cache[base + d * ap.t_max + last] = v;
    } else {
        v_cache[base + last * ap.hs + d] = v;
    }
}

@compute @workgroup_size(256)
fn qkv_attention(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let h = wg.x;
    set_row(vec3<u32>(0u, 0u, wg.y));
    let st = ln_stats(tid);
    for (var k = tid; k < p.k; k += WG) {
        xn[k] = ln_x(k, st);
    }
    let base = (wg.y * ap.nh + h) * ap.t_max * ap.hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, ap.t_max - 1u);
    let lane = tid % LANES;
    let slot = tid / LANES;
    let cols = 3u * ap.hs;
    for (var j0 = 0u; j0 < cols; j0 += SLOTS * CARRY) {
        // The staged row is written, and the last round's trees have read
        // `red`.
        workgroupBarrier();
        let j = j0 + slot;
        let c4 = vec4<u32>(head_col(h, j), head_col(h, j + SLOTS), head_col(h, j + 2u * SLOTS), head_col(h, j + 3u * SLOTS));
        let dots = lane_dots(c4, lane);
        for (var c = 0u; c < CARRY; c++) {
            red[tid] = dots[c];
            workgroupBarrier();
            let jc = j + c * SLOTS;
            if (lane == 0u && jc < cols) {
                put_column(h, jc, lane_tree(slot * LANES), base, last);
            }
            workgroupBarrier();
        }
    }
    storageBarrier();
    workgroupBarrier();
    attend(base, last, ap.c * wg.y + h * ap.hs, tid);
}
