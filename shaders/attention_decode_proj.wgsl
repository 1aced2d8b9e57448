// A layer's decode attention (attention_decode.wgsl's `main`: the append,
// then attention_decode_common.wgsl's `attend`) with its head's share of
// the output projection after it, so that a decoded token needs no
// projection GEMV: the decoder's `Stack` layout (model/decode).
//
// The residual row after the attention is kept as a stack of NH + 1 slots
// (and a last one, NH + 1, where the fc projection's GEMV writes its
// output): slot 0 the residual row before the attention, slot h + 1 head
// h's share Σ_d y_h[d]·W[n, h·HS + d] of each output n (head 0's with the
// projection's bias added after). Every reader sums a row's slots in slot
// order (gemv_row.wgsl's `row_in`, this kernel's slot 0), so every reader
// sees the same row. Slot i of sample b's row starts at (i·B + b)·C.
//
// Workgroup (h, b): head h of sample b, 256 threads. After `attend` has
// left the head's HS outputs in workgroup memory, thread t computes
// outputs n = t, t + 256, … < C, each reading its HS weights of row n
// (contiguous) sixteen loads ahead, four partial sums, dims in order.
// Workgroup (0, b) also writes slot 0: the sum of the `src_slots` slots of
// `src` (the embedding row, one slot, or the previous layer's stack) in
// slot order. W is f32, or packed halves (the f16 weight cache, HALF_W):
// each product and sum in f32 either way.
//
// Appended before attention_decode_common.wgsl and reduce_wg.wgsl or
// reduce_sg.wgsl.

@group(0) @binding(0) var<uniform> ap: DecodeParams;
// x: the query's position P; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;
// This layer's stack: slots 0 ..= NH written here.
@group(0) @binding(5) var<storage, read_write> stack: array<f32>;

struct ProjParams {
    // Slots of `src` summed into slot 0.
    src_slots: u32,
    // W (C, C) at element w_off of `wp` (halves when HALF_W), its bias at
    // element b_off of `pb`.
    w_off: u32,
    b_off: u32,
    _pad: u32,
}

@group(0) @binding(6) var<uniform> pp: ProjParams;
@group(0) @binding(7) var<storage, read> src: array<f32>;
@group(0) @binding(8) var<storage, read> wp: array<u32>;
@group(0) @binding(9) var<storage, read> pb: array<f32>;

// W packed two halves to a word (the f16 weight cache), else f32 bits.
override HALF_W: bool = false;

var<workgroup> red: array<f32, 256>;
// The head's attention output.
var<workgroup> y_sh: array<f32, 128>;

// `attend`'s output: the head's dims, for the projection.
fn put_out(at: u32, d: u32, v: f32) {
    y_sh[d] = v;
}

// Element e of W's buffer.
fn w_at(e: u32) -> f32 {
    if (HALF_W) {
        let pair = unpack2x16float(wp[e >> 1u]);
        return select(pair.x, pair.y, (e & 1u) == 1u);
    }
    return bitcast<f32>(wp[e]);
}

fn w4(e: u32) -> vec4<f32> {
    return vec4<f32>(w_at(e), w_at(e + 1u), w_at(e + 2u), w_at(e + 3u));
}

fn y4(d: u32) -> vec4<f32> {
    return vec4<f32>(y_sh[d], y_sh[d + 1u], y_sh[d + 2u], y_sh[d + 3u]);
}

// Head h's share of output n: Σ_d y_h[d]·W[n, h·HS + d].
fn share(n: u32, h: u32) -> f32 {
    let hs = ap.hs;
    let row = pp.w_off + n * ap.c + h * hs;
    var acc = vec4<f32>(0.0);
    var d = 0u;
    for (; d + 16u <= hs; d += 16u) {
        let w0 = w4(row + d);
        let w1 = w4(row + d + 4u);
        let w2 = w4(row + d + 8u);
        let w3 = w4(row + d + 12u);
        acc = fma(y4(d), w0, acc);
        acc = fma(y4(d + 4u), w1, acc);
        acc = fma(y4(d + 8u), w2, acc);
        acc = fma(y4(d + 12u), w3, acc);
    }
    for (; d < hs; d++) {
        acc.x = fma(y_sh[d], w_at(row + d), acc.x);
    }
    return (acc.x + acc.y) + (acc.z + acc.w);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let h = wg.x;
    let b = wg.y;
    let hs = ap.hs;
    let c = ap.c;
    let base = (b * ap.nh + h) * ap.t_max * hs;
    let q = 3u * c * b + h * hs;
    // The host never sets P ≥ T_max; clamping keeps a stray value in bounds.
    let last = min(pos.x, ap.t_max - 1u);
    if (tid < hs) {
        q_sh[tid] = qkv[q + tid] * ap.scale;
        let k = qkv[q + c + tid];
        let v = qkv[q + 2u * c + tid];
        k_cache[base + tid * ap.t_max + last] = k;
        v_cache[base + last * hs + tid] = v;
        k_new[tid] = k;
        v_new[tid] = v;
    }
    workgroupBarrier();
    attend(base, last, 0u, tid);
    // The head's outputs are in y_sh.
    workgroupBarrier();
    let rows = nwg.y;
    let out = ((h + 1u) * rows + b) * c;
    for (var n = tid; n < c; n += WG) {
        var v = share(n, h);
        if (h == 0u) {
            v += pb[pp.b_off + n];
        }
        stack[out + n] = v;
    }
    if (h == 0u) {
        for (var n = tid; n < c; n += WG) {
            var v = src[b * c + n];
            for (var i = 1u; i < pp.src_slots; i++) {
                v += src[(i * rows + b) * c + n];
            }
            stack[b * c + n] = v;
        }
    }
}
