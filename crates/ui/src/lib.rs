//! The TinyGPT-rs playground UI (Leptos, client-side rendered, main thread).
//!
//! It depends only on the message types: every GPU and model operation
//! happens in the worker, so the page never freezes.

mod worker_link;

use leptos::prelude::*;
use tinygpt_protocol::{GpuCaps, LogLevel, WorkerInput, WorkerOutput};
use worker_link::WorkerLink;

/// What the status bar says before the worker has reported anything.
const STARTING: &str = "Starting the worker and detecting the GPU…";

/// One line of the in-page log.
#[derive(Clone, Debug, PartialEq)]
struct LogLine {
    level: LogLevel,
    text: String,
}

/// The playground: capability pills, status bar and log.
#[component]
pub fn App() -> impl IntoView {
    let caps = RwSignal::new(None::<GpuCaps>);
    let status = RwSignal::new(STARTING.to_string());
    let worker_ready = RwSignal::new(false);
    let logs = RwSignal::new(Vec::<LogLine>::new());
    let push_log = move |level, text: String| logs.update(|l| l.push(LogLine { level, text }));

    let on_output = move |msg: WorkerOutput| match msg {
        WorkerOutput::Ready => worker_ready.set(true),
        WorkerOutput::GpuCaps(c) => caps.set(Some(c)),
        WorkerOutput::Status { text } => status.set(text),
        WorkerOutput::Log { level, text } => push_log(level, text),
        WorkerOutput::Error { context, message } => {
            let text = format!("Error while {context}: {message}");
            status.set(text.clone());
            push_log(LogLevel::Error, text);
        }
    };
    let on_crash = move |text: String| {
        status.set(format!("The worker crashed — {text}"));
        push_log(LogLevel::Error, text);
    };
    match WorkerLink::spawn(on_output, on_crash) {
        Ok(link) => {
            let link = StoredValue::new_local(link);
            // Ask again once mounted: harmless if caps already arrived.
            link.with_value(|l| {
                if let Err(e) = l.send(&WorkerInput::QueryCaps) {
                    push_log(LogLevel::Error, e);
                }
            });
        }
        Err(e) => status.set(format!("Cannot start the worker — {e}")),
    }

    view! {
        <header class="top">
            <h1>"TinyGPT-rs"</h1>
            <span class="subtitle">"train and sample a small GPT in your browser"</span>
        </header>
        <CapsPills caps=caps />
        <div class="status" data-testid="status" data-worker-ready=move || worker_ready.get().to_string()>
            {move || status.get()}
        </div>
        <LogPanel logs=logs />
    }
}

/// A pill that reports something detected on the adapter.
#[component]
fn DetectPill(
    /// `data-testid` of the pill.
    testid: &'static str,
    /// Text of the pill.
    #[prop(into)]
    label: Signal<String>,
    /// Whether the capability is present (✓) or not (—).
    #[prop(into)]
    on: Signal<bool>,
) -> impl IntoView {
    view! {
        <span
            class=move || if on.get() { "pill detect on" } else { "pill detect off" }
            data-testid=testid
            data-on=move || on.get().to_string()
            title="detected on this adapter (not the same as active)"
        >
            {move || label.get()}
        </span>
    }
}

/// Detection pills, then activation pills (only for gated fast paths that passed).
#[component]
fn CapsPills(
    /// Capabilities from the worker's `gpu_caps`; `None` until it reports.
    caps: RwSignal<Option<GpuCaps>>,
) -> impl IntoView {
    let has = move |f: fn(&GpuCaps) -> bool| {
        Signal::derive(move || caps.with(|c| c.as_ref().is_some_and(f)))
    };
    let mark = |on: bool| if on { "✓" } else { "—" };
    let webgpu = has(|c| c.webgpu);
    let adapter = Signal::derive(move || {
        caps.with(|c| match c {
            Some(c) if c.webgpu => {
                let a = &c.adapter;
                let parts: Vec<&str> = [a.vendor.as_str(), a.architecture.as_str()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect();
                if parts.is_empty() {
                    "GPU: unknown adapter".to_string()
                } else {
                    format!("GPU: {}", parts.join(" · "))
                }
            }
            Some(_) => "GPU: none".to_string(),
            None => "GPU: detecting…".to_string(),
        })
    });
    let shader_f16 = has(|c| c.features.shader_f16);
    let subgroups = has(|c| c.features.subgroups);
    let timestamp = has(|c| c.features.timestamp_query);
    let webnn = has(|c| c.features.webnn);
    let f16_storage = has(|c| c.active.f16_storage);
    view! {
        <section id="caps" class="caps" data-testid="caps" data-reported=move || caps.with(|c| c.is_some()).to_string()>
            <span class="group-label">"detected"</span>
            <DetectPill testid="pill-webgpu" on=webgpu label=Signal::derive(move || format!("WebGPU {}", mark(webgpu.get()))) />
            <DetectPill testid="pill-adapter" on=webgpu label=adapter />
            <DetectPill testid="pill-shader-f16" on=shader_f16 label=Signal::derive(move || format!("shader-f16 {}", mark(shader_f16.get()))) />
            <DetectPill testid="pill-subgroups" on=subgroups label=Signal::derive(move || format!("subgroups {}", mark(subgroups.get()))) />
            <DetectPill testid="pill-timestamp" on=timestamp label=Signal::derive(move || format!("timestamp-query {}", mark(timestamp.get()))) />
            <DetectPill testid="pill-webnn" on=webnn label=Signal::derive(move || format!("WebNN {}", mark(webnn.get()))) />
            <span class="group-label">"active"</span>
            <span class="gpu-accel" data-testid="active-pills">
                <Show when=move || f16_storage.get()>
                    <span class="pill active" data-testid="pill-f16-storage" title="gate passed: forward matmuls read f16-packed weights">
                        "+f16 storage"
                    </span>
                </Show>
                <Show when=move || !f16_storage.get()>
                    <span class="none-active">"f32 only"</span>
                </Show>
            </span>
        </section>
    }
}

/// The in-page copy of the worker's log lines.
#[component]
fn LogPanel(
    /// Lines received so far.
    logs: RwSignal<Vec<LogLine>>,
) -> impl IntoView {
    view! {
        <details class="log" open>
            <summary>"log"</summary>
            <pre data-testid="log">
                {move || {
                    logs.get()
                        .iter()
                        .map(|l| format!("{}{}\n", if l.level == LogLevel::Error { "ERROR " } else { "" }, l.text))
                        .collect::<String>()
                }}
            </pre>
        </details>
    }
}
