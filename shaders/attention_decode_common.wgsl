// The decode attention's 256-thread body (attention_decode.wgsl's `main`,
// and attention_decode_qkv.wgsl's after its QKV columns): the scores
// against the transposed key cache, the online softmax over chunks of 256
// positions, the weighted sum of values in groups of positions (the
// algorithm and its orders: attention_decode.wgsl's header). Appended to
// those kernels' sources, with reduce_wg.wgsl or reduce_sg.wgsl; the kernel
// declares `ap` (a DecodeParams uniform), `k_cache`, `v_cache`, `red` (at
// least 256 words) and `put_out(at, d, v)`, where output dim d of the head
// goes (`at`: its index in the output rows).

// The decode attention's params (ops/attention/decode.rs).
struct DecodeParams {
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    scale: f32,
    // The subgroup size of the `reduce_sg.wgsl` form.
    sg: u32,
    _pad1: u32,
    _pad2: u32,
}

// HS_C: the head size as a pipeline constant (ops/attention/decode.rs binds
// a pipeline per head size), or 0: `ap.hs`. Known when the pipeline is
// compiled, the loops over a head's dims have fixed trip counts, so the
// driver can unroll them and issue all of a score's key loads at once; the
// sums and their order do not change.
override HS_C: u32 = 0u;

fn head_dim() -> u32 {
    if (HS_C != 0u) {
        return HS_C;
    }
    return ap.hs;
}

// +0.0 that no compiler can see (the params' padding, always 0): the
// scores' and values' accumulators start from it, so that unrolled loops
// (HS_C) cannot fold a first fma into a product and fuse it elsewhere
// (gemv_row.wgsl's `acc_zero` says more).
fn score_zero() -> vec4<f32> {
    return vec4<f32>(bitcast<f32>(ap._pad1));
}

const WG: u32 = 256u;
const NEG: f32 = -1e30;
// Groups of positions in the weighted sum of values, at most.
const MAX_GROUPS: u32 = 64u;

var<workgroup> q_sh: array<f32, 128>;
// The new position's key and value (the kernel writes them here as it
// appends them to the caches): `attend` reads position `last` from here,
// so no storage barrier has to make the cache writes visible first.
var<workgroup> k_new: array<f32, 128>;
var<workgroup> v_new: array<f32, 128>;
// The chunk's weights exp(score − m).
var<workgroup> w_sh: array<f32, 256>;
// o_sh[g * ⌈HS/4⌉ + d4]: group g's share of output dims 4·d4 .. 4·d4 + 3.
var<workgroup> o_sh: array<vec4<f32>, 256>;

// Dims i .. i + 3 of the key at position s of the head's transposed key
// cache starting at `base` (`main`: dim i of every position at
// base + i·T_max, so that neighbouring threads, neighbouring positions,
// read neighbouring words).
fn k4t(base: u32, i: u32, s: u32) -> vec4<f32> {
    let o = base + i * ap.t_max + s;
    return vec4<f32>(k_cache[o], k_cache[o + ap.t_max], k_cache[o + 2u * ap.t_max], k_cache[o + 3u * ap.t_max]);
}

fn q4(i: u32) -> vec4<f32> {
    return vec4<f32>(q_sh[i], q_sh[i + 1u], q_sh[i + 2u], q_sh[i + 3u]);
}

// Dims 4·d4 .. 4·d4 + 3 of the value row at `row`, zero past HS.
fn v4(row: u32, d4: u32) -> vec4<f32> {
    let d = 4u * d4;
    var v = vec4<f32>(0.0);
    if (d + 3u < head_dim()) {
        return vec4<f32>(v_cache[row + d], v_cache[row + d + 1u], v_cache[row + d + 2u], v_cache[row + d + 3u]);
    }
    for (var i = 0u; d + i < head_dim(); i++) {
        v[i] = v_cache[row + d + i];
    }
    return v;
}

