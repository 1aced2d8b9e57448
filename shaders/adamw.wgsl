// The optimiser step, with no CPU work between steps:
//   `schedule` (one thread) reads the gradient norm and the step counters
//   that live on the GPU, writes this step's scalars — learning rate (warm-up
//   then cosine, as optim::lr_at), clip scale (as optim::clip_grad_norm),
//   bias corrections — and advances the counters;
//   `update` (one thread per parameter) applies AdamW with decoupled weight
//   decay on the parameters whose bit is set in the decay mask.
// A non-finite norm skips the update (parameters and moments untouched),
// still advances the schedule's step, and is counted in the state.

struct Params {
    n: u32,              // parameters
    warmup_steps: u32,
    steps: u32,          // end of the cosine; min_lr from there on
    _pad0: u32,
    lr: f32,             // peak learning rate
    min_lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    grad_clip: f32,      // 0 disables clipping
    _pad1: f32,
}

// Host-visible counters (ops::adamw::OptState).
struct OptState {
    step: u32,                 // steps recorded so far: the schedule's step
    updates: u32,              // updates applied: bias correction uses updates + 1
    nonfinite_steps: u32,      // steps skipped for a non-finite gradient norm
    last_nonfinite_step: u32,  // 1 + the last skipped step, 0 if none
}

// This step's scalars (ops::adamw::StepScalars).
struct StepScalars {
    norm: f32,
    lr: f32,
    clip_scale: f32,
    bc1: f32,        // 1 − β1ᵗ
    bc2: f32,        // 1 − β2ᵗ
    apply: u32,      // 0: skip this update
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> norm: array<f32>;
@group(0) @binding(2) var<storage, read_write> state: OptState;
@group(0) @binding(3) var<storage, read_write> scalars_out: StepScalars;
@group(0) @binding(4) var<storage, read> scalars: StepScalars;
@group(0) @binding(5) var<storage, read> decay_mask: array<u32>;
@group(0) @binding(6) var<storage, read> grads: array<f32>;
@group(0) @binding(7) var<storage, read_write> params: array<f32>;
@group(0) @binding(8) var<storage, read_write> m: array<f32>;
@group(0) @binding(9) var<storage, read_write> v: array<f32>;

const WG: u32 = 256u;
const PI: f32 = 3.14159265358979324;

// WGSL has no isnan/isinf, and fast-math compilers may fold `x != x`:
// test the exponent bits instead.
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// cos(π·x) for x in [0, 1], as sin(y) with y = π(½ − x) in [−π/2, π/2]: a
// Taylor series to y¹³ (truncation < 1e-9), so the schedule does not depend
// on the precision of the platform's cos (WGSL only promises 2⁻¹¹).
fn cos_pi(x: f32) -> f32 {
    let y = PI * (0.5 - x);
    let y2 = y * y;
    var r = 1.0 / 6227020800.0;
    r = fma(r, y2, -1.0 / 39916800.0);
    r = fma(r, y2, 1.0 / 362880.0);
    r = fma(r, y2, -1.0 / 5040.0);
    r = fma(r, y2, 1.0 / 120.0);
    r = fma(r, y2, -1.0 / 6.0);
    r = fma(r, y2, 1.0);
    return r * y;
}

// optim::lr_at: linear warm-up from 0, half cosine down to min_lr at `steps`.
fn lr_at(step: u32) -> f32 {
    if (step < p.warmup_steps) {
        return p.lr * f32(step) / f32(p.warmup_steps);
    }
    if (step >= p.steps) {
        return p.min_lr;
    }
    let progress = f32(step - p.warmup_steps) / f32(p.steps - p.warmup_steps);
    let cosine = 0.5 * (1.0 + cos_pi(progress));
    return p.min_lr + cosine * (p.lr - p.min_lr);
}

// 1 − βᵗ, the bias correction. Subtracting a rounded βᵗ from 1 would lose
// digits (β2 = 0.99, t = 3: 1 − 0.970299), so square-and-multiply carries
// the pair (βᵉ, 1 − βᵉ) instead, using 1 − β^(a+b) = (1 − βᵃ) + βᵃ(1 − βᵇ):
// sums of non-negative terms, a few ulp for any t.
fn one_minus_pow(beta: f32, t: u32) -> f32 {
    var rp = 1.0;          // βᵉ of the result so far
    var rq = 0.0;          // 1 − βᵉ of the result so far
    var bp = beta;         // β^(2ʲ)
    var bq = 1.0 - beta;   // 1 − β^(2ʲ)
    var k = t;
    loop {
        if (k == 0u) {
            break;
        }
        if ((k & 1u) == 1u) {
            rq = rq + rp * bq;
            rp = rp * bp;
        }
        bq = bq + bp * bq;
        bp = bp * bp;
        k >>= 1u;
    }
    return rq;
}

@compute @workgroup_size(1)
fn schedule() {
    let step = state.step;
    let t = state.updates + 1u;
    let gnorm = norm[0];
    let finite = is_finite(gnorm);
    var s: StepScalars;
    s.norm = gnorm;
    s.lr = lr_at(step);
    s.clip_scale = 1.0;
    if (p.grad_clip > 0.0 && finite && gnorm > p.grad_clip) {
        s.clip_scale = p.grad_clip / gnorm;
    }
    s.bc1 = one_minus_pow(p.beta1, t);
    s.bc2 = one_minus_pow(p.beta2, t);
    s.apply = select(0u, 1u, finite);
    scalars_out = s;
    state.step = step + 1u;
    if (finite) {
        state.updates = t;
    } else {
        state.nonfinite_steps += 1u;
        state.last_nonfinite_step = step + 1u;
    }
}

@compute @workgroup_size(256)
fn update(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let i = (wg.y * nwg.x + wg.x) * WG + lid;
    if (i >= p.n || scalars.apply == 0u) {
        return;
    }
    let lr = scalars.lr;
    let g = grads[i] * scalars.clip_scale;
    let mi = p.beta1 * m[i] + (1.0 - p.beta1) * g;
    let vi = p.beta2 * v[i] + (1.0 - p.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    let m_hat = mi / scalars.bc1;
    let v_hat = vi / scalars.bc2;
    let decays = ((decay_mask[i >> 5u] >> (i & 31u)) & 1u) == 1u;
    let decay = select(1.0, 1.0 - lr * p.weight_decay, decays);
    params[i] = params[i] * decay - lr * m_hat / (sqrt(v_hat) + p.eps);
}
