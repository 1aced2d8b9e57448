// What the tensor-core attention kernels share (attention_coop_fwd.wgsl,
// attention_coop_bwd_dq.wgsl, attention_coop_bwd_dkv.wgsl; appended to
// each, with dropout_mask.wgsl and attention_dropout.wgsl, by
// ops/attention/coop.rs): the uniform, the workgroup's tiles, the f16
// copies of a head's rows into them and the two products of 16 rows by a
// block of 32.
//
// A workgroup is four subgroups of any width (WG = 4 × the device's
// subgroup width, a pipeline constant), each owning 16 rows (queries, or
// keys in dK/dV) of the workgroup's 64. The tiles hold f16 rows of HS ≤ 64
// columns, HS a multiple of 16, rounded by the device's f32 → f16
// conversion (as coop_stage.wgsl stages the matmuls' operands); every
// product sums in f32 (cooperative-matrix accumulators), every softmax
// term is computed in f32 from the f32 scores. Strides are constants
// (naga 30's SPIR-V writer fails on a uniform stride inside a loop), and
// every cooperative-matrix operation and barrier sits in control flow that
// depends only on the workgroup and the uniform: a subgroup whose rows end
// before a block's keys still multiplies it (its weights are zero).

struct Params {
    t: u32,
    c: u32,
    nh: u32,
    hs: u32,
    nch: u32,
    scale: f32,
    // The backward's gradient scale g (a power of two: B·T rounded up):
    // dout is staged as g·dout and every ds as g·ds, so that gradients of
    // order 1/(B·T) keep f16's precision instead of sinking into its
    // subnormals; the sums are divided by g as they are written.
    grad_scale: f32,
    _pad1: u32,
    // The dropout of the attention weights (attention_fwd.wgsl's Params).
    site: u32,
    threshold: u32,
    seed_lo: u32,
    seed_hi: u32,
    drop_scale: f32,
    _pad2: u32,
    _pad3: u32,
    _pad4: u32,
}

@group(0) @binding(0) var<uniform> p: Params;

// Invocations a workgroup: four subgroups.
override WG: u32 = 128u;
// The subgroup width (a pipeline per width, ops/attention/coop.rs): a
// constant, so that each loop over a subgroup's elements has a constant
// trip count the driver can unroll (they stepped by the subgroup_size
// builtin before; run 132 in BENCHMARKS.md found those loops half of each
// kernel's time; run 134: 1–5 % faster since).
override SW: u32 = WG / 4u;

// The head size as a pipeline constant (ops/attention/coop.rs binds a
// pipeline per head size): the branches and loops over the head's
// 16-column fragments are then fixed when the driver compiles the kernel;
// 0 reads the uniform's.
override HS: u32 = 0u;

fn hs() -> u32 {
    return select(p.hs, HS, HS != 0u);
}

// Rows a workgroup (four subgroups of 16), rows of a block (keys in the
// forward and dQ, queries in dK/dV), the tiles' row stride in halves (HS ≤
// 64, plus 8: rows stay 16-byte aligned and fall on other banks) and the
// weights' row stride.
const ROWS: u32 = 64u;
const BLOCK: u32 = 32u;
const TS: u32 = 72u;
const PS: u32 = 40u;
// Below any real score (attention_fwd.wgsl's NEG).
const NEG: f32 = -1e30;

// Each kernel declares its tiles: `sh` (f16 rows at a stride of TS, a
// subgroup's weights at a stride of PS) and `sf` (f32: each subgroup's
// 16 × 32 products, row terms), with the regions' offsets.

// Where a workgroup's rows and head start, which they are, and the
// step's dropout key (0 without dropout).
struct Tile {
    r0: u32,
    seq: u32,
    head: u32,
    b: u32,
    h: u32,
    key: u32,
}

// Workgroup (row block, h, b) of the grid (⌈T/64⌉, NH, B).
fn tile_at(wg: vec3<u32>) -> Tile {
    var key = 0u;
    if (p.threshold != 0u) {
        key = drop_key();
    }
    return Tile(wg.x * ROWS, wg.z * p.t, wg.y * hs(), wg.z, wg.y, key);
}

// qkv index of column d of part `part` (0 Q, 1 K, 2 V) of row t.
fn qkv_at(x: Tile, t: u32, part: u32, d: u32) -> u32 {
    return (x.seq + t) * 3u * p.c + part * p.c + x.head + d;
}

// Four f32 into the tile at `at` as f16.
fn put4(at: u32, v: vec4<f32>) {
    let h = vec4<f16>(v);
    sh[at] = h.x;
    sh[at + 1u] = h.y;
    sh[at + 2u] = h.z;
    sh[at + 3u] = h.w;
}

