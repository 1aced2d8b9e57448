// The picks on their own (ops/argmax): rows of V logits in storage, one
// workgroup a row, each calling the pick appended after this file
// (argmax.wgsl or sample_pick.wgsl, with pick_common.wgsl and
// pick_next_input.wgsl).

// The first two words of either pick's params: V and the logits' offset.
struct LogitRows {
    v: u32,
    logits_off: u32,
}

@group(0) @binding(0) var<uniform> rows_p: LogitRows;
@group(0) @binding(2) var<storage, read> logits: array<f32>;

// Where this workgroup's row of logits starts.
var<private> logits_row: u32;

fn logit(i: u32) -> f32 {
    return logits[logits_row + i];
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    logits_row = rows_p.logits_off + wg.x * rows_p.v;
    pick(t, wg.x, nwg.x, rows_p.v);
}
