//! The training panel: preset, hyper-parameters, corpus, and the run's
//! controls (Train, Pause, Resume, Stop, Continue).

use crate::{files, format, Store};
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

/// A labelled text field bound to a signal, with its hint shown on hover
/// (an absent hint renders `title=""`); the training panel's hyper-parameters
/// and the sample panel's decoding settings.
#[component]
pub(crate) fn Field(
    /// `data-testid` of the input.
    testid: &'static str,
    /// The label shown.
    label: &'static str,
    /// Text of the field.
    value: RwSignal<String>,
    /// Shown on hover.
    #[prop(optional)]
    hint: &'static str,
) -> impl IntoView {
    view! {
        <label class="field" title=hint>
            <span>{label}</span>
            <input type="text" inputmode="decimal" spellcheck="false" data-testid=testid bind:value=value />
        </label>
    }
}

/// Preset, hyper-parameters, corpus and run controls.
#[component]
pub fn TrainPanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let preset_name = RwSignal::new(DEFAULT_PRESET.to_string());
    let fields = HyperFields::new(&preset(DEFAULT_PRESET).train());
    let corpus = RwSignal::new(CorpusChoice::Bundled);
    let upload = RwSignal::new(None::<(String, Vec<u8>)>);
    let reading = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let continue_steps = RwSignal::new("100".to_string());
    let run_name = RwSignal::new(String::new());

    let estimate = Memo::new(move |_| {
        let p = preset(&preset_name.get());
        let vocab = store.vocab_size();
        let batch = format::whole("", &fields.batch.get()).unwrap_or(p.batch_size);
        (
            p.model(vocab).num_params(),
            memory_estimate(p, vocab, batch),
            batch,
            p.block_size,
        )
    });

    let on_preset = move |ev: leptos::ev::Event| {
        let name = event_target_value(&ev);
        fields.fill(&preset(&name).train());
        preset_name.set(name);
        problem.set(None);
    };
    let on_file = move |ev: leptos::ev::Event| {
        let input: HtmlInputElement = event_target(&ev);
        let Some(file) = files::chosen_file(&input) else {
            return;
        };
        let name = file.name();
        let size = file.size();
        if size > MAX_CORPUS_BYTES as f64 {
            // Refused before reading: a huge file would fill the page's memory.
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
    };
    let on_train = move |_| {
        let p = preset(&preset_name.get_untracked());
        let train = match fields.read(p) {
            Ok(t) => t,
            Err(e) => return problem.set(Some(e)),
        };
        let source = match corpus.get_untracked() {
            CorpusChoice::Bundled => CorpusSource::Bundled,
            CorpusChoice::Upload => match upload.get_untracked() {
                Some((name, bytes)) => CorpusSource::Upload { name, bytes },
                None if reading.get_untracked() => {
                    return problem.set(Some(
                        "The corpus file is still being read — try again in a moment.".into(),
                    ))
                }
                None => {
                    return problem.set(Some(
                        "Choose a .txt file to upload, or pick the bundled corpus.".into(),
                    ))
                }
            },
        };
        problem.set(None);
        let model = ModelShape {
            block_size: p.block_size,
            n_layer: p.n_layer,
            n_head: p.n_head,
            d_model: p.d_model,
        };
        store.send(WorkerInput::Train {
            model,
            train,
            corpus: source,
            name: Some(run_name.get_untracked().trim().to_string()).filter(|n| !n.is_empty()),
        });
    };
    let on_continue =
        move |_| match format::whole("Continue steps", &continue_steps.get_untracked()) {
            Ok(steps) => {
                problem.set(None);
                store.send(WorkerInput::Continue { steps });
            }
            Err(e) => problem.set(Some(e)),
        };
    let state = store.run_state;
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
        <section class="card train" data-testid="train-panel">
            <h2>"Train"</h2>
            <label class="field wide">
                <span>"model preset"</span>
                <select data-testid="preset" on:change=on_preset>
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
            <label class="field wide" title="the name of this run in Saved runs (default: shape, corpus and time)">
                <span>"run name"</span>
                <input type="text" spellcheck="false" placeholder="optional" data-testid="run-name" bind:value=run_name />
            </label>
            <fieldset class="corpus">
                <legend>"corpus"</legend>
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
                <input type="file" accept=".txt,text/plain" data-testid="corpus-file" on:change=on_file />
                <span class="muted" data-testid="corpus-file-status"
                    data-loaded=move || upload.with(|u| u.is_some()).to_string()>
                    {upload_label}
                </span>
            </fieldset>
            <p class="validation" data-testid="train-validation" role="status"
                hidden=move || problem.with(|p| p.is_none())>
                {move || problem.get().unwrap_or_default()}
            </p>
            <div class="buttons">
                <button class="primary" data-testid="train" on:click=on_train
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
                <button data-testid="continue" on:click=on_continue
                    disabled=move || store.run_active() || store.model.with(|m| m.is_none())>
                    "Continue"
                </button>
            </div>
        </section>
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
