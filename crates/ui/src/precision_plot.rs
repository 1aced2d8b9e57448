//! The geometry of the precision views, as pure functions: log-binned
//! error histograms with their limits, per-stage error bars on a log
//! scale, and where two samples part.

use tinygpt_protocol::Histogram;

/// One bar of a histogram: its slot's left edge and width, its height.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub x: f64,
    pub w: f64,
    pub h: f64,
    pub count: u64,
}

/// The bars of `hist` in a `width` × `height` box: one slot per bin (the
/// first for values under the lowest edge, exact zeros included, the last
/// for values at or over the top edge); heights on a `log(1 + count)`
/// scale, so a single outlier stays visible next to thousands.
pub fn histogram_bars(hist: &Histogram, width: f64, height: f64) -> Vec<Bar> {
    let n = hist.counts.len().max(1) as f64;
    let slot = width / n;
    let top = hist.counts.iter().copied().max().unwrap_or(0);
    let scale = ((1 + top) as f64).ln().max(f64::MIN_POSITIVE);
    hist.counts
        .iter()
        .enumerate()
        .map(|(i, &count)| Bar {
            x: i as f64 * slot,
            w: slot,
            h: height * ((1 + count) as f64).ln() / scale,
            count,
        })
        .collect()
}

/// Where `value` falls on `hist`'s log axis in a plot `width` wide (edge
/// `k` sits at the right end of slot `k`), clamped to the plot; `None`
/// when the histogram has fewer than two edges or `value` is not positive.
pub fn value_x(hist: &Histogram, value: f64, width: f64) -> Option<f64> {
    let (e0, e1) = (*hist.edges.first()?, *hist.edges.get(1)?);
    if !(value > 0.0 && e0 > 0.0 && e1 > e0) {
        return None;
    }
    let slot = width / hist.counts.len().max(1) as f64;
    let k = (value.log10() - e0.log10()) / (e1.log10() - e0.log10());
    Some(((k + 1.0) * slot).clamp(0.0, width))
}

/// The height of a bar for a relative error `e` on a log scale from
/// `10^lo_exp` (no bar) to `10^hi_exp` (full `height`); zero and values
/// under the scale give no bar, non-finite ones a full bar.
pub fn log_bar(e: f64, lo_exp: f64, hi_exp: f64, height: f64) -> f64 {
    if !e.is_finite() {
        return height;
    }
    if e <= 0.0 {
        return 0.0;
    }
    ((e.log10() - lo_exp) / (hi_exp - lo_exp)).clamp(0.0, 1.0) * height
}

/// `text` cut at its `char` index `at`: the agreeing part and the rest.
pub fn split_chars(text: &str, at: usize) -> (String, String) {
    let byte = text.char_indices().nth(at).map_or(text.len(), |(b, _)| b);
    (text[..byte].to_string(), text[byte..].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist() -> Histogram {
        let mut h = Histogram::new(vec![1e-3, 1e-2, 1e-1]);
        for x in [0.0, 0.0, 0.0, 5e-3, 0.5] {
            h.add(x);
        }
        h
    }

    #[test]
    fn bars_fill_the_width_and_scale_by_log_count() {
        let bars = histogram_bars(&hist(), 400.0, 50.0);
        assert_eq!(bars.len(), 4);
        assert_eq!((bars[0].x, bars[0].w, bars[3].x), (0.0, 100.0, 300.0));
        assert_eq!(bars[0].h, 50.0, "the tallest bin fills the height");
        assert_eq!(bars[2].h, 0.0, "an empty bin has no bar");
        let one = 50.0 * 2f64.ln() / 4f64.ln();
        assert!((bars[1].h - one).abs() < 1e-9 && bars[1].count == 1);
    }

    #[test]
    fn limits_land_on_their_edges() {
        let h = hist();
        // Edge 1e-2 is the right end of slot 1.
        assert!((value_x(&h, 1e-2, 400.0).unwrap() - 200.0).abs() < 1e-9);
        // Half a decade past 1e-2.
        let x = value_x(&h, 10f64.powf(-1.5), 400.0).unwrap();
        assert!((x - 250.0).abs() < 1e-9, "{x}");
        assert_eq!(value_x(&h, 1e3, 400.0), Some(400.0));
        assert_eq!(value_x(&h, 0.0, 400.0), None);
        assert_eq!(value_x(&Histogram::default(), 1.0, 400.0), None);
    }

    #[test]
    fn log_bars_cover_the_decades() {
        assert_eq!(log_bar(1e-4, -8.0, 0.0, 80.0), 40.0);
        assert_eq!(log_bar(0.0, -8.0, 0.0, 80.0), 0.0);
        assert_eq!(log_bar(1e-12, -8.0, 0.0, 80.0), 0.0);
        assert_eq!(log_bar(f64::NAN, -8.0, 0.0, 80.0), 80.0);
        assert_eq!(log_bar(5.0, -8.0, 0.0, 80.0), 80.0);
    }

    #[test]
    fn samples_split_at_a_char_not_a_byte() {
        assert_eq!(split_chars("añb", 2), ("añ".into(), "b".into()));
        assert_eq!(split_chars("abc", 9), ("abc".into(), String::new()));
    }
}
