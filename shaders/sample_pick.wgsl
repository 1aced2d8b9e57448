// A seeded pick of the next token on the GPU (temperature, top-k, top-p),
// so that the decoder chains sampled tokens inside one submission as it
// chains greedy ones (argmax.wgsl). The rule is the CPU reference's
// (`tinygpt_core::sample::pick`), in f32 and in its order:
//   w_i = exp((l_i - max) * inv_t); candidates by falling weight, ties by
//   index; their running sum S_r in that order; keep the first
//   n = min(top_k, V); with top-p the shortest prefix whose running sum
//   reaches top_p * S_(n-1); pick the first kept candidate whose running
//   sum exceeds u * S_(n-1) (the last one if rounding leaves none).
// u is this position's draw of the host's seeded stream (draws[P]). The
// max is combined in two levels, the ranks counted in parallel (each
// candidate counts the ones before it), the one running sum taken by one
// thread in rank order as the CPU takes it, and both searches along it run
// in parallel (the sum never falls, so one candidate meets each).
// The first non-finite logit is recorded as argmax.wgsl records it.
//
// Samples decoded together (B rows of logits, each V long) run as B
// workgroups: workgroup b picks from row b into token[b], records at
// picks[P·B + b] and draws at draws[P·B + b]. `pick` reads the row through
// the kernel's `logit(i)` (pick_common.wgsl says who calls it).

// The rule (the words of ops::argmax::sample_params_words).
struct SampleParams {
    v: u32,
    logits_off: u32,
    // 0: keep every candidate.
    top_k: u32,
    _pad0: u32,
    // 1.0 (or more): no nucleus cut.
    top_p: f32,
    inv_t: f32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(16) var<uniform> sp: SampleParams;
// draws[P·B + b]: the uniform in [0, 1) that picks sample b's successor of
// position P.
@group(0) @binding(15) var<storage, read> draws: array<f32>;

// The invocations that pick: 256 (a caller's workgroup may have more; the
// rest only pass the barriers).
const PICK_WG: u32 = 256u;
// tinygpt_protocol::config::MAX_VOCAB.
const MAXV: u32 = 512u;

var<workgroup> weight: array<f32, 512>;
var<workgroup> ranked_w: array<f32, 512>;
var<workgroup> ranked_i: array<u32, 512>;
// The running sum of ranked_w.
var<workgroup> running: array<f32, 512>;
// Each thread's max and first non-finite index, then (from 256 on) each
// group of sixteen's.
var<workgroup> tops: array<f32, 272>;
var<workgroup> bad_i: array<u32, 272>;
// Candidates kept, and the pick.
var<workgroup> kept: u32;
var<workgroup> chosen: u32;

// The seeded pick from row b (of nb) of V logits; every invocation calls
// it.
fn pick(t: u32, b_row: u32, nb: u32, v_all: u32) {
    let at_p = pos.x * nb + b_row;
    let v = min(v_all, MAXV);
    // f32::MIN, as the CPU rule starts its max (a literal of it is not
    // exactly representable for every WGSL front end).
    var m = bitcast<f32>(0xff7fffffu);
    var bad = NONE;
    // The picking invocations' share of the candidates.
    let live = t < PICK_WG;
    let vl = select(0u, v, live);
    for (var i = t; i < vl; i += PICK_WG) {
        let x = logit(i);
        if (!finite(x) && bad == NONE) {
            bad = i;
        }
        m = max(m, x);
    }
    if (live) {
        tops[t] = m;
        bad_i[t] = bad;
    }
    workgroupBarrier();
    if (t < 16u) {
        var mm = tops[16u * t];
        var b = bad_i[16u * t];
        for (var k = 16u * t + 1u; k < 16u * t + 16u; k++) {
            mm = max(mm, tops[k]);
            b = min(b, bad_i[k]);
        }
        tops[PICK_WG + t] = mm;
        bad_i[PICK_WG + t] = b;
    }
    workgroupBarrier();
    var mx = tops[PICK_WG];
    for (var k = 1u; k < 16u; k++) {
        mx = max(mx, tops[PICK_WG + k]);
    }
    for (var i = t; i < vl; i += PICK_WG) {
        weight[i] = exp((logit(i) - mx) * sp.inv_t);
    }
    workgroupBarrier();
    for (var i = t; i < vl; i += PICK_WG) {
        let wi = weight[i];
        var r = 0u;
        for (var j = 0u; j < v; j++) {
            let wj = weight[j];
            if (wj > wi || (wj == wi && j < i)) {
                r++;
            }
        }
        ranked_w[r] = wi;
        ranked_i[r] = i;
    }
    workgroupBarrier();
    var n = v;
    if (sp.top_k > 0u) {
        n = min(sp.top_k, v);
    }
    if (t == 0u) {
        var sum = 0.0;
        for (var r = 0u; r < v; r++) {
            sum += ranked_w[r];
            running[r] = sum;
        }
        kept = n;
    }
    workgroupBarrier();
    if (sp.top_p < 1.0) {
        let reach = sp.top_p * running[n - 1u];
        for (var r = t; r < select(0u, n, live); r += PICK_WG) {
            if (running[r] >= reach && (r == 0u || running[r - 1u] < reach)) {
                kept = r + 1u;
            }
        }
    }
    workgroupBarrier();
    let k = kept;
    if (t == 0u) {
        chosen = ranked_i[k - 1u];
    }
    workgroupBarrier();
    let at = draws[at_p] * running[k - 1u];
    for (var r = t; r < select(0u, k, live); r += PICK_WG) {
        if (at < running[r] && (r == 0u || !(at < running[r - 1u]))) {
            chosen = ranked_i[r];
        }
    }
    workgroupBarrier();
    if (t == 0u) {
        let next = chosen;
        token[b_row] = next;
        let b = bad_i[PICK_WG];
        var first_bad = b;
        for (var g = 1u; g < 16u; g++) {
            first_bad = min(first_bad, bad_i[PICK_WG + g]);
        }
        var bits = 0u;
        if (first_bad != NONE) {
            bits = bitcast<u32>(logit(first_bad));
        }
        picks[at_p] = vec4<u32>(next, first_bad, bits, 0u);
        if (b_row == 0u) {
            next_pos[0] = pos.x + 1u;
        }
    }
    write_next_input(t, b_row, chosen, pos.x + 1u);
}
