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
// picks[P·B + b]. `pick` reads the row through the kernel's `logit(i)`
// (pick_common.wgsl says who calls it).
//
// Workgroup 0 also writes P + 1 as the next step's position (next_pos, the
// other of the decoder's two position buffers), and every workgroup its
// pick's embedding at P + 1 as the next step's input row
// (pick_next_input.wgsl): steps chain inside one pass with no copy and no
// embedding dispatch between them.

// The invocations that pick: 256 (a caller's workgroup may have more; the
// rest only pass the barriers).
const PICK_WG: u32 = 256u;


// Each thread's best, then (from 256 on) each group of sixteen's.
var<workgroup> best_v: array<f32, 272>;
var<workgroup> best_i: array<u32, 272>;
var<workgroup> bad_i: array<u32, 272>;

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

// The greedy pick from row b (of nb) of V logits; every invocation calls it.
fn pick(t: u32, b: u32, nb: u32, v: u32) {
    var bv = 0.0;
    var bi = NONE;
    var bad = NONE;
    let live = t < PICK_WG;
    for (var i = t; i < select(0u, v, live); i += PICK_WG) {
        let x = logit(i);
        if (!finite(x) && bad == NONE) {
            bad = i;
        }
        if (bi == NONE || x > bv) {
            bv = x;
            bi = i;
        }
    }
    if (live) {
        best_v[t] = bv;
        best_i[t] = bi;
        bad_i[t] = bad;
    }
    workgroupBarrier();
    if (t < 16u) {
        let g = combine(16u * t);
        best_v[PICK_WG + t] = bitcast<f32>(g.x);
        best_i[PICK_WG + t] = g.y;
        bad_i[PICK_WG + t] = g.z;
    }
    workgroupBarrier();
    var picked = 0u;
    if (t == 0u) {
        let g = combine(PICK_WG);
        picked = g.y;
        token[b] = g.y;
        var bits = 0u;
        if (g.z != NONE) {
            bits = bitcast<u32>(logit(g.z));
        }
        picks[pos.x * nb + b] = vec4<u32>(g.y, g.z, bits, 0u);
        if (b == 0u) {
            next_pos[0] = pos.x + 1u;
        }
    }
    write_next_input(t, b, picked, pos.x + 1u);
}
