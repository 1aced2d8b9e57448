//! The precision views: what each fast path's gate measured — per case, a
//! histogram of the element-wise errors with the gate's limits drawn; the
//! f32 and fast-path greedy samples side by side with the first divergence
//! marked — then the per-stage localisation chart and the device's
//! precision log (kept in private storage, exportable as one JSON file).

use crate::precision_plot::{histogram_bars, log_bar, split_chars, value_x};
use crate::{files, help::Help, Store};
use leptos::prelude::*;
use tinygpt_protocol::{
    GateCase, GateReport, Histogram, LocalizeReport, PrecisionRecord, SampleGate, WorkerInput,
};

const HIST_W: f64 = 300.0;
const HIST_PLOT_H: f64 = 48.0;
const HIST_H: f64 = 64.0;

/// What each fast path's gate measured and decided, one block per path:
/// the console lines, each case's histograms, the sample comparison.
#[component]
pub fn GateReports(
    /// The latest report of each path, in arrival order.
    gates: RwSignal<Vec<GateReport>>,
) -> impl IntoView {
    view! {
        <Show when=move || gates.with(|g| !g.is_empty())>
            <details class="gates" data-testid="gates">
                <summary>"fast-path gates"</summary>
                {move || gates.get().into_iter().map(gate_block).collect_view()}
            </details>
        </Show>
    }
}

fn gate_block(r: GateReport) -> impl IntoView {
    let verdict = match (r.passed, r.active, &r.speed) {
        (true, true, _) => "passed · active".to_string(),
        (true, false, Some(s)) if !s.faster() => {
            format!("passed · {:.2}× f32 here, slower · not active", s.speedup())
        }
        (true, false, _) => "passed · not active".to_string(),
        (false, _, _) => "FAILED · not active".to_string(),
    };
    let label = r.label.clone();
    view! {
        <div class="gate" data-testid=format!("gate-{}", r.path)
            data-passed=r.passed.to_string() data-active=r.active.to_string()>
            <strong>{r.label.clone()}</strong>
            " — "
            {verdict}
            {format!(" ({:.0} ms)", r.millis)}
            <pre tabindex="0" role="region" aria-label=format!("{} gate console lines", r.label)>{r.lines.join("\n")}</pre>
            <div class="cases" data-testid=format!("cases-{}", r.path)>
                {r.cases.into_iter().map(case_view).collect_view()}
            </div>
            {r.sample.map(|s| sample_pair(s, label))}
        </div>
    }
}

/// One gate case: its verdict and numbers, and the histograms of its
/// relative and absolute errors with the limit each is judged by.
fn case_view(c: GateCase) -> impl IntoView {
    let s = &c.stats;
    let d = &c.distribution;
    let caption = format!(
        "{} [{}×{}×{}]{} — {} · mean_rel {:.3}% (limit {:.1}%) · max_abs {:.2e} (limit {:.2e}) · rel-L2 {:.1e}",
        c.name,
        c.shape[0],
        c.shape[1],
        c.shape[2],
        if c.real_weights { " real weights" } else { "" },
        if s.passed { "PASS" } else { "FAIL" },
        100.0 * s.mean_rel_err,
        100.0 * s.rel_limit,
        s.max_abs_err,
        s.abs_limit,
        d.rel_l2,
    );
    let rel = histogram(
        "rel",
        "relative error per element",
        &d.rel_hist,
        (s.rel_limit, "mean limit"),
        (s.mean_rel_err, "mean"),
    );
    let abs = histogram(
        "abs",
        "absolute error per element",
        &d.abs_hist,
        (s.abs_limit, "max limit"),
        (s.max_abs_err, "max"),
    );
    let elements = c.shape[0] as u64 * c.shape[2] as u64;
    view! {
        <figure class="case" data-testid="gate-case" data-name=c.name.clone()
            data-passed=s.passed.to_string() data-elements=elements>
            <figcaption>{caption}</figcaption>
            {rel}
            {abs}
        </figure>
    }
}

