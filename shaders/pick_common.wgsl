// What the picks (argmax.wgsl, sample_pick.wgsl) share wherever they run:
// on their own over rows of logits in storage (pick_logits.wgsl), or in
// the decoder's head kernel right after the logits it computes
// (decode_head.wgsl). Each pick is a function `pick(t, b, nb, v)` that
// every invocation of a 256-invocation workgroup calls for row b of nb,
// reading the row's V logits through the kernel's `logit(i)`; it writes
// the next step's input row too (pick_next_input.wgsl, appended after
// it). Here: the bindings of the position, the token, the records and the
// next position, and what both picks need of a logit.

// x: the position P of the token whose successor is picked; y, z, w unused.
@group(0) @binding(11) var<uniform> pos: vec4<u32>;
// The decoder's input token per row (the embedding reads it).
@group(0) @binding(12) var<storage, read_write> token: array<u32>;
// picks[P·B + b] = (token, index of the first non-finite logit or NONE,
// its bits, 0).
@group(0) @binding(13) var<storage, read_write> picks: array<vec4<u32>>;
// The next step's position (x = P + 1), read as `pos` by that step.
@group(0) @binding(14) var<storage, read_write> next_pos: array<u32>;

const NONE: u32 = 0xffffffffu;

// Not ±inf or NaN, from the bits (a compiler may assume float comparisons
// never see them).
fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}
