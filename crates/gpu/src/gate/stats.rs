//! The gate's statistics, pure functions of a fast-path output `f` and its
//! f32 reference `r` (docs/precision.md explains every number).

use tinygpt_protocol::{ErrorDistribution, GateStats, Histogram};

/// `max_abs_err` must stay under this share of `mean|ref|`.
pub const ABS_LIMIT_OF_MEAN: f64 = 0.01;
/// `mean_rel_err` must stay under this.
pub const MEAN_REL_LIMIT: f64 = 0.005;
/// The relative-error denominator is floored at this share of `mean|ref|`,
/// so outputs that cancel to near zero do not read as huge relative errors.
pub const REL_FLOOR_OF_MEAN: f64 = 0.01;
/// Relative-diff thresholds of the error distribution.
pub const DIFF_THRESHOLDS: [f64; 4] = [1e-4, 1e-3, 1e-2, 1e-1];
/// Quantile levels of the error distribution.
pub const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 1.0];
/// The histograms' edges run from `10^HIST_LOW_EXP` to 1 (times `mean|ref|`
/// for absolute diffs) in steps of half a decade.
pub const HIST_LOW_EXP: i32 = -8;

/// Half-decade edges from `scale·10^HIST_LOW_EXP` to `scale`.
fn log_edges(scale: f64) -> Vec<f64> {
    (0..=2 * -HIST_LOW_EXP)
        .map(|k| scale * 10f64.powf(HIST_LOW_EXP as f64 + k as f64 / 2.0))
        .collect()
}

fn histogram(values: &[f64], edges: Vec<f64>) -> Histogram {
    let mut h = Histogram::new(edges);
    values.iter().for_each(|&x| h.add(x));
    h
}

fn mean_abs(r: &[f32]) -> f64 {
    r.iter().map(|&x| (x as f64).abs()).sum::<f64>() / r.len().max(1) as f64
}

/// The floored relative difference of each element; a non-finite `f` gives
/// infinity.
fn rel_diffs<'a>(f: &'a [f32], r: &'a [f32], floor: f64) -> impl Iterator<Item = f64> + 'a {
    f.iter().zip(r).map(move |(&f, &r)| {
        let d = (f as f64 - r as f64).abs();
        if d.is_finite() {
            d / (r as f64).abs().max(floor)
        } else {
            f64::INFINITY
        }
    })
}

/// The two gating numbers and the verdict. Lengths must match.
#[track_caller]
pub fn gate_stats(f: &[f32], r: &[f32]) -> GateStats {
    assert_eq!(f.len(), r.len(), "gate compares equal lengths");
    let mean_abs_ref = mean_abs(r);
    let floor = REL_FLOOR_OF_MEAN * mean_abs_ref;
    let mut max_abs_err = 0.0f64;
    let mut non_finite = 0;
    for (&f, &r) in f.iter().zip(r) {
        let d = (f as f64 - r as f64).abs();
        if d.is_finite() {
            max_abs_err = max_abs_err.max(d);
        } else {
            max_abs_err = f64::INFINITY;
            non_finite += 1;
        }
    }
    let (mut sum_rel, mut max_rel_err) = (0.0f64, 0.0f64);
    for rel in rel_diffs(f, r, floor) {
        sum_rel += rel;
        max_rel_err = max_rel_err.max(rel);
    }
    let mean_rel_err = sum_rel / f.len().max(1) as f64;
    let abs_limit = ABS_LIMIT_OF_MEAN * mean_abs_ref;
    // Written so that NaN anywhere fails.
    let passed = non_finite == 0 && max_abs_err < abs_limit && mean_rel_err < MEAN_REL_LIMIT;
    GateStats {
        mean_abs_ref,
        max_abs_err,
        abs_limit,
        mean_rel_err,
        rel_limit: MEAN_REL_LIMIT,
        max_rel_err,
        non_finite,
        passed,
    }
}

