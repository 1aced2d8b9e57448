//! The training panel: preset, hyper-parameters, corpus, and the run's
//! controls (Train, Pause, Resume, Stop, Continue).

use crate::{field::Field, files, format, help::Help, Store};
use leptos::prelude::*;
use tinygpt_protocol::{
    training_memory, CorpusSource, ModelShape, Preset, RunState, TrainConfig, WorkerInput,
    MAX_CORPUS_BYTES, PRESETS,
};
use web_sys::HtmlInputElement;

/// The preset a fresh page starts with: it trains on a CPU too.
const DEFAULT_PRESET: &str = "nano";

/// Bytes a run of `preset` allocates on the GPU at batch size `batch`: the
/// engine's own plan, checked against its real allocation by a native test
/// and against the device's limits by the worker before it allocates.
pub fn memory_estimate(preset: &Preset, vocab: usize, batch: usize) -> u64 {
    training_memory(&preset.model(vocab), batch, preset.block_size).total()
}

fn preset(name: &str) -> &'static Preset {
    Preset::by_name(name).unwrap_or(&PRESETS[0])
}

/// Which corpus the next run reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CorpusChoice {
    Bundled,
    Upload,
}

/// The form's text fields, as typed.
#[derive(Clone, Copy)]
struct HyperFields {
    steps: RwSignal<String>,
    batch: RwSignal<String>,
    lr: RwSignal<String>,
    warmup: RwSignal<String>,
    dropout: RwSignal<String>,
    eval_interval: RwSignal<String>,
    eval_batches: RwSignal<String>,
    seed: RwSignal<String>,
}

impl HyperFields {
    fn new(t: &TrainConfig) -> Self {
        let f = Self {
            steps: RwSignal::new(String::new()),
            batch: RwSignal::new(String::new()),
            lr: RwSignal::new(String::new()),
            warmup: RwSignal::new(String::new()),
            dropout: RwSignal::new(String::new()),
            eval_interval: RwSignal::new(String::new()),
            eval_batches: RwSignal::new(String::new()),
            seed: RwSignal::new(String::new()),
        };
        f.fill(t);
        f
    }

    fn fill(&self, t: &TrainConfig) {
        self.steps.set(t.steps.to_string());
        self.batch.set(t.batch_size.to_string());
        self.lr.set(t.lr.to_string());
        self.warmup.set(t.warmup_steps.to_string());
        self.dropout.set(t.dropout.to_string());
        self.eval_interval.set(t.eval_interval.to_string());
        self.eval_batches.set(t.eval_batches.to_string());
        self.seed.set(t.seed.to_string());
    }

    /// Each field under its share-link key (`share::KEYS`).
    fn by_link_key(&self) -> [(&'static str, RwSignal<String>); 8] {
        [
            ("steps", self.steps),
            ("batch", self.batch),
            ("lr", self.lr),
            ("warmup", self.warmup),
            ("dropout", self.dropout),
            ("eval_interval", self.eval_interval),
            ("eval_batches", self.eval_batches),
            ("seed", self.seed),
        ]
    }

    /// The preset's config with the typed fields; the first unreadable
    /// field is named in the error.
    fn read(&self, preset: &Preset) -> Result<TrainConfig, String> {
        let mut t = preset.train();
        t.steps = format::whole("Steps", &self.steps.get_untracked())?;
        t.batch_size = format::whole("Batch size", &self.batch.get_untracked())?;
        t.lr = format::decimal("Learning rate", &self.lr.get_untracked())?;
        // Cosine decay to a tenth of the peak, as the defaults do.
        t.min_lr = t.lr / 10.0;
        t.warmup_steps = format::whole("Warm-up steps", &self.warmup.get_untracked())?;
        t.dropout = format::decimal("Dropout", &self.dropout.get_untracked())?;
        t.eval_interval = format::whole("Eval interval", &self.eval_interval.get_untracked())?;
        t.eval_batches = format::whole("Eval batches", &self.eval_batches.get_untracked())?;
        t.seed = format::seed("Seed", &self.seed.get_untracked())?;
        Ok(t)
    }
}

/// The form's whole state: what the next run will be.
#[derive(Clone, Copy)]
struct TrainForm {
    /// Name of the preset chosen.
    preset_name: RwSignal<String>,
    fields: HyperFields,
    corpus: RwSignal<CorpusChoice>,
    /// The uploaded corpus once read: its file name and bytes.
    upload: RwSignal<Option<(String, Vec<u8>)>>,
    /// The uploaded corpus is being read.
    reading: RwSignal<bool>,
    /// Why the last Train or Continue was refused.
    problem: RwSignal<Option<String>>,
    continue_steps: RwSignal<String>,
    run_name: RwSignal<String>,
}

impl TrainForm {
    /// A fresh form: the default preset, or a shared link's preset and
    /// hyper-parameters (those that passed `share::parse`).
    fn new(shared: &crate::share::Shared) -> Self {
        let name = shared.get("preset").unwrap_or(DEFAULT_PRESET).to_string();
        let fields = HyperFields::new(&preset(&name).train());
        for (key, field) in fields.by_link_key() {
            if let Some(v) = shared.get(key) {
                field.set(v.to_string());
            }
        }
        Self {
            preset_name: RwSignal::new(name),
            fields,
            corpus: RwSignal::new(CorpusChoice::Bundled),
            upload: RwSignal::new(None),
            reading: RwSignal::new(false),
            problem: RwSignal::new(None),
            continue_steps: RwSignal::new("100".to_string()),
            run_name: RwSignal::new(String::new()),
        }
    }

