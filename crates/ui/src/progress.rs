//! Where the run is: run state, progress figures, the model held, and the
//! busy indicator.

use crate::format;
use crate::Store;
use leptos::prelude::*;
use tinygpt_protocol::RunState;

/// The wire name of a run state (`"running"`), also its `data-state`.
pub fn state_name(state: RunState) -> &'static str {
    match state {
        RunState::Idle => "idle",
        RunState::Running => "running",
        RunState::Paused => "paused",
        RunState::Stopped => "stopped",
        RunState::Finished => "finished",
    }
}

/// One labelled figure of the progress grid.
#[component]
fn Figure(
    /// `data-testid` of the value.
    testid: &'static str,
    /// What the figure is.
    label: &'static str,
    /// The value shown.
    #[prop(into)]
    value: Signal<String>,
) -> impl IntoView {
    view! {
        <div class="figure">
            <span class="figure-label">{label}</span>
            <span class="figure-value" data-testid=testid>{move || value.get()}</span>
        </div>
    }
}

/// Run state, step/total with a bar, losses, learning rate, throughput,
/// elapsed time and ETA.
#[component]
pub fn ProgressPanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let p = store.progress;
    let field = move |f: fn(&tinygpt_protocol::TrainProgress) -> String| {
        Signal::derive(move || p.with(|p| p.as_ref().map_or_else(|| "—".to_string(), f)))
    };
    let val = Signal::derive(move || format::loss(store.history.with(|h| h.last_val())));
    let fraction = move || {
        p.with(|p| match p {
            Some(p) if p.total_steps > 0 => p.step as f64 / p.total_steps as f64,
            _ => 0.0,
        })
    };
    view! {
        <div class="progress" data-testid="progress"
            data-step=move || p.with(|p| p.as_ref().map_or(0, |p| p.step))
            data-total=move || p.with(|p| p.as_ref().map_or(0, |p| p.total_steps))
            data-tokens-per-s=move || p.with(|p| p.as_ref().map_or(0.0, |p| p.tokens_per_s))>
            <div class="progress-head">
                <span
                    class=move || format!("run-state state-{}", state_name(store.run_state.get()))
                    data-testid="run-state"
                    data-state=move || state_name(store.run_state.get())
                    data-run=move || store.runs_started.get()
                >
                    {move || state_name(store.run_state.get())}
                </span>
                <crate::help::Help topic="panel-run" label="the run panel" controls="loss-chart" />
                <span class="step" data-testid="progress-step">
                    {move || p.with(|p| p.as_ref().map_or_else(
                        || "step —".to_string(),
                        |p| format!("step {} / {}", p.step, p.total_steps),
                    ))}
                </span>
                <div class="bar"><div class="bar-fill" style:width=move || format!("{:.1}%", 100.0 * fraction())></div></div>
            </div>
            <div class="figures">
                <Figure testid="progress-train-loss" label="train loss" value=field(|p| format::loss(Some(p.train_loss))) />
                <Figure testid="progress-val-loss" label="val loss" value=val />
                <Figure testid="progress-lr" label="learning rate" value=field(|p| format!("{:.2e}", p.lr)) />
                <Figure testid="progress-tokens-per-s" label="throughput" value=field(|p| format::rate(p.tokens_per_s, "tok")) />
                <Figure testid="progress-elapsed" label="elapsed" value=field(|p| format::hms(p.elapsed_s)) />
                <Figure testid="progress-eta" label="ETA" value=field(|p| format::hms(p.eta_s)) />
            </div>
        </div>
    }
}

/// One line about the model the worker holds.
#[component]
pub fn ModelInfoLine(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let no_gpu = move || store.caps.with(|c| c.as_ref().is_some_and(|c| !c.webgpu));
    view! {
        <p class="model-info" data-testid="model-info"
            data-step=move || store.model.with(|m| m.as_ref().map_or(String::new(), |m| m.step.to_string()))
            data-run-id=move || store.model.with(|m| m.as_ref().and_then(|m| m.run_id.clone()).unwrap_or_default())
            data-backend=move || store.model.with(|m| m.as_ref().map(|m| m.backend.clone()).unwrap_or_default())>
            {move || store.model.with(|m| match m {
                None => "No model yet — train one or load a checkpoint.".to_string(),
                Some(m) => {
                    let c = &m.config;
                    let backend = if m.backend == "cpu" {
                        if no_gpu() {
                            "CPU (no WebGPU in this browser)".to_string()
                        } else {
                            "CPU (reference path, not the GPU)".to_string()
                        }
                    } else {
                        m.backend.clone()
                    };
                    format!(
                        "{} params · {}L/{}H/{}C, context {}, vocab {} · from {} · step {} · backend: {} · memory {}",
                        format::thousands(m.params),
                        c.n_layer, c.n_head, c.d_model, c.block_size, c.vocab_size,
                        m.source, m.step, backend, format::bytes(m.memory_bytes),
                    )
                }
            })}
        </p>
    }
}

/// Whether the worker is computing (training, sampling, saving).
#[component]
pub fn BusyIndicator(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let on_cpu = move || {
        store
            .model
            .with(|m| m.as_ref().is_some_and(|m| m.backend == "cpu"))
    };
    view! {
        <span class=move || if store.busy() { "busy on" } else { "busy" }
            data-testid="busy" data-busy=move || store.busy().to_string()>
            <span class="busy-dot"></span>
            {move || match (store.busy(), on_cpu()) {
                (true, true) => "CPU busy",
                (true, false) => "GPU busy",
                (false, _) => "idle",
            }}
        </span>
    }
}
