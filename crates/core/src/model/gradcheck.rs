//! Test support: central finite differences in `f64` and a mixed-tolerance
//! comparison that names the worst element.

use crate::rng::Rng;

/// `n` draws of N(mean, std²) in `f64`.
pub fn randn(rng: &mut Rng, n: usize, mean: f64, std: f64) -> Vec<f64> {
    (0..n).map(|_| mean + std * rng.normal() as f64).collect()
}

/// `∂f/∂x[i] ≈ (f(x + h·eᵢ) − f(x − h·eᵢ)) / 2h` for every `i`; the error is
/// `O(h²)` plus roundoff `~ε·|f|/h`, both ~1e-10 at `h = 1e-5` in `f64`.
pub fn numeric_grad(x: &[f64], h: f64, mut f: impl FnMut(&[f64]) -> f64) -> Vec<f64> {
    let mut xp = x.to_vec();
    (0..x.len())
        .map(|i| {
            let orig = xp[i];
            xp[i] = orig + h;
            let up = f(&xp);
            xp[i] = orig - h;
            let down = f(&xp);
            xp[i] = orig;
            (up - down) / (2.0 * h)
        })
        .collect()
}

/// The element that is furthest over `|a − n| ≤ atol + rtol·|n|`, as
/// `(index, ratio)` where ratio > 1 fails; NaN counts as infinite.
pub fn worst(analytic: &[f64], numeric: &[f64], atol: f64, rtol: f64) -> (usize, f64) {
    assert_eq!(analytic.len(), numeric.len(), "gradient lengths differ");
    let mut worst = (0, 0.0);
    for (i, (&a, &n)) in analytic.iter().zip(numeric).enumerate() {
        let ratio = (a - n).abs() / (atol + rtol * n.abs());
        let ratio = if ratio.is_nan() { f64::INFINITY } else { ratio };
        if ratio > worst.1 {
            worst = (i, ratio);
        }
    }
    worst
}

/// Panics with the worst element and its index when any element is out of
/// tolerance.
#[track_caller]
pub fn assert_grad_close(what: &str, analytic: &[f64], numeric: &[f64], atol: f64, rtol: f64) {
    let (i, ratio) = worst(analytic, numeric, atol, rtol);
    assert!(
        ratio <= 1.0,
        "{what}: worst element [{i}]: analytic {:e} vs numeric {:e} ({ratio:.2}× the tolerance {atol:e} + {rtol:e}·|numeric|)",
        analytic[i],
        numeric[i],
    );
    // A gradient check on an all-zero gradient proves nothing.
    assert!(
        numeric.iter().any(|&n| n.abs() > 10.0 * atol),
        "{what}: the numeric gradient is ~0 everywhere; the check is vacuous"
    );
}

/// `Σ out ⊙ r`: turns a layer's output into a scalar whose gradient with
/// respect to the output is `r`.
pub fn project(out: &[f64], r: &[f64]) -> f64 {
    out.iter().zip(r).map(|(o, r)| o * r).sum()
}
