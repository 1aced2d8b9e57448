//! Sampling, and checkpoints in and out of the page.

use super::{set_state, Runner};
use crate::js;
use crate::outbox::{error, log, post};
use std::ops::ControlFlow;
use tinygpt_core::checkpoint;
use tinygpt_core::sample::SampleParams;
use tinygpt_gpu::engine::run::Run;
use tinygpt_gpu::engine::Session;
use tinygpt_protocol::{LogLevel, RunState, SampleRequest, WorkerOutput};

/// The CPU sampling path yields to the event loop this often.
const YIELD_MS: f64 = 30.0;

impl Runner {
    /// Generates and streams text; a Stop message ends it early.
    pub async fn sample(&mut self, req: SampleRequest) {
        self.drain().await;
        let Some(s) = self.session.as_mut() else {
            return error(
                "sampling",
                "there is no model yet: train one or load a checkpoint",
            );
        };
        let params = SampleParams {
            temperature: req.temperature,
            top_k: req.top_k,
            top_p: req.top_p,
            seed: req.seed,
        };
        if req.max_tokens == 0 || req.max_tokens > 100_000 {
            return error(
                "sampling",
                format!("length must be in 1..=100000 (got {})", req.max_tokens),
            );
        }
        post(&WorkerOutput::Busy { busy: true });
        self.stop_sampling.set(false);
        let stop = self.stop_sampling.clone();
        let t0 = js::now_ms();
        let mut first_token_ms = 0.0;
        let mut tokens = 0usize;
        let mut last_yield = t0;
        let result = s
            .generate(
                &req.prompt,
                req.max_tokens,
                &params,
                |text| {
                    tokens += 1;
                    let dt = js::now_ms() - t0;
                    if tokens == 1 {
                        first_token_ms = dt;
                    }
                    post(&WorkerOutput::SampleChunk {
                        text: text.to_string(),
                        tokens,
                        tokens_per_s: tokens as f64 / (dt / 1e3).max(1e-9),
                        first_token_ms,
                    });
                    if stop.get() {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                },
                // The CPU path computes without awaiting: let the event loop
                // deliver a Stop every few tens of milliseconds.
                || {
                    let now = js::now_ms();
                    let due = now - last_yield > YIELD_MS;
                    if due {
                        last_yield = now;
                    }
                    async move {
                        if due {
                            js::yield_now().await;
                        }
                    }
                },
            )
            .await;
        let secs = (js::now_ms() - t0) / 1e3;
        post(&WorkerOutput::Busy { busy: false });
        match result {
            Ok(_) => {
                if stop.get() {
                    log(
                        LogLevel::Info,
                        format!("[sample] stopped by the user after {tokens} tokens"),
                    );
                }
                post(&WorkerOutput::SampleDone {
                    tokens,
                    tokens_per_s: tokens as f64 / secs.max(1e-9),
                    first_token_ms,
                })
            }
            Err(e) => error("sampling", e),
        }
    }

    /// Loads a checkpoint; a bad file leaves the current model in place.
    pub async fn load_checkpoint(&mut self, name: String, bytes: &[u8]) {
        self.drain().await;
        let ckpt = match checkpoint::load(bytes) {
            Ok(c) => c,
            Err(e) => {
                return error(
                    &format!("loading {name} (your current model is unchanged)"),
                    e,
                )
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
            }
            Err(e) => error(
                &format!("loading {name} (your current model is unchanged)"),
                e,
            ),
        }
    }

    pub async fn save_checkpoint(&mut self) {
        self.drain().await;
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
