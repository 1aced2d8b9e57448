// What the picks (argmax.wgsl, sample_pick.wgsl) do after picking, so that
// the next step of a chain needs no embedding dispatch: workgroup b writes
// row b of the next step's residual x as tok_emb[pick] + pos_emb[P + 1],
// the expression embedding.wgsl's forward_decode evaluates (the same bits).
// Nothing is written when P + 1 is past the model's context (no next step
// in this cache).
//
// Appended to the pick's source; the pick runs 256 invocations per
// workgroup (PICK_WG; a caller's workgroup may have more) and calls
// `write_next_input` from every invocation (a barrier) once its pick is
// made, or `write_input_row` where every invocation knows the pick.

struct NextInput {
    c: u32,
    // tok_emb (V, C) and pos_emb (T_max, C) in `emb` (the flat parameters).
    tok_off: u32,
    pos_off: u32,
    t_max: u32,
}

@group(0) @binding(8) var<uniform> next_in: NextInput;
@group(0) @binding(9) var<storage, read> emb: array<f32>;
// The decoder's residual rows x (C per sample).
@group(0) @binding(10) var<storage, read_write> next_x: array<f32>;

var<workgroup> next_token: u32;

// Invocation 0's `tok` (the others' is ignored) embedded at position
// `next_p` into row `b` of next_x.
fn write_next_input(t: u32, b: u32, tok: u32, next_p: u32) {
    if (t == 0u) {
        next_token = tok;
    }
    workgroupBarrier();
    write_input_row(t, b, next_token, next_p);
}

// `tok`, the same in every invocation, embedded at position `next_p` into
// row `b` of next_x (no barrier).
fn write_input_row(t: u32, b: u32, tok: u32, next_p: u32) {
    if (next_p < next_in.t_max && t < PICK_WG) {
        let c = next_in.c;
        for (var ch = t; ch < c; ch += PICK_WG) {
            next_x[b * c + ch] = emb[next_in.tok_off + tok * c + ch] + emb[next_in.pos_off + next_p * c + ch];
        }
    }
}
