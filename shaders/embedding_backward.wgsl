// Embedding backward, accumulated into the gradients (the tied head has
// already added its share to dtok_emb):
//   dtok_emb[v, :] += Σ_{n : inputs[n] = v} dout[n, :]
//   dpos_emb[t, :] += Σ_{n : n % T = t} dout[n, :]
//
// WebGPU has no float atomics, so both are gathers in which one invocation
// owns one output element and adds its rows in ascending order, starting
// from the stored value: exactly the order of the CPU reference's `+=`
// loop, and the same result on every run.

struct Params {
    n: u32,          // rows N = B·T
    t: u32,          // T
    c: u32,          // channels C
    inputs_off: u32,
    dout_off: u32,   // dout (N, C)
    dtok_off: u32,   // dtok_emb (V, C)
    dpos_off: u32,   // dpos_emb (T_max, C)
    _pad: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> inputs: array<u32>;
@group(0) @binding(2) var<storage, read> dout: array<f32>;
@group(0) @binding(3) var<storage, read_write> dtok_emb: array<f32>;
@group(0) @binding(4) var<storage, read_write> dpos_emb: array<f32>;

const TOK_WG: u32 = 64u;
// The tokens of TOK_WG consecutive rows, shared by the whole workgroup so
// each input is read from memory once per workgroup, not once per channel.
var<workgroup> tile: array<u32, 64>;

// Workgroup (x, y) owns token v = y and channels [64x, 64x + 64). It scans
// every row's token; cost O(V·C·N), fine for character vocabularies.
@compute @workgroup_size(64)
fn tok(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let v = wg.y;
    let ch = wg.x * TOK_WG + lid;
    let o = p.dtok_off + v * p.c + ch;
    var acc = 0.0;
    if (ch < p.c) {
        acc = dtok_emb[o];
    }
    for (var n0 = 0u; n0 < p.n; n0 += TOK_WG) {
        // The previous tile is fully read before it is overwritten.
        workgroupBarrier();
        if (n0 + lid < p.n) {
            tile[lid] = inputs[p.inputs_off + n0 + lid];
        }
        workgroupBarrier();
        let len = min(TOK_WG, p.n - n0);
        if (ch < p.c) {
            for (var j = 0u; j < len; j++) {
                if (tile[j] == v) {
                    acc += dout[p.dout_off + (n0 + j) * p.c + ch];
                }
            }
        }
    }
    if (ch < p.c) {
        dtok_emb[o] = acc;
    }
}

// One invocation per element of dpos_emb[0..T, :], summing the B rows at
// its position.
@compute @workgroup_size(256)
fn pos(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * nwg.x + wg.x) * 256u + lid;
    if (i >= p.t * p.c) {
        return;
    }
    let t = i / p.c;
    let ch = i % p.c;
    let o = p.dpos_off + i;
    var acc = dpos_emb[o];
    for (var row = t; row < p.n; row += p.t) {
        acc += dout[p.dout_off + row * p.c + ch];
    }
    dpos_emb[o] = acc;
}
