// What the three attention training kernels share (attention_fwd.wgsl,
// attention_bwd_dq.wgsl, attention_bwd_dkv.wgsl; appended to each by
// ops/attention/mod.rs): the guarded loads of a head's columns from `qkv`.

fn qkv_at(i: u32, ok: bool) -> f32 {
    if (ok) {
        return qkv[i];
    }
    return 0.0;
}

// Dims [d, d + 4) of the head row starting at `base`; zero past HS or for a
// row outside the sequence.
fn qkv4(base: u32, d: u32, live: bool) -> vec4<f32> {
    return vec4<f32>(
        qkv_at(base + d, live && d < p.hs),
        qkv_at(base + d + 1u, live && d + 1u < p.hs),
        qkv_at(base + d + 2u, live && d + 2u < p.hs),
        qkv_at(base + d + 3u, live && d + 3u < p.hs),
    );
}
