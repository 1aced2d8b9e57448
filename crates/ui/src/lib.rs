//! The TinyGPT-rs playground UI (Leptos, client-side rendered, main thread).
//!
//! It depends only on the message types: every GPU and model operation
//! happens in the worker, so the page never freezes. [`App`] owns one
//! [`Store`] of signals; each panel reads it and sends [`WorkerInput`]s
//! through it, and [`Store::apply`] folds every
//! [`WorkerOutput`](tinygpt_protocol::WorkerOutput) into it.

mod apply;
mod caps;
mod chart;
mod chart_frame;
mod checkpoint;
mod field;
mod files;
mod format;
mod gallery;
mod help;
mod inspect;
mod live;
mod memory_bar;
mod precision;
mod precision_plot;
mod progress;
mod sample;
mod saves;
mod share;
mod shortcuts;
mod title;
mod tour;
mod train;
mod worker_link;

use chart::{LossHistory, Overlay};
use leptos::prelude::*;
use sample::SampleView;
use tinygpt_protocol::{
    GateReport, GpuCaps, LocalizeReport, LogLevel, ModelInfo, PrecisionRecord, RunState,
    SavedRunInfo, StorageInfo, TestHook, TrainProgress, WorkerInput,
};
use worker_link::WorkerLink;

/// What the status bar says before the worker has reported anything.
const STARTING: &str = "Starting the worker and detecting the GPU…";

/// Distinct characters of the bundled corpus: the vocabulary used for
/// parameter counts until the worker reports a model.
pub const BUNDLED_VOCAB: usize = 83;

/// One line of the in-page log.
#[derive(Clone, Debug, PartialEq)]
struct LogLine {
    level: LogLevel,
    text: String,
}

/// A worker error (or a failure on the UI's side) shown in the banner.
#[derive(Clone, Debug, PartialEq)]
struct ShownError {
    /// What was being done, e.g. “checking the hyper-parameters”.
    context: String,
    message: String,
    /// Errors that arrived since the banner was last dismissed.
    count: usize,
}

/// A request whose outcome decides what happens to the chart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pending {
    None,
    /// A new run was asked for: the chart clears when it starts running,
    /// and stays as it is when the worker refuses the run.
    NewRun,
    /// A checkpoint load: the chart clears when the new model is in.
    Load,
}

