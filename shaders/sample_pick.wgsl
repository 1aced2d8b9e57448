// A seeded pick of the next token on the GPU (temperature, top-k, top-p),
// so that the decoder chains sampled tokens inside one submission as it
// chains greedy ones (argmax.wgsl). The rule is the CPU reference's
// (`tinygpt_core::sample::pick`), in f32 and in its order:
//   w_i = exp((l_i - max) * inv_t); candidates by falling weight, ties by
//   index; keep the first top_k; keep the shortest prefix whose running sum
//   reaches top_p * their sum; walk the kept ones subtracting each weight
//   from u * their sum until it falls below one.
// u is this position's draw of the host's seeded stream (draws[P]). The
// ranks are computed in parallel (each candidate counts the ones before
// it); the sums run in one thread, in rank order, as the CPU sums.
// The first non-finite logit is recorded as argmax.wgsl records it.

struct Params {
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

@group(0) @binding(0) var<uniform> p: Params;
// x: the position P of the token whose successor is picked.
@group(0) @binding(1) var<uniform> pos: vec4<u32>;
@group(0) @binding(2) var<storage, read> logits: array<f32>;
@group(0) @binding(3) var<storage, read_write> token: array<u32>;
// picks[P] = (token, index of the first non-finite logit or NONE, its bits, 0).
@group(0) @binding(4) var<storage, read_write> picks: array<vec4<u32>>;
// draws[P]: the uniform in [0, 1) that picks position P's successor.
@group(0) @binding(5) var<storage, read> draws: array<f32>;

const WG: u32 = 256u;
// tinygpt_protocol::config::MAX_VOCAB.
const MAXV: u32 = 512u;
const NONE: u32 = 0xffffffffu;

var<workgroup> weight: array<f32, 512>;
var<workgroup> ranked_w: array<f32, 512>;
var<workgroup> ranked_i: array<u32, 512>;
var<workgroup> red: array<f32, 256>;
var<workgroup> bad_i: array<u32, 256>;

fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// The kept candidates' count and the index of the pick, in one thread.
fn choose(v: u32, u: f32) -> u32 {
    var n = v;
    if (p.top_k > 0u) {
        n = min(p.top_k, v);
    }
    if (p.top_p < 1.0) {
        var total = 0.0;
        for (var r = 0u; r < n; r++) {
            total += ranked_w[r];
        }
        let reach = p.top_p * total;
        var cum = 0.0;
        for (var r = 0u; r < n; r++) {
            cum += ranked_w[r];
            if (cum >= reach) {
                n = r + 1u;
                break;
            }
        }
    }
    var total = 0.0;
    for (var r = 0u; r < n; r++) {
        total += ranked_w[r];
    }
    var left = u * total;
    for (var r = 0u; r < n; r++) {
        if (left < ranked_w[r]) {
            return ranked_i[r];
        }
        left -= ranked_w[r];
    }
    return ranked_i[n - 1u];
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
    let v = min(p.v, MAXV);
    // f32::MIN, as the CPU rule starts its max (a literal of it is not
    // exactly representable for every WGSL front end).
    var m = bitcast<f32>(0xff7fffffu);
    var bad = NONE;
    for (var i = t; i < v; i += WG) {
        let x = logits[p.logits_off + i];
        if (!finite(x) && bad == NONE) {
            bad = i;
        }
        m = max(m, x);
    }
    red[t] = m;
    bad_i[t] = bad;
    workgroupBarrier();
    if (t == 0u) {
        var mm = red[0];
        var b = bad_i[0];
        for (var k = 1u; k < WG; k++) {
            mm = max(mm, red[k]);
            b = min(b, bad_i[k]);
        }
        red[0] = mm;
        bad_i[0] = b;
    }
    workgroupBarrier();
    let mx = red[0];
    for (var i = t; i < v; i += WG) {
        weight[i] = exp((logits[p.logits_off + i] - mx) * p.inv_t);
    }
    workgroupBarrier();
    for (var i = t; i < v; i += WG) {
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
    if (t == 0u) {
        let at = pos.x;
        let next = choose(v, draws[at]);
        token[0] = next;
        let b = bad_i[0];
        var bits = 0u;
        if (b != NONE) {
            bits = bitcast<u32>(logits[p.logits_off + b]);
        }
        picks[at] = vec4<u32>(next, b, bits, 0u);
    }
}
