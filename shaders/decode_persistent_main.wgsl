// decode_persistent.wgsl's entry point on its own: the logits written, the
// pick a dispatch of its own (pick_logits.wgsl). Appended last.

// x: the token's position P; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(8) var<storage, read_write> logits: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    decode_token(t, wg.y, nwg.y);
}
