// Token + position embedding: y (N, C) = tok_emb[inputs[n]] + pos_emb[pos(n)].
//
// `forward` (training and prefill): pos(n) = n % T.
// `forward_decode` (KV-cache sampling): pos(n) = p + n % T, where p is the
// decode-position uniform shared with the attention decode kernels, so one
// 4-byte write per token moves every kernel of the step.
//
// Every operand carries an element offset: the tables are views into the
// flat parameter buffer. One invocation per output element.

struct Params {
    n: u32,          // rows N = B·T
    t: u32,          // T: row n sits at position n % T (plus p when decoding)
    c: u32,          // channels C
    inputs_off: u32,
    tok_off: u32,    // tok_emb (V, C)
    pos_off: u32,    // pos_emb (T_max, C)
    y_off: u32,      // y (N, C)
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> inputs: array<u32>;
@group(0) @binding(2) var<storage, read> tok_emb: array<f32>;
@group(0) @binding(3) var<storage, read> pos_emb: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
// Decode position in x (see ops::attention::decode_position_buffer).
@group(0) @binding(5) var<uniform> decode_pos: vec4<u32>;

const WG: u32 = 256u;

fn embed(i: u32, first_pos: u32) {
    let row = i / p.c;
    let ch = i % p.c;
    let tok = inputs[p.inputs_off + row];
    let pos = first_pos + row % p.t;
    y[p.y_off + i] = tok_emb[p.tok_off + tok * p.c + ch] + pos_emb[p.pos_off + pos * p.c + ch];
}

@compute @workgroup_size(256)
fn forward(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid;
    if (i < p.n * p.c) {
        embed(i, 0u);
    }
}

@compute @workgroup_size(256)
fn forward_decode(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid;
    if (i < p.n * p.c) {
        embed(i, decode_pos.x);
    }
}
