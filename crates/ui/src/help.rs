//! "?" explainers: a small button beside every control, panel and pill that
//! opens a short note on what it means and what to try. One note is open at
//! a time; Escape or a second click closes it. The texts live here, keyed
//! by the control's `data-testid`, so a test can ask that every control has
//! one.

use leptos::prelude::*;

/// `(topic, what it is, what to try)`.
const TOPICS: &[(&str, &str, &str)] = &[
    ("preset", "The model's shape: layers (L), attention heads (H) and the width of the residual stream (C). Bigger shapes learn more text but cost more memory and time per step.", "Start with nano or tiny on a laptop GPU; small is the bundled model's shape."),
    ("hp-steps", "Optimiser steps to take. Each step trains on one batch of batch size × context characters.", "A few hundred steps of tiny already write word-like text; watch the validation loss to see when more stops helping."),
    ("hp-batch", "Sequences per step (B). A larger batch gives a less noisy gradient and uses more memory (the bar above shows how much).", "Double it if training is noisy and memory allows; lower it if the memory bar turns red."),
    ("hp-lr", "The peak learning rate of AdamW; it warms up linearly, then decays along a cosine to a tenth of the peak.", "1e-3 suits most presets; if the loss jumps up or turns NaN, divide it by 3."),
    ("hp-warmup", "Steps over which the learning rate rises from 0 to its peak, so the first updates of a random model stay small.", "About 5–10 % of the steps."),
    ("hp-dropout", "The chance of zeroing each activation on the embedding and each residual branch while training (never while sampling).", "0 for short runs; 0.1–0.2 when the validation loss rises while the train loss keeps falling (overfitting)."),
    ("hp-eval-interval", "How often (in steps) to estimate the loss on the held-out last 10 % of the corpus: the orange points of the chart.", "Every 5–10 % of the run; 0 evaluates only at the end."),
    ("hp-eval-batches", "Batches averaged per validation estimate: more is steadier and slower.", "2–4 for quick runs, 20–40 to compare runs closely."),
    ("hp-seed", "Seeds the initial weights, the batches and dropout: the same seed and settings give the same run on the same device.", "Change it to see how much of a difference between two runs is luck."),
    ("run-name", "The name of this run in Saved runs.", "Name runs after what you changed, e.g. \"lr 3e-3\", to compare them on the chart later."),
    ("corpus", "The text the model learns from: the bundled Shakespeare (5 MB of plays and poems) or a .txt file of yours, read in the page and never uploaded.", "Any plain text works; the model learns its characters, so a smaller alphabet learns faster."),
    ("continue-steps", "Train the model you hold (trained, loaded or restored) for this many more steps, keeping its optimiser state and loss history.", "Continue the bundled model on your own text to fine-tune it."),
    ("autosave-steps", "Save the run into the browser's private storage every N steps (and always on pause, stop and at the end).", "Lower it for long runs on a device that may sleep; 0 saves only at those moments."),
    ("pause-hidden", "Pause the run while this tab is hidden and resume when it is shown again.", "Turn it on to keep a laptop cool while you do something else."),
    ("notify-done", "Show a system notification when a run finishes (the browser asks for permission once).", "Useful for runs of several minutes."),
    ("sample-prompt", "The text the model continues. It must use only characters of the model's vocabulary.", "Try a character's name and a colon, e.g. ROMEO:"),
    ("sample-length", "Characters to generate after the prompt.", "200 is a paragraph."),
    ("sample-temperature", "Divides the logits before sampling: 0 always picks the likeliest character (greedy), 1 samples the model's distribution, above 1 flattens it.", "0.8 reads well; 0 shows what the model is surest of."),
    ("sample-top-k", "Sample only among the k likeliest characters (empty: all).", "10–40 removes rare misspellings."),
    ("sample-top-p", "Sample only among the likeliest characters whose probabilities add up to p (empty: all).", "0.9 trims the long tail while keeping variety."),
    ("sample-count", "Continuations of the prompt decoded together (1 to 8), shown side by side. Sample i draws with seed + i, so sample 1 is the text this seed gives alone; on a GPU they share every step's dispatches, so several cost little more than one.", "Try 4 at temperature 1 and compare how the continuations diverge."),
    ("sample-seed", "Seeds the sampler: the same seed, model and settings give the same text.", "Change it for another continuation."),
    ("load-checkpoint", "Load a .safetensors checkpoint saved by this page or by the tinygpt CLI; a bad file is refused and your model stays.", "Save a run here, load it on another device to compare its fast paths."),
    ("localize-prompt", "Localise runs this prompt through the model on the f32 path and on each fast path and compares every stage (embedding, each LayerNorm, attention, MLP, logits).", "Run it when a gate fails: the first stage whose error jumps is where the fast path goes wrong."),
    ("live-every", "While training, a 64-character sample (temperature 0.8, one seed for the whole run) from the current weights, shown by step. auto samples as often as fits in 5 % of the training time, measured; off never; a number samples every that many steps.", "Watch the samples go from noise to words to verse in a few hundred steps of tiny."),
    ("inspect-run", "Runs the prompt and the sample through the model, a context at a time, and shows for every character the model's probability for it and its ten likeliest alternatives, and every head's attention weights over the last context. Probabilities are at temperature 1, on the GPU with the fast paths sampling uses; a character far into a long sample was written with a context that restarted at half a window, so its probability here may differ a little from the one it was drawn with.", "Click a character, or focus the text and press ← → Home End."),
    ("inspect-colour", "Colours each character by the probability the model gave it: dark for surprises (under 5 %), bright for near-certainties (over 80 %).", "Names and rhymes are often the surprises."),
    ("attention", "Each head's attention weights: row q is the query at character q, columns are the keys it looks at (never ahead: the upper triangle is empty); brighter means more weight. The line below says where the selected character's query looked most.", "In later layers some heads look at the previous character or the start of the word."),
    ("chart-smoothing", "Exponential moving average of the train loss (the weight given to the past, as in TensorBoard); the raw line stays faint behind.", "0.9 for runs of a few hundred steps, 0.97–0.99 for thousands."),
    ("chart-log", "Draw the loss on a logarithmic axis, which spreads out the slow late improvements.", "Turn it on for long runs."),
    ("chart-compare", "Overlay the train curve of a saved run (dashed, in its own colour) to compare runs step by step.", "Change one hyper-parameter between two runs and compare them here."),
    ("panel-train", "Trains a new model from scratch on the chosen corpus. Train starts, Pause and Resume hold the run, Stop ends it (the model stays), Continue trains the current model further.", "Train nano for 200 steps first: it takes seconds."),
    ("panel-run", "The run's progress, its throughput (characters a second) and the loss chart: train loss (blue) and validation loss (orange). Point at the chart to read a step.", "When validation stops falling, more steps will not help this shape."),
    ("panel-sample", "Generates text from the model you hold, on the GPU when the page has one. Load the suggested Shakespeare model (Checkpoint panel) to sample without training.", "Compare temperature 0 and 1 on the same prompt."),
    ("panel-checkpoint", "Download the model (f32 weights and AdamW moments) as .safetensors, or load one; or load a model of the gallery, trained by this project, each with its card (how it was trained, its validation loss and training curve). The page suggests the small model on CPU implementations of WebGPU and the nanoGPT-shaped one on real GPUs.", "A downloaded checkpoint continues exactly where it stopped."),
    ("panel-saves", "Runs saved in this browser's private storage: load one to sample it or continue it; delete what you no longer need.", "The chart can overlay any of them (compare with)."),
    ("panel-precision", "How close each fast path is to the f32 path on this device: the gate's error distributions, the two 100-token samples and a per-stage localisation, with a log kept across visits.", "Export the log when you report a precision problem."),
    ("panel-share", "A link that carries the preset, hyper-parameters, prompt and sampling settings (never your text or weights).", "Send it with a result so someone can train the same setup."),
    ("pill-webgpu", "Whether this browser gives the page's worker WebGPU. Without it everything runs on the CPU reference, much slower.", "Chrome or Edge 113+ have it."),
    ("pill-adapter", "The GPU (or CPU implementation such as SwiftShader) that WebGPU chose.", "On a laptop with two GPUs the browser may pick the integrated one."),
    ("pill-shader-f16", "Whether the adapter can compute in 16-bit floats in shaders (WebGPU's shader-f16). The f16-compute fast path needs it; its lever line says whether it was gated and activated.", "—"),
    ("pill-subgroups", "Whether the adapter offers subgroup operations (lanes of a SIMD group exchanging values). The subgroups fast path, which sums the decoder's reductions with them in the same order (the same bits), runs in the native CLI: wgpu's WebGPU backend does not offer subgroups, so its lever says so here.", "—"),
    ("pill-timestamp", "Whether the adapter can time GPU work itself; the profiler uses it.", "—"),
    ("pill-webnn", "Whether the browser's Web Neural Network API can create a context here. An API without a backend is reported as such, never as a working path.", "—"),
    ("levers", "Each fast path in one line: detected on this device, precise (it matched the f32 path within the seed's limits), faster here (a short timing at start-up against the f32 path; it must win by 5 %), and whether it is active. A precise path that is slower here stays off.", "Open the fast-path gates in the Precision panel for the measured figures."),
    ("pill-f16-compute", "Active fast path: the training forward's matmuls (and evaluation's) hold both operands as 16-bit floats in the GPU's fast memory and registers, and add every product in 32-bit. It was switched on only after matching the f32 path within the seed's limits on this device and running the training forward faster than f32 here (unless ?speed_gate=off). Sampling is unchanged by it.", "Open the Precision panel to see the gate's measured errors."),
    ("pill-f16-storage", "Active fast path: the forward matmuls read weights stored as 16-bit floats (half the memory traffic) and accumulate in 32-bit. It was switched on only after matching the f32 path within the seed's limits on this device and running faster than it here (unless ?speed_gate=off).", "Open the Precision panel to see the gate's measured errors."),
];