// Dims 4·d4 .. 4·d4 + 3 of the new position's value (v_new), zero past HS.
fn v4_new(d4: u32) -> vec4<f32> {
    let d = 4u * d4;
    var v = vec4<f32>(0.0);
    for (var i = 0u; i < 4u && d + i < head_dim(); i++) {
        v[i] = v_new[d + i];
    }
    return v;
}

fn k4_new(i: u32) -> vec4<f32> {
    return vec4<f32>(k_new[i], k_new[i + 1u], k_new[i + 2u], k_new[i + 3u]);
}

// The scaled query (q_sh) times the key of position s in the transposed
// cache at `base`: dims in order, four partial sums, sixteen loads issued
// before they are used.
fn score_t(base: u32, s: u32) -> f32 {
    let hs = head_dim();
    var x4 = score_zero();
    var i = 0u;
    for (; i + 16u <= hs; i += 16u) {
        let k0 = k4t(base, i, s);
        let k1 = k4t(base, i + 4u, s);
        let k2 = k4t(base, i + 8u, s);
        let k3 = k4t(base, i + 12u, s);
        x4 = fma(q4(i), k0, x4);
        x4 = fma(q4(i + 4u), k1, x4);
        x4 = fma(q4(i + 8u), k2, x4);
        x4 = fma(q4(i + 12u), k3, x4);
    }
    for (; i + 4u <= hs; i += 4u) {
        x4 = fma(q4(i), k4t(base, i, s), x4);
    }
    for (; i < hs; i++) {
        x4.x = fma(q_sh[i], k_cache[base + i * ap.t_max + s], x4.x);
    }
    return (x4.x + x4.y) + (x4.z + x4.w);
}

// `score_t` of the new position, its key from k_new: the same products in
// the same order.
fn score_new() -> f32 {
    let hs = head_dim();
    var x4 = score_zero();
    var i = 0u;
    for (; i + 4u <= hs; i += 4u) {
        x4 = fma(q4(i), k4_new(i), x4);
    }
    for (; i < hs; i++) {
        x4.x = fma(q_sh[i], k_new[i], x4.x);
    }
    return (x4.x + x4.y) + (x4.z + x4.w);
}

// Eight rows of a chunk's values, rows j + r·gs for r < 8 (zero past cnt).
struct Rows8 {
    v0: vec4<f32>, v1: vec4<f32>, v2: vec4<f32>, v3: vec4<f32>,
    v4: vec4<f32>, v5: vec4<f32>, v6: vec4<f32>, v7: vec4<f32>,
}

fn row8(base: u32, c0: u32, cnt: u32, j: u32, d4: u32) -> vec4<f32> {
    if (j < cnt) {
        return v4(base + (c0 + j) * head_dim(), d4);
    }
    return vec4<f32>(0.0);
}

fn rows8(base: u32, c0: u32, cnt: u32, j: u32, gs: u32, d4: u32) -> Rows8 {
    return Rows8(
        row8(base, c0, cnt, j, d4),
        row8(base, c0, cnt, j + gs, d4),
        row8(base, c0, cnt, j + 2u * gs, d4),
        row8(base, c0, cnt, j + 3u * gs, d4),
        row8(base, c0, cnt, j + 4u * gs, d4),
        row8(base, c0, cnt, j + 5u * gs, d4),
        row8(base, c0, cnt, j + 6u * gs, d4),
        row8(base, c0, cnt, j + 7u * gs, d4),
    );
}