/// A log-binned histogram (log count axis) with the gate's limit (solid)
/// and the measured value it is compared with (dotted).
fn histogram(
    kind: &'static str,
    title: &'static str,
    h: &Histogram,
    limit: (f64, &'static str),
    measured: (f64, &'static str),
) -> impl IntoView {
    let bars = histogram_bars(h, HIST_W, HIST_PLOT_H);
    let marker = |(v, what): (f64, &'static str), class: &'static str| {
        value_x(h, v, HIST_W).map(|x| {
            view! {
                <line class=class data-testid=class data-value=v x1=x x2=x y1="0" y2=HIST_PLOT_H>
                    <title>{format!("{what}: {v:.3e}")}</title>
                </line>
            }
        })
    };
    let ticks: Vec<_> = h
        .edges
        .iter()
        .enumerate()
        .filter(|(k, _)| k % 4 == 0)
        .filter_map(|(_, &e)| Some((value_x(h, e, HIST_W)?, format!("{e:.0e}"))))
        .collect();
    view! {
        <svg class="hist" data-testid="hist" data-kind=kind data-total=h.total()
            viewBox=format!("0 0 {HIST_W} {HIST_H}") role="img"
            aria-label=format!("{title}: histogram on a log scale with the gate's {}", limit.1)>
            <title>{format!("{title} (log bins; bar height: log count)")}</title>
            {bars.into_iter().map(|b| view! {
                <rect class="bar" x=b.x + 0.5 width=(b.w - 1.0).max(0.5)
                    y=HIST_PLOT_H - b.h height=b.h>
                    <title>{b.count.to_string()}</title>
                </rect>
            }).collect_view()}
            <line class="axis" x1="0" x2=HIST_W y1=HIST_PLOT_H y2=HIST_PLOT_H />
            {ticks.into_iter().map(|(x, label)| view! {
                <text class="tick-label" x=x y=HIST_H - 2.0 text-anchor="middle">{label}</text>
            }).collect_view()}
            {marker(limit, "limit")}
            {marker(measured, "measured")}
        </svg>
    }
}

/// The f32 and fast-path greedy samples side by side, the text from the
/// first differing token on marked in both.
fn sample_pair(s: SampleGate, label: String) -> impl IntoView {
    let part = |text: &str| match s.first_divergence {
        Some(i) => split_chars(text, i),
        None => (text.to_string(), String::new()),
    };
    let (f32_same, f32_rest) = part(&s.f32_text);
    let (fast_same, fast_rest) = part(&s.fast_text);
    let verdict = match s.first_divergence {
        None => format!(
            "identical over {} greedy tokens from {:?}",
            s.tokens, s.prompt
        ),
        Some(i) => format!(
            "first divergence at token {i} (marked) of {} from {:?}",
            s.tokens, s.prompt
        ),
    };
    view! {
        <div class="sample-pair" data-testid="sample-pair"
            data-diverge=s.first_divergence.map_or("none".to_string(), |i| i.to_string())>
            <p class="muted" data-testid="sample-pair-verdict">{verdict}</p>
            <div class="pair">
                <div><h4>"f32"</h4><pre tabindex="0" data-testid="sample-f32">{f32_same}<mark class="diverge">{f32_rest}</mark></pre></div>
                <div><h4>{label}</h4><pre tabindex="0" data-testid="sample-fast">{fast_same}<mark class="diverge">{fast_rest}</mark></pre></div>
            </div>
        </div>
    }
}

const STAGE_W: f64 = 560.0;
const STAGE_H: f64 = 150.0;
const STAGE_LO: f64 = -8.0;

/// One localisation: rel-L2 of every stage on a log scale, the jump floor
/// dashed, the stage where the error first jumps in the warning colour.
fn localization_chart(r: LocalizeReport) -> impl IntoView {
    let n = r.stages.len().max(1) as f64;
    let slot = STAGE_W / n;
    let y = |e: f64| STAGE_H - log_bar(e, STAGE_LO, 0.0, STAGE_H);
    let floor_y = y(r.jump_floor);
    let verdict = r.lines.last().cloned().unwrap_or_default();
    let jump_name = r.first_jump.map(|i| r.stages[i].name.clone());
    let bars = r.stages.iter().enumerate().map(|(i, s)| {
        let e = s.distribution.rel_l2;
        let class = if Some(i) == r.first_jump { "bar jump" } else { "bar" };
        view! {
            <rect class=class data-stage=s.name.clone() data-rel-l2=e
                x=i as f64 * slot + 0.5 width=(slot - 1.0).max(0.5) y=y(e) height=STAGE_H - y(e)>
                <title>{format!("{}: rel-L2 {e:.2e}, cosine {:.6}", s.name, s.distribution.cosine)}</title>
            </rect>
        }
    });
    let decades = (STAGE_LO as i32..=0).step_by(2).map(|k| {
        let yy = y(10f64.powi(k));
        view! {
            <line class="gridline" x1="0" x2=STAGE_W y1=yy y2=yy />
            <text class="tick-label" x="2" y=yy - 2.0>{format!("1e{k}")}</text>
        }
    });
    view! {
        <figure class="localization" data-testid="localization" data-path=r.path.clone()
            data-stages=r.stages.len() data-first-jump=jump_name.clone().unwrap_or_else(|| "none".into())>
            <figcaption>
                {format!("{} vs f32 on {:?}{} — {:.0} ms", r.path, r.prompt,
                    r.fault.as_ref().map(|f| format!(" (fault {f})")).unwrap_or_default(), r.millis)}
            </figcaption>
            <svg class="chart stages" viewBox=format!("0 0 {STAGE_W} {}", STAGE_H + 4.0) role="img"
                aria-label="relative L2 error of every stage, log scale">
                {decades.collect_view()}
                {bars.collect_view()}
                <line class="limit" x1="0" x2=STAGE_W y1=floor_y y2=floor_y>
                    <title>{format!("jump floor {:.0e}", r.jump_floor)}</title>
                </line>
            </svg>
            <p data-testid="localization-verdict">{verdict}</p>
            <details><summary>"every stage"</summary><pre tabindex="0">{r.lines.join("\n")}</pre></details>
        </figure>
    }
}

/// The precision card: localisation on the model held now, and the log.
#[component]
pub fn PrecisionPanel(store: Store) -> impl IntoView {
    let prompt = RwSignal::new("ROMEO:\n".to_string());
    let why_not = move || {
        if store.model.with(|m| m.is_none()) {
            "train or load a model first"
        } else if store
            .model
            .with(|m| m.as_ref().is_some_and(|m| m.backend != "webgpu"))
        {
            "the model runs on the CPU: there is no fast path to compare"
        } else if store.gates.with(|g| !g.iter().any(|r| r.detected)) {
            "no fast path was detected on this GPU"
        } else {
            ""
        }
    };
    // Localise needs a GPU model and a detected fast path (`why_not` says
    // which is missing), and an idle worker.
    let ready = move || why_not().is_empty() && !store.busy();
    view! {
        <section class="card precision" data-testid="precision-panel"
            data-localized=move || store.localized.get()>
            <h2>"Precision" <Help topic="panel-precision" label="the Precision panel" controls="localize-run" /></h2>
            <p class="muted">
                "Run a prompt on the f32 path and on each fast path, compare every stage of the forward, and see where the error first jumps."
            </p>
            <div class="field inline">
                <label for="localize-prompt">"prompt"</label>
                <input id="localize-prompt" data-testid="localize-prompt" prop:value=move || prompt.get()
                    on:input=move |ev| prompt.set(event_target_value(&ev)) />
                <button data-testid="localize-run" disabled=move || !ready()
                    on:click=move |_| store.send(WorkerInput::Localize { prompt: prompt.get_untracked() })>
                    "Localise"
                </button>
                <Help topic="localize-prompt" label="localising" />
                <span class="muted">{why_not}</span>
            </div>
            {move || store.localizations.get().into_iter().map(localization_chart).collect_view()}
            <PrecisionLog store=store />
        </section>
    }
}

/// The device's precision log: every gate report this browser kept, with
/// its adapter, newest first; export as one JSON file; clear.
#[component]
fn PrecisionLog(store: Store) -> impl IntoView {
    let confirm_clear = RwSignal::new(false);
    let refresh = move || store.send(WorkerInput::ListPrecisionLog);
    let records = move || {
        store
            .precision_log
            .with(|l| l.as_ref().map(|l| l.0.clone()).unwrap_or_default())
    };
    let export = move |_| {
        let records = records();
        match export_json(&records) {
            Ok(bytes) => {
                if let Err(e) = files::download("tinygpt-precision-log.json", &bytes) {
                    store.show_error("exporting the precision log", e);
                }
            }
            Err(e) => store.show_error("exporting the precision log", e),
        }
    };
    let clear = move |_| {
        if confirm_clear.get_untracked() {
            confirm_clear.set(false);
            store.send(WorkerInput::ClearPrecisionLog);
        } else {
            confirm_clear.set(true);
        }
    };
    view! {
        <details class="precision-log" data-testid="precision-log">
            <summary on:click=move |_| refresh()>"precision log (kept on this device)"</summary>
            <p class="muted">
                "Every gate this browser ran, with its adapter and user agent, kept in this site's private storage. Nothing is sent anywhere."
            </p>
            <button data-testid="precision-log-refresh" on:click=move |_| refresh()>"refresh"</button>
            <button data-testid="precision-log-export" disabled=move || records().is_empty() on:click=export>
                "export JSON"
            </button>
            <button data-testid="precision-log-clear" on:click=clear>
                {move || if confirm_clear.get() { "really clear?" } else { "clear" }}
            </button>
            <p class="error-text" data-testid="precision-log-problem">
                {move || store.precision_log.with(|l| l.as_ref().and_then(|l| l.1.clone()))}
            </p>
            <div class="table-wrap" tabindex="0" role="region" aria-label="the precision log">
            <table data-testid="precision-log-table" data-records=move || records().len()>
                <thead><tr><th>"when"</th><th>"occasion"</th><th>"path"</th><th>"verdict"</th><th>"adapter"</th><th>"cases"</th></tr></thead>
                <tbody>{move || records().into_iter().rev().map(record_row).collect_view()}</tbody>
            </table>
            </div>
        </details>
    }
}

fn record_row(r: PrecisionRecord) -> impl IntoView {
    let when = js_sys::Date::new(&r.at_ms.into())
        .to_locale_string("en-GB", &wasm_bindgen::JsValue::UNDEFINED)
        .as_string()
        .unwrap_or_default();
    let a = &r.adapter;
    let adapter = [&a.vendor, &a.architecture, &a.device, &a.backend]
        .into_iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" · ");
    let verdict = match (r.report.detected, r.report.passed) {
        (false, _) => "not detected",
        (true, true) => "PASS",
        (true, false) => "FAIL",
    };
    view! {
        <tr data-testid="precision-record">
            <td>{when}</td><td>{r.occasion.clone()}</td><td>{r.report.label.clone()}</td>
            <td>{verdict}</td><td>{adapter}</td><td>{r.report.cases.len()}</td>
        </tr>
    }
}

/// The exported file: when, and every record.
fn export_json(records: &[PrecisionRecord]) -> Result<Vec<u8>, String> {
    #[derive(serde::Serialize)]
    struct Export<'a> {
        exported_at_ms: f64,
        records: &'a [PrecisionRecord],
    }
    serde_json::to_vec_pretty(&Export {
        exported_at_ms: js_sys::Date::now(),
        records,
    })
    .map_err(|e| e.to_string())
}
