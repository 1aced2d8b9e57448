// KV-cache append for batch-1 decoding: copies the K and V parts of one qkv
// row (3C) into position `pos.x` of this layer's caches.
//
// Cache layout (NH, T_max, HS): head h's rows are contiguous, so the decode
// kernel reads one head's keys as one block. The position lives in a small
// uniform the host rewrites (4 bytes) before each token, so this bound
// kernel is reused for every token. A position ≥ T_max writes nothing.

struct Params {
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    scale: f32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// x: the position p of the token being appended; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> qkv: array<f32>;
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.c || pos.x >= p.t_max) {
        return;
    }
    let h = i / p.hs;
    let o = (h * p.t_max + pos.x) * p.hs + i % p.hs;
    k_cache[o] = qkv[p.c + i];
    v_cache[o] = qkv[2u * p.c + i];
}