    /// A preset was chosen: its defaults replace the typed fields.
    fn choose_preset(&self, name: String) {
        self.fields.fill(&preset(&name).train());
        self.preset_name.set(name);
        self.problem.set(None);
    }

    /// Sends `request`, or shows why it cannot be sent.
    fn submit(&self, store: Store, request: Result<WorkerInput, String>) {
        match request {
            Ok(msg) => {
                self.problem.set(None);
                store.send(msg);
            }
            Err(e) => self.problem.set(Some(e)),
        }
    }

    /// The corpus the next run reads, or why there is none yet.
    fn source(&self) -> Result<CorpusSource, String> {
        match self.corpus.get_untracked() {
            CorpusChoice::Bundled => Ok(CorpusSource::Bundled),
            CorpusChoice::Upload => match self.upload.get_untracked() {
                Some((name, bytes)) => Ok(CorpusSource::Upload { name, bytes }),
                None if self.reading.get_untracked() => {
                    Err("The corpus file is still being read — try again in a moment.".into())
                }
                None => Err("Choose a .txt file to upload, or pick the bundled corpus.".into()),
            },
        }
    }

    /// The run the form describes, or the first problem with it.
    fn train_request(&self) -> Result<WorkerInput, String> {
        let p = preset(&self.preset_name.get_untracked());
        let train = self.fields.read(p)?;
        let corpus = self.source()?;
        let model = ModelShape {
            block_size: p.block_size,
            n_layer: p.n_layer,
            n_head: p.n_head,
            d_model: p.d_model,
        };
        let name = Some(self.run_name.get_untracked().trim().to_string()).filter(|n| !n.is_empty());
        Ok(WorkerInput::Train {
            model,
            train,
            corpus,
            name,
        })
    }

    /// The steps typed for Continue, as a request.
    fn continue_request(&self) -> Result<WorkerInput, String> {
        format::whole("Continue steps", &self.continue_steps.get_untracked())
            .map(|steps| WorkerInput::Continue { steps })
    }

