// The dropout masks' hash, appended to the source of every kernel that
// drops (dropout.wgsl and the three attention kernels) so that they draw the
// same bits as tinygpt_core::model::Dropout. The including kernel provides
// `p.seed_lo`, `p.seed_hi`, `p.site` and `state` (ops::adamw::OptState, the
// step counter in word 0).

// lowbias32 (C. Wellons), as tinygpt_core::model::dropout::mix32.
fn mix32(v: u32) -> u32 {
    var x = v;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    return x ^ (x >> 16u);
}

// The key of this step's mask of site `p.site`.
fn drop_key() -> u32 {
    return mix32(mix32(mix32(p.seed_lo ^ mix32(p.seed_hi)) ^ state[0]) ^ p.site);
}
