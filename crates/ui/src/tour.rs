//! The first-visit tour: five short steps over the page's parts, in a card
//! that sits under the header and stays at the top of the window while it
//! is shown (each step scrolls its part into view below it), skippable,
//! and remembered in `localStorage` so it greets a visitor once; "Take the
//! tour" replays it.

use leptos::prelude::*;

/// `localStorage` key set once the tour was finished or skipped.
const SEEN_KEY: &str = "tinygpt.tour";

/// `(data-testid of the part shown, title, text)`.
const STEPS: &[(&str, &str, &str)] = &[
    ("caps", "What this device can do", "Outlined pills are what the GPU offers; a filled pill is a fast path that is switched on only after it matched the exact f32 path on this very device and ran faster here. Every \"?\" explains its neighbour."),
    ("train-panel", "Train a model", "Pick a preset and press Train: nano learns word-like text in a few hundred steps. The memory bar shows what the run needs against the GPU's limits."),
    ("run-panel", "Watch it learn", "The chart plots train and validation loss; point at it (or focus it and press ← →) to read a step, smooth it, switch to a log scale or overlay a saved run."),
    ("sample-panel", "Sample", "Generate text from the model you hold. No time to train? Load the suggested Shakespeare model in the Checkpoint panel and sample it at once."),
    ("precision-panel", "See the precision", "Each fast path's measured error against the f32 path: histograms, the two 100-token samples, and where along the forward any error begins."),
];

fn storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// Whether the tour was finished or skipped in this browser before.
fn seen() -> bool {
    storage().is_some_and(|s| s.get_item(SEEN_KEY).ok().flatten().is_some())
}

fn remember() {
    if let Some(s) = storage() {
        let _ = s.set_item(SEEN_KEY, "done");
    }
}

/// Marks the part of step `at` (and only it) and scrolls it into view.
fn focus_part(at: Option<usize>) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Ok(marked) = doc.query_selector_all("[data-tour-focus]") {
        for i in 0..marked.length() {
            if let Some(el) = marked
                .item(i)
                .and_then(|n| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(n).ok())
            {
                let _ = el.remove_attribute("data-tour-focus");
            }
        }
    }
    let Some((testid, _, _)) = at.and_then(|i| STEPS.get(i)) else {
        return;
    };
    if let Ok(Some(el)) = doc.query_selector(&format!("[data-testid=\"{testid}\"]")) {
        let _ = el.set_attribute("data-tour-focus", "");
        el.scroll_into_view();
    }
}

/// The tour's card, and the button that replays it.
#[component]
pub fn Tour() -> impl IntoView {
    let step = RwSignal::new((!seen()).then_some(0usize));
    Effect::new(move |_| focus_part(step.get()));
    let finish = move || {
        remember();
        step.set(None);
    };
    let card = move || {
        let at = step.get()?;
        let (_, title, text) = STEPS[at];
        let last = at + 1 == STEPS.len();
        Some(view! {
            <section class="tour" data-testid="tour" data-step=at role="region" aria-label="guided tour">
                <p class="tour-head"><strong>{title}</strong>
                    <span class="muted">{format!(" — {} of {}", at + 1, STEPS.len())}</span></p>
                <p class="tour-text">{text}</p>
                <div class="buttons">
                    <button data-testid="tour-back" disabled=at == 0 on:click=move |_| step.set(Some(at.saturating_sub(1)))>"Back"</button>
                    <button class="primary" data-testid="tour-next"
                        on:click=move |_| if last { finish() } else { step.set(Some(at + 1)) }>
                        {if last { "Done" } else { "Next" }}
                    </button>
                    <button data-testid="tour-skip" on:click=move |_| finish()>"Skip the tour"</button>
                </div>
            </section>
        })
    };
    view! {
        {card}
        <Show when=move || step.with(|s| s.is_none())>
            <button class="tour-start" data-testid="tour-start" on:click=move |_| step.set(Some(0))>
                "Take the tour"
            </button>
        </Show>
    }
}