    /// Reads the corpus file chosen in `ev`'s input; one over the limit is
    /// refused before reading, as a huge file would fill the page's memory.
    fn read_corpus(&self, store: Store, ev: leptos::ev::Event) {
        let Self {
            corpus,
            upload,
            reading,
            ..
        } = *self;
        let input: HtmlInputElement = event_target(&ev);
        let Some(file) = files::chosen_file(&input) else {
            return;
        };
        let name = file.name();
        let size = file.size();
        if size > MAX_CORPUS_BYTES as f64 {
            input.set_value("");
            upload.set(None);
            return store.show_error(
                &format!("reading the corpus {name}"),
                format!(
                    "it is {}; the playground trains on corpora up to {} (your current model and corpus are unchanged)",
                    format::bytes(size as u64),
                    format::bytes(MAX_CORPUS_BYTES as u64)
                ),
            );
        }
        reading.set(true);
        corpus.set(CorpusChoice::Upload);
        files::read_bytes(&file, move |result| {
            reading.set(false);
            match result {
                Ok(bytes) => upload.set(Some((name, bytes))),
                Err(e) => {
                    upload.set(None);
                    store.show_error("reading the corpus file", e);
                }
            }
        });
    }
}

/// Preset, hyper-parameters, corpus and run controls.
#[component]
pub fn TrainPanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let form = TrainForm::new(&crate::share::from_location());
    store.share_fields(&[("preset", form.preset_name)]);
    store.share_fields(&form.fields.by_link_key());
    let run_name = form.run_name;
    let problem = form.problem;
    view! {
        <section class="card train" data-testid="train-panel">
            <h2>"Train" <Help topic="panel-train" label="the Train panel" controls="train pause resume stop continue" /></h2>
            <PresetPicker store=store form=form />
            <HyperParams fields=form.fields />
            <label class="field wide" title="the name of this run in Saved runs (default: shape, corpus and time)" for="field-run-name">
                <span>"run name" <Help topic="run-name" label="the run name" /></span>
                <input type="text" spellcheck="false" placeholder="optional" aria-label="run name" id="field-run-name" data-testid="run-name" bind:value=run_name />
            </label>
            <CorpusPicker store=store form=form />
            <p class="validation" data-testid="train-validation" role="status"
                hidden=move || problem.with(|p| p.is_none())>
                {move || problem.get().unwrap_or_default()}
            </p>
            <RunControls store=store form=form />
        </section>
    }
}

/// The preset menu, and the chosen shape's size and training memory.
#[component]
fn PresetPicker(
    /// The playground's state.
    store: Store,
    /// The training form.
    form: TrainForm,
) -> impl IntoView {
    let preset_name = form.preset_name;
    let estimate = Memo::new(move |_| {
        let p = preset(&preset_name.get());
        let vocab = store.vocab_size();
        let batch = format::whole("", &form.fields.batch.get()).unwrap_or(p.batch_size);
        (
            p.model(vocab).num_params(),
            memory_estimate(p, vocab, batch),
            batch,
            p.block_size,
        )
    });
    let plan = Signal::derive(move || {
        let p = preset(&preset_name.get());
        let batch = format::whole("", &form.fields.batch.get()).unwrap_or(p.batch_size);
        training_memory(&p.model(store.vocab_size()), batch, p.block_size)
    });
    view! {
        <label class="field wide" for="field-preset">
            <span>"model preset" <Help topic="preset" label="the model preset" /></span>
            <select data-testid="preset" aria-label="model preset" id="field-preset" on:change=move |ev| form.choose_preset(event_target_value(&ev))>
                {PRESETS.iter().map(|p| {
                    let label = move || format!(
                        "{} — {}L/{}H/{}C · {} params",
                        p.name, p.n_layer, p.n_head, p.d_model,
                        format::short_count(p.model(store.vocab_size()).num_params()),
                    );
                    view! {
                        <option value=p.name selected=move || preset_name.get() == p.name>{label}</option>
                    }
                }).collect_view()}
            </select>
        </label>
        <p class="estimate" data-testid="preset-estimate"
            data-params=move || estimate.get().0
            data-memory-bytes=move || estimate.get().1>
            {move || {
                let (params, mem, batch, t) = estimate.get();
                format!(
                    "{} parameters (vocab {}) · ≈ {} to train at B={batch}, T={t} (weights, gradients, AdamW moments, activations)",
                    format::thousands(params), store.vocab_size(), format::bytes(mem),
                )
            }}
        </p>
        <crate::memory_bar::MemoryBars plan=plan caps=store.caps />
    }
}

