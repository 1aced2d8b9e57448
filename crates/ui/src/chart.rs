//! The live loss chart: training loss as a line, validation loss as points
//! joined by a line in another colour, on nice axes, as plain SVG.

use leptos::prelude::*;
use tinygpt_protocol::{bound_loss_series, TrainProgress};

/// Loss points of the current model's runs, in step order. A new run
/// clears it; Continue appends.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossHistory {
    /// `(step, train loss)`.
    pub train: Vec<(usize, f32)>,
    /// `(step, validation loss)`.
    pub val: Vec<(usize, f32)>,
}

impl LossHistory {
    /// Adds the finite losses of one progress report; a report for a step
    /// already plotted replaces it.
    pub fn push(&mut self, p: &TrainProgress) {
        fn add(series: &mut Vec<(usize, f32)>, step: usize, loss: f32) {
            if !loss.is_finite() {
                return;
            }
            match series.last_mut() {
                Some(last) if last.0 == step => last.1 = loss,
                _ => series.push((step, loss)),
            }
        }
        if p.losses.is_empty() {
            add(&mut self.train, p.step, p.train_loss);
        } else {
            let first = (p.step + 1).saturating_sub(p.losses.len());
            for (i, &loss) in p.losses.iter().enumerate() {
                add(&mut self.train, first + i, loss);
            }
        }
        // Long runs: neighbouring steps merge so the SVG stays light.
        bound_loss_series(&mut self.train);
        if let Some(v) = p.val_loss {
            add(&mut self.val, p.step, v);
        }
    }

    /// The latest validation loss, if any was evaluated.
    pub fn last_val(&self) -> Option<f32> {
        self.val.last().map(|v| v.1)
    }
}

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
fn tick_label(value: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{value:.decimals$}")
}

/// SVG user units of the chart.
const W: f64 = 640.0;
const H: f64 = 280.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;
/// Points drawn per series at most; longer series are thinned evenly.
const MAX_DRAWN: usize = 1500;

/// Maps data to SVG coordinates.
#[derive(PartialEq)]
struct Frame {
    x_ticks: Vec<f64>,
    x_step: f64,
    y_ticks: Vec<f64>,
    y_step: f64,
}

impl Frame {
    fn new(h: &LossHistory, total_steps: usize) -> Self {
        let last_step = h.train.iter().chain(&h.val).map(|p| p.0).max().unwrap_or(0);
        let x_max = total_steps.max(last_step).max(1) as f64;
        let (x_step, x_ticks) = nice_ticks(0.0, x_max, 6);
        // Steps are whole numbers: never tick between them.
        let (x_step, x_ticks) = if x_step < 1.0 {
            nice_ticks(0.0, x_max.max(5.0), 5)
        } else {
            (x_step, x_ticks)
        };
        let losses = h.train.iter().chain(&h.val).map(|p| p.1 as f64);
        let (lo, hi) = losses.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let (lo, hi) = if lo.is_finite() {
            let pad = ((hi - lo) * 0.05).max(0.05);
            (lo - pad, hi + pad)
        } else {
            (0.0, 5.0)
        };
        let (y_step, y_ticks) = nice_ticks(lo, hi, 5);
        Self {
            x_ticks,
            x_step,
            y_ticks,
            y_step,
        }
    }

    fn x(&self, step: f64) -> f64 {
        let (lo, hi) = (self.x_ticks[0], *self.x_ticks.last().expect("ticks"));
        LEFT + (step - lo) / (hi - lo) * (W - LEFT - RIGHT)
    }

    fn y(&self, loss: f64) -> f64 {
        let (lo, hi) = (self.y_ticks[0], *self.y_ticks.last().expect("ticks"));
        H - BOTTOM - (loss - lo) / (hi - lo) * (H - TOP - BOTTOM)
    }

