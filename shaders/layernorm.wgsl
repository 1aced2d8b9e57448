// LayerNorm forward, one workgroup per row of C channels:
//   y = (x − μ)·σ̂ · w + b,  σ̂ = 1/√(var + 1e-5), var biased,
// keeping μ and σ̂ per row for the backward. Two passes over the row (mean,
// then the centred variance) like the CPU reference; each thread sums a
// strided slice, then a fixed tree combines the slices (ln_sum.wgsl,
// appended; two barriers a sum): deterministic, and the tree the GEMVs'
// LayerNorm prologue adds with. The entry points and passes are
// ln_rows.wgsl's, appended (layernorm_residual.wgsl shares them).

struct Params {
    n: u32,          // rows N
    c: u32,          // channels C
    x_off: u32,      // x (N, C)
    w_off: u32,      // w (C)
    b_off: u32,      // b (C)
    y_off: u32,      // y (N, C)
    mean_off: u32,   // mean (N)
    rstd_off: u32,   // rstd (N)
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> b: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read_write> mean: array<f32>;
@group(0) @binding(6) var<storage, read_write> rstd: array<f32>;

fn ln_weight(i: u32) -> f32 {
    return w[p.w_off + i];
}

fn ln_bias(i: u32) -> f32 {
    return b[p.b_off + i];
}

const EPS: f32 = 1e-5;

// The first pass's input (ln_rows.wgsl's entry points): x itself.
fn ln_input(row: u32, col: u32, key: u32) -> f32 {
    return x[p.x_off + row * p.c + col];
}

fn ln_key() -> u32 {
    return 0u;
}