// Rows r0 … r0 + n − 1 (n a multiple of WG / 16) of part `part` into the
// tile at `at`, as f16, four columns a load (C and HS are multiples of
// 16); zero past T and past HS. Invocation t copies columns 4·(t % 16) …
// of n · 16 / WG rows, WG / 16 apart: a count fixed once the pipeline's
// WG is, so that the loads can all be issued before the first store.
// Every invocation calls it (no barrier inside). The kernel declares
// `qkv4`, `qkv` four floats an element.
fn load_qkv(at: u32, x: Tile, r0: u32, n: u32, part: u32, t: u32) {
    let d = 4u * (t % 16u);
    for (var i = 0u; i < n * 16u / WG; i++) {
        let r = t / 16u + i * (WG / 16u);
        var v = vec4<f32>();
        if (d < hs() && r0 + r < p.t) {
            v = qkv4[qkv_at(x, r0 + r, part, d) / 4u];
        }
        put4(at + r * TS + d, v);
    }
}

alias Rows = coop_mat16x16<f16, A>;
alias Sums = coop_mat16x16<f32, C>;

// One invocation's copies of a 32-row block in registers (BLOCK · 16 /
// WG of them: 16 at WG 32, 4 at WG 128): all loaded (`fetch_qkv`), then
// stored into the tiles (`put_block`). Since run 138 a block is loaded
// when its tiles are filled, not while the block before is multiplied:
// none is held in registers across the products.
alias Fetched = array<vec4<f32>, 16>;

// Invocation t's copies of rows r0 … r0 + 31 of part `part` (load_qkv's).
fn fetch_qkv(x: Tile, r0: u32, part: u32, t: u32) -> Fetched {
    var f: Fetched;
    let d = 4u * (t % 16u);
    for (var i = 0u; i < BLOCK * 16u / WG; i++) {
        let r = t / 16u + i * (WG / 16u);
        if (d < hs() && r0 + r < p.t) {
            f[i] = qkv4[qkv_at(x, r0 + r, part, d) / 4u];
        } else {
            f[i] = vec4<f32>();
        }
    }
    return f;
}

// Invocation t's copies into the 32-row tile at `at`, as f16.
fn put_block(at: u32, f: Fetched, t: u32) {
    let d = 4u * (t % 16u);
    for (var i = 0u; i < BLOCK * 16u / WG; i++) {
        put4(at + (t / 16u + i * (WG / 16u)) * TS + d, f[i]);
    }
}

// 16 rows (their HS columns as fragments a0 … a3, those past HS unused)
// times the 16 rows of the tile at `b_at`, transposed: A·Bᵀ over HS.
fn rows_by_rows(a0: Rows, a1: Rows, a2: Rows, a3: Rows, b_at: u32) -> Sums {
    let nd = hs() / 16u;
    var s = coopMultiplyAdd(a0, coopLoad<coop_mat16x16<f16, B>>(&sh[b_at], TS), Sums());
    if (nd > 1u) {
        s = coopMultiplyAdd(a1, coopLoad<coop_mat16x16<f16, B>>(&sh[b_at + 16u], TS), s);
    }
    if (nd > 2u) {
        s = coopMultiplyAdd(a2, coopLoad<coop_mat16x16<f16, B>>(&sh[b_at + 32u], TS), s);
    }
    if (nd > 3u) {
        s = coopMultiplyAdd(a3, coopLoad<coop_mat16x16<f16, B>>(&sh[b_at + 48u], TS), s);
    }
    return s;
}

// `acc` + 16 × 32 weights (w0: keys or queries 0–15, w1: 16–31) times
// columns 16·dc … of the block's 32-row tile at `at`.
fn weights_by_block(w0: Rows, w1: Rows, at: u32, dc: u32, acc: Sums) -> Sums {
    let c = at + dc * 16u;
    let s = coopMultiplyAdd(w0, coopLoadT<coop_mat16x16<f16, B>>(&sh[c], TS), acc);
    return coopMultiplyAdd(w1, coopLoadT<coop_mat16x16<f16, B>>(&sh[c + 16u * TS], TS), s);
}

// COPY (a pipeline constant): each output also goes to its f16 copy
// (copy16_write.wgsl, appended) for the product reading it next, which
// then stages nothing — the forward's out (scale 1), the backward's dQ, dK
// and dV times g (as the qkv dX product stages its op(A)).
override COPY: bool = false;

// Under COPY, v (the f32 just written at column `col` of row t of the
// workgroup's sequence, in a matrix `width` wide) into the copy, times
// `scale`.
fn copy_out(x: Tile, t: u32, col: u32, width: u32, v: f32, scale: f32) {
    if (COPY) {
        copy16_write(x.seq + t, col, width, v, scale);
    }
}

// The dropout factor of weight (query t, key s) of the workgroup's head:
// 1 without dropout.
fn drop_at(x: Tile, t: u32, s: u32) -> f32 {
    if (p.threshold == 0u) {
        return 1.0;
    }
    return drop1(x.key, x.b, x.h, t, s);
}
