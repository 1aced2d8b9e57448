//! The scalar type the reference is written over, and the few numeric
//! kernels every layer shares.
//!
//! The model runs in `f32` (what the GPU computes and what training uses);
//! the gradient checks run the very same code in `f64`, where central finite
//! differences are accurate to ~1e-9 and a tolerance can be tight.

use std::fmt::{Debug, Display};
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// `f32` or `f64`: the arithmetic the CPU reference needs, nothing more.
pub trait Float:
    Copy
    + Default
    + Debug
    + Display
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    const ZERO: Self;
    const ONE: Self;
    /// Rounds an `f64` constant (or value) to this type.
    fn of(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    /// The error function, accurate to a few ulp of `f64` (see [`erf`]).
    fn erf(self) -> Self;
}

macro_rules! impl_float {
    ($t:ty) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline]
            fn of(x: f64) -> Self {
                x as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline]
            fn erf(self) -> Self {
                erf(self as f64) as $t
            }
        }
    };
}
impl_float!(f32);
impl_float!(f64);

/// Taylor terms kept: 18 give 2e-16 relative on `|x| < 1`, 36 give 8e-16
/// on `[1, 2)` (the alternating sum loses under one digit there).
const ERF_TERMS_BELOW_1: usize = 18;
const ERF_TERMS_BELOW_2: usize = 36;
/// Depth of the erfc continued fraction: 50 reaches 1e-16 absolute on
/// `[2, 6)` against libm.
const ERFC_CF_DEPTH: u32 = 50;

/// Maclaurin coefficients of `erf(x)/x` in powers of `x²`:
/// `2/√π · (−1)ⁿ / (n!·(2n+1))`.
const ERF_TAYLOR: [f64; ERF_TERMS_BELOW_2] = {
    let mut c = [0.0; ERF_TERMS_BELOW_2];
    let mut factorial = 1.0;
    let mut n = 0;
    while n < ERF_TERMS_BELOW_2 {
        if n > 0 {
            factorial *= n as f64;
        }
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        c[n] = sign * std::f64::consts::FRAC_2_SQRT_PI / (factorial * (2 * n + 1) as f64);
        n += 1;
    }
    c
};

/// The error function `erf(x) = 2/√π ∫₀ˣ e^{-s²} ds`, to ~1e-15 relative.
///
/// Rust's std has no stable `erf`, and the classic short approximations
/// (Abramowitz–Stegun 7.1.26, 1.5e-7 absolute) are too coarse for an `f64`
/// gradient check, so this evaluates convergent expansions with enough
/// terms for `f64`:
/// - `|x| < 2`: the Maclaurin series `2/√π Σ (−1)ⁿ x^{2n+1} / (n!(2n+1))`
///   by Horner in `x²`, 18 terms below 1 (where GELU inputs mostly fall)
///   and 36 up to 2;
/// - `2 ≤ |x| < 6`: `1 − erfc(x)` by Laplace's continued fraction
///   `erfc(x) = e^{-x²}/√π · 1/(x + ½/(x + 1/(x + 3⁄2/(x + …))))`;
/// - `|x| ≥ 6`: `±1` (erfc(6) ≈ 2e-17 is below `f64` resolution at 1).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let z = x.abs();
    let magnitude = if z < 2.0 {
        let terms = if z < 1.0 {
            ERF_TERMS_BELOW_1
        } else {
            ERF_TERMS_BELOW_2
        };
        let u = z * z;
        z * ERF_TAYLOR[..terms]
            .iter()
            .rev()
            .fold(0.0, |acc, &c| acc * u + c)
    } else if z < 6.0 {
        let mut f = z;
        for n in (1..=ERFC_CF_DEPTH).rev() {
            f = z + (n as f64 * 0.5) / f;
        }
        1.0 - (-z * z).exp() / (std::f64::consts::PI.sqrt() * f)
    } else {
        1.0
    };
    magnitude.copysign(x)
}

/// `Σ a[i]·b[i]` with eight independent accumulators, so the compiler can
/// keep the loop in SIMD registers (a single running sum is a serial chain).
#[inline]
pub fn dot<F: Float>(a: &[F], b: &[F]) -> F {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [F::ZERO; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: F = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .fold(F::ZERO, |s, (&x, &y)| s + x * y);
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

/// `y += a·x`.
#[inline]
pub fn axpy<F: Float>(y: &mut [F], a: F, x: &[F]) {
    debug_assert_eq!(y.len(), x.len());
    for (yi, &xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from CPython's `math.erf` / `math.erfc` (libm).
    #[test]
    fn erf_matches_reference_values() {
        let table = [
            (1e-8, 1.1283791670955126e-08),
            (0.1, 0.1124629160182849),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (2.0, 0.9953222650189527),
            (0.9999, 0.8426592780487595),
            (1.9999, 0.9953201979070294),
            (2.0001, 0.9953243313041966),
            (2.5, 0.999593047982555),
            (3.0, 0.9999779095030014),
        ];
        for (x, want) in table {
            for sign in [1.0, -1.0] {
                let got = erf(sign * x);
                let rel = (got - sign * want).abs() / want;
                assert!(rel < 1e-15, "erf({}) = {got:e}, want {want:e}", sign * x);
            }
        }
        // The tail, where erf rounds to 1: check erfc = 1 − erf absolutely.
        let tail = [(4.0, 1.541725790028002e-08), (5.0, 1.5374597944280351e-12)];
        for (x, erfc) in tail {
            assert!(((1.0 - erf(x)) - erfc).abs() < 3e-16, "erfc({x})");
        }
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(7.0), 1.0);
        assert_eq!(erf(-30.0), -1.0);
        assert!(erf(f64::NAN).is_nan());
    }

    /// The derivative `2/√π e^{-x²}` by central differences, across both
    /// branches and the hand-over point: catches a wrong term anywhere.
    #[test]
    fn erf_derivative_is_consistent() {
        let h = 1e-5;
        for i in -600..=600 {
            let x = i as f64 * 0.01 + 0.003;
            let fd = (erf(x + h) - erf(x - h)) / (2.0 * h);
            let exact = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp();
            assert!(
                (fd - exact).abs() < 1e-9,
                "erf'({x}): fd {fd:e} vs {exact:e}"
            );
        }
    }

    #[test]
    fn dot_and_axpy_match_naive_loops() {
        for n in [0, 1, 7, 8, 9, 31] {
            let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.0).collect();
            let b: Vec<f64> = (0..n).map(|i| 1.0 / (i as f64 + 1.0)).collect();
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() < 1e-12, "n={n}");
            let mut y = b.clone();
            axpy(&mut y, 2.0, &a);
            for i in 0..n {
                assert_eq!(y[i], b[i] + 2.0 * a[i]);
            }
        }
    }
}
