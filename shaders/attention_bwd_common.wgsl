// What the two attention backward kernels share (attention_bwd_dq.wgsl,
// attention_bwd_dkv.wgsl; appended to both by ops/attention/mod.rs): the
// guarded loads of the output gradient, the guarded store into dqkv and a
// thread's scores.

fn dout_at(i: u32, ok: bool) -> f32 {
    if (ok) {
        return dout[i];
    }
    return 0.0;
}

fn dout4(base: u32, d: u32, live: bool) -> vec4<f32> {
    return vec4<f32>(
        dout_at(base + d, live && d < p.hs),
        dout_at(base + d + 1u, live && d + 1u < p.hs),
        dout_at(base + d + 2u, live && d + 2u < p.hs),
        dout_at(base + d + 3u, live && d + 3u < p.hs),
    );
}

// Dims [d, d + 4) of dqkv from `base`, those inside the head only.
fn store4(base: u32, d: u32, v: vec4<f32>) {
    if (d < p.hs) {
        dqkv[base + d] = v.x;
    }
    if (d + 1u < p.hs) {
        dqkv[base + d + 1u] = v.y;
    }
    if (d + 2u < p.hs) {
        dqkv[base + d + 2u] = v.z;
    }
    if (d + 3u < p.hs) {
        dqkv[base + d + 3u] = v.w;
    }
}

// One row's scores s = q_t·k_s and dp = dout_t·v_s against the thread's
// four keys (dQ) or queries (dK, dV: transposed).
struct Scores {
    s: vec4<f32>,
    dp: vec4<f32>,
}
