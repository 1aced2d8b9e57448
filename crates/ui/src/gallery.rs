//! The model gallery: each model with its card (shape, size, validation
//! loss, how it was trained, its training curve in small), the one
//! suggested for this device marked, and a Load button. The page suggests
//! by device class: a CPU implementation of WebGPU (or no WebGPU) gets the
//! best model marked for one, a real GPU the best model
//! (`tinygpt_protocol::suggested`).

use crate::{format, Store};
use leptos::prelude::*;
use tinygpt_protocol::{suggested, GpuCaps, ModelCard, WorkerInput};

/// Whether the page runs on a CPU implementation (or without WebGPU).
pub fn cpu_class(caps: Option<&GpuCaps>) -> bool {
    caps.is_none_or(|c| !c.webgpu || c.adapter.names_cpu_implementation())
}

/// The suggested card's id, once the gallery and the caps are known.
pub fn suggested_id(store: Store) -> Option<String> {
    let cpu = store.caps.with(|c| cpu_class(c.as_ref()));
    store.gallery.with(|g| {
        g.as_ref()
            .and_then(|(cards, _)| suggested(cards, cpu))
            .map(|c| c.id.clone())
    })
}

/// Loads a model: the gallery's `id`, or the bundled one before the
/// gallery is known.
pub fn load(store: Store, id: Option<String>) {
    store.checkpoint_note.set(Some(
        "Loading the model, then checking its fast paths…".into(),
    ));
    store.send(match id {
        Some(id) => WorkerInput::LoadGalleryModel { id },
        None => WorkerInput::LoadBundledModel,
    });
}

/// A card's training curve as a small polyline (validation loss).
fn sparkline(card: &ModelCard) -> String {
    let val = &card.curve.val;
    let (Some(first), Some(last)) = (val.first(), val.last()) else {
        return String::new();
    };
    let (lo, hi) = val
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.1), hi.max(p.1))
        });
    let span = (last.0 - first.0).max(1) as f32;
    val.iter()
        .map(|&(s, l)| {
            let x = 2.0 + 116.0 * (s - first.0) as f32 / span;
            // SVG's y grows downwards: the highest loss at the top.
            let y = 2.0 + 26.0 * (hi - l) / (hi - lo).max(1e-6);
            format!("{x:.1},{y:.1}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The gallery's cards.
#[component]
pub fn Gallery(store: Store) -> impl IntoView {
    let cards = move || {
        store
            .gallery
            .with(|g| g.as_ref().map(|g| g.0.clone()).unwrap_or_default())
    };
    let problem = move || store.gallery.with(|g| g.as_ref().and_then(|g| g.1.clone()));
    view! {
        <ul class="gallery" data-testid="gallery" data-suggested=move || suggested_id(store)
            data-count=move || cards().len()>
            {move || cards().into_iter().map(|c| view! { <GalleryCard store=store card=c /> }).collect_view()}
        </ul>
        <p class="validation" role="status" hidden=move || problem().is_none()>{problem}</p>
    }
}

#[component]
fn GalleryCard(store: Store, card: ModelCard) -> impl IntoView {
    let id = card.id.clone();
    let is_suggested = {
        let id = id.clone();
        move || suggested_id(store).as_deref() == Some(id.as_str())
    };
    let figures = format!(
        "{} · {} parameters · {} layers × {} wide, context {} · validation {:.4} nats/char after {} steps · {}",
        card.preset,
        format::short_count(card.params),
        card.config.n_layer,
        card.config.d_model,
        card.config.block_size,
        card.val_loss,
        card.steps,
        format::bytes(card.bytes),
    );
    let load_id = id.clone();
    view! {
        <li class="gallery-card" data-testid=format!("gallery-{id}") data-val-loss=card.val_loss.to_string()>
            <div class="gallery-head">
                <strong>{card.title.clone()}</strong>
                <Show when=is_suggested.clone()>
                    <span class="pill detect on" data-testid="gallery-suggested">"suggested for this device"</span>
                </Show>
            </div>
            <p class="muted">{figures}</p>
            <details>
                <summary>"card"</summary>
                <p class="card-summary">{card.summary.clone()}</p>
                <p class="muted">{format!("validation: {}", card.val_protocol)}</p>
                <svg class="spark" viewBox="0 0 120 30" role="img"
                    aria-label=format!("validation loss from {:.3} to {:.3}", card.curve.val.first().map_or(0.0, |p| p.1), card.val_loss)>
                    <polyline class="val-line" points=sparkline(&card) />
                </svg>
            </details>
            <button data-testid=format!("gallery-load-{id}") disabled=move || store.run_active() || store.busy()
                on:click=move |_| load(store, Some(load_id.clone()))>
                {format!("Load {}", card.title)}
            </button>
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinygpt_protocol::{CardCurve, ModelConfig};

    #[test]
    fn the_sparkline_falls_as_the_loss_falls() {
        let card = ModelCard {
            version: 1,
            id: "x".into(),
            title: "x".into(),
            file: "x".into(),
            bytes: 0,
            sha256: String::new(),
            preset: "tiny".into(),
            config: ModelConfig {
                vocab_size: 2,
                block_size: 2,
                n_layer: 1,
                n_head: 1,
                d_model: 2,
            },
            params: 0,
            steps: 2,
            val_loss: 1.0,
            val_protocol: String::new(),
            summary: String::new(),
            for_cpu_implementations: true,
            curve: CardCurve {
                train: Vec::new(),
                val: vec![(1, 3.0), (2, 1.0)],
            },
            log: String::new(),
        };
        assert_eq!(sparkline(&card), "2.0,2.0 118.0,28.0");
        assert!(cpu_class(None));
    }
}
