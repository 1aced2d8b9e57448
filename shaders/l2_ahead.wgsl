// Loads ahead into the GPU's L2 cache: while a kernel that leaves most of
// the GPU idle runs (the decode attention: a workgroup per head), extra
// workgroups of its dispatch read the weights the next kernels will read,
// so that those find them in L2 instead of memory. Appended to the
// kernel's source; the kernel dispatches `ahead.groups` workgroups past
// its own and calls `load_ahead` in them.
//
// Each invocation reads one word of every 32-byte sector of its share of
// up to four ranges of `ahead_src` (a sector is what L2 fetches from
// memory), eight loads in flight. Nothing is computed from them: their sum
// is written only if `ahead.sink` is set, which the host never does — a
// condition no compiler can fold, so the loads stay. The kernel's own
// results do not depend on any of it.

struct Ahead {
    // (first word, words) of range 2i in .xy and of range 2i + 1 in .zw.
    ranges: array<vec4<u32>, 2>,
    groups: u32,
    // Always 0.
    sink: u32,
    // The ranges' sectors, all four together.
    sectors: u32,
    _pad: u32,
}

@group(0) @binding(6) var<uniform> ahead: Ahead;
@group(0) @binding(7) var<storage, read> ahead_src: array<u32>;

// Words of a 32-byte sector.
const AHEAD_SECTOR: u32 = 8u;
// Loads an invocation keeps in flight.
const AHEAD_LOADS: u32 = 8u;
const AHEAD_NONE: u32 = 0xffffffffu;

fn ahead_range(r: u32) -> vec2<u32> {
    let v = ahead.ranges[r / 2u];
    return select(v.xy, v.zw, r % 2u == 1u);
}

// The first word of sector j of the ranges one after the other, or
// AHEAD_NONE past their end.
fn ahead_word(j: u32) -> u32 {
    var k = j;
    for (var r = 0u; r < 4u; r++) {
        let range = ahead_range(r);
        let n = (range.y + AHEAD_SECTOR - 1u) / AHEAD_SECTOR;
        if (k < n) {
            return range.x + k * AHEAD_SECTOR;
        }
        k -= n;
    }
    return AHEAD_NONE;
}

// The loads of workgroup g of `ahead.groups`, invocation tid of `wg`:
// sectors g·wg + tid + i·groups·wg; returns their sum (see `ahead.sink`).
fn load_ahead(g: u32, tid: u32, wg: u32) -> u32 {
    var acc = 0u;
    let stride = ahead.groups * wg;
    for (var j = g * wg + tid; j < ahead.sectors; j += stride * AHEAD_LOADS) {
        for (var u = 0u; u < AHEAD_LOADS; u++) {
            let w = ahead_word(j + u * stride);
            if (w != AHEAD_NONE) {
                acc += ahead_src[w];
            }
        }
    }
    return acc;
}
