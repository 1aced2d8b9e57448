//! Live samples while training ("watch it learn"): when the run's policy
//! (`tinygpt_gpu::engine::live`) says one is due, the steps in flight are
//! settled, the training clock is paused, a short text is generated from
//! the current weights and posted with its step and its cost.

use super::sample::yielder;
use super::Runner;
use crate::js;
use crate::outbox::{log, post};
use std::ops::ControlFlow;
use tinygpt_core::data::Vocab;
use tinygpt_core::sample::SampleParams;
use tinygpt_gpu::engine::live::{LIVE_CHARS, LIVE_SEED, LIVE_TEMPERATURE};
use tinygpt_protocol::{LiveSample, LogLevel, RunState, WorkerOutput};

/// A new line when the vocabulary has one (Shakespeare's speeches start
/// there), else its first character.
fn live_prompt(vocab: &Vocab) -> String {
    let chars = vocab.chars();
    match chars.iter().find(|&&c| c == '\n').or(chars.first()) {
        Some(c) => c.to_string(),
        None => String::new(),
    }
}

impl Runner {
    /// Whether a live sample is due at the model's step.
    pub(super) fn live_due(&self) -> bool {
        self.session.as_ref().is_some_and(|s| {
            self.plan
                .live
                .due(s.step, self.plan.active_ms(js::now_ms()))
        })
    }

    /// Generates and posts one live sample; the clock leaves it out.
    pub(super) async fn live_sample(&mut self) {
        self.drain().await;
        // Draining may have failed the run.
        if self.state != RunState::Running {
            return;
        }
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let t0 = js::now_ms();
        self.plan.pause(t0);
        let (step, prompt) = (s.step, live_prompt(&s.vocab));
        let params = SampleParams {
            temperature: LIVE_TEMPERATURE,
            top_k: None,
            top_p: None,
            seed: LIVE_SEED,
        };
        let mut text = String::new();
        let on_text = |t: &str| {
            text.push_str(t);
            ControlFlow::Continue(())
        };
        let result = s
            .generate(&prompt, LIVE_CHARS, &params, on_text, yielder())
            .await;
        let now = js::now_ms();
        let millis = now - t0;
        self.plan.live.record(step, millis);
        self.plan.resume(now);
        match result {
            Ok(_) => post(&WorkerOutput::LiveSample(LiveSample {
                step,
                prompt,
                text,
                millis,
                share: self.plan.live.share(self.plan.active_ms(now)),
            })),
            Err(e) => log(
                LogLevel::Warn,
                format!("[train] no live sample at step {step}: {e}"),
            ),
        }
    }
}