/// Everything the panels show, and the link to the worker.
#[derive(Clone, Copy)]
pub(crate) struct Store {
    caps: RwSignal<Option<GpuCaps>>,
    /// The latest gate report of each fast path.
    gates: RwSignal<Vec<GateReport>>,
    /// The latest localisation of each fast path.
    localizations: RwSignal<Vec<LocalizeReport>>,
    /// Localisation reports received (a test sees a new one by it).
    localized: RwSignal<u32>,
    /// The device's precision log and why it could not be read, once asked.
    precision_log: RwSignal<Option<(Vec<PrecisionRecord>, Option<String>)>>,
    status: RwSignal<String>,
    worker_ready: RwSignal<bool>,
    logs: RwSignal<Vec<LogLine>>,
    error: RwSignal<Option<ShownError>>,
    pub run_state: RwSignal<RunState>,
    pub progress: RwSignal<Option<TrainProgress>>,
    pub history: RwSignal<LossHistory>,
    /// The model gallery's cards and why it could not be read, once listed.
    pub gallery: RwSignal<Option<(Vec<tinygpt_protocol::ModelCard>, Option<String>)>>,
    /// The last inspection of a text, and how many arrived.
    pub inspection: RwSignal<Option<tinygpt_protocol::Inspection>>,
    pub inspected: RwSignal<u32>,
    /// Live samples of the run in progress ("watch it learn").
    pub live_samples: RwSignal<Vec<tinygpt_protocol::LiveSample>>,
    /// Saved runs' curves drawn over the chart for comparison.
    pub overlays: RwSignal<Vec<Overlay>>,
    pub model: RwSignal<Option<ModelInfo>>,
    /// Runs started since the page opened (a test sees a new run by it).
    pub runs_started: RwSignal<u32>,
    /// The worker said it is busy (sampling, loading, saving).
    pub worker_busy: RwSignal<bool>,
    pub sample: RwSignal<SampleView>,
    /// What happened to the last checkpoint saved or loaded.
    pub checkpoint_note: RwSignal<Option<String>>,
    pending: RwSignal<Pending>,
    /// Saved runs in private storage, newest first, and the storage use.
    pub saved_runs: RwSignal<Vec<SavedRunInfo>>,
    pub storage: RwSignal<Option<StorageInfo>>,
    /// The last save of this session: run id and step.
    pub last_saved: RwSignal<Option<(String, usize)>>,
    /// A saved run being loaded to continue to its target step.
    pub resume_pending: RwSignal<Option<String>>,
    /// After a worker crash: the run to restore once the new worker is up.
    restore_after_restart: RwSignal<Option<String>>,
    /// Worker restarts after crashes (bounded, so a crash loop stops).
    restarts: RwSignal<u32>,
    pub pause_when_hidden: RwSignal<bool>,
    /// Show a system notification when a run finishes (permission granted).
    pub notify_when_done: RwSignal<bool>,
    /// The run was paused because the tab was hidden (resume when shown).
    paused_by_hiding: RwSignal<bool>,
    link: StoredValue<Option<WorkerLink>, LocalStorage>,
    /// The fields a share link carries, by link key (the panels register
    /// theirs).
    shared: StoredValue<Vec<(&'static str, RwSignal<String>)>, LocalStorage>,
}

/// Restarts after worker crashes before the page gives up and says so.
const MAX_RESTARTS: u32 = 3;

impl Store {
    fn new() -> Self {
        Self {
            caps: RwSignal::new(None),
            gates: RwSignal::new(Vec::new()),
            localizations: RwSignal::new(Vec::new()),
            localized: RwSignal::new(0),
            precision_log: RwSignal::new(None),
            status: RwSignal::new(STARTING.to_string()),
            worker_ready: RwSignal::new(false),
            logs: RwSignal::new(Vec::new()),
            error: RwSignal::new(None),
            run_state: RwSignal::new(RunState::Idle),
            progress: RwSignal::new(None),
            history: RwSignal::new(LossHistory::default()),
            overlays: RwSignal::new(Vec::new()),
            live_samples: RwSignal::new(Vec::new()),
            inspection: RwSignal::new(None),
            gallery: RwSignal::new(None),
            inspected: RwSignal::new(0),
            model: RwSignal::new(None),
            runs_started: RwSignal::new(0),
            worker_busy: RwSignal::new(false),
            sample: RwSignal::new(SampleView::default()),
            checkpoint_note: RwSignal::new(None),
            pending: RwSignal::new(Pending::None),
            saved_runs: RwSignal::new(Vec::new()),
            storage: RwSignal::new(None),
            last_saved: RwSignal::new(None),
            resume_pending: RwSignal::new(None),
            restore_after_restart: RwSignal::new(None),
            restarts: RwSignal::new(0),
            pause_when_hidden: RwSignal::new(false),
            notify_when_done: RwSignal::new(false),
            paused_by_hiding: RwSignal::new(false),
            link: StoredValue::new_local(None),
            shared: StoredValue::new_local(Vec::new()),
        }
    }

    /// Starts a worker wired to this store.
    fn connect(self) {
        let on_crash = move |text: String| self.worker_crashed(text);
        match WorkerLink::spawn(move |msg| self.apply(msg), on_crash) {
            Ok(link) => {
                self.link.set_value(Some(link));
                // Ask again once mounted: harmless if caps already arrived.
                self.send(WorkerInput::QueryCaps);
            }
            Err(e) => self.status.set(format!("Cannot start the worker — {e}")),
        }
    }

    /// The worker died: say so, start a new one and restore the run from
    /// its last save once the new worker lists its saves.
    fn worker_crashed(self, text: String) {
        self.show_error("running the worker", text.clone());
        // The old worker's wasm is poisoned: stop it for good.
        self.link.update_value(|l| {
            if let Some(link) = l.take() {
                link.terminate();
            }
        });
        self.worker_ready.set(false);
        self.worker_busy.set(false);
        self.sample.update(|s| s.running = false);
        let restarts = self.restarts.get_untracked();
        if restarts >= MAX_RESTARTS {
            self.status.set(format!(
                "The worker crashed {restarts} times — reload the page. Your saved runs are kept. ({text})"
            ));
            return;
        }
        self.restarts.set(restarts + 1);
        let run = self
            .model
            .get_untracked()
            .and_then(|m| m.run_id)
            .filter(|id| {
                self.saved_runs
                    .with_untracked(|r| r.iter().any(|r| &r.id == id))
            });
        self.status.set(match &run {
            Some(id) => {
                format!("The worker crashed — restarting it and restoring {id} from its last save…")
            }
            None => "The worker crashed — restarting it (the model had no save to restore)…".into(),
        });
        self.restore_after_restart.set(run);
        self.model.set(None);
        self.run_state.set(RunState::Idle);
        self.connect();
    }

