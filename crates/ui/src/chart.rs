//! The live loss chart: training loss as a line (raw and EMA-smoothed),
//! validation loss as points joined by a line in another colour, saved runs
//! overlaid for comparison, on a linear or log axis, with a read-out of the
//! point under the pointer (or the arrow keys), as plain SVG.

use crate::chart_frame::{
    ema, nearest, tick_label, Frame, Series, BOTTOM, H, LEFT, MAX_DRAWN, RIGHT, TOP, W,
};
use crate::help::Help;
use crate::Store;
use leptos::prelude::*;
use tinygpt_protocol::{bound_loss_series, TrainProgress, WorkerInput};

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

/// A saved run's curve drawn over the current one.
#[derive(Clone, Debug, PartialEq)]
pub struct Overlay {
    pub id: String,
    pub name: String,
    pub history: LossHistory,
}

/// Overlays drawn at most (one colour each).
pub const MAX_OVERLAYS: usize = 4;

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
    let x_axis_y = H - BOTTOM;
    view! {
        {y_ticks(f)}
        <line class="axis" x1=LEFT x2=W - RIGHT y1=x_axis_y y2=x_axis_y />
        <line class="axis" x1=LEFT x2=LEFT y1=TOP y2=x_axis_y />
        {x_ticks(f, x_axis_y)}
    }
}

/// A dot on each validation point, thinned like the lines.
fn val_dots(val: &Series, f: &Frame) -> impl IntoView {
    let stride = val.len().div_ceil(MAX_DRAWN).max(1);
    val.iter()
        .step_by(stride)
        .map(|&(s, l)| {
            view! { <circle class="val-dot" cx=f.x(s as f64) cy=f.y(l as f64) r="3.5" /> }
        })
        .collect_view()
}