/// The value at quantile `q` of sorted `v` (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// The error-distribution report (a measurement: it never fails).
#[track_caller]
pub fn error_distribution(f: &[f32], r: &[f32]) -> ErrorDistribution {
    assert_eq!(f.len(), r.len(), "distribution compares equal lengths");
    let n = f.len().max(1) as f64;
    let mean_ref = mean_abs(r);
    let floor = REL_FLOOR_OF_MEAN * mean_ref;
    let (mut dd, mut rr, mut ff, mut fr) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (&f, &r) in f.iter().zip(r) {
        let (f, r) = (f as f64, r as f64);
        dd += (f - r) * (f - r);
        rr += r * r;
        ff += f * f;
        fr += f * r;
    }
    let rel = sorted(rel_diffs(f, r, floor).collect());
    let abs = sorted(
        f.iter()
            .zip(r)
            .map(|(&f, &r)| {
                let d = (f as f64 - r as f64).abs();
                if d.is_finite() {
                    d
                } else {
                    f64::INFINITY
                }
            })
            .collect(),
    );
    let mag = sorted(r.iter().map(|&x| (x as f64).abs()).collect());
    let at = |v: &[f64]| QUANTILES.iter().map(|&q| quantile(v, q)).collect();
    ErrorDistribution {
        rel_l2: (dd / rr.max(f64::MIN_POSITIVE)).sqrt(),
        cosine: fr / (ff.sqrt() * rr.sqrt()).max(f64::MIN_POSITIVE),
        thresholds: DIFF_THRESHOLDS.to_vec(),
        frac_over: DIFF_THRESHOLDS
            .iter()
            .map(|&t| rel.iter().filter(|&&x| x > t).count() as f64 / n)
            .collect(),
        quantiles: QUANTILES.to_vec(),
        rel_diff: at(&rel),
        abs_diff: at(&abs),
        ref_abs: at(&mag),
        rel_hist: histogram(&rel, log_edges(1.0)),
        abs_hist: histogram(&abs, log_edges(mean_ref)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_outputs_pass_with_zero_error() {
        let r = [0.5f32, -0.25, 1.0, -1.0];
        let s = gate_stats(&r, &r);
        assert!(s.passed);
        assert_eq!(
            (s.max_abs_err, s.mean_rel_err, s.max_rel_err),
            (0.0, 0.0, 0.0)
        );
        assert!((s.mean_abs_ref - 0.6875).abs() < 1e-12);
        assert!((s.abs_limit - 0.006875).abs() < 1e-12);
    }

    #[test]
    fn the_relative_denominator_is_floored_at_one_percent_of_mean_ref() {
        // mean|ref| ≈ 0.75, so the floor is ≈ 0.0075.
        let r = [1.0f32, -1.0, 1.0, 1e-6];
        let f = [1.0f32, -1.0, 1.0, 1e-6 + 1e-4];
        let s = gate_stats(&f, &r);
        let floor = REL_FLOOR_OF_MEAN * s.mean_abs_ref;
        // 1e-4 / 0.0075 ≈ 1.3 %, not 1e-4 / 1e-6 = 10000 %.
        assert!((s.max_rel_err - 1e-4 / floor).abs() < 1e-5, "{s:?}");
        assert!((s.mean_rel_err - s.max_rel_err / 4.0).abs() < 1e-9, "{s:?}");
        assert!(s.passed);
    }

    #[test]
    fn each_threshold_fails_on_its_own() {
        let r = vec![1.0f32; 100];
        // One blow-up: max_abs 0.02 > 0.01, mean_rel 0.02 % < 0.5 %.
        let mut spike = r.clone();
        spike[7] = 1.02;
        let s = gate_stats(&spike, &r);
        assert!(!s.passed && s.mean_rel_err < MEAN_REL_LIMIT, "{s:?}");
        // Systematic bias: every element 0.6 % off stays under max_abs
        // (0.006 < 0.01) but mean_rel 0.6 % > 0.5 %.
        let biased: Vec<f32> = r.iter().map(|x| x * 1.006).collect();
        let s = gate_stats(&biased, &r);
        assert!(s.max_abs_err < s.abs_limit && !s.passed, "{s:?}");
    }

    #[test]
    fn nan_and_inf_fail() {
        let r = [1.0f32, 2.0];
        for bad in [f32::NAN, f32::INFINITY] {
            let s = gate_stats(&[1.0, bad], &r);
            assert!(!s.passed && s.non_finite == 1, "{s:?}");
        }
    }

    #[test]
    fn distribution_reports_l2_cosine_fractions_and_quantiles() {
        let r: Vec<f32> = (1..=100).map(|i| i as f32).collect();
        let mut f = r.clone();
        f[99] = 110.0; // rel diff 0.1 at the last element only.
        f[0] = 1.0005; // rel diff 5e-4 (floor is 0.505).
        let d = error_distribution(&f, &r);
        assert_eq!(d.frac_over, vec![0.02, 0.01, 0.01, 0.0]);
        assert!((d.rel_diff[3] - 0.1).abs() < 1e-9);
        assert_eq!(d.rel_diff[0], 0.0);
        assert!((d.abs_diff[3] - 10.0).abs() < 1e-9);
        assert_eq!(d.ref_abs, vec![50.0, 90.0, 99.0, 100.0]);
        let norm: f64 = r.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
        assert!((d.rel_l2 - (100.0 + 0.0005f64.powi(2)).sqrt() / norm).abs() < 1e-6);
        assert!(d.cosine > 0.999 && d.cosine < 1.0);
        // 98 exact elements sit under the lowest edge, 5e-4 in
        // [10^-3.5, 10^-3), 0.1 in [10^-1, 10^-0.5).
        let h = &d.rel_hist;
        assert_eq!((h.edges.len(), h.total()), (17, 100));
        assert_eq!((h.counts[0], h.counts[10], h.counts[15]), (98, 1, 1));
        // The absolute diffs, in multiples of mean|ref| = 50.5: 5e-4 is
        // ~1e-5 of it (bin [10^-5.5, 10^-5)), 10 is ~0.2 of it.
        let a = &d.abs_hist;
        assert!((a.edges[16] - 50.5).abs() < 1e-9);
        assert_eq!((a.counts[0], a.counts[6], a.counts[15]), (98, 1, 1));
    }
}
