// The decoder's final LayerNorm, tied head and pick in one dispatch: the
// `Fused` layout's token step ends with one kernel instead of two (the
// head GEMV with the LayerNorm folded, gemv.wgsl `main_ln`, then the pick).
// A pick needs its whole row of logits, which no GEMV workgroup has; so
// workgroup b computes sample b's V logits itself (decode_columns.wgsl:
// the GEMV's bits), writes them to the logits rows as the head GEMV does,
// and runs the pick appended after this file (argmax.wgsl or
// sample_pick.wgsl) over them, read back through `logit`: the token, the
// record, the next position and the next step's input row — into the
// residual row the step did not read (the decoder keeps two).
//
// Workgroups: (B). Appended to gemv.wgsl's source (the head is always f32)
// after decode_columns.wgsl and decode_columns_f32.wgsl, before
// pick_common.wgsl, the pick and pick_next_input.wgsl.

// Column j: the vocabulary's row j of tok_emb.
fn column_of(j: u32) -> u32 {
    return j;
}

// Logit j, as the head GEMV writes it (`finish_col` with no bias, no
// GELU, no accumulate; written here so that the kernel binds no bias).
fn put_column(j: u32, s: f32) {
    c[c_row + j] = s;
}

// Logit i of this workgroup's row, written above (storageBarrier first).
fn logit(i: u32) -> f32 {
    return c[c_row + i];
}

@compute @workgroup_size(256)
fn head_pick(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    set_row(vec3<u32>(0u, 0u, wg.x));
    stage_row(tid);
    columns(p.n, tid);
    storageBarrier();
    workgroupBarrier();
    pick(tid, wg.x, nwg.x, p.n);
}
