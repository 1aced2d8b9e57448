//! The sample panel: prompt and decoding settings, streamed output, and
//! generation statistics.

use crate::{field::Field, format, help::Help, Store};
use leptos::prelude::*;
use tinygpt_protocol::{check_num_samples, SampleRequest, WorkerInput};

/// The generation shown in the panel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleView {
    /// The prompt the generation continues.
    pub prompt: String,
    /// Generated text so far, one per sample.
    pub texts: Vec<String>,
    /// Tokens generated so far.
    pub tokens: usize,
    pub tokens_per_s: f64,
    /// Time to the first token, in milliseconds.
    pub first_token_ms: f64,
    /// A generation is in flight.
    pub running: bool,
    /// The last generation finished.
    pub done: bool,
    /// Counts generations, so the output knows when to start afresh.
    pub generation: u64,
    /// The request's seed: sample `i` drew with `seed + i`.
    pub seed: u64,
}

impl SampleView {
    /// Sample `i`'s text so far (empty past the samples).
    pub fn text(&self, i: usize) -> &str {
        self.texts.get(i).map_or("", String::as_str)
    }
}

/// The typed decoding settings, read into a request.
fn request(
    prompt: String,
    [length, temperature, top_k, top_p, seed, samples]: [&str; 6],
) -> Result<SampleRequest, String> {
    let req = SampleRequest {
        prompt,
        max_tokens: format::whole("Length", length)?,
        temperature: format::decimal("Temperature", temperature)?,
        top_k: format::optional_whole("Top-k", top_k)?,
        top_p: format::optional_decimal("Top-p", top_p)?,
        seed: format::seed("Seed", seed)?,
        num_samples: format::whole("Samples", samples)?,
    };
    check_num_samples(req.num_samples, req.temperature)?;
    Ok(req)
}

/// The typed prompt and decoding settings.
#[derive(Clone, Copy)]
struct SampleForm {
    prompt: RwSignal<String>,
    length: RwSignal<String>,
    temperature: RwSignal<String>,
    top_k: RwSignal<String>,
    top_p: RwSignal<String>,
    seed: RwSignal<String>,
    samples: RwSignal<String>,
    /// Why the last Generate was refused.
    problem: RwSignal<Option<String>>,
}

impl SampleForm {
    /// The defaults, or a shared link's values (those that passed
    /// `share::parse`).
    fn new(shared: &crate::share::Shared) -> Self {
        let value = |key: &str, default: &str| {
            RwSignal::new(shared.get(key).unwrap_or(default).to_string())
        };
        Self {
            prompt: value("prompt", "ROMEO:\n"),
            length: value("length", "300"),
            temperature: value("temperature", "0.8"),
            top_k: value("top_k", "40"),
            top_p: value("top_p", ""),
            seed: value("sample_seed", "42"),
            samples: value("samples", "1"),
            problem: RwSignal::new(None),
        }
    }

    /// Starts a generation from the typed settings, or shows why not.
    fn generate(&self, store: Store) {
        let fields = [
            self.length,
            self.temperature,
            self.top_k,
            self.top_p,
            self.seed,
            self.samples,
        ]
        .map(|f| f.get_untracked());
        let req = request(
            self.prompt.get_untracked(),
            fields.each_ref().map(String::as_str),
        );
        match req {
            Ok(req) => {
                self.problem.set(None);
                store.sample.update(|s| {
                    *s = SampleView {
                        prompt: req.prompt.clone(),
                        texts: vec![String::new(); req.num_samples],
                        seed: req.seed,
                        running: true,
                        generation: s.generation + 1,
                        ..SampleView::default()
                    }
                });
                store.send(WorkerInput::Sample(req));
            }
            Err(e) => self.problem.set(Some(e)),
        }
    }
}

/// The statistics line of a generation.
fn stats(s: &SampleView) -> String {
    if s.tokens == 0 {
        return if s.running {
            "waiting for the first token…".to_string()
        } else {
            "—".to_string()
        };
    }
    let samples = match s.texts.len() {
        0 | 1 => String::new(),
        n => format!(" ({n} samples)"),
    };
    format!(
        "{} tokens{samples} · {} · first token after {:.0} ms{}",
        s.tokens,
        format::rate(s.tokens_per_s, "tok"),
        s.first_token_ms,
        if s.done { " · done" } else { "" },
    )
}

