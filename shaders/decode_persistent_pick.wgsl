// decode_persistent.wgsl's entry point with the pick: after its logits,
// each sample's workgroup picks from them (the pick appended after this
// file, argmax.wgsl or sample_pick.wgsl, after pick_common.wgsl, which
// binds the position `pos`; then pick_next_input.wgsl) — the token, the
// record, the next position and the next step's input row, as the pick's
// own dispatch would write them: one dispatch a token.

@group(0) @binding(17) var<storage, read_write> logits: array<f32>;

// Logit i of this workgroup's row, written by `decode_token` (a
// storageBarrier first).
fn logit(i: u32) -> f32 {
    return logits[row * p.v + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    decode_token(t, wg.y, nwg.y);
    storageBarrier();
    workgroupBarrier();
    pick(t, wg.y, nwg.y, p.v);
}
