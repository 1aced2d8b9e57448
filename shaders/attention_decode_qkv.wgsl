// One head's first LayerNorm, QKV GEMV and attention of a decoded token in
// one dispatch: the `Fused` decoder layout (model/decode/rows.rs), one
// dispatch a layer and token fewer than the LayerNorm-prologue QKV GEMV
// followed by the decode attention (attention_decode.wgsl's `main`). A
// head's attention reads only its own q, k and v — 3·HS of the QKV row's
// 3C columns — so workgroup (h, b) computes those columns itself
// (decode_columns.wgsl: the GEMV's bits) and puts each where the
// attention's append puts it — q scaled, k and v into the caches — then
// attention_decode_common.wgsl's `attend` runs as in `main`: the bits of
// the two kernels. tests/decode_qkv.rs holds it to them.
//
// Workgroups: (NH, B), as the decode attention. Appended after
// decode_columns.wgsl and the storage's `lane_dots`, before
// attention_decode_common.wgsl and reduce_wg.wgsl or reduce_sg.wgsl.

@group(0) @binding(20) var<uniform> ap: DecodeParams;
// x: the query's position P; y, z, w unused.
@group(0) @binding(21) var<uniform> pos: vec4<u32>;
@group(0) @binding(22) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(23) var<storage, read_write> v_cache: array<f32>;
// The attention's output rows (C per sample).
@group(0) @binding(24) var<storage, read_write> out: array<f32>;

// `attend`'s output: the output rows.
fn put_out(at: u32, d: u32, v: f32) {
    out[at] = v;
}

// The workgroup's head, where its caches start and the position appended.
var<private> head: u32;
var<private> cache_base: u32;
var<private> cache_last: u32;

// The head's column j of the QKV linear (q: j < HS, then k, then v).
fn column_of(j: u32) -> u32 {
    return (j / ap.hs) * ap.c + head * ap.hs + j % ap.hs;
}

// Column j's sum, + bias, where the decode attention's append puts it.
fn put_column(j: u32, s: f32) {
    let part = j / ap.hs;
    let d = j % ap.hs;
    var v = s;
    if ((p.flags & HAS_BIAS) != 0u) {
        v += bias[p.bias_off + column_of(j)];
    }
    if (part == 0u) {
        q_sh[d] = v * ap.scale;
    } else if (part == 1u) {
        k_cache[cache_base + d * ap.t_max + cache_last] = v;
        k_new[d] = v;
    } else {
        v_cache[cache_base + cache_last * ap.hs + d] = v;
        v_new[d] = v;
    }
}

@compute @workgroup_size(256)
fn qkv_attention(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    head = wg.x;
    cache_base = (wg.y * ap.nh + head) * ap.t_max * ap.hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    // `attend` loops to `last` around barriers: it gets the uniform value,
    // not the private copy (which WGSL's uniformity analysis, Tint's in
    // browsers, takes as non-uniform).
    let last = min(pos.x, ap.t_max - 1u);
    cache_last = last;
    set_row(vec3<u32>(0u, 0u, wg.y));
    stage_row(tid);
    columns(3u * ap.hs, tid);
    workgroupBarrier();
    attend(cache_base, last, ap.c * wg.y + head * ap.hs, tid);
}
