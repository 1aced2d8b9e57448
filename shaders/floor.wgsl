// The launch floor (`tinygpt bench`): `noop` does nothing but keep its
// binding; `touch` adds one to x[0], so consecutive dispatches write the
// same buffer and the implementation must put a barrier between them.

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(1)
fn noop() {
    _ = p.n;
}

@compute @workgroup_size(1)
fn touch() {
    x[0] = x[0] + f32(p.n);
}