    fn points(&self, series: &[(usize, f32)]) -> String {
        let stride = series.len().div_ceil(MAX_DRAWN).max(1);
        let thinned = series.iter().step_by(stride).chain(
            // Always end on the newest point.
            series
                .last()
                .filter(|_| !(series.len() - 1).is_multiple_of(stride)),
        );
        thinned
            .map(|&(s, l)| format!("{:.1},{:.1}", self.x(s as f64), self.y(l as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The x axis's ticks and their labels, below the axis at `x_axis_y`.
fn x_ticks(f: &Frame, x_axis_y: f64) -> impl IntoView {
    f.x_ticks
        .iter()
        .map(|&t| {
            let x = f.x(t);
            view! {
                <line class="tick" x1=x x2=x y1=x_axis_y y2=x_axis_y + 5.0 />
                <text class="tick-label" x=x y=x_axis_y + 18.0 text-anchor="middle">
                    {tick_label(t, f.x_step)}
                </text>
            }
        })
        .collect_view()
}

/// The loss gridlines and their labels, left of the plot.
fn y_ticks(f: &Frame) -> impl IntoView {
    f.y_ticks
        .iter()
        .map(|&t| {
            let y = f.y(t);
            view! {
                <line class="gridline" x1=LEFT x2=W - RIGHT y1=y y2=y />
                <text class="tick-label" x=LEFT - 8.0 y=y + 4.0 text-anchor="end">
                    {tick_label(t, f.y_step)}
                </text>
            }
        })
        .collect_view()
}

/// Gridlines, both axes and their ticks.
fn axes(f: &Frame) -> impl IntoView {
    let x_axis_y = f.y(f.y_ticks[0]);
    view! {
        {y_ticks(f)}
        <line class="axis" x1=LEFT x2=W - RIGHT y1=x_axis_y y2=x_axis_y />
        <line class="axis" x1=LEFT x2=LEFT y1=TOP y2=x_axis_y />
        {x_ticks(f, x_axis_y)}
    }
}

/// A dot on each validation point, thinned like the lines.
fn val_dots(h: &LossHistory, f: &Frame) -> impl IntoView {
    let stride = h.val.len().div_ceil(MAX_DRAWN).max(1);
    h.val
        .iter()
        .step_by(stride)
        .map(|&(s, l)| {
            view! { <circle class="val-dot" cx=f.x(s as f64) cy=f.y(l as f64) r="3.5" /> }
        })
        .collect_view()
}

/// The axes' titles.
#[component]
fn AxisTitles() -> impl IntoView {
    view! {
        <text class="axis-title" x=(LEFT + W - RIGHT) / 2.0 y=H - 4.0 text-anchor="middle">"step"</text>
        <text class="axis-title" x="14" y=(TOP + H - BOTTOM) / 2.0 text-anchor="middle"
            transform=format!("rotate(-90 14 {})", (TOP + H - BOTTOM) / 2.0)>
            "loss (nats/char)"
        </text>
    }
}

/// Which line is which, in the top right corner.
#[component]
fn Legend() -> impl IntoView {
    view! {
        <g class="legend" transform=format!("translate({} {})", W - RIGHT - 150.0, TOP + 4.0)>
            <rect class="legend-bg" x="-8" y="-4" width="150" height="40" rx="4" />
            <line class="train-line" x1="0" x2="22" y1="8" y2="8" />
            <text class="legend-label" x="30" y="12">"train loss"</text>
            <line class="val-line" x1="0" x2="22" y1="26" y2="26" />
            <circle class="val-dot" cx="11" cy="26" r="3.5" />
            <text class="legend-label" x="30" y="30">"validation loss"</text>
        </g>
    }
}

/// The loss chart. `data-train-points` and `data-val-points` count the
/// points in the history; `data-first-train-loss` and `data-last-train-loss`
/// let a test see the trend without reading the drawing.
#[component]
pub fn LossChart(
    /// Loss points to draw.
    history: RwSignal<LossHistory>,
    /// The latest progress report, for the x range of the run.
    progress: RwSignal<Option<TrainProgress>>,
) -> impl IntoView {
    let frame = Memo::new(move |_| {
        let total = progress.with(|p| p.as_ref().map_or(0, |p| p.total_steps));
        history.with(|h| {
            let f = Frame::new(h, total);
            (f.points(&h.train), f.points(&h.val), f)
        })
    });
    let empty = move || history.with(|h| h.train.is_empty() && h.val.is_empty());
    view! {
        <svg
            class="chart"
            data-testid="loss-chart"
            data-train-points=move || history.with(|h| h.train.len())
            data-val-points=move || history.with(|h| h.val.len())
            data-first-train-loss=move || history.with(|h| h.train.first().map(|p| p.1.to_string()))
            data-last-train-loss=move || history.with(|h| h.train.last().map(|p| p.1.to_string()))
            viewBox=format!("0 0 {W} {H}")
            role="img"
            aria-label="training and validation loss by step"
        >
            {move || frame.with(|(_, _, f)| axes(f))}
            <AxisTitles />
            <polyline class="train-line" data-testid="train-line" points=move || frame.with(|f| f.0.clone()) />
            <polyline class="val-line" data-testid="val-line" points=move || frame.with(|f| f.1.clone()) />
            {move || history.with(|h| frame.with(|(_, _, f)| val_dots(h, f)))}
            <Legend />
            <Show when=empty>
                <text class="chart-empty" x=(LEFT + W - RIGHT) / 2.0 y=(TOP + H - BOTTOM) / 2.0 text-anchor="middle">
                    "no training yet — press Train"
                </text>
            </Show>
        </svg>
    }
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
    fn history_skips_nan_and_replaces_a_repeated_step() {
        let mut h = LossHistory::default();
        let mut p = TrainProgress {
            step: 10,
            total_steps: 30,
            train_loss: 4.0,
            losses: Vec::new(),
            val_loss: Some(4.1),
            lr: 1e-3,
            tokens_per_s: 1.0,
            elapsed_s: 1.0,
            eta_s: 2.0,
        };
        h.push(&p);
        p.train_loss = 3.9;
        p.val_loss = None;
        h.push(&p);
        p.step = 11;
        p.train_loss = f32::NAN;
        h.push(&p);
        assert_eq!(h.train, vec![(10, 3.9)]);
        assert_eq!(h.val, vec![(10, 4.1)]);
        assert_eq!(h.last_val(), Some(4.1));
    }

    #[test]
    fn history_plots_every_step_of_a_report_and_stays_bounded() {
        let mut h = LossHistory::default();
        let mut p = TrainProgress {
            step: 8,
            total_steps: 10_000,
            train_loss: 3.0,
            losses: vec![4.0, 3.5, 3.0],
            val_loss: None,
            lr: 1e-3,
            tokens_per_s: 1.0,
            elapsed_s: 1.0,
            eta_s: 2.0,
        };
        h.push(&p);
        assert_eq!(h.train, vec![(6, 4.0), (7, 3.5), (8, 3.0)]);
        for step in (16..=8000).step_by(8) {
            p.step = step;
            p.losses = vec![2.0; 8];
            h.push(&p);
        }
        assert!(
            h.train.len() <= tinygpt_protocol::LOSS_HISTORY_POINTS,
            "{}",
            h.train.len()
        );
        assert_eq!(h.train.last().map(|x| x.0), Some(8000));
        assert!(h.train.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
