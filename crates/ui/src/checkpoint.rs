//! Checkpoints: download the model the worker holds, or load one from disk.

use crate::{files, format, help::Help, Store};
use leptos::prelude::*;
use tinygpt_protocol::WorkerInput;
use web_sys::HtmlInputElement;

/// Download and load buttons, and what happened last.
#[component]
pub fn CheckpointPanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let on_load = move |ev: leptos::ev::Event| {
        let input: HtmlInputElement = event_target(&ev);
        let Some(file) = files::chosen_file(&input) else {
            return;
        };
        let name = file.name();
        // Choosing the same file again must fire `change` again.
        input.set_value("");
        store.checkpoint_note.set(Some(format!("Reading {name}…")));
        files::read_bytes(&file, move |result| match result {
            Ok(bytes) => {
                store.checkpoint_note.set(Some(format!(
                    "Loading {name} ({})…",
                    format::bytes(bytes.len() as u64)
                )));
                store.send(WorkerInput::LoadCheckpoint { name, bytes });
            }
            Err(e) => {
                store.checkpoint_note.set(None);
                store.show_error("reading the checkpoint file", e);
            }
        });
    };
    view! {
        <section class="card checkpoint" data-testid="checkpoint-panel">
            <h2>"Checkpoint" <Help topic="panel-checkpoint" label="the Checkpoint panel" controls="load-bundled save-checkpoint" /></h2>
            <p class="muted">"safetensors: f32 weights and AdamW moments, so a loaded model can keep training."</p>
            <div class="buttons">
                <button data-testid="load-bundled"
                    title="the gallery's model suggested for this device (below), trained by this project on the Shakespeare corpus"
                    on:click=move |_| crate::gallery::load(store, crate::gallery::suggested_id(store))
                    disabled=move || store.run_active()>
                    "Load the suggested Shakespeare model"
                </button>
                <button data-testid="save-checkpoint"
                    on:click=move |_| store.send(WorkerInput::SaveCheckpoint)
                    disabled=move || store.model.with(|m| m.is_none()) || store.run_state.get() == tinygpt_protocol::RunState::Running>
                    "Download checkpoint"
                </button>
                <label class="file-button">
                    "Load checkpoint "
                    <input type="file" accept=".safetensors" data-testid="load-checkpoint"
                        on:change=on_load disabled=move || store.run_active() />
                </label>
                <Help topic="load-checkpoint" label="loading a checkpoint" />
            </div>
            <p class="stats" data-testid="checkpoint-note">
                {move || store.checkpoint_note.get().unwrap_or_default()}
            </p>
            <h3>"Model gallery"</h3>
            <crate::gallery::Gallery store=store />
        </section>
    }
}
