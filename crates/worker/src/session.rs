//! Training and sampling requests, served from the worker's event loop.
//!
//! Training runs in short chunks; between chunks the loop yields to the JS
//! event loop so Pause, Stop and other messages are handled promptly.

use crate::js;
use crate::worker::{log, post};
use std::ops::ControlFlow;
use std::rc::Rc;
use tinygpt_core::data::Dataset;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::{checkpoint, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::{EngineError, Gpu, Session};
use tinygpt_protocol::{
    CorpusSource, LogLevel, ModelInfo, ModelShape, RunState, SampleRequest, TrainProgress,
    WorkerOutput,
};

/// Largest model the CPU fallback trains (the `nano` preset and its kin).
const CPU_TRAIN_MAX_PARAMS: usize = 400_000;
/// Validation share of the corpus, the nanoGPT protocol.
const VAL_FRACTION: f64 = 0.1;
/// A chunk of training ends after this much wall time, so the worker stays
/// responsive and progress is reported several times a second.
const CHUNK_MS: f64 = 150.0;
/// GPU steps submitted back to back before one loss read-back.
const GPU_STEPS_PER_CALL: usize = 8;

/// The model the worker holds and where its run is.
pub struct Runner {
    pub session: Option<Session>,
    pub state: RunState,
    /// Step at which the current run ends.
    target_step: usize,
    /// Time spent training in this run (pauses excluded), for tokens/s.
    train_ms: f64,
    tokens: usize,
    /// The WebGPU device, when there is one.
    gpu: Option<Rc<Gpu>>,
    /// Why there is no WebGPU (the CPU path is used instead).
    pub gpu_reason: Option<String>,
}

fn error(context: &str, e: impl std::fmt::Display) {
    let message = e.to_string();
    log(LogLevel::Error, format!("[worker] {context}: {message}"));
    post(&WorkerOutput::Error {
        context: context.into(),
        message,
    });
}

fn set_state(runner: &mut Runner, state: RunState) {
    runner.state = state;
    post(&WorkerOutput::RunState { state });
}

impl Runner {
    pub fn new(gpu: Option<Rc<Gpu>>, gpu_reason: Option<String>) -> Self {
        Self {
            gpu,
            session: None,
            state: RunState::Idle,
            target_step: 0,
            train_ms: 0.0,
            tokens: 0,
            gpu_reason,
        }
    }

    pub fn running(&self) -> bool {
        self.state == RunState::Running
    }

    fn post_model_info(&self) {
        if let Some(s) = &self.session {
            post(&WorkerOutput::ModelInfo(ModelInfo {
                config: s.config,
                params: s.config.num_params(),
                source: s.source.clone(),
                step: s.step,
                backend: s.backend_name().into(),
                memory_bytes: s.memory_bytes(),
            }));
        }
    }

    /// Starts a fresh run; on any error the current model stays.
    pub async fn start(&mut self, shape: ModelShape, train: TrainConfig, corpus: CorpusSource) {
        let (name, bytes) = match corpus {
            CorpusSource::Bundled => match js::fetch_bytes(js::BUNDLED_CORPUS).await {
                Ok(b) => ("the bundled Shakespeare corpus".to_string(), b),
                Err(e) => return error("loading the bundled corpus", e),
            },
            CorpusSource::Upload { name, bytes } => (name, bytes),
        };
        let data = match Dataset::from_bytes(&bytes, VAL_FRACTION, train.seq_len) {
            Ok(d) => d,
            Err(e) => return error(&format!("reading the corpus {name}"), e),
        };
        let config = ModelConfig {
            vocab_size: data.vocab.len(),
            block_size: shape.block_size,
            n_layer: shape.n_layer,
            n_head: shape.n_head,
            d_model: shape.d_model,
        };
        if let Err(e) = config.validate().and_then(|()| train.validate(&config)) {
            return error("checking the hyper-parameters", e);
        }
        if let Some(reason) = &self.gpu_reason {
            if config.num_params() > CPU_TRAIN_MAX_PARAMS {
                return error(
                    "starting training",
                    format!(
                        "without WebGPU ({reason}) only models up to {CPU_TRAIN_MAX_PARAMS} parameters train on the CPU; this one has {}. Pick the nano preset.",
                        config.num_params()
                    ),
                );
            }
        }
        let source = format!(
            "{}L/{}H/{}C on {name}",
            config.n_layer, config.n_head, config.d_model
        );
        match Session::new(config, train, data, source, self.gpu.clone()) {
            Ok(s) => {
                log(
                    LogLevel::Info,
                    format!(
                        "[train] new run: {} parameters on the {} path",
                        config.num_params(),
                        s.backend_name()
                    ),
                );
                self.session = Some(s);
                self.begin(train.steps);
            }
            Err(e) => error("starting training", e),
        }
    }

    /// Trains the current model `steps` more. A loaded model with no corpus
    /// continues on the bundled corpus when its vocabulary matches.
    pub async fn continue_for(&mut self, steps: usize) {
        let Some(s) = self.session.as_mut() else {
            return error(
                "continuing training",
                "there is no model yet: train one or load a checkpoint",
            );
        };
        if steps == 0 || steps > 10_000_000 {
            return error(
                "continuing training",
                format!("steps must be in 1..=10000000 (got {steps})"),
            );
        }
        if !s.has_data() {
            let bytes = match js::fetch_bytes(js::BUNDLED_CORPUS).await {
                Ok(b) => b,
                Err(e) => return error("loading the bundled corpus", e),
            };
            let attached = Dataset::from_bytes(&bytes, VAL_FRACTION, s.train.seq_len)
                .map_err(EngineError::from)
                .and_then(|d| s.attach_data(d));
            if let Err(e) = attached {
                return error(
                    "continuing training",
                    format!("{e} ({})", EngineError::NoData),
                );
            }
        }
        self.begin(steps);
    }

    fn begin(&mut self, steps: usize) {
        let s = self
            .session
            .as_mut()
            .expect("begin is called with a session");
        self.target_step = s.step + steps;
        s.train.steps = s.train.steps.max(self.target_step);
        self.train_ms = 0.0;
        self.tokens = 0;
        self.post_model_info();
        set_state(self, RunState::Running);
    }

    pub fn pause(&mut self) {
        if self.state == RunState::Running {
            set_state(self, RunState::Paused);
        }
    }

    pub fn resume(&mut self) {
        if self.state == RunState::Paused {
            set_state(self, RunState::Running);
        }
    }

    pub fn stop(&mut self) {
        if matches!(self.state, RunState::Running | RunState::Paused) {
            set_state(self, RunState::Stopped);
            self.post_model_info();
        }
    }

    /// Trains for about [`CHUNK_MS`] and reports progress.
    pub async fn train_chunk(&mut self) {
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let t0 = js::now_ms();
        let mut loss = f32::NAN;
        let mut val_loss = None;
        // On the GPU several steps go out in one call and only the last loss
        // is read back; the CPU reference steps one at a time.
        let per_call = if s.backend_name() == "cpu" {
            1
        } else {
            GPU_STEPS_PER_CALL
        };
        while s.step < self.target_step && js::now_ms() - t0 < CHUNK_MS {
            let interval = s.train.eval_interval;
            let to_eval = if interval > 0 {
                interval - s.step % interval
            } else {
                usize::MAX
            };
            let n = per_call.min(self.target_step - s.step).min(to_eval);
            match s.train_steps(n).await {
                Ok(l) => loss = l,
                Err(e) => {
                    error("training", e);
                    set_state(self, RunState::Stopped);
                    return;
                }
            }
            self.tokens += n * s.train.batch_size * s.train.seq_len;
            if (interval > 0 && s.step % interval == 0) || s.step == self.target_step {
                match s.eval_loss().await {
                    Ok(v) => val_loss = Some(v),
                    Err(e) => error("evaluating", e),
                }
                break;
            }
        }
        self.train_ms += js::now_ms() - t0;
        let s = self.session.as_ref().expect("still there");
        let tokens_per_s = self.tokens as f64 / (self.train_ms / 1e3).max(1e-9);
        let remaining = self.target_step - s.step;
        let eta_s = remaining as f64 * (s.train.batch_size * s.train.seq_len) as f64
            / tokens_per_s.max(1e-9);
        post(&WorkerOutput::Progress(TrainProgress {
            step: s.step,
            total_steps: self.target_step,
            train_loss: loss,
            val_loss,
            lr: s.lr(),
            tokens_per_s,
            elapsed_s: self.train_ms / 1e3,
            eta_s,
        }));
        if s.step >= self.target_step {
            set_state(self, RunState::Finished);
            self.post_model_info();
        }
    }

    /// Generates and streams text.
    pub async fn sample(&mut self, req: SampleRequest) {
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
        let t0 = js::now_ms();
        let mut first_token_ms = 0.0;
        let mut tokens = 0usize;
        let result = s
            .generate(&req.prompt, req.max_tokens, &params, |text| {
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
                ControlFlow::Continue(())
            })
            .await;
        let secs = (js::now_ms() - t0) / 1e3;
        post(&WorkerOutput::Busy { busy: false });
        match result {
            Ok(_) => post(&WorkerOutput::SampleDone {
                tokens,
                tokens_per_s: tokens as f64 / secs.max(1e-9),
                first_token_ms,
            }),
            Err(e) => error("sampling", e),
        }
    }

    /// Loads a checkpoint; a bad file leaves the current model in place.
    pub fn load_checkpoint(&mut self, name: String, bytes: &[u8]) {
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
                set_state(self, RunState::Idle);
                self.post_model_info();
                log(LogLevel::Info, format!("[worker] loaded {name}"));
            }
            Err(e) => error(
                &format!("loading {name} (your current model is unchanged)"),
                e,
            ),
        }
    }

    pub async fn save_checkpoint(&self) {
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
