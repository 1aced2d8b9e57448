//! The loss chart's geometry, free of the DOM: round ticks, the linear or
//! logarithmic loss axis, EMA smoothing and the nearest point under the
//! pointer. `chart.rs` draws what this computes.

/// SVG user units of the chart.
pub const W: f64 = 640.0;
pub const H: f64 = 280.0;
pub const LEFT: f64 = 56.0;
pub const RIGHT: f64 = 16.0;
pub const TOP: f64 = 14.0;
pub const BOTTOM: f64 = 40.0;
/// Points drawn per series at most; longer series are thinned evenly.
pub const MAX_DRAWN: usize = 1500;

/// A `(step, loss)` series.
pub type Series = [(usize, f32)];

/// Ticks at 1, 2 or 5 × 10ᵏ covering `[lo, hi]` in about `target` steps.
/// Returns the tick step and the ticks, the first ≤ `lo`, the last ≥ `hi`.
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> (f64, Vec<f64>) {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    // d3's thresholds: the multiplier nearest `raw` on a log scale.
    let norm = raw / mag;
    let step = mag
        * if norm >= 50f64.sqrt() {
            10.0
        } else if norm >= 10f64.sqrt() {
            5.0
        } else if norm >= 2f64.sqrt() {
            2.0
        } else {
            1.0
        };
    let first = (lo / step + 1e-9).floor() as i64;
    let last = (hi / step - 1e-9).ceil() as i64;
    let ticks = (first..=last.max(first + 1))
        .map(|i| i as f64 * step)
        .collect();
    (step, ticks)
}

/// A tick label with as many decimals as the tick step needs.
pub fn tick_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{value:.decimals$}")
}

/// TensorBoard's smoothing: an exponential moving average with weight
/// `alpha` on the past, debiased so the first points are not pulled to 0.
/// `alpha` 0 returns the series unchanged.
pub fn ema(series: &Series, alpha: f64) -> Vec<(usize, f32)> {
    let alpha = alpha.clamp(0.0, 0.999);
    let (mut acc, mut weight) = (0.0f64, 0.0f64);
    series
        .iter()
        .map(|&(s, l)| {
            acc = alpha * acc + (1.0 - alpha) * l as f64;
            weight = alpha * weight + (1.0 - alpha);
            (s, (acc / weight) as f32)
        })
        .collect()
}

/// The point of `series` whose step is nearest `step`.
pub fn nearest(series: &Series, step: f64) -> Option<(usize, f32)> {
    let i = series.partition_point(|p| (p.0 as f64) < step);
    let after = series.get(i);
    let before = i.checked_sub(1).and_then(|j| series.get(j));
    match (before, after) {
        (Some(b), Some(a)) if step - b.0 as f64 <= a.0 as f64 - step => Some(*b),
        (_, Some(a)) => Some(*a),
        (b, None) => b.copied(),
    }
}

/// Maps data to SVG coordinates.
#[derive(Debug, PartialEq)]
pub struct Frame {
    pub x_ticks: Vec<f64>,
    pub x_step: f64,
    pub y_ticks: Vec<f64>,
    pub y_step: f64,
    /// The loss axis's ends (the first and last tick when linear).
    y_lo: f64,
    y_hi: f64,
    pub log: bool,
}

impl Frame {
    /// A frame holding every series, over steps `0..=total_steps` at least.
    pub fn new(series: &[&Series], total_steps: usize, log: bool) -> Self {
        let points = || series.iter().flat_map(|s| s.iter());
        let last_step = points().map(|p| p.0).max().unwrap_or(0);
        let x_max = total_steps.max(last_step).max(1) as f64;
        let (x_step, x_ticks) = nice_ticks(0.0, x_max, 6);
        // Steps are whole numbers: never tick between them.
        let (x_step, x_ticks) = if x_step < 1.0 {
            nice_ticks(0.0, x_max.max(5.0), 5)
        } else {
            (x_step, x_ticks)
        };
        let (lo, hi) = points()
            .map(|p| p.1 as f64)
            .filter(|v| !log || *v > 0.0)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        let (y_step, y_ticks, y_lo, y_hi) = if log {
            log_axis(lo, hi)
        } else {
            let (lo, hi) = if lo.is_finite() {
                let pad = ((hi - lo) * 0.05).max(0.05);
                (lo - pad, hi + pad)
            } else {
                (0.0, 5.0)
            };
            let (step, ticks) = nice_ticks(lo, hi, 5);
            let ends = (ticks[0], *ticks.last().expect("ticks"));
            (step, ticks, ends.0, ends.1)
        };
        Self {
            x_ticks,
            x_step,
            y_ticks,
            y_step,
            y_lo,
            y_hi,
            log,
        }
    }

    pub fn x(&self, step: f64) -> f64 {
        let (lo, hi) = (self.x_ticks[0], *self.x_ticks.last().expect("ticks"));
        LEFT + (step - lo) / (hi - lo) * (W - LEFT - RIGHT)
    }