/// Prompt, settings, Generate, the streamed text and its stats.
#[component]
pub fn SamplePanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let form = SampleForm::new(&crate::share::from_location());
    store.share_fields(&[
        ("prompt", form.prompt),
        ("length", form.length),
        ("temperature", form.temperature),
        ("top_k", form.top_k),
        ("top_p", form.top_p),
        ("sample_seed", form.seed),
        ("samples", form.samples),
    ]);
    let prompt = form.prompt;
    let problem = form.problem;
    let sample = store.sample;
    view! {
        <section class="card sample" data-testid="sample-panel">
            <h2>"Sample" <Help topic="panel-sample" label="the Sample panel" controls="sample stop-sampling" /></h2>
            <label class="field wide" for="field-sample-prompt">
                <span>"prompt" <Help topic="sample-prompt" label="the prompt" /></span>
                <textarea rows="3" spellcheck="false" aria-label="prompt" id="field-sample-prompt" data-testid="sample-prompt" bind:value=prompt></textarea>
            </label>
            <div class="fields">
                <Field testid="sample-length" label="length" value=form.length hint="characters to generate" />
                <Field testid="sample-temperature" label="temperature" value=form.temperature hint="0 is greedy" />
                <Field testid="sample-top-k" label="top-k" value=form.top_k hint="empty: off" />
                <Field testid="sample-top-p" label="top-p" value=form.top_p hint="empty: off" />
                <Field testid="sample-seed" label="seed" value=form.seed hint="same seed, same text" />
                <Field testid="sample-count" label="samples" value=form.samples hint="1–8, side by side" />
            </div>
            <p class="validation" data-testid="sample-validation" role="status"
                hidden=move || problem.with(|p| p.is_none())>
                {move || problem.get().unwrap_or_default()}
            </p>
            <SampleButtons store=store form=form />
            <SampleOutput sample=sample />
            <p class="stats" data-testid="sample-stats"
                data-tokens-per-s=move || sample.with(|s| s.tokens_per_s)
                data-first-token-ms=move || sample.with(|s| s.first_token_ms)>{move || sample.with(stats)}</p>
            <crate::inspect::InspectPanel store=store />
        </section>
    }
}

/// Generate and Stop, and why Generate is off without a model.
#[component]
fn SampleButtons(
    /// The playground's state.
    store: Store,
    /// The typed settings.
    form: SampleForm,
) -> impl IntoView {
    let sample = store.sample;
    let no_model = move || store.model.with(|m| m.is_none());
    view! {
        <div class="buttons">
            <button class="primary" data-testid="generate" on:click=move |_| form.generate(store)
                disabled=move || sample.with(|s| s.running) || no_model()
                title=move || if no_model() { "train or load a model first" } else { "" }>
                "Generate"
            </button>
            <button data-testid="stop-sampling" on:click=move |_| store.send(WorkerInput::StopSampling)
                disabled=move || !sample.with(|s| s.running)>
                "Stop"
            </button>

            <span class="muted" hidden=move || !no_model()>"train or load a model first"</span>
        </div>
    }
}

/// The prompt and the streamed text of each sample, side by side.
#[component]
fn SampleOutput(
    /// The generation shown.
    sample: RwSignal<SampleView>,
) -> impl IntoView {
    let count = move || sample.with(|s| s.texts.len().max(1));
    view! {
        <div class="sample-boxes" data-testid="sample-boxes" data-samples=count>
            <For each=move || 0..count() key=|i| *i
                children=move |i| view! { <SampleBox sample=sample index=i /> } />
        </div>
    }
}

/// One sample's prompt and streamed text. The text is appended to the DOM,
/// not re-rendered whole: a long generation would otherwise copy its text
/// once per token.
#[component]
fn SampleBox(
    /// The generation shown.
    sample: RwSignal<SampleView>,
    /// Which sample.
    index: usize,
) -> impl IntoView {
    let output = NodeRef::<leptos::html::Span>::new();
    let shown = StoredValue::new((0u64, 0usize));
    Effect::new(move |_| {
        let Some(el) = output.get() else { return };
        sample.with(|s| {
            let (generation, len) = shown.get_value();
            let text = s.text(index);
            if generation != s.generation || len > text.len() {
                el.set_text_content(Some(text));
            } else if len < text.len() {
                if let Err(e) = el.append_with_str_1(&text[len..]) {
                    web_sys::console::error_2(&"appending sampled text failed".into(), &e);
                }
            }
            shown.set_value((s.generation, text.len()));
        });
    });
    // With several samples each says which it is and its seed alone.
    let caption = move || {
        sample.with(|s| {
            (s.texts.len() > 1).then(|| {
                let seed = s.seed.wrapping_add(index as u64);
                format!("sample {} · seed {seed}", index + 1)
            })
        })
    };
    view! {
        <div class="sample-one">
        <p class="sample-caption" data-testid="sample-caption" data-sample=index
            hidden=move || caption().is_none()>{move || caption().unwrap_or_default()}</p>
        <pre class="sample-box" data-running=move || sample.with(|s| s.running).to_string()><span class="sample-prompt">{move || sample.with(|s| s.prompt.clone())}</span><span data-testid="sample-output" data-sample=index node_ref=output></span></pre>
        </div>
    }
}
