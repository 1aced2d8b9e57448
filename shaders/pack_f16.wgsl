// Packs f32 into halves, two per u32: dst[i] = (src[2i], src[2i+1]) with
// element 2i in the low half (pack2x16float's order), a missing last element
// as 0. `main` uses the built-in conversion; whether that rounds to nearest
// even on this platform is measured at start-up (see gate/f16_storage.rs)
// before it is trusted. With the pipeline-overridable TRUNCATE set, it is a
// deliberately wrong test-only variant that rounds toward zero.

struct Params {
    // f32 elements to pack, and the element offset of the first in src.
    n: u32,
    src_off: u32,
    words: u32,
    _pad: u32,
}

override TRUNCATE: bool = false;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

fn element(e: u32) -> f32 {
    if (e >= p.n) {
        return 0.0;
    }
    return src[p.src_off + e];
}

// Rounds toward zero: where the built-in rounded a half away from zero,
// step it back one ulp (its bit pattern minus one, same sign).
fn half_trunc(x: f32) -> u32 {
    let h = pack2x16float(vec2<f32>(x, 0.0)) & 0xffffu;
    let back = unpack2x16float(h).x;
    if (x == x && (h & 0x7fffu) != 0u && abs(back) > abs(x)) {
        return h - 1u;
    }
    return h;
}

fn word_index(wg: vec3<u32>, nwg: vec3<u32>, lid: vec3<u32>) -> u32 {
    return (wg.y * nwg.x + wg.x) * 256u + lid.x;
}

fn pack(x: vec2<f32>) -> u32 {
    if (TRUNCATE) {
        return half_trunc(x.x) | (half_trunc(x.y) << 16u);
    }
    return pack2x16float(x);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = word_index(wg, nwg, lid);
    if (i >= p.words) {
        return;
    }
    dst[i] = pack(vec2<f32>(element(2u * i), element(2u * i + 1u)));
}
