// Greedy pick of the next token on the GPU, so that the decoder can chain
// tokens inside one submission: the argmax of the V logits, ties to the
// lowest index (what the CPU sampler's greedy rule returns), written as the
// next step's input token and recorded at the current position.
//
// One workgroup of 256 threads: thread t scans logits t, t + 256, … in
// order; sixteen threads then combine sixteen threads' bests each, and one
// thread the sixteen results (two barriers: CPU implementations pay for
// each). The larger value wins, the lower index on a tie, so the order of
// combining does not matter. The first non-finite logit is recorded too
// (index and bits), so the host can refuse it exactly as the CPU sampler
// does.
//
// Samples decoded together (B rows of logits, each V long) run as B
// workgroups: workgroup b picks from row b into token[b], records at
// picks[P·B + b].
//
// Workgroup 0 also writes P + 1 as the next step's position (next_pos, the
// other of the decoder's two position buffers), and every workgroup its
// pick's embedding at P + 1 as the next step's input row
// (pick_next_input.wgsl): steps chain inside one pass with no copy and no
// embedding dispatch between them.

struct Params {
    v: u32,
    logits_off: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
// x: the position P of the token whose successor is picked; y, z, w unused.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
// The decoder's input token (the embedding reads element 0).
@group(0) @binding(3) var<storage, read_write> token: array<u32>;
// picks[P] = (token, index of the first non-finite logit or NONE, its bits, 0).
@group(0) @binding(4) var<storage, read_write> picks: array<vec4<u32>>;
// The next step's position (x = P + 1), read as `pos` by that step.
@group(0) @binding(5) var<storage, read_write> next_pos: array<u32>;

const WG: u32 = 256u;

// Where this workgroup's row of logits starts.
var<private> logits_row: u32;

fn set_row(b: u32) {
    logits_row = p.logits_off + b * p.v;
}
const NONE: u32 = 0xffffffffu;

// Each thread's best, then (from 256 on) each group of sixteen's.
var<workgroup> best_v: array<f32, 272>;
var<workgroup> best_i: array<u32, 272>;
var<workgroup> bad_i: array<u32, 272>;

// Not ±inf or NaN, from the bits (a compiler may assume float comparisons
// never see them).
fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// Combines entries first … first + 15 into (value, index, first non-finite).
fn combine(first: u32) -> vec3<u32> {
    var bv = best_v[first];
    var bi = best_i[first];
    var bad = bad_i[first];
    for (var e = first + 1u; e < first + 16u; e++) {
        let ov = best_v[e];
        let oi = best_i[e];
        if (oi != NONE && (bi == NONE || ov > bv || (ov == bv && oi < bi))) {
            bv = ov;
            bi = oi;
        }
        bad = min(bad, bad_i[e]);
    }
    return vec3<u32>(bitcast<u32>(bv), bi, bad);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    set_row(wg.x);
    var bv = 0.0;
    var bi = NONE;
    var bad = NONE;
    for (var i = t; i < p.v; i += WG) {
        let x = logits[logits_row + i];
        if (!finite(x) && bad == NONE) {
            bad = i;
        }
        if (bi == NONE || x > bv) {
            bv = x;
            bi = i;
        }
    }
    best_v[t] = bv;
    best_i[t] = bi;
    bad_i[t] = bad;
    workgroupBarrier();
    if (t < 16u) {
        let g = combine(16u * t);
        best_v[WG + t] = bitcast<f32>(g.x);
        best_i[WG + t] = g.y;
        bad_i[WG + t] = g.z;
    }
    workgroupBarrier();
    var picked = 0u;
    if (t == 0u) {
        let g = combine(WG);
        picked = g.y;
        token[wg.x] = g.y;
        var bits = 0u;
        if (g.z != NONE) {
            bits = bitcast<u32>(logits[logits_row + g.z]);
        }
        picks[pos.x * nwg.x + wg.x] = vec4<u32>(g.y, g.z, bits, 0u);
        if (wg.x == 0u) {
            next_pos[0] = pos.x + 1u;
        }
    }
    write_next_input(t, wg.x, picked, pos.x + 1u);
}
