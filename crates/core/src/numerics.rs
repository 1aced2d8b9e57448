//! Comparing a result against its reference: the mixed tolerance every kernel
//! test uses, with a report of the worst element and its index.

/// The worst element of a comparison under `|got − want| ≤ atol + rtol·|want|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mismatch {
    pub index: usize,
    pub got: f32,
    pub want: f32,
    /// `|got − want| / (atol + rtol·|want|)`: over 1 fails.
    pub ratio: f64,
    pub max_abs: f64,
}

/// Compares element-wise and returns the element closest to (or furthest
/// over) the tolerance. Lengths must match; NaN anywhere counts as infinite.
#[track_caller]
pub fn worst_mismatch(got: &[f32], want: &[f32], atol: f64, rtol: f64) -> Mismatch {
    assert_eq!(got.len(), want.len(), "compared slices differ in length");
    let mut worst = Mismatch {
        index: 0,
        got: 0.0,
        want: 0.0,
        ratio: 0.0,
        max_abs: 0.0,
    };
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let diff = (g as f64 - w as f64).abs();
        let ratio = if diff.is_nan() {
            f64::INFINITY
        } else {
            diff / (atol + rtol * (w as f64).abs())
        };
        worst.max_abs = worst
            .max_abs
            .max(if diff.is_nan() { f64::INFINITY } else { diff });
        if ratio > worst.ratio || i == 0 {
            worst = Mismatch {
                index: i,
                got: g,
                want: w,
                ratio,
                max_abs: worst.max_abs,
            };
        }
    }
    worst
}

/// Panics with the worst element's index and values when any element of
/// `got` is outside `atol + rtol·|want|` of `want`.
#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f32], atol: f64, rtol: f64) {
    let m = worst_mismatch(got, want, atol, rtol);
    assert!(
        m.ratio <= 1.0,
        "{what}: worst element [{}] = {} vs reference {} (|diff| {:.3e}, {:.2}× the tolerance atol {atol:e} + rtol {rtol:e}·|ref|; max |diff| {:.3e})",
        m.index,
        m.got,
        m.want,
        (m.got as f64 - m.want as f64).abs(),
        m.ratio,
        m.max_abs
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_worst_element() {
        let want = [1.0, 2.0, 3.0, 4.0];
        let got = [1.0, 2.1, 3.0, 4.01];
        let m = worst_mismatch(&got, &want, 1e-3, 1e-3);
        assert_eq!(m.index, 1);
        assert!(m.ratio > 1.0);
    }

    #[test]
    #[should_panic(expected = "worst element [2]")]
    fn nan_fails() {
        assert_close("t", &[1.0, 1.0, f32::NAN], &[1.0, 1.0, 1.0], 1e-3, 1e-3);
    }

    #[test]
    fn within_tolerance_passes() {
        assert_close("t", &[1.0005, -2.0], &[1.0, -2.0], 1e-3, 0.0);
    }
}
