//! The sample panel: prompt and decoding settings, streamed output, and
//! generation statistics.

use crate::{format, train::Field, Store};
use leptos::prelude::*;
use tinygpt_protocol::{SampleRequest, WorkerInput};

/// The generation shown in the panel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleView {
    /// The prompt the generation continues.
    pub prompt: String,
    /// Generated text so far.
    pub text: String,
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
}

/// The typed decoding settings, read into a request.
fn request(
    prompt: String,
    length: &str,
    temperature: &str,
    top_k: &str,
    top_p: &str,
    seed: &str,
) -> Result<SampleRequest, String> {
    Ok(SampleRequest {
        prompt,
        max_tokens: format::whole("Length", length)?,
        temperature: format::decimal("Temperature", temperature)?,
        top_k: format::optional_whole("Top-k", top_k)?,
        top_p: format::optional_decimal("Top-p", top_p)?,
        seed: format::seed("Seed", seed)?,
    })
}

/// Prompt, settings, Generate, the streamed text and its stats.
#[component]
pub fn SamplePanel(
    /// The playground's state.
    store: Store,
) -> impl IntoView {
    let prompt = RwSignal::new("ROMEO:\n".to_string());
    let length = RwSignal::new("300".to_string());
    let temperature = RwSignal::new("0.8".to_string());
    let top_k = RwSignal::new("40".to_string());
    let top_p = RwSignal::new(String::new());
    let seed = RwSignal::new("42".to_string());
    let problem = RwSignal::new(None::<String>);
    let sample = store.sample;

    let on_generate = move |_| {
        let req = request(
            prompt.get_untracked(),
            &length.get_untracked(),
            &temperature.get_untracked(),
            &top_k.get_untracked(),
            &top_p.get_untracked(),
            &seed.get_untracked(),
        );
        match req {
            Ok(req) => {
                problem.set(None);
                sample.update(|s| {
                    *s = SampleView {
                        prompt: req.prompt.clone(),
                        running: true,
                        generation: s.generation + 1,
                        ..SampleView::default()
                    }
                });
                store.send(WorkerInput::Sample(req));
            }
            Err(e) => problem.set(Some(e)),
        }
    };
    // Streamed text is appended to the DOM, not re-rendered whole: a long
    // generation would otherwise copy its text once per token.
    let output = NodeRef::<leptos::html::Span>::new();
    let shown = StoredValue::new((0u64, 0usize));
    Effect::new(move |_| {
        let Some(el) = output.get() else { return };
        sample.with(|s| {
            let (generation, len) = shown.get_value();
            if generation != s.generation || len > s.text.len() {
                el.set_text_content(Some(&s.text));
            } else if len < s.text.len() {
                if let Err(e) = el.append_with_str_1(&s.text[len..]) {
                    web_sys::console::error_2(&"appending sampled text failed".into(), &e);
                }
            }
            shown.set_value((s.generation, s.text.len()));
        });
    });
    let no_model = move || store.model.with(|m| m.is_none());
    let stats = move || {
        sample.with(|s| {
            if s.tokens == 0 {
                return if s.running {
                    "waiting for the first token…".to_string()
                } else {
                    "—".to_string()
                };
            }
            format!(
                "{} tokens · {} · first token after {:.0} ms{}",
                s.tokens,
                format::rate(s.tokens_per_s, "tok"),
                s.first_token_ms,
                if s.done { " · done" } else { "" },
            )
        })
    };

    view! {
        <section class="card sample" data-testid="sample-panel">
            <h2>"Sample"</h2>
            <label class="field wide">
                <span>"prompt"</span>
                <textarea rows="3" spellcheck="false" data-testid="sample-prompt" bind:value=prompt></textarea>
            </label>
            <div class="fields">
                <Field testid="sample-length" label="length" value=length hint="characters to generate" />
                <Field testid="sample-temperature" label="temperature" value=temperature hint="0 is greedy" />
                <Field testid="sample-top-k" label="top-k" value=top_k hint="empty: off" />
                <Field testid="sample-top-p" label="top-p" value=top_p hint="empty: off" />
                <Field testid="sample-seed" label="seed" value=seed hint="same seed, same text" />
            </div>
            <p class="validation" data-testid="sample-validation" role="status"
                hidden=move || problem.with(|p| p.is_none())>
                {move || problem.get().unwrap_or_default()}
            </p>
            <div class="buttons">
                <button class="primary" data-testid="generate" on:click=on_generate
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
            <pre class="sample-box" data-running=move || sample.with(|s| s.running).to_string()><span class="sample-prompt">{move || sample.with(|s| s.prompt.clone())}</span><span data-testid="sample-output" node_ref=output></span></pre>
            <p class="stats" data-testid="sample-stats"
                data-tokens-per-s=move || sample.with(|s| s.tokens_per_s)
                data-first-token-ms=move || sample.with(|s| s.first_token_ms)>{stats}</p>
        </section>
    }
}
