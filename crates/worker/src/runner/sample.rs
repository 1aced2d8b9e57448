//! Sampling, and checkpoints in and out of the page.

use super::{set_state, Runner};
use crate::js;
use crate::outbox::{error, log, post};
use std::ops::ControlFlow;
use tinygpt_core::checkpoint;
use tinygpt_core::sample::SampleParams;
use tinygpt_gpu::engine::run::{self, Run};
use tinygpt_gpu::engine::Session;
use tinygpt_protocol::{check_num_samples, LogLevel, RunState, SampleRequest, WorkerOutput};

/// The CPU sampling path yields to the event loop this often.
const YIELD_MS: f64 = 30.0;

/// A generation's figures as it streams.
struct Stream {
    t0: f64,
    tokens: usize,
    first_token_ms: f64,
}

impl Stream {
    /// One more token of `sample`: the chunk to post.
    fn token(&mut self, sample: usize, text: &str) -> WorkerOutput {
        self.tokens += 1;
        let dt = js::now_ms() - self.t0;
        if self.tokens == 1 {
            self.first_token_ms = dt;
        }
        WorkerOutput::SampleChunk {
            sample,
            text: text.to_string(),
            tokens: self.tokens,
            tokens_per_s: self.tokens as f64 / (dt / 1e3).max(1e-9),
            first_token_ms: self.first_token_ms,
        }
    }

    fn done(&self) -> WorkerOutput {
        let secs = (js::now_ms() - self.t0) / 1e3;
        WorkerOutput::SampleDone {
            tokens: self.tokens,
            tokens_per_s: self.tokens as f64 / secs.max(1e-9),
            first_token_ms: self.first_token_ms,
        }
    }
}

/// The CPU path computes without awaiting: this lets the event loop
/// deliver a Stop every [`YIELD_MS`].
pub(super) fn yielder() -> impl FnMut() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>
{
    let mut last = js::now_ms();
    move || {
        let now = js::now_ms();
        let due = now - last > YIELD_MS;
        if due {
            last = now;
        }
        Box::pin(async move {
            if due {
                js::yield_now().await;
            }
        })
    }
}

impl Runner {
    /// Generates and streams text; a Stop message ends it early.
    pub async fn sample(&mut self, req: SampleRequest) {
        self.drain().await;
        self.check_weight_cache("sampling", false).await;
        let Some(s) = self.session.as_mut() else {
            return error(
                "sampling",
                "there is no model yet: train one or load a checkpoint",
            );
        };
        if let Err(e) = run::check_sample_tokens(req.max_tokens)
            .and_then(|()| check_num_samples(req.num_samples, req.temperature))
        {
            return error("sampling", e);
        }
        let params = SampleParams {
            temperature: req.temperature,
            top_k: req.top_k,
            top_p: req.top_p,
            seed: req.seed,
        };
        post(&WorkerOutput::Busy { busy: true });
        self.stop_sampling.set(false);
        let stop = self.stop_sampling.clone();
        let mut stream = Stream {
            t0: js::now_ms(),
            tokens: 0,
            first_token_ms: 0.0,
        };
        let on_token = |sample: usize, text: &str| {
            post(&stream.token(sample, text));
            match stop.get() {
                true => ControlFlow::Break(()),
                false => ControlFlow::Continue(()),
            }
        };
        let (n, samples) = (req.max_tokens, req.num_samples);
        let result = s
            .generate_samples(&req.prompt, n, &params, samples, on_token, yielder())
            .await;
        post(&WorkerOutput::Busy { busy: false });
        match result {
            Ok(_) => {
                if stop.get() {
                    let text = format!(
                        "[sample] stopped by the user after {} tokens",
                        stream.tokens
                    );
                    log(LogLevel::Info, text);
                }
                post(&stream.done())
            }
            Err(e) => error("sampling", e),
        }
    }

    /// Runs `text` through the model and posts what it expected at every
    /// position and where each head looked.
    pub async fn inspect(&mut self, text: &str) {
        const WHAT: &str = "inspecting the text";
        self.drain().await;
        let Some(s) = self.session.as_mut() else {
            return error(
                WHAT,
                "there is no model yet: train one or load a checkpoint",
            );
        };
        post(&WorkerOutput::Busy { busy: true });
        let result = s.inspect(text).await;
        post(&WorkerOutput::Busy { busy: false });
        match result {
            Ok(i) => post(&WorkerOutput::Inspection(i)),
            Err(e) => error(WHAT, e),
        }
    }

    /// Loads a checkpoint; a bad file leaves the current model in place.
    /// Returns whether the model is in (`false`: an error was posted).
    pub async fn load_checkpoint(&mut self, name: String, bytes: &[u8]) -> bool {
        self.drain().await;
        let ckpt = match checkpoint::load(bytes) {
            Ok(c) => c,
            Err(e) => {
                error(
                    &format!("loading {name} (your current model is unchanged)"),
                    e,
                );
                return false;
            }
        };
        match Session::from_checkpoint(ckpt, name.clone(), self.gpu.clone()) {
            Ok(s) => {
                self.session = Some(s);
                self.run = None;
                self.plan = Run::default();
                self.last_loaded = Some((name.clone(), bytes.to_vec()));
                set_state(self, RunState::Idle);
                self.post_model_info();
                log(LogLevel::Info, format!("[worker] loaded {name}"));
                self.gate_loaded_model().await;
                true
            }
            Err(e) => {
                error(
                    &format!("loading {name} (your current model is unchanged)"),
                    e,
                );
                false
            }
        }
    }

    pub async fn save_checkpoint(&mut self) {
        self.drain().await;
        self.check_weight_cache("saving", false).await;
        let Some(s) = &self.session else {
            return error("saving a checkpoint", "there is no model yet");
        };
        match s.save(checkpoint::WeightDtype::F32).await {
            Ok(bytes) => post(&WorkerOutput::Checkpoint {
                name: format!("tinygpt-step{}.safetensors", s.step),
                bytes,
            }),
            Err(e) => error("saving a checkpoint", e),
        }
    }
}
