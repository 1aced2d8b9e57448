// A whole decoded token step in one dispatch: one workgroup per sample
// (256 invocations) runs the step's ops one after another — the blocks'
// GEMVs (LayerNorm prologue, bias, GELU, residual add), their attention
// for every head in turn, and the head — with a barrier between ops, so no
// op needs another workgroup's results and the step pays one dispatch
// instead of five a layer. A GPU's dispatch and the barrier after it cost
// more than a small model's whole layer (BENCHMARKS.md, "The launch
// floor"); one workgroup streams the weights more slowly than the whole
// GPU, so this layout pays off only where a layer is small, and the
// decoder's speed check picks it (decode/layout.rs).
//
// The ops are the multi-dispatch kernels' own code: gemv_lanes.wgsl and
// gemv_row.wgsl for the GEMVs (each group of 8 columns computed as the
// workgroup of gemv.wgsl owning it computes it), attention_decode_body.wgsl
// for the attention (`attend`, as attention_decode.wgsl's workgroup of
// that head runs it), the lanes' and reductions' sums of lanes_wg/sg.wgsl
// and reduce_wg/sg.wgsl: every sum in the same order, so a token's logits
// are the `Fused` layout's bit for bit (tested).
//
// Every row lives in one buffer (`a` and `c` alias it: x | qkv | atty |
// fch | logits, each `batch` rows), `qkv` and `out` bind its qkv and atty
// regions; the caches hold every layer's block (`kv_off`). The step's
// first op copies the input row the embedding or the previous pick wrote
// (`x_in`, a buffer of its own: the pick reads the logits here) into x.

// The union of gemv.wgsl's and attention_decode.wgsl's params, and the op.
struct Params {
    kind: u32,
    k: u32,
    n: u32,
    flags: u32,
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
    ln_w_off: u32,
    ln_b_off: u32,
    groups: u32,
    sg: u32,
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    scale: f32,
    kv_off: u32,
}

// Op kinds.
const OP_COPY: u32 = 0u;
const OP_GEMV: u32 = 1u;
const OP_GEMV_LN: u32 = 2u;
const OP_ATTENTION: u32 = 3u;

@group(0) @binding(0) var<storage, read> ops: array<Params>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> c: array<f32>;
// Binding 5 is gemv_row.wgsl's `lnp`.
@group(0) @binding(6) var<uniform> pos: vec4<u32>;
@group(0) @binding(7) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(8) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(9) var<storage, read_write> v_cache: array<f32>;
@group(0) @binding(10) var<storage, read_write> out: array<f32>;
@group(0) @binding(11) var<storage, read> x_in: array<f32>;

// The op running (the same in every invocation).
var<private> p: Params;

// x (C from c_off) = x_in's row z.
fn copy_row(z: u32, t: u32) {
    for (var i = t; i < p.n; i += 256u) {
        c[p.c_off + z * p.n + i] = x_in[z * p.n + i];
    }
}

// Every column of the GEMV, 8 at a time: column g·8 + y as gemv.wgsl's
// `main` computes it in its workgroup g.
fn gemv_all(z: u32, lid: vec3<u32>) {
    set_row(vec3<u32>(0u, 0u, z));
    let groups = (p.n + COLS - 1u) / COLS;
    for (var g = 0u; g < groups; g++) {
        let col = g * COLS + lid.y;
        finish_lanes(lid, col, lane_dot(row_of(col), lid.x));
        // The lanes' tree has read `red` before the next group's lanes write it.
        workgroupBarrier();
    }
}

// The same with the LayerNorm prologue (gemv.wgsl's `main_ln`, one
// workgroup holding every group).
fn gemv_ln_all(z: u32, lid: vec3<u32>) {
    set_row(vec3<u32>(0u, 0u, z));
    let t = lid.y * LANES + lid.x;
    let st = ln_stats(t);
    let groups = (p.n + COLS - 1u) / COLS;
    for (var g = 0u; g < groups; g++) {
        let col = g * COLS + lid.y;
        finish_lanes(lid, col, lane_dot_ln(row_of(col), t, lid.x, st));
        workgroupBarrier();
    }
}

@compute @workgroup_size(32, 8)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let z = wg.x;
    let t = lid.y * LANES + lid.x;
    let count = arrayLength(&ops);
    for (var i = 0u; i < count; i++) {
        p = ops[i];
        switch p.kind {
            case OP_COPY: {
                copy_row(z, t);
            }
            case OP_GEMV: {
                gemv_all(z, lid);
            }
            case OP_GEMV_LN: {
                gemv_ln_all(z, lid);
            }
            default: {
                for (var h = 0u; h < p.nh; h++) {
                    attend(vec2<u32>(h, z), t);
                    // The next head's query and weights reuse the
                    // workgroup's memory.
                    workgroupBarrier();
                }
            }
        }
        // What this op wrote is what the next reads.
        storageBarrier();
        workgroupBarrier();
    }
}
