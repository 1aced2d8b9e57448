//! "Watch it learn": the live samples the worker writes from the weights of
//! the run in progress, as a timeline by step, with how often they come and
//! what they cost against the training time.

use crate::help::Help;
use crate::{format, Store};
use leptos::prelude::*;
use tinygpt_protocol::{LiveSample, WorkerInput};

/// Live samples the timeline keeps (the oldest go first).
pub const KEPT: usize = 100;
/// Most steps between two live samples one may ask for.
const MAX_EVERY: usize = 1_000_000;

/// `"auto"` → `None`, `"off"` or `0` → `Some(0)`, `n` → `Some(n)`.
pub fn parse_every(text: &str) -> Result<Option<usize>, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "auto" | "" => Ok(None),
        "off" => Ok(Some(0)),
        t => match format::whole("live sample every", t)? {
            n if n <= MAX_EVERY => Ok(Some(n)),
            n => Err(format!(
                "live sample every: {n} steps is more than {MAX_EVERY}; type auto, off or a number of steps"
            )),
        },
    }
}

/// Adds a sample to the timeline, keeping the newest [`KEPT`].
pub fn push(list: &mut Vec<LiveSample>, s: LiveSample) {
    list.push(s);
    if list.len() > KEPT {
        list.remove(0);
    }
}

/// The timeline, its interval setting, and the measured cost.
#[component]
pub fn LivePanel(store: Store) -> impl IntoView {
    let every = RwSignal::new("auto".to_string());
    let problem = RwSignal::new(None::<String>);
    let on_change = move |_| match parse_every(&every.get_untracked()) {
        Ok(every_steps) => {
            problem.set(None);
            store.send(WorkerInput::SetLiveSamples { every_steps });
        }
        Err(e) => problem.set(Some(e)),
    };
    let samples = store.live_samples;
    let cost = move || {
        samples.with(|s| match s.last() {
            Some(l) => format!(
                "{} samples · sampling took {:.1} % of the training time (last one {:.0} ms)",
                s.len(),
                100.0 * l.share,
                l.millis
            ),
            None => "none yet in this run".into(),
        })
    };
    view! {
        <div class="live" data-testid="live-panel" data-count=move || samples.with(|s| s.len())
            data-share=move || samples.with(|s| s.last().map(|l| l.share.to_string()))>
            <h3>"Watch it learn"</h3>
            <div class="buttons">
                <label class="field inline" title="auto: as often as fits in 5 % of the training time; off; or a number of steps">
                    <span>"live sample every"</span>
                    <input type="text" spellcheck="false" data-testid="live-every" bind:value=every on:change=on_change />
                </label>
                <Help topic="live-every" label="live samples" />
                <span class="muted" data-testid="live-cost">{cost}</span>
            </div>
            <p class="validation" role="status" data-testid="live-validation" hidden=move || problem.with(|p| p.is_none())>
                {move || problem.get().unwrap_or_default()}
            </p>
            <ol class="live-timeline" data-testid="live-timeline" tabindex="0" aria-label="samples by training step, newest first">
                {move || samples.with(|s| s.iter().rev().map(|l| view! {
                    <li data-step=l.step>
                        <span class="live-step">{format!("step {}", l.step)}</span>
                        <pre class="live-text">{l.text.clone()}</pre>
                    </li>
                }).collect_view())}
            </ol>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_takes_auto_off_or_steps_and_refuses_the_rest() {
        assert_eq!(parse_every("auto"), Ok(None));
        assert_eq!(parse_every(" Auto "), Ok(None));
        assert_eq!(parse_every("off"), Ok(Some(0)));
        assert_eq!(parse_every("0"), Ok(Some(0)));
        assert_eq!(parse_every("25"), Ok(Some(25)));
        assert!(parse_every("-3").unwrap_err().contains("whole number"));
        assert!(parse_every("often").is_err());
        assert!(parse_every("99999999").unwrap_err().contains("more than"));
    }

    #[test]
    fn the_timeline_keeps_the_newest() {
        let mut list = Vec::new();
        for step in 0..KEPT + 5 {
            let s = LiveSample {
                step,
                prompt: "\n".into(),
                text: "x".into(),
                millis: 1.0,
                share: 0.01,
            };
            push(&mut list, s);
        }
        assert_eq!(list.len(), KEPT);
        assert_eq!(list[0].step, 5);
    }
}
