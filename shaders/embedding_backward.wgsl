// Embedding backward, accumulated into the gradients (the tied head has
// already added its share to dtok_emb):
//   dtok_emb[v, :] += Σ_{n : inputs[n] = v} dout[n, :]
//   dpos_emb[t, :] += Σ_{n : n % T = t} dout[n, :]
//
// WebGPU has no float atomics, so both are gathers in which one invocation
// owns one output element and adds its rows in ascending order, starting
// from the stored value: exactly the order of the CPU reference's `+=`
// loop, and the same result on every run. Loads are issued eight at a time
// and then added in order, so the order is kept while the latency of the
// loads overlaps.

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

const TOK_WG: u32 = 128u;
// Rows scanned per round (4 per thread), and their 32-bit mask words.
const ROUND: u32 = 512u;
const WORDS: u32 = 16u;

// Bit i: row n0 + i of this round holds the workgroup's token.
var<workgroup> mask: array<atomic<u32>, 16>;
// The round's matching rows (offsets from n0), ascending, and their count.
var<workgroup> hits: array<u32, 512>;
var<workgroup> hit_count: u32;

fn dout_at(row: u32, ch: u32) -> f32 {
    return dout[p.dout_off + row * p.c + ch];
}

// Workgroup (x, y) owns token v = y and channels [128x, 128x + 128). Each
// round finds the rows of v among 512 tokens (a bit mask, then the set bits
// compacted in order), and every thread adds those rows of its channel:
// O(V·N) token reads plus O(N·C) gradient reads in all.
@compute @workgroup_size(128)
fn tok(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let v = wg.y;
    let ch = wg.x * TOK_WG + lid;
    let live = ch < p.c;
    let o = p.dtok_off + v * p.c + ch;
    var acc = 0.0;
    if (live) {
        acc = dtok_emb[o];
    }
    for (var n0 = 0u; n0 < p.n; n0 += ROUND) {
        if (lid < WORDS) {
            atomicStore(&mask[lid], 0u);
        }
        workgroupBarrier();
        for (var k = 0u; k < ROUND / TOK_WG; k++) {
            let i = k * TOK_WG + lid;
            if (n0 + i < p.n && inputs[p.inputs_off + n0 + i] == v) {
                atomicOr(&mask[i / 32u], 1u << (i % 32u));
            }
        }
        workgroupBarrier();
        // Thread w < 16 writes the set bits of word w after those of the
        // words before it.
        if (lid < WORDS) {
            var k = 0u;
            for (var w = 0u; w < lid; w++) {
                k += countOneBits(atomicLoad(&mask[w]));
            }
            var bits = atomicLoad(&mask[lid]);
            while (bits != 0u) {
                hits[k] = lid * 32u + countTrailingZeros(bits);
                k++;
                bits &= bits - 1u;
            }
            if (lid == WORDS - 1u) {
                hit_count = k;
            }
        }
        workgroupBarrier();
        let count = hit_count;
        if (live) {
            var k = 0u;
            for (; k + 8u <= count; k += 8u) {
                let x0 = dout_at(n0 + hits[k], ch);
                let x1 = dout_at(n0 + hits[k + 1u], ch);
                let x2 = dout_at(n0 + hits[k + 2u], ch);
                let x3 = dout_at(n0 + hits[k + 3u], ch);
                let x4 = dout_at(n0 + hits[k + 4u], ch);
                let x5 = dout_at(n0 + hits[k + 5u], ch);
                let x6 = dout_at(n0 + hits[k + 6u], ch);
                let x7 = dout_at(n0 + hits[k + 7u], ch);
                acc += x0;
                acc += x1;
                acc += x2;
                acc += x3;
                acc += x4;
                acc += x5;
                acc += x6;
                acc += x7;
            }
            for (; k < count; k++) {
                acc += dout_at(n0 + hits[k], ch);
            }
        }
        // hits and hit_count are read before the next round rewrites them.
        workgroupBarrier();
    }
    if (live) {
        dtok_emb[o] = acc;
    }
}

// One invocation per element of dpos_emb[0..T, :], summing the B rows at
// its position in order.
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
    let step = p.t;
    var row = t;
    for (; row + 3u * step < p.n; row += 4u * step) {
        let x0 = dout_at(row, ch);
        let x1 = dout_at(row + step, ch);
        let x2 = dout_at(row + 2u * step, ch);
        let x3 = dout_at(row + 3u * step, ch);
        acc += x0;
        acc += x1;
        acc += x2;
        acc += x3;
    }
    for (; row < p.n; row += step) {
        acc += dout_at(row, ch);
    }
    dpos_emb[o] = acc;
}

// `tok` in the kernel layout `Cpu` (CPU implementations of WebGPU): one
// invocation per (token, channel), workgroups (⌈C/64⌉, V), scanning every
// row in ascending order — the same sum in the same order, bit for bit;
// no workgroup memory, no barrier.
@compute @workgroup_size(64)
fn tok_serial(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let v = wg.y;
    let ch = wg.x * 64u + lid;
    if (ch >= p.c) {
        return;
    }
    let o = p.dtok_off + v * p.c + ch;
    var acc = dtok_emb[o];
    for (var n = 0u; n < p.n; n++) {
        if (inputs[p.inputs_off + n] == v) {
            acc += dout_at(n, ch);
        }
    }
    dtok_emb[o] = acc;
}
