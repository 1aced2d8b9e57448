// The launch floor (`tinygpt bench`): `noop` does nothing but keep its
// binding; `touch` adds one to x[0], so consecutive dispatches write the
// same buffer and the implementation must put a barrier between them;
// `grid` crosses p.n barriers across its workgroups (grid_sync.wgsl,
// appended), each workgroup writing the barrier's number before it and
// reading its neighbour's after it, counting in sync[2] any neighbour
// whose write it did not see.

struct Params {
    n: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> sync: array<atomic<u32>>;

@compute @workgroup_size(1)
fn noop() {
    _ = p.n;
}

@compute @workgroup_size(1)
fn touch() {
    x[0] = x[0] + f32(p.n);
}

// x holds two slots a workgroup, used on alternate barriers: a slot is
// written again only after the barrier that follows its neighbour's read.
@compute @workgroup_size(256)
fn grid(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = nwg.x;
    for (var i = 0u; i < p.n; i++) {
        let slot = (i % 2u) * g;
        if (lid == 0u) {
            x[slot + wg.x] = f32(i + 1u);
        }
        grid_sync(lid, g);
        if (lid == 0u && x[slot + (wg.x + 1u) % g] != f32(i + 1u)) {
            atomicAdd(&sync[2], 1u);
        }
    }
}
