//! Capability pills: what the adapter offers (detected) and which gated fast
//! paths passed their check (active). The two kinds must never look alike.

use crate::help::Help;
use leptos::prelude::*;
use tinygpt_protocol::{GateReport, GpuCaps};

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
    /// What the pill is about, for its "?" button's name.
    about: &'static str,
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
        <Help topic=testid label=about />
    }
}

/// Detection pills, then activation pills (only for gated fast paths that passed).
#[component]
pub fn CapsPills(
    /// Capabilities from the worker's `gpu_caps`; `None` until it reports.
    caps: RwSignal<Option<GpuCaps>>,
    /// The gates' latest reports, for what the active pills' explainers say.
    gates: RwSignal<Vec<GateReport>>,
) -> impl IntoView {
    let measured = move |path: &'static str| {
        Signal::derive(move || {
            gates.with(|g| {
                g.iter()
                    .find(|r| r.path == path)
                    .and_then(|r| r.lines.first())
                    .map(|l| format!("The gate measured: {l}"))
                    .unwrap_or_default()
            })
        })
    };
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
    let f16_storage = has(|c| c.active.f16_storage);
    let f16_compute = has(|c| c.active.f16_compute);
    let subgroup_sums = has(|c| c.active.subgroups);
    view! {
        <section id="caps" class="caps" data-testid="caps" data-reported=move || caps.with(|c| c.is_some()).to_string()>
            <span class="group-label">"detected"</span>
            <DetectPill testid="pill-webgpu" about="the WebGPU pill" on=webgpu label=Signal::derive(move || format!("WebGPU {}", mark(webgpu.get()))) />
            <DetectPill testid="pill-adapter" about="the GPU pill" on=webgpu label=adapter />
            <DetectPill testid="pill-shader-f16" about="the shader-f16 pill" on=shader_f16 label=Signal::derive(move || format!("shader-f16 {}", mark(shader_f16.get()))) />
            <DetectPill testid="pill-subgroups" about="the subgroups pill" on=subgroups label=Signal::derive(move || format!("subgroups {}", mark(subgroups.get()))) />
            <DetectPill testid="pill-timestamp" about="the timestamp-query pill" on=timestamp label=Signal::derive(move || format!("timestamp-query {}", mark(timestamp.get()))) />
            <WebnnPill caps=caps />
            <span class="group-label">"active"</span>
            <span class="gpu-accel" data-testid="active-pills">
                <Show when=move || f16_storage.get()>
                    <span class="pill active" data-testid="pill-f16-storage" title="gate passed: forward matmuls read f16-packed weights">
                        "+f16 storage"
                    </span>
                    <Help topic="pill-f16-storage" label="the f16 storage fast path" measured=measured("f16_storage") />
                </Show>
                <Show when=move || f16_compute.get()>
                    <span class="pill active" data-testid="pill-f16-compute" title="gate passed: the training forward's matmuls multiply f16 operands into f32 sums">
                        "+f16 compute"
                    </span>
                    <Help topic="pill-f16-compute" label="the f16 compute fast path" measured=measured("f16_compute") />
                </Show>
                <Show when=move || subgroup_sums.get()>
                    <span class="pill active" data-testid="pill-subgroups-active" title="gate passed: the decoder's GEMVs sum their lanes with subgroup shuffles (the same bits)">
                        "+subgroups"
                    </span>
                </Show>
                <Show when=move || !f16_storage.get() && !f16_compute.get() && !subgroup_sums.get()>
                    <span class="none-active">"f32 only"</span>
                </Show>
            </span>
            <Levers gates=gates />
        </section>
    }
}

/// The WebNN pill: a working context, an API without a backend here, or
/// none (`navigator.ml.createContext()` in the worker).
#[component]
fn WebnnPill(caps: RwSignal<Option<GpuCaps>>) -> impl IntoView {
    let webnn = Signal::derive(move || caps.with(|c| c.as_ref().is_some_and(|c| c.features.webnn)));
    let label = move || {
        caps.with(|c| match c.as_ref().map(|c| &c.features) {
            Some(f) if f.webnn => "WebNN ✓".to_string(),
            Some(f) if f.webnn_api => "WebNN: API present, no backend here".to_string(),
            _ => "WebNN —".to_string(),
        })
    };
    let title = move || {
        caps.with(|c| match c.as_ref().map(|c| &c.features) {
            Some(f) if f.webnn => "navigator.ml.createContext() gave a context".to_string(),
            Some(f) if f.webnn_api => format!(
                "navigator.ml exists but createContext() failed: {}",
                f.webnn_problem.clone().unwrap_or_default()
            ),
            _ => "no navigator.ml in this browser".to_string(),
        })
    };
    view! {
        <span class=move || if webnn.get() { "pill detect on" } else { "pill detect off" }
            data-testid="pill-webnn" data-on=move || webnn.get().to_string()
            data-api=move || caps.with(|c| c.as_ref().is_some_and(|c| c.features.webnn_api)).to_string()
            title=title>
            {label}
        </span>
        <Help topic="pill-webnn" label="the WebNN pill" />
    }
}

/// Per fast path (lever), what its gates decided: detected, precise (the
/// precision gate), faster here (the speed gate), active.
#[component]
fn Levers(gates: RwSignal<Vec<GateReport>>) -> impl IntoView {
    view! {
        <Show when=move || gates.with(|g| !g.is_empty())>
            <span class="levers" data-testid="levers">
                {move || gates.get().into_iter().map(lever_row).collect_view()}
            </span>
            <Help topic="levers" label="the fast-path levers" />
        </Show>
    }
}

/// One lever: `f16-storage: precise ✓ · faster 1.24× · active`, or why it
/// is off: `f16-compute: not detected (the adapter offers no shader-f16) ·
/// speed — · off`.
fn lever_row(r: GateReport) -> impl IntoView {
    let precision = match (r.detected, r.passed, &r.missing) {
        (false, _, Some(why)) => format!("not detected ({why})"),
        (false, _, None) => "not detected".to_string(),
        (true, true, _) => "precise ✓".to_string(),
        (true, false, _) => "precision ✗".to_string(),
    };
    let faster = r.speed.as_ref().is_some_and(|s| s.faster());
    let speed = match &r.speed {
        Some(s) if s.faster() => format!("faster {:.2}×", s.speedup()),
        Some(s) => format!("slower here {:.2}×", s.speedup()),
        None if r.speed_forced => "speed not measured".to_string(),
        None => "speed —".to_string(),
    };
    let state = match &r.speed_training {
        Some(t) if r.active && !t.faster() => "active (training on f32)",
        _ if r.active => "active",
        _ => "off",
    };
    view! {
        <span class=if r.active { "lever on" } else { "lever off" }
            data-testid=format!("lever-{}", r.path)
            data-detected=r.detected.to_string() data-passed=r.passed.to_string()
            data-faster=faster.to_string() data-active=r.active.to_string()
            title=r.lines.get(1).or(r.lines.first()).cloned().unwrap_or_default()>
            {format!("{}: {precision} · {speed} · {state}", r.label)}
        </span>
    }
}
