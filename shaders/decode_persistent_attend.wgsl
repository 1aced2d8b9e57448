// decode_persistent.wgsl's attention (`attend_heads`): every head of the
// workgroup's sample at once over its caches, appended to that kernel's
// source (its bindings, workgroup rows and `rows`/`row`).

// Where head h's cache block of layer l starts.
fn cache_base(l: u32, h: u32) -> u32 {
    return ((l * rows + row) * p.nh + h) * p.t_max * p.hs;
}

// The attention of layer l over positions 0 ..= last: q, k, v in big
// (the qkv row); k and v appended to the caches at `last`, where this
// dispatch never reads them back (position `last` comes from big); the
// heads' outputs into xn. Every thread calls it (barriers).
fn attend_heads(t: u32, l: u32, last: u32) {
    let c = p.c;
    let hs = p.hs;
    let n = last + 1u;
    if (t < c) {
        let base = cache_base(l, t / hs);
        let d = t % hs;
        k_cache[base + d * p.t_max + last] = big_sh[c + t];
        v_cache[base + last * hs + d] = big_sh[2u * c + t];
    }
    // The weighted values' first round of sixteen positions (below
    // `last`), loaded now, so that its round trip overlaps the scores and
    // the softmax (`groups`, `gi`: below).
    let groups = WG / c;
    let o = t % c;
    let gi = t / c;
    let hh = o / hs;
    let vbase = cache_base(l, hh) + o % hs;
    let first = gi < groups && gi + 15u * groups < last;
    var pv0 = vec4<f32>(0.0);
    var pv1 = vec4<f32>(0.0);
    var pv2 = vec4<f32>(0.0);
    var pv3 = vec4<f32>(0.0);
    if (first) {
        pv0 = v4(vbase, gi, groups);
        pv1 = v4(vbase, gi + 4u * groups, groups);
        pv2 = v4(vbase, gi + 8u * groups, groups);
        pv3 = v4(vbase, gi + 12u * groups, groups);
    }
    // Scores of (head, position), positions neighbouring across threads;
    // sixteen dims' loads in flight.
    for (var i = t; i < p.nh * n; i += WG) {
        let h = i / n;
        let s = i % n;
        let q = h * hs;
        var acc = vec4<f32>(0.0);
        if (s == last) {
            for (var d = 0u; d < hs; d += 4u) {
                acc = fma(big4(q + d), big4(c + q + d), acc);
            }
        } else {
            let base = cache_base(l, h) + s;
            var d = 0u;
            for (; d + 16u <= hs; d += 16u) {
                let k0 = k4(base, d);
                let k1 = k4(base, d + 4u);
                let k2 = k4(base, d + 8u);
                let k3 = k4(base, d + 12u);
                acc = fma(big4(q + d), k0, acc);
                acc = fma(big4(q + d + 4u), k1, acc);
                acc = fma(big4(q + d + 8u), k2, acc);
                acc = fma(big4(q + d + 12u), k3, acc);
            }
            for (; d < hs; d += 4u) {
                acc = fma(big4(q + d), k4(base, d), acc);
            }
        }
        part_sh[h * p.t_max + s] = ((acc.x + acc.y) + (acc.z + acc.w)) * p.scale;
    }
    workgroupBarrier();
    // Each head's max, then its weights exp(score − max) and their sum:
    // 32 lanes a head, lane j taking positions j, j + 32, …; lane 0 adds
    // the lanes' 32 in order.
    let h = t / 32u;
    let lane = t % 32u;
    let live = h < p.nh;
    var m = NEG;
    if (live) {
        for (var s = lane; s < n; s += 32u) {
            m = max(m, part_sh[h * p.t_max + s]);
        }
    }
    red[t] = m;
    workgroupBarrier();
    if (live && lane == 0u) {
        var mm = red[t];
        for (var i = 1u; i < 32u; i++) {
            mm = max(mm, red[t + i]);
        }
        m_sh[h] = mm;
    }
    workgroupBarrier();
    var l_sum = 0.0;
    if (live) {
        let mh = m_sh[h];
        for (var s = lane; s < n; s += 32u) {
            let e = exp(part_sh[h * p.t_max + s] - mh);
            part_sh[h * p.t_max + s] = e;
            l_sum += e;
        }
    }
    red[t] = l_sum;
    workgroupBarrier();
    if (live && lane == 0u) {
        var ls = red[t];
        for (var i = 1u; i < 32u; i++) {
            ls += red[t + i];
        }
        l_sh[h] = ls;
    }
    // Output dim o of group gi (WG / C groups of positions gi, gi + G, …
    // below `last`): its head's weighted values, sixteen positions' loads
    // in flight; then the groups in order, then position `last` from big.
    var acc = 0.0;
    if (gi < groups) {
        let w0 = hh * p.t_max;
        var a4 = vec4<f32>(0.0);
        var s = gi;
        let step = 4u * groups;
        if (first) {
            a4 = fma(w4s(w0, s, groups), pv0, a4);
            a4 = fma(w4s(w0, s + step, groups), pv1, a4);
            a4 = fma(w4s(w0, s + 2u * step, groups), pv2, a4);
            a4 = fma(w4s(w0, s + 3u * step, groups), pv3, a4);
            s += 4u * step;
        }
        // Sixteen positions a round: s, s + G, …, s + 15G.
        for (; s + 15u * groups < last; s += 4u * step) {
            let v0 = v4(vbase, s, groups);
            let v1 = v4(vbase, s + step, groups);
            let v2 = v4(vbase, s + 2u * step, groups);
            let v3 = v4(vbase, s + 3u * step, groups);
            a4 = fma(w4s(w0, s, groups), v0, a4);
            a4 = fma(w4s(w0, s + step, groups), v1, a4);
            a4 = fma(w4s(w0, s + 2u * step, groups), v2, a4);
            a4 = fma(w4s(w0, s + 3u * step, groups), v3, a4);
        }
        for (; s < last; s += groups) {
            a4.x = fma(part_sh[w0 + s], v_cache[vbase + s * hs], a4.x);
        }
        acc = (a4.x + a4.y) + (a4.z + a4.w);
    }
    workgroupBarrier();
    red[t] = acc;
    workgroupBarrier();
    if (t < c) {
        var sum = red[t];
        for (var i = 1u; i < groups; i++) {
            sum += red[i * c + t];
        }
        let th = t / hs;
        sum = fma(part_sh[th * p.t_max + last], big_sh[2u * c + t], sum);
        xn_sh[t] = sum / l_sh[th];
    }
    workgroupBarrier();
}

// Dims d … d + 3 of the key at the transposed block position `at`.
fn k4(at: u32, d: u32) -> vec4<f32> {
    let tm = p.t_max;
    return vec4<f32>(k_cache[at + d * tm], k_cache[at + (d + 1u) * tm], k_cache[at + (d + 2u) * tm], k_cache[at + (d + 3u) * tm]);
}

// The values of dim `at` (a head's block + dim) at positions s, s + g,
// s + 2g, s + 3g.
fn v4(at: u32, s: u32, g: u32) -> vec4<f32> {
    let hs = p.hs;
    return vec4<f32>(v_cache[at + s * hs], v_cache[at + (s + g) * hs], v_cache[at + (s + 2u * g) * hs], v_cache[at + (s + 3u * g) * hs]);
}

// The weights of positions s, s + g, s + 2g, s + 3g from w0.
fn w4s(w0: u32, s: u32, g: u32) -> vec4<f32> {
    return vec4<f32>(part_sh[w0 + s], part_sh[w0 + s + g], part_sh[w0 + s + 2u * g], part_sh[w0 + s + 3u * g]);
}

