// The f16 weight cache's freshness check: counts the cached halves that
// differ from the f32 weights packed now. pack2x16float is what the cache's
// own GPU packer runs, and the gate proved it rounds to nearest even on
// this device before the cache packs on the GPU, so a fresh cache differs
// in no half. A cache packed on the CPU is checked on the CPU instead.

struct Params {
    // f32 elements (halves) and the words holding them.
    n: u32,
    words: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read> cache: array<u32>;
@group(0) @binding(3) var<storage, read_write> mismatches: array<atomic<u32>>;

fn element(e: u32) -> f32 {
    if (e >= p.n) {
        return 0.0;
    }
    return src[e];
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let i = (wg.y * nwg.x + wg.x) * 256u + lid.x;
    if (i >= p.words) {
        return;
    }
    let want = pack2x16float(vec2<f32>(element(2u * i), element(2u * i + 1u)));
    let got = cache[i];
    var bad = select(0u, 1u, (want & 0xffffu) != (got & 0xffffu));
    if (2u * i + 1u < p.n && (want >> 16u) != (got >> 16u)) {
        bad += 1u;
    }
    if (bad > 0u) {
        atomicAdd(&mismatches[0], bad);
    }
}
