//! The memory plan of the next run as bars against what may hold it: the
//! whole plan against the engine's budget, the largest single buffer
//! against this adapter's per-buffer limit (the two checks the worker makes
//! before it allocates, `tinygpt_protocol::check_fits`).

use crate::format;
use leptos::prelude::*;
use tinygpt_protocol::{GpuCaps, MemoryPlan, MEMORY_BUDGET_BYTES};

/// One bar: `used` of `limit`, its share clamped to the bar.
#[component]
fn Bar(
    testid: &'static str,
    #[prop(into)] label: Signal<String>,
    #[prop(into)] used: Signal<u64>,
    #[prop(into)] limit: Signal<Option<u64>>,
) -> impl IntoView {
    let share = move || match limit.get() {
        Some(l) if l > 0 => used.get() as f64 / l as f64,
        _ => 0.0,
    };
    let over = move || share() > 1.0;
    view! {
        <div class="mem-bar" data-testid=testid data-used=move || used.get()
            data-limit=move || limit.get().map(|l| l.to_string()).unwrap_or_default()
            data-fits=move || (!over()).to_string()>
            <div class="mem-label">{move || label.get()}</div>
            // An SVG bar: the page's CSP refuses inline styles.
            <svg class="mem-track" viewBox="0 0 100 4" preserveAspectRatio="none" role="meter"
                aria-label=move || label.get() aria-valuemin="0" aria-valuemax="100"
                aria-valuenow=move || format!("{:.0}", (100.0 * share()).min(100.0))>
                <rect class="mem-bg" x="0" y="0" width="100" height="4" />
                <rect class=move || if over() { "mem-fill over" } else { "mem-fill" }
                    x="0" y="0" height="4" width=move || format!("{:.2}", (100.0 * share()).min(100.0)) />
            </svg>
        </div>
    }
}

/// The two bars for `plan`; the adapter's limit once the worker reported it.
#[component]
pub fn MemoryBars(
    #[prop(into)] plan: Signal<MemoryPlan>,
    caps: RwSignal<Option<GpuCaps>>,
) -> impl IntoView {
    let buffer_limit = Signal::derive(move || {
        caps.with(|c| {
            c.as_ref().filter(|c| c.webgpu).map(|c| {
                c.limits
                    .max_storage_buffer_binding_size
                    .min(c.limits.max_buffer_size)
            })
        })
    });
    let total = Signal::derive(move || plan.get().total());
    let largest = Signal::derive(move || plan.get().largest_buffer_bytes);
    let total_label = Signal::derive(move || {
        format!(
            "whole run: {} of the {} budget",
            format::bytes(total.get()),
            format::bytes(MEMORY_BUDGET_BYTES)
        )
    });
    let largest_label = Signal::derive(move || match buffer_limit.get() {
        Some(l) => format!(
            "largest buffer ({}): {} of this GPU's {} per buffer",
            plan.get().largest_buffer,
            format::bytes(largest.get()),
            format::bytes(l)
        ),
        None => format!(
            "largest buffer ({}): {} (the GPU's limit is not known yet)",
            plan.get().largest_buffer,
            format::bytes(largest.get())
        ),
    });
    view! {
        <div class="mem-bars" data-testid="memory-bars">
            <Bar testid="memory-total" label=total_label used=total limit=Signal::derive(|| Some(MEMORY_BUDGET_BYTES)) />
            <Bar testid="memory-largest" label=largest_label used=largest limit=buffer_limit />
        </div>
    }
}