    /// Sends one message; a failure to send is shown like a worker error.
    pub fn send(&self, msg: WorkerInput) {
        match &msg {
            WorkerInput::Train { .. } => self.pending.set(Pending::NewRun),
            WorkerInput::LoadCheckpoint { .. }
            | WorkerInput::LoadBundledModel
            | WorkerInput::LoadGalleryModel { .. } => self.pending.set(Pending::Load),
            _ => {}
        }
        let sent = self.link.with_value(|l| match l {
            Some(link) => link.send(&msg),
            None => Err("the worker is not running".into()),
        });
        if let Err(e) = sent {
            self.show_error("sending a request to the worker", e);
        }
    }

    /// Shows an error in the banner and the log.
    pub fn show_error(&self, context: &str, message: String) {
        self.log(LogLevel::Error, format!("Error while {context}: {message}"));
        self.banner(context, message);
    }

    /// Shows an error in the banner only (the worker logs its own).
    fn banner(&self, context: &str, message: String) {
        self.error.update(|e| {
            let count = e.as_ref().map_or(0, |e| e.count) + 1;
            *e = Some(ShownError {
                context: context.to_string(),
                message,
                count,
            });
        });
    }

    fn log(&self, level: LogLevel, text: String) {
        self.logs.update(|l| l.push(LogLine { level, text }));
    }

    /// The vocabulary of the model held, else the bundled corpus's.
    pub fn vocab_size(&self) -> usize {
        self.model
            .with(|m| m.as_ref().map_or(BUNDLED_VOCAB, |m| m.config.vocab_size))
    }