/// The axes' titles.
fn axis_titles(log: bool) -> impl IntoView {
    let mid = (TOP + H - BOTTOM) / 2.0;
    view! {
        <text class="axis-title" x=(LEFT + W - RIGHT) / 2.0 y=H - 4.0 text-anchor="middle">"step"</text>
        <text class="axis-title" x="14" y=mid text-anchor="middle" transform=format!("rotate(-90 14 {mid})")>
            {if log { "loss (nats/char, log scale)" } else { "loss (nats/char)" }}
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

/// What the chart draws, computed once per change.
#[derive(PartialEq)]
struct Drawn {
    frame: Frame,
    /// The train series as drawn (smoothed when smoothing is on).
    train: Vec<(usize, f32)>,
}

/// The chart's view options.
#[derive(Clone, Copy)]
struct Options {
    /// EMA weight on the past, 0 = off.
    smoothing: RwSignal<f64>,
    log: RwSignal<bool>,
    /// The step under the pointer (or chosen with the arrow keys).
    hover: RwSignal<Option<f64>>,
}

/// The loss chart with its controls and read-out. `data-train-points` and
/// `data-val-points` count the points in the history;
/// `data-first-train-loss` and `data-last-train-loss` let a test see the
/// trend without reading the drawing; `data-smoothed-last` is the drawn
/// line's last value.
#[component]
pub fn LossChart(store: Store) -> impl IntoView {
    let (history, overlays) = (store.history, store.overlays);
    let opts = Options {
        smoothing: RwSignal::new(0.0),
        log: RwSignal::new(false),
        hover: RwSignal::new(None),
    };
    let drawn = Memo::new(move |_| {
        let total = store
            .progress
            .with(|p| p.as_ref().map_or(0, |p| p.total_steps));
        history.with(|h| {
            overlays.with(|o| {
                let mut all: Vec<&Series> = vec![&h.train, &h.val];
                all.extend(
                    o.iter()
                        .flat_map(|o| [&o.history.train[..], &o.history.val[..]]),
                );
                let frame = Frame::new(&all, total, opts.log.get());
                let train = ema(&h.train, opts.smoothing.get());
                Drawn { frame, train }
            })
        })
    });
    let empty = move || history.with(|h| h.train.is_empty() && h.val.is_empty());
    view! {
        <ChartControls store=store opts=opts />
        <svg
            class="chart"
            data-testid="loss-chart"
            data-train-points=move || history.with(|h| h.train.len())
            data-val-points=move || history.with(|h| h.val.len())
            data-first-train-loss=move || history.with(|h| h.train.first().map(|p| p.1.to_string()))
            data-last-train-loss=move || history.with(|h| h.train.last().map(|p| p.1.to_string()))
            data-smoothed-last=move || drawn.with(|d| d.train.last().map(|p| p.1.to_string()))
            data-log-scale=move || opts.log.get().to_string()
            data-overlays=move || overlays.with(|o| o.len())
            viewBox=format!("0 0 {W} {H}")
            role="img"
            tabindex="0"
            aria-label="training and validation loss by step; the arrow keys move the read-out"
            on:pointermove=move |ev| pointer_moved(&ev, drawn, opts)
            on:pointerleave=move |_| opts.hover.set(None)
            on:keydown=move |ev| key_pressed(&ev, history, opts)
        >
            {move || drawn.with(|d| axes(&d.frame))}
            {move || axis_titles(opts.log.get())}
            {move || overlay_lines(store, drawn)}
            <Show when=move || { opts.smoothing.get() > 0.0 }>
                <polyline class="train-raw" data-testid="train-raw"
                    points=move || history.with(|h| drawn.with(|d| d.frame.points(&h.train))) />
            </Show>
            <polyline class="train-line" data-testid="train-line" points=move || drawn.with(|d| d.frame.points(&d.train)) />
            <polyline class="val-line" data-testid="val-line"
                points=move || history.with(|h| drawn.with(|d| d.frame.points(&h.val))) />
            {move || history.with(|h| drawn.with(|d| val_dots(&h.val, &d.frame)))}
            {move || cursor(drawn, opts)}
            <Legend />
            <Show when=empty>
                <text class="chart-empty" x=(LEFT + W - RIGHT) / 2.0 y=(TOP + H - BOTTOM) / 2.0 text-anchor="middle">
                    "no training yet — press Train"
                </text>
            </Show>
        </svg>
        <Readout store=store drawn=drawn opts=opts />
    }
}

/// Each overlay's train line, dashed in its own colour.
fn overlay_lines(store: Store, drawn: Memo<Drawn>) -> impl IntoView {
    store.overlays.with(|o| {
        o.iter()
            .enumerate()
            .map(|(i, o)| {
                let points = drawn.with(|d| d.frame.points(&o.history.train));
                view! { <polyline class=format!("overlay-line overlay-{i}") data-testid="overlay-line" points=points /> }
            })
            .collect_view()
    })
}

/// The pointer's step, from its position over the SVG.
fn pointer_moved(ev: &web_sys::PointerEvent, drawn: Memo<Drawn>, opts: Options) {
    use wasm_bindgen::JsCast;
    let Some(el) = ev
        .current_target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
    else {
        return;
    };
    let rect = el.get_bounding_client_rect();
    if rect.width() <= 0.0 {
        return;
    }
    let x = (ev.client_x() as f64 - rect.left()) / rect.width() * W;
    opts.hover
        .set(Some(drawn.with_untracked(|d| d.frame.step_at(x))));
}

/// ←/→ move the read-out from train point to train point; Escape hides it.
fn key_pressed(ev: &web_sys::KeyboardEvent, history: RwSignal<LossHistory>, opts: Options) {
    let points: Vec<usize> = history.with_untracked(|h| h.train.iter().map(|p| p.0).collect());
    let (Some(&first), Some(&last)) = (points.first(), points.last()) else {
        return;
    };
    let now = opts.hover.get_untracked();
    let next = match ev.key().as_str() {
        "ArrowRight" => now.map_or(first, |s| {
            let i = points.partition_point(|&p| (p as f64) <= s);
            points.get(i).copied().unwrap_or(last)
        }),
        "ArrowLeft" => now.map_or(last, |s| {
            let i = points.partition_point(|&p| (p as f64) < s);
            points.get(i.saturating_sub(1)).copied().unwrap_or(first)
        }),
        "Escape" => return opts.hover.set(None),
        _ => return,
    };
    ev.prevent_default();
    opts.hover.set(Some(next as f64));
}

/// The vertical line and the dot on the train line at the hovered step.
fn cursor(drawn: Memo<Drawn>, opts: Options) -> Option<impl IntoView> {
    let step = opts.hover.get()?;
    drawn.with(|d| {
        let (s, l) = nearest(&d.train, step)?;
        let x = d.frame.x(s as f64);
        Some(view! {
            <line class="cursor" x1=x x2=x y1=TOP y2=H - BOTTOM />
            <circle class="cursor-dot" cx=x cy=d.frame.y(l as f64) r="4" />
        })
    })
}

/// What the hovered step reads: train (and smoothed), validation, overlays.
fn readout_text(store: Store, drawn: Memo<Drawn>, opts: Options, step: f64) -> Option<String> {
    let h = store.history;
    let (s, raw) = h.with(|h| nearest(&h.train, step))?;
    let mut parts = vec![format!("step {s}"), format!("train {raw:.4}")];
    if opts.smoothing.get() > 0.0 {
        if let Some((_, sm)) = drawn.with(|d| nearest(&d.train, s as f64)) {
            parts.push(format!("smoothed {sm:.4}"));
        }
    }
    if let Some((vs, v)) = h.with(|h| nearest(&h.val, s as f64)) {
        parts.push(format!("validation {v:.4} (step {vs})"));
    }
    store.overlays.with(|o| {
        for o in o {
            if let Some((os, ol)) = nearest(&o.history.train, s as f64) {
                parts.push(format!("{} {ol:.4} (step {os})", o.name));
            }
        }
    });
    Some(parts.join(" · "))
}

/// The read-out line under the chart.
#[component]
fn Readout(store: Store, drawn: Memo<Drawn>, opts: Options) -> impl IntoView {
    view! {
        <p class="chart-readout" data-testid="chart-readout" aria-live="polite">
            {move || {
                opts.hover
                    .get()
                    .and_then(|s| readout_text(store, drawn, opts, s))
                    .unwrap_or_else(|| "point at the chart (or focus it and press ← →) to read a step".into())
            }}
        </p>
    }
}

/// Smoothing, log scale, and the saved runs to compare with.
#[component]
fn ChartControls(store: Store, opts: Options) -> impl IntoView {
    let comparable = move || {
        let current = store
            .model
            .with(|m| m.as_ref().and_then(|m| m.run_id.clone()));
        store.saved_runs.with(|r| {
            r.iter()
                .filter(|r| Some(&r.id) != current.as_ref())
                .filter(|r| store.overlays.with(|o| o.iter().all(|o| o.id != r.id)))
                .map(|r| (r.id.clone(), format!("{} (step {})", r.name, r.step)))
                .collect::<Vec<_>>()
        })
    };
    let on_compare = move |ev: leptos::ev::Event| {
        let id = event_target_value(&ev);
        if !id.is_empty() {
            store.send(WorkerInput::RunCurve { id });
        }
    };
    view! {
        <div class="chart-controls">
            <label>"smoothing "
                <select data-testid="chart-smoothing" on:change=move |ev| {
                    opts.smoothing.set(event_target_value(&ev).parse().unwrap_or(0.0))
                }>
                    {[("0", "off"), ("0.6", "0.6"), ("0.9", "0.9"), ("0.97", "0.97"), ("0.99", "0.99")]
                        .into_iter()
                        .map(|(v, t)| view! { <option value=v>{t}</option> })
                        .collect_view()}
                </select>
            </label>
            <Help topic="chart-smoothing" label="smoothing" />
            <label>
                <input type="checkbox" data-testid="chart-log" on:change=move |ev| opts.log.set(event_target_checked(&ev)) />
                " log scale"
            </label>
            <Help topic="chart-log" label="the log scale" />
            <label>"compare with "
                <select data-testid="chart-compare" prop:value="" on:change=on_compare
                    disabled=move || comparable().is_empty() || store.overlays.with(|o| o.len() >= MAX_OVERLAYS)>
                    <option value="">{move || if comparable().is_empty() { "no other saved run" } else { "a saved run…" }}</option>
                    {move || comparable().into_iter().map(|(id, text)| view! { <option value=id>{text}</option> }).collect_view()}
                </select>
            </label>
            <Help topic="chart-compare" label="comparing runs" />
            <OverlayChips store=store />
        </div>
    }
}

/// One chip per overlay: its colour, name and a remove button.
#[component]
fn OverlayChips(store: Store) -> impl IntoView {
    view! {
        <ul class="overlay-chips" data-testid="overlay-chips">
            {move || store.overlays.with(|o| o.iter().enumerate().map(|(i, o)| {
                let id = o.id.clone();
                view! {
                    <li class=format!("chip overlay-{i}")>
                        <span class="swatch" aria-hidden="true"></span>
                        {o.name.clone()}
                        <button class="chip-remove" title=format!("stop comparing with {}", o.name)
                            aria-label=format!("stop comparing with {}", o.name)
                            on:click=move |_| store.overlays.update(|v| v.retain(|x| x.id != id))>"×"</button>
                    </li>
                }
            }).collect_view())}
        </ul>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
