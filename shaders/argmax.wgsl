// Greedy pick of the next token on the GPU, so that the decoder can chain
// tokens inside one submission: the argmax of the V logits, ties to the
// lowest index (what the CPU sampler's greedy rule returns), written as the
// next step's input token and recorded at the current position.
//
// One workgroup of 256 threads: thread t scans logits t, t + 256, … in
// order, keeping its first largest; then the workgroup's largest value
// (an atomic max over the values as ordered keys) and the lowest index
// holding it (an atomic min over the threads whose best equals it): three
// barriers, and no thread combines others' bests one after another (the
// kernel's two levels of sixteen did until 2026-12-06). The larger value wins, the lower index
// on a tie (−0 and +0 tie), so the order in which threads arrive does not
// matter: the CPU sampler's token wherever every logit is finite. The
// first non-finite logit is recorded too (index and bits, an atomic min),
// so the host can refuse it exactly as the CPU sampler does; the token
// picked then is some index below V.
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


// The workgroup's largest key, the lowest index holding it, the first
// non-finite logit's index.
var<workgroup> top_key: atomic<u32>;
var<workgroup> top_i: atomic<u32>;
var<workgroup> first_bad: atomic<u32>;

// Finite and infinite f32 values in their order as u32 keys, −0 as +0 (on
// the bits: a compiler may drop a zero's sign), every key above 0.
fn order_key(x: f32) -> u32 {
    var b = bitcast<u32>(x);
    if (b == 0x80000000u) {
        b = 0u;
    }
    if ((b & 0x80000000u) != 0u) {
        return ~b;
    }
    return b | 0x80000000u;
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
    if (t == 0u) {
        atomicStore(&top_key, 0u);
        atomicStore(&top_i, NONE);
        atomicStore(&first_bad, NONE);
    }
    workgroupBarrier();
    let key = order_key(bv);
    if (bi != NONE) {
        atomicMax(&top_key, key);
    }
    if (bad != NONE) {
        atomicMin(&first_bad, bad);
    }
    workgroupBarrier();
    if (bi != NONE && key == atomicLoad(&top_key)) {
        atomicMin(&top_i, bi);
    }
    workgroupBarrier();
    let picked = atomicLoad(&top_i);
    if (t == 0u) {
        token[b] = picked;
        let first = atomicLoad(&first_bad);
        var bits = 0u;
        if (first != NONE) {
            bits = bitcast<u32>(logit(first));
        }
        picks[pos.x * nb + b] = vec4<u32>(picked, first, bits, 0u);
        if (b == 0u) {
            next_pos[0] = pos.x + 1u;
        }
    }
    write_input_row(t, b, picked, pos.x + 1u);
}