    /// Adds fields to what a share link carries.
    pub fn share_fields(&self, fields: &[(&'static str, RwSignal<String>)]) {
        self.shared.update_value(|s| s.extend_from_slice(fields));
    }

    /// The link of the setup as it is typed now (`share::KEYS` order).
    pub fn share_link(&self, base: &str) -> String {
        let values: Vec<(&str, String)> = self.shared.with_value(|s| {
            share::KEYS
                .iter()
                .filter_map(|k| s.iter().find(|(key, _)| key == k))
                .map(|(k, v)| (*k, v.get_untracked()))
                .collect()
        });
        share::link(base, &values)
    }

    /// Whether a run holds the worker (running or paused).
    pub fn run_active(&self) -> bool {
        matches!(self.run_state.get(), RunState::Running | RunState::Paused)
    }

    /// The worker is computing: a running run or a request in flight.
    pub fn busy(&self) -> bool {
        self.worker_busy.get() || self.run_state.get() == RunState::Running
    }
}

/// The playground: capabilities, training, progress and chart, sampling,
/// checkpoints and the log.
#[component]
pub fn App() -> impl IntoView {
    let store = Store::new();
    help::provide();
    store.connect();
    request_persistent_storage();
    watch_visibility(store);
    expose_test_hooks(store);
    title::follow_the_run(store);
    shortcuts::listen();
    if let Some(problem) = share::from_location().problem() {
        store.show_error("opening a shared link", problem);
    }

    view! {
        <header class="top">
            <h1>"TinyGPT-rs"</h1>
            <span class="subtitle">"train and sample a small GPT in your browser"</span>
            <progress::BusyIndicator store=store />
        </header>
        <tour::Tour />
        <caps::CapsPills caps=store.caps gates=store.gates />
        <precision::GateReports gates=store.gates />
        <div class="status" data-testid="status" data-worker-ready=move || store.worker_ready.get().to_string()>
            {move || store.status.get()}
        </div>
        <ErrorBanner error=store.error />
        <saves::ResumeOffer store=store />
        <main class="panels">
            <train::TrainPanel store=store />
            <section class="card run" data-testid="run-panel">
                <progress::ProgressPanel store=store />
                <chart::LossChart store=store />
                <progress::ModelInfoLine store=store />
                <live::LivePanel store=store />
            </section>
            <sample::SamplePanel store=store />
            <checkpoint::CheckpointPanel store=store />
            <saves::SavedRunsPanel store=store />
            <precision::PrecisionPanel store=store />
            <share::SharePanel store=store />
        </main>
        <LogPanel logs=store.logs />
        <shortcuts::ShortcutList />
    }
}

/// The latest error, prominent and dismissable; the log keeps all of them.
#[component]
fn ErrorBanner(
    /// The error shown, `None` when dismissed or none came.
    error: RwSignal<Option<ShownError>>,
) -> impl IntoView {
    view! {
        <Show when=move || error.with(|e| e.is_some())>
            <div class="error-banner" role="alert" data-testid="error"
                data-context=move || error.with(|e| e.as_ref().map(|e| e.context.clone()).unwrap_or_default())>
                <span class="error-text" data-testid="error-text">
                    {move || error.with(|e| e.as_ref().map(|e| {
                        let earlier = match e.count {
                            0 | 1 => String::new(),
                            n => format!(" ({} earlier errors in the log)", n - 1),
                        };
                        format!("Error while {}: {}{earlier}", e.context, e.message)
                    }))}
                </span>
                <button class="dismiss" data-testid="error-dismiss" title="dismiss"
                    on:click=move |_| error.set(None)>"×"</button>
            </div>
        </Show>
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
            <pre data-testid="log" tabindex="0" role="log" aria-label="the worker's log">
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

/// Asks the browser to keep this origin's storage (the saved runs) under
/// storage pressure; the saved-runs panel shows whether it agreed.
fn request_persistent_storage() {
    use wasm_bindgen::JsCast;
    let get = |o: &wasm_bindgen::JsValue, k: &str| js_sys::Reflect::get(o, &k.into()).ok();
    let global = js_sys::global();
    let Some(storage) = get(&global, "navigator").and_then(|n| get(&n, "storage")) else {
        return;
    };
    if let Some(persist) =
        get(&storage, "persist").and_then(|f| f.dyn_into::<js_sys::Function>().ok())
    {
        let _ = persist.call0(&storage);
    }
}

/// Pauses a running run while the tab is hidden, when the user asked for it,
/// and resumes it when the tab is shown again. Tokens/s counts only the time
/// spent training, so it stays honest either way.
fn watch_visibility(store: Store) {
    use wasm_bindgen::JsCast;
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let doc = document.clone();
    let on_change = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || {
        if doc.hidden() {
            if store.pause_when_hidden.get_untracked()
                && store.run_state.get_untracked() == RunState::Running
            {
                store.paused_by_hiding.set(true);
                store.log(LogLevel::Info, "[ui] tab hidden: pausing training".into());
                store.send(WorkerInput::Pause);
            }
        } else if store.paused_by_hiding.get_untracked() {
            store.paused_by_hiding.set(false);
            store.log(LogLevel::Info, "[ui] tab shown: resuming training".into());
            store.send(WorkerInput::Resume);
        }
    });
    let _ = document
        .add_event_listener_with_callback("visibilitychange", on_change.as_ref().unchecked_ref());
    // Lives as long as the page.
    on_change.forget();
}

/// With `?test_hooks=1`, `window.tinygptTestHook(name)` sends a test-only
/// fault to the worker (`panic`, `destroy_device`, `poison_weights`,
/// `crash_during_save`) or asks it for a profiled step (`profile_step`);
/// the worker honours it only with the same switch.
fn expose_test_hooks(store: Store) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let search = window.location().search().unwrap_or_default();
    if !search
        .trim_start_matches('?')
        .split('&')
        .any(|kv| kv == "test_hooks=1")
    {
        return;
    }
    let hook = wasm_bindgen::closure::Closure::<dyn Fn(String)>::new(move |name: String| {
        let hook = match name.as_str() {
            "panic" => TestHook::Panic,
            "destroy_device" => TestHook::DestroyDevice,
            "poison_weights" => TestHook::PoisonWeights,
            "crash_during_save" => TestHook::CrashDuringSave,
            "profile_step" => TestHook::ProfileStep,
            "corrupt_localization" => TestHook::CorruptLocalization,
            other => {
                return store.show_error("a test hook", format!("unknown hook {other:?}"));
            }
        };
        store.send(WorkerInput::TestHook { hook });
    });
    let _ = js_sys::Reflect::set(&window, &"tinygptTestHook".into(), hook.as_ref());
    hook.forget();
}