/// The note of `topic`, if it has one.
pub fn text(topic: &str) -> Option<(&'static str, &'static str)> {
    TOPICS
        .iter()
        .find(|(t, _, _)| *t == topic)
        .map(|&(_, what, try_)| (what, try_))
}

/// The topic whose note is open, shared by every "?" of the page.
#[derive(Clone, Copy)]
pub struct OpenHelp(pub RwSignal<Option<&'static str>>);

/// Registers the shared state and closes the open note on Escape.
pub fn provide() {
    let open = OpenHelp(RwSignal::new(None));
    provide_context(open);
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if ev.key() == "Escape" {
            open.0.set(None);
        }
    });
    // The page lives as long as the listener.
    std::mem::forget(handle);
}

/// A "?" button for `topic`, and its note while open. `controls` lists the
/// `data-testid`s it explains (default: the topic itself); `measured` adds
/// a live line, e.g. what a pill's gate measured.
#[component]
pub fn Help(
    topic: &'static str,
    /// Short name in the button's accessible label.
    label: &'static str,
    #[prop(optional)] controls: Option<&'static str>,
    #[prop(optional, into)] measured: Option<Signal<String>>,
) -> impl IntoView {
    let open = use_context::<OpenHelp>().map(|o| o.0);
    let open = open.unwrap_or_else(|| RwSignal::new(None));
    let is_open = move || open.get() == Some(topic);
    let (what, try_) = text(topic).unwrap_or(("(no explainer written)", "—"));
    let note_id = format!("help-note-{topic}");
    view! {
        <span class="help">
            <button type="button" class="help-button" data-testid=format!("help-{topic}")
                data-help-for=controls.unwrap_or(topic)
                aria-label=format!("what is {label}?")
                aria-expanded=move || is_open().to_string()
                aria-controls=note_id.clone()
                on:click=move |ev| {
                    ev.prevent_default();
                    ev.stop_propagation();
                    open.set(if is_open() { None } else { Some(topic) });
                }>"?"</button>
            <Show when=is_open>
                <span class="help-note" role="note" id=note_id.clone() data-testid="help-note">
                    <span class="help-what">{what}</span>
                    {measured.map(|m| view! { <span class="help-measured">{move || m.get()}</span> })}
                    {(try_ != "—").then(|| view! { <span class="help-try">"Try: " {try_}</span> })}
                </span>
            </Show>
        </span>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_are_unique_and_say_something() {
        for (i, (t, what, try_)) in TOPICS.iter().enumerate() {
            assert!(TOPICS[..i].iter().all(|o| o.0 != *t), "{t} twice");
            assert!(what.len() > 30, "{t}: too short");
            assert!(!try_.is_empty(), "{t}");
        }
        assert!(text("hp-lr").is_some() && text("nope").is_none());
    }
}
