// Exact GELU, y = x·Φ(x) = ½x(1 + erf(x/√2)), and its derivative, shared by
// gelu.wgsl, the GEMV epilogue of the M = 1 kernels and the tensor-core
// epilogue (appended to their sources), so all round exactly alike. WGSL has no erf: `erf_f32` is Norbert Juffa's
// faithfully rounded erff (max error < 1 ulp with fma; the same polynomials
// MLX uses), so the only error left is the f32 rounding of the products
// around it.

const FRAC_1_SQRT_2: f32 = 0.70710678118654752;

fn erf_f32(a: f32) -> f32 {
    let t = abs(a);
    let s = a * a;
    if (t > 0.927734375) {
        var r = fma(-1.72853470e-5, t, 3.83197126e-4);
        let u = fma(-3.88396438e-3, t, 2.42546219e-2);
        r = fma(r, s, u);
        r = fma(r, t, -1.06777877e-1);
        r = fma(r, t, -6.34846687e-1);
        r = fma(r, t, -1.28717512e-1);
        r = fma(r, t, -t);
        r = 1.0 - exp(r);
        return select(r, -r, a < 0.0);
    }
    var r = -5.96761703e-4;
    r = fma(r, s, 4.99119423e-3);
    r = fma(r, s, -2.67681349e-2);
    r = fma(r, s, 1.12819925e-1);
    r = fma(r, s, -3.76125336e-1);
    r = fma(r, s, 1.28379166e-1);
    return fma(r, a, a);
}

fn gelu_f32(v: f32) -> f32 {
    return 0.5 * v * (1.0 + erf_f32(v * FRAC_1_SQRT_2));
}

// GELU'(v) = Φ(v) + v·φ(v), φ(v) = e^{−v²/2}/√(2π).
fn gelu_grad_f32(v: f32) -> f32 {
    let cdf = 0.5 * (1.0 + erf_f32(v * FRAC_1_SQRT_2));
    let pdf = exp(-0.5 * v * v) * 0.39894228040143268;
    return cdf + v * pdf;
}