// Group g's weighted sum of the chunk's values at positions c0 + j,
// j ≡ g (mod gs), j < cnt, in increasing j; eight rows a round, then four,
// then one (each round's loads issued before its products).
fn weigh_values(base: u32, c0: u32, cnt: u32, g: u32, gs: u32, d4: u32, acc_in: vec4<f32>) -> vec4<f32> {
    var acc = acc_in;
    var j = g;
    for (; j + 7u * gs < cnt; j += 8u * gs) {
        let r = rows8(base, c0, cnt, j, gs, d4);
        acc = fma(vec4<f32>(w_sh[j]), r.v0, acc);
        acc = fma(vec4<f32>(w_sh[j + gs]), r.v1, acc);
        acc = fma(vec4<f32>(w_sh[j + 2u * gs]), r.v2, acc);
        acc = fma(vec4<f32>(w_sh[j + 3u * gs]), r.v3, acc);
        acc = fma(vec4<f32>(w_sh[j + 4u * gs]), r.v4, acc);
        acc = fma(vec4<f32>(w_sh[j + 5u * gs]), r.v5, acc);
        acc = fma(vec4<f32>(w_sh[j + 6u * gs]), r.v6, acc);
        acc = fma(vec4<f32>(w_sh[j + 7u * gs]), r.v7, acc);
    }
    for (; j + 3u * gs < cnt; j += 4u * gs) {
        let v0 = v4(base + (c0 + j) * head_dim(), d4);
        let v1 = v4(base + (c0 + j + gs) * head_dim(), d4);
        let v2 = v4(base + (c0 + j + 2u * gs) * head_dim(), d4);
        let v3 = v4(base + (c0 + j + 3u * gs) * head_dim(), d4);
        acc = fma(vec4<f32>(w_sh[j]), v0, acc);
        acc = fma(vec4<f32>(w_sh[j + gs]), v1, acc);
        acc = fma(vec4<f32>(w_sh[j + 2u * gs]), v2, acc);
        acc = fma(vec4<f32>(w_sh[j + 3u * gs]), v3, acc);
    }
    for (; j < cnt; j += gs) {
        acc = fma(vec4<f32>(w_sh[j]), v4(base + (c0 + j) * head_dim(), d4), acc);
    }
    return acc;
}

// The attention of the scaled query in q_sh over positions 0 ..= last of
// the head's caches at `base`, position `last` read from k_new and v_new
// (written before a workgroupBarrier), the head's HS outputs written at
// out[o …]. Every thread calls it (barriers).
fn attend(base: u32, last: u32, o: u32, tid: u32) {
    let hs = head_dim();
    // Threads per value row (HS ≤ 128: at most 32) and groups of positions.
    let nd4 = (hs + 3u) / 4u;
    let gs = min(WG / nd4, MAX_GROUPS);
    let g = tid / nd4;
    let d4 = tid % nd4;
    var m = NEG;
    var l = 0.0;
    var acc = score_zero();
    for (var c0 = 0u; c0 <= last; c0 += WG) {
        let s = c0 + tid;
        let cnt = min(WG, last + 1u - c0);
        // The chunk's rows from the caches: all but the new position's
        // (its row `cnt - 1` of the last chunk), whose key and value come
        // from k_new and v_new; its product is its group's last.
        let has_new = last < c0 + WG;
        let cached = select(cnt, cnt - 1u, has_new);
        var x = NEG;
        if (s < last) {
            x = score_t(base, s);
        } else if (s == last) {
            x = score_new();
        }
        let m_new = max(m, reduce_max(tid, x));
        let e = select(0.0, exp(x - m_new), s <= last);
        w_sh[tid] = e;
        let corr = exp(m - m_new);
        l = l * corr + reduce_sum(tid, e);
        m = m_new;
        acc *= corr;
        // reduce_sum's barriers made w_sh visible.
        if (g < gs) {
            acc = weigh_values(base, c0, cached, g, gs, d4, acc);
            if (has_new && g == (cnt - 1u) % gs) {
                acc = fma(vec4<f32>(w_sh[cnt - 1u]), v4_new(d4), acc);
            }
        }
        // The next chunk overwrites w_sh.
        workgroupBarrier();
    }

    if (g < gs) {
        o_sh[tid] = acc;
    }
    workgroupBarrier();
    if (tid < nd4) {
        var sum = o_sh[tid];
        for (var i = 1u; i < gs; i++) {
            sum += o_sh[i * nd4 + tid];
        }
        let r = sum / l;
        for (var i = 0u; i < 4u && 4u * tid + i < hs; i++) {
            put_out(o + 4u * tid + i, 4u * tid + i, r[i]);
        }
    }
}
