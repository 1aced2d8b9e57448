// A residual add and the LayerNorm after it, one pass over the row fewer
// and one dispatch fewer than residual.wgsl (or dropout.wgsl) then
// layernorm.wgsl, with their bits:
//   x = base + branch          (x: the stream, written)
//   x = base + mask(branch)    (training with dropout: dropout.wgsl's
//                               mask of `site`, the same hash and bits)
//   y = LayerNorm(x) · w + b, μ and σ̂ per row (layernorm.wgsl's sums).
// The first pass computes and writes x and sums it; ln_rows.wgsl's entry
// points and passes (appended, then ln_sum.wgsl and dropout_mask.wgsl)
// read back what each invocation wrote. The mask indexes the element in the (N, C) tensor, as
// the dropout kernel does over its whole buffer.

struct Params {
    n: u32,          // rows N
    c: u32,          // channels C
    x_off: u32,      // x (N, C), written
    w_off: u32,      // w (C)
    b_off: u32,      // b (C)
    y_off: u32,      // y (N, C)
    mean_off: u32,   // mean (N)
    rstd_off: u32,   // rstd (N)
    base_off: u32,   // base (N, C)
    branch_off: u32, // branch (N, C)
    site: u32,       // dropout: the mask's site
    threshold: u32,  // dropout: an element is kept when its hash ≥ this
    flags: u32,      // bit 0: the branch goes through the dropout mask
    seed_lo: u32,
    seed_hi: u32,
    scale_bits: u32, // f32 bits of 1 / (1 − p)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
// w and b, in one buffer (the flat parameters): one binding, so that the
// kernel binds 8 storage buffers, WebGPU's default a stage.
@group(0) @binding(2) var<storage, read> wb: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(7) var<storage, read> base: array<f32>;
@group(0) @binding(8) var<storage, read> branch: array<f32>;
@group(0) @binding(9) var<storage, read> state: array<u32>;

fn ln_weight(i: u32) -> f32 {
    return wb[p.w_off + i];
}

fn ln_bias(i: u32) -> f32 {
    return wb[p.b_off + i];
}

const EPS: f32 = 1e-5;
const DROPS: u32 = 1u;

// The first pass's input (ln_rows.wgsl's entry points): element `col` of
// row `row` of the stream, written to x and returned.
fn ln_input(row: u32, col: u32, key: u32) -> f32 {
    let e = row * p.c + col;
    var v = branch[p.branch_off + e];
    if ((p.flags & DROPS) != 0u) {
        v = select(0.0, v * bitcast<f32>(p.scale_bits), mix32(key ^ mix32(e)) >= p.threshold);
    }
    v = base[p.base_off + e] + v;
    x[p.x_off + e] = v;
    return v;
}

// This step's mask key, or 0 without dropout (the mask is not drawn then).
fn ln_key() -> u32 {
    if ((p.flags & DROPS) != 0u) {
        return drop_key();
    }
    return 0u;
}