/// The hyper-parameter fields.
#[component]
fn HyperParams(
    /// The typed fields.
    fields: HyperFields,
) -> impl IntoView {
    view! {
        <div class="fields">
            <Field testid="hp-steps" label="steps" value=fields.steps />
            <Field testid="hp-batch" label="batch size" value=fields.batch hint="sequences per step (B)" />
            <Field testid="hp-lr" label="learning rate" value=fields.lr hint="peak; cosine decay to a tenth of it" />
            <Field testid="hp-warmup" label="warm-up steps" value=fields.warmup />
            <Field testid="hp-dropout" label="dropout" value=fields.dropout hint="rate on the embedding and each residual branch while training (0: off; nanoGPT uses 0.2 on Shakespeare)" />
            <Field testid="hp-eval-interval" label="eval interval" value=fields.eval_interval hint="validation loss every N steps (0: only at the end)" />
            <Field
                testid="hp-eval-batches"
                label="eval batches"
                value=fields.eval_batches
                hint="batches averaged per validation estimate"
            />
            <Field testid="hp-seed" label="seed" value=fields.seed />
        </div>
    }
}

/// The bundled corpus or an uploaded `.txt` file, and the upload's status.
#[component]
fn CorpusPicker(
    /// The playground's state.
    store: Store,
    /// The training form.
    form: TrainForm,
) -> impl IntoView {
    let TrainForm {
        corpus,
        upload,
        reading,
        ..
    } = form;
    let upload_label = move || {
        if reading.get() {
            return "reading…".to_string();
        }
        upload.with(|u| match u {
            Some((name, bytes)) => format!("{name} · {}", format::bytes(bytes.len() as u64)),
            None => String::new(),
        })
    };
    view! {
        <fieldset class="corpus">
            <legend>"corpus" <Help topic="corpus" label="the corpus" controls="corpus-bundled corpus-upload corpus-file" /></legend>
            <label>
                <input type="radio" name="corpus" data-testid="corpus-bundled"
                    prop:checked=move || corpus.get() == CorpusChoice::Bundled
                    on:change=move |_| corpus.set(CorpusChoice::Bundled) />
                " bundled Shakespeare"
            </label>
            <label>
                <input type="radio" name="corpus" data-testid="corpus-upload"
                    prop:checked=move || corpus.get() == CorpusChoice::Upload
                    on:change=move |_| corpus.set(CorpusChoice::Upload) />
                " my .txt file: "
            </label>
            <input type="file" accept=".txt,text/plain" data-testid="corpus-file" aria-label="your .txt corpus file"
                on:change=move |ev| form.read_corpus(store, ev) />
            <span class="muted" data-testid="corpus-file-status"
                data-loaded=move || upload.with(|u| u.is_some()).to_string()>
                {upload_label}
            </span>
        </fieldset>
    }
}

/// Train, Pause, Resume, Stop, and Continue for a number of steps.
#[component]
fn RunControls(
    /// The playground's state.
    store: Store,
    /// The training form.
    form: TrainForm,
) -> impl IntoView {
    let state = store.run_state;
    let continue_steps = form.continue_steps;
    view! {
        <div class="buttons">
            <button class="primary" data-testid="train" on:click=move |_| form.submit(store, form.train_request())
                disabled=move || store.run_active()>"Train"</button>
            <button data-testid="pause" on:click=move |_| store.send(WorkerInput::Pause)
                disabled=move || state.get() != RunState::Running>"Pause"</button>
            <button data-testid="resume" on:click=move |_| store.send(WorkerInput::Resume)
                disabled=move || state.get() != RunState::Paused>"Resume"</button>
            <button data-testid="stop" on:click=move |_| store.send(WorkerInput::Stop)
                disabled=move || !store.run_active()>"Stop"</button>
        </div>
        <div class="buttons">
            <label class="field inline">
                <span>"continue for"</span>
                <input type="text" inputmode="numeric" data-testid="continue-steps" bind:value=continue_steps />
            </label>
            <Help topic="continue-steps" label="continue for" />
            <button data-testid="continue" on:click=move |_| form.submit(store, form.continue_request())
                disabled=move || store.run_active() || store.model.with(|m| m.is_none())>
                "Continue"
            </button>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_estimate_is_the_engine_plan() {
        let nano = Preset::by_name("nano").unwrap();
        let plan = training_memory(&nano.model(83), 16, nano.block_size);
        assert_eq!(memory_estimate(nano, 83, 16), plan.total());
        assert!(plan.state_bytes >= 16 * nano.model(83).num_params() as u64);
    }
}