    /// The step at SVG abscissa `x` (the pointer's), clamped to the axis.
    pub fn step_at(&self, x: f64) -> f64 {
        let (lo, hi) = (self.x_ticks[0], *self.x_ticks.last().expect("ticks"));
        let t = ((x - LEFT) / (W - LEFT - RIGHT)).clamp(0.0, 1.0);
        lo + t * (hi - lo)
    }

    pub fn y(&self, loss: f64) -> f64 {
        let map = |v: f64| if self.log { v.max(1e-12).ln() } else { v };
        let t = (map(loss) - map(self.y_lo)) / (map(self.y_hi) - map(self.y_lo));
        H - BOTTOM - t * (H - TOP - BOTTOM)
    }

    /// An SVG `points` list, thinned to [`MAX_DRAWN`], ending on the newest.
    pub fn points(&self, series: &Series) -> String {
        let stride = series.len().div_ceil(MAX_DRAWN).max(1);
        let thinned = series.iter().step_by(stride).chain(
            series
                .last()
                .filter(|_| !(series.len() - 1).is_multiple_of(stride)),
        );
        thinned
            .filter(|p| !self.log || p.1 > 0.0)
            .map(|&(s, l)| format!("{:.1},{:.1}", self.x(s as f64), self.y(l as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A logarithmic loss axis over `[lo, hi]` (positive), padded by 5 % on
/// each side; ticks are the round linear ticks inside it, so they bunch
/// towards the top as a log axis does.
fn log_axis(lo: f64, hi: f64) -> (f64, Vec<f64>, f64, f64) {
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (1.0, 5.0) };
    let (lo, hi) = (lo / 1.05, (hi * 1.05).max(lo * 1.2));
    let (step, ticks) = nice_ticks(lo, hi, 6);
    let inside: Vec<f64> = ticks
        .into_iter()
        .filter(|t| *t >= lo && *t <= hi && *t > 0.0)
        .collect();
    (step, inside, lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let (step, ticks) = nice_ticks(0.0, 30.0, 6);
        assert_eq!(step, 5.0);
        assert_eq!(ticks, vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]);
        let (step, ticks) = nice_ticks(1.83, 4.47, 5);
        assert_eq!(step, 0.5);
        assert_eq!(ticks.first(), Some(&1.5));
        assert_eq!(ticks.last(), Some(&4.5));
        assert_eq!(tick_label(2.0, 0.5), "2.0");
        assert_eq!(tick_label(2000.0, 500.0), "2000");
    }

    #[test]
    fn ema_is_debiased_and_off_at_zero() {
        let s = vec![(1, 4.0), (2, 2.0), (3, 2.0)];
        assert_eq!(ema(&s, 0.0), s);
        let e = ema(&s, 0.5);
        // Debiased: the first point is itself, not half of it.
        assert_eq!(e[0], (1, 4.0));
        // (0.5·0.5·4 + 0.5·2) / (1 − 0.5²) = (1 + 1) / 0.75
        assert!((e[1].1 - 2.0 / 0.75).abs() < 1e-6, "{:?}", e[1]);
        assert!(e[2].1 < e[1].1 && e[2].1 > 2.0);
    }

    #[test]
    fn nearest_picks_the_closer_neighbour() {
        let s = vec![(10, 1.0), (20, 2.0), (40, 3.0)];
        assert_eq!(nearest(&s, 0.0), Some((10, 1.0)));
        assert_eq!(nearest(&s, 14.0), Some((10, 1.0)));
        assert_eq!(nearest(&s, 16.0), Some((20, 2.0)));
        assert_eq!(nearest(&s, 31.0), Some((40, 3.0)));
        assert_eq!(nearest(&s, 99.0), Some((40, 3.0)));
        assert_eq!(nearest(&[], 5.0), None);
    }

    #[test]
    fn the_log_axis_keeps_order_and_spreads_low_losses() {
        let s = vec![(0, 4.2), (100, 1.5), (200, 1.2)];
        let lin = Frame::new(&[&s], 200, false);
        let log = Frame::new(&[&s], 200, true);
        for f in [&lin, &log] {
            assert!(f.y(1.2) > f.y(1.5) && f.y(1.5) > f.y(4.2));
            assert!(f.y(1.2) <= H - BOTTOM && f.y(4.2) >= TOP);
        }
        // The low end gets more room on a log axis.
        let gap = |f: &Frame| f.y(1.2) - f.y(1.5);
        assert!(gap(&log) > gap(&lin), "{} vs {}", gap(&log), gap(&lin));
        assert!(log.y_ticks.iter().all(|t| *t > 0.0) && log.y_ticks.len() >= 2);
        assert!((log.step_at(log.x(150.0)) - 150.0).abs() < 1e-9);
    }

    #[test]
    fn overlays_widen_the_frame() {
        let a = vec![(0, 3.0), (50, 2.0)];
        let b = vec![(0, 5.0), (400, 1.0)];
        let f = Frame::new(&[&a, &b], 50, false);
        assert!(*f.x_ticks.last().unwrap() >= 400.0);
        assert!(f.y(5.0) >= TOP && f.y(1.0) <= H - BOTTOM);
    }
}
