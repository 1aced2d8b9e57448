//! Saved runs: the offer to resume the last run after a refresh, the list of
//! runs in the browser's private storage (load, resume, delete), storage
//! usage, and the autosave and hidden-tab settings.

use crate::{format, help::Help, Store};
use leptos::prelude::*;
use tinygpt_protocol::{SavedRunInfo, StorageInfo, WorkerInput, DEFAULT_AUTOSAVE_STEPS};

fn describe(r: &SavedRunInfo) -> String {
    format!(
        "{}L/{}H/{}C · step {} of {} · loss {} · val {}",
        r.config.n_layer,
        r.config.n_head,
        r.config.d_model,
        format::thousands(r.step),
        format::thousands(r.target_step),
        format::loss(r.train_loss),
        format::loss(r.val_loss),
    )
}

/// Loads `id` and, when `resume`, continues it to its target step.
fn open(store: Store, id: String, resume: bool) {
    store.resume_pending.set(resume.then(|| id.clone()));
    store.send(WorkerInput::LoadSavedRun { id });
}

/// After a refresh (no model yet, runs saved): the last run, one click away.
#[component]
pub fn ResumeOffer(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let last = move || {
        if store.model.with(|m| m.is_some()) || store.run_active() {
            return None;
        }
        store.saved_runs.with(|r| r.first().cloned())
    };
    view! {
        {move || last().map(|r| {
            let (id, id2) = (r.id.clone(), r.id.clone());
            let unfinished = r.step < r.target_step;
            view! {
                <div class="resume-offer" role="status" data-testid="resume-offer" data-run-id=r.id.clone()>
                    <span>"Your last run: "<strong>{r.name.clone()}</strong>" — "{describe(&r)}</span>
                    <button class="primary" data-testid="resume-last" hidden=!unfinished
                        on:click=move |_| open(store, id.clone(), true)>"Resume training"</button>
                    <button data-testid="load-last" on:click=move |_| open(store, id2.clone(), false)>
                        "Load to sample"
                    </button>
                </div>
            }
        })}
    }
}

/// What the private storage holds, or why runs are not saved.
fn storage_line(storage: Option<&StorageInfo>) -> String {
    match storage {
        None => "checking private storage…".to_string(),
        Some(s) if !s.available => format!(
            "private storage is unavailable: {} — runs are not saved",
            s.problem.clone().unwrap_or_default()
        ),
        Some(s) => format!(
            "{} of {} used{}",
            format::bytes(s.usage),
            format::bytes(s.quota),
            if s.persisted {
                " · persistent (the browser will not evict it)"
            } else {
                " · not persistent: the browser may evict it under storage pressure"
            }
        ),
    }
}

/// Every saved run with its actions, storage usage and the save settings.
#[component]
pub fn SavedRunsPanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    view! {
        <section class="card saves" data-testid="saves-panel">
            <h2>"Saved runs" <Help topic="panel-saves" label="Saved runs" /></h2>
            <p class="muted" data-testid="storage"
                data-persisted=move || store.storage.with(|s| s.as_ref().is_some_and(|s| s.persisted)).to_string()>
                {move || store.storage.with(|s| storage_line(s.as_ref()))}
            </p>
            <SaveSettings store=store />
            <p class="muted" data-testid="last-save">
                {move || store.last_saved.with(|s| match s {
                    Some((id, step)) => format!("last save: {id} at step {step}"),
                    None => "no save yet in this session".to_string(),
                })}
            </p>
            <ul class="runs" data-testid="saved-runs" data-count=move || store.saved_runs.with(|r| r.len())>
                <For each=move || store.saved_runs.get() key=|r| (r.id.clone(), r.step, r.saved_ms.to_bits())
                    children=move |r: SavedRunInfo| view! { <SavedRun store=store run=r /> } />
            </ul>
        </section>
    }
}

/// The autosave interval and the hidden-tab setting, and why an interval
/// typed was refused.
#[component]
fn SaveSettings(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let autosave = RwSignal::new(DEFAULT_AUTOSAVE_STEPS.to_string());
    let problem = RwSignal::new(None::<String>);
    let on_autosave = move |_| match format::whole("autosave interval", &autosave.get_untracked()) {
        Ok(every_steps) => {
            problem.set(None);
            store.send(WorkerInput::SetAutosave { every_steps });
        }
        Err(e) => problem.set(Some(e)),
    };
    view! {
        <div class="buttons">
            <label class="field inline" title="0: save only on pause, stop and at the end">
                <span>"autosave every"</span>
                <input type="text" inputmode="numeric" data-testid="autosave-steps" bind:value=autosave
                    on:change=on_autosave />
                <span>"steps"</span>
            </label>
            <Help topic="autosave-steps" label="autosave" />
            <label class="check" title="pause training while this tab is hidden, resume when it is shown">
                <input type="checkbox" data-testid="pause-hidden"
                    prop:checked=move || store.pause_when_hidden.get()
                    on:change=move |ev| store.pause_when_hidden.set(event_target_checked(&ev)) />
                " pause while the tab is hidden"
            </label>
            <Help topic="pause-hidden" label="pausing while hidden" />
            <label class="check" title="a system notification when a run finishes (the browser asks for permission)">
                <input type="checkbox" data-testid="notify-done"
                    prop:checked=move || store.notify_when_done.get()
                    on:change=move |ev| {
                        if !event_target_checked(&ev) {
                            return store.notify_when_done.set(false);
                        }
                        crate::title::ask_to_notify(move |granted| {
                            store.notify_when_done.set(granted);
                            if !granted {
                                store.show_error("asking to notify", "the browser did not allow notifications for this page".into());
                            }
                        });
                    } />
                " notify me when a run finishes"
            </label>
            <Help topic="notify-done" label="the done notification" />
        </div>
        <p class="validation" role="status" hidden=move || problem.with(|p| p.is_none())>
            {move || problem.get().unwrap_or_default()}
        </p>
    }
}

/// One saved run: its name and figures, Load, Resume and Delete.
#[component]
fn SavedRun(
    /// The playground's state.
    store: Store,
    /// The run listed.
    run: SavedRunInfo,
) -> impl IntoView {
    let (a, b, c) = (run.id.clone(), run.id.clone(), run.id.clone());
    let current = {
        let id = run.id.clone();
        move || {
            store
                .model
                .with(|m| m.as_ref().and_then(|m| m.run_id.clone()) == Some(id.clone()))
        }
    };
    view! {
        <li data-testid="saved-run" data-run-id=run.id.clone() data-step=run.step
            class:current=current>
            <span class="run-name">{run.name.clone()}</span>
            <span class="muted">{describe(&run)}" · "{format::bytes(run.bytes)}</span>
            <button data-testid="saved-load" disabled=move || store.run_active()
                on:click=move |_| open(store, a.clone(), false)>"Load"</button>
            <button data-testid="saved-resume" disabled=move || store.run_active()
                on:click=move |_| open(store, b.clone(), true)>"Resume"</button>
            <button data-testid="saved-delete"
                on:click=move |_| store.send(WorkerInput::DeleteSavedRun { id: c.clone() })>
                "Delete"
            </button>
        </li>
    }
}
