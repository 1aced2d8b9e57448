//! Training and sampling requests, served from the worker's event loop.
//!
//! Training runs in short chunks; between chunks the loop yields to the JS
//! event loop so Pause, Stop and other messages are handled promptly.

use crate::js;
use crate::worker::{log, post};
use std::cell::Cell;
use std::ops::ControlFlow;
use std::rc::Rc;
use tinygpt_core::data::Dataset;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::{checkpoint, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::{EngineError, Gpu, Session, StepsInFlight};
use tinygpt_protocol::{
    CorpusSource, GateReport, GpuCaps, LogLevel, ModelInfo, ModelShape, RunState, SampleRequest,
    TrainProgress, WorkerOutput,
};

/// Largest model the CPU fallback trains (the `nano` preset and its kin).
const CPU_TRAIN_MAX_PARAMS: usize = 400_000;
/// Validation share of the corpus, the nanoGPT protocol.
const VAL_FRACTION: f64 = 0.1;
/// A chunk of training ends after this much wall time, so the worker stays
/// responsive and progress is reported several times a second.
const CHUNK_MS: f64 = 150.0;
/// GPU steps submitted back to back, with one read of their losses.
const GPU_STEPS_PER_CALL: usize = 8;
/// The CPU sampling path yields to the event loop this often.
const YIELD_MS: f64 = 30.0;

/// Time spent training, pauses excluded: tokens/s divides by this, so the
/// figure stays honest across pauses and hidden tabs.
#[derive(Default)]
struct ActiveClock {
    since: Option<f64>,
    total_ms: f64,
}

impl ActiveClock {
    fn start(&mut self) {
        self.since.get_or_insert_with(js::now_ms);
    }

    fn stop(&mut self) {
        if let Some(t) = self.since.take() {
            self.total_ms += js::now_ms() - t;
        }
    }

    fn seconds(&self) -> f64 {
        (self.total_ms + self.since.map_or(0.0, |t| js::now_ms() - t)) / 1e3
    }
}

/// The model the worker holds and where its run is.
pub struct Runner {
    pub session: Option<Session>,
    pub state: RunState,
    /// Step at which the current run ends.
    target_step: usize,
    /// Time spent training in this run (pauses excluded), for tokens/s.
    clock: ActiveClock,
    /// Tokens of the steps whose losses were read in this run.
    tokens: usize,
    /// GPU steps submitted and not yet read back.
    in_flight: Option<StepsInFlight>,
    /// Set by the message handler when a Stop-sampling request arrives.
    pub stop_sampling: Rc<Cell<bool>>,
    /// What the worker reported at start-up, updated by later gates.
    pub caps: GpuCaps,
    /// The start-up gate reports, extended by the loaded-model gates.
    pub gate_reports: Vec<GateReport>,
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
    pub fn new(
        gpu: Option<Rc<Gpu>>,
        caps: GpuCaps,
        gate_reports: Vec<GateReport>,
        stop_sampling: Rc<Cell<bool>>,
    ) -> Self {
        Self {
            gpu,
            session: None,
            state: RunState::Idle,
            target_step: 0,
            clock: ActiveClock::default(),
            tokens: 0,
            in_flight: None,
            stop_sampling,
            gpu_reason: caps.unavailable_reason.clone(),
            caps,
            gate_reports,
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
        self.drain().await;
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
        self.drain().await;
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
        self.clock = ActiveClock::default();
        self.clock.start();
        self.tokens = 0;
        self.post_model_info();
        set_state(self, RunState::Running);
    }

    pub async fn pause(&mut self) {
        if self.state == RunState::Running {
            self.drain().await;
            self.clock.stop();
            set_state(self, RunState::Paused);
        }
    }

    pub fn resume(&mut self) {
        if self.state == RunState::Paused {
            self.clock.start();
            set_state(self, RunState::Running);
        }
    }

    pub async fn stop(&mut self) {
        if matches!(self.state, RunState::Running | RunState::Paused) {
            self.drain().await;
            self.clock.stop();
            set_state(self, RunState::Stopped);
            self.post_model_info();
        }
    }

    /// Trains for about [`CHUNK_MS`] and reports progress.
    ///
    /// On the GPU, steps go out in groups of [`GPU_STEPS_PER_CALL`], each
    /// with a read of its losses queued behind it; a group's losses are
    /// awaited only once the next group is submitted, so the GPU never idles
    /// on a read-back. The last group stays in flight across chunks.
    pub async fn train_chunk(&mut self) {
        let t0 = js::now_ms();
        let mut losses = Vec::new();
        let mut val_loss = None;
        loop {
            let Some(s) = self.session.as_mut() else {
                return;
            };
            let per_call = if s.backend_name() == "cpu" {
                1
            } else {
                GPU_STEPS_PER_CALL
            };
            let interval = s.train.eval_interval;
            let to_eval = if interval > 0 {
                interval - s.step % interval
            } else {
                usize::MAX
            };
            let n = per_call
                .min(self.target_step.saturating_sub(s.step))
                .min(to_eval);
            let next = if n > 0 {
                match s.submit_steps(n) {
                    Ok(f) => Some(f),
                    Err(e) => return self.fail_training(e).await,
                }
            } else {
                None
            };
            if let Some(prev) = self.in_flight.take() {
                match s.finish_steps(prev).await {
                    Ok(stats) => losses.extend(stats.iter().map(|x| x.loss)),
                    Err(e) => {
                        self.in_flight = next;
                        return self.fail_training(e).await;
                    }
                }
            }
            self.in_flight = next;
            let at_eval = (interval > 0 && s.step % interval == 0) || s.step >= self.target_step;
            if at_eval {
                // Evaluation reads back anyway: settle the steps first.
                match self.settle().await {
                    Ok(more) => losses.extend(more),
                    Err(e) => return self.fail_training(e).await,
                }
                let s = self.session.as_mut().expect("still there");
                if interval > 0 || s.step >= self.target_step {
                    match s.eval_loss().await {
                        Ok(v) => val_loss = Some(v),
                        Err(e) => error("evaluating", e),
                    }
                }
                break;
            }
            if js::now_ms() - t0 >= CHUNK_MS {
                break;
            }
        }
        self.report(losses, val_loss);
        let done = self
            .session
            .as_ref()
            .is_some_and(|s| s.step >= self.target_step && self.in_flight.is_none());
        if done {
            self.clock.stop();
            set_state(self, RunState::Finished);
            self.post_model_info();
            self.gate_loaded_model().await;
        }
    }

    /// Waits for the steps in flight; their losses.
    async fn settle(&mut self) -> Result<Vec<f32>, EngineError> {
        match (self.in_flight.take(), self.session.as_ref()) {
            (Some(f), Some(s)) => Ok(s.finish_steps(f).await?.iter().map(|x| x.loss).collect()),
            _ => Ok(Vec::new()),
        }
    }

    /// Settles the steps in flight and reports them, before anything that
    /// reads or replaces the model (pause, stop, save, sample, load).
    pub async fn drain(&mut self) {
        if self.in_flight.is_none() {
            return;
        }
        match self.settle().await {
            Ok(losses) => self.report(losses, None),
            Err(e) => self.fail_training(e).await,
        }
    }

    /// A training error: report it and stop the run (the model keeps the
    /// weights of its last good step).
    async fn fail_training(&mut self, e: EngineError) {
        let _ = self.settle().await;
        self.clock.stop();
        error("training", e);
        set_state(self, RunState::Stopped);
        self.post_model_info();
    }

    /// Posts progress up to the last step whose loss was read.
    fn report(&mut self, losses: Vec<f32>, val_loss: Option<f32>) {
        let Some(s) = self.session.as_ref() else {
            return;
        };
        if losses.is_empty() && val_loss.is_none() {
            return;
        }
        let step = self.in_flight.as_ref().map_or(s.step, |f| f.first_step());
        let tokens_per_step = s.train.batch_size * s.train.seq_len;
        self.tokens += losses.len() * tokens_per_step;
        let active_s = self.clock.seconds();
        let tokens_per_s = self.tokens as f64 / active_s.max(1e-9);
        let eta_s =
            (self.target_step - step) as f64 * tokens_per_step as f64 / tokens_per_s.max(1e-9);
        post(&WorkerOutput::Progress(TrainProgress {
            step,
            total_steps: self.target_step,
            train_loss: losses.last().copied().unwrap_or(f32::NAN),
            losses,
            val_loss,
            lr: s.lr(),
            tokens_per_s,
            elapsed_s: active_s,
            eta_s,
        }));
    }

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

/// The prompt of the loaded-model sample gate: a speaker cue when the
/// vocabulary has it, else the model's first character.
fn gate_prompt(session: &Session) -> (String, Vec<u32>) {
    ["ROMEO:", "\n"]
        .iter()
        .find_map(|p| Some((p.to_string(), session.vocab.encode(p).ok()?)))
        .unwrap_or_else(|| (session.vocab.decode(&[0]), vec![0]))
}

impl Runner {
    /// With a trained or loaded model on the GPU and a fast path active: runs
    /// the fast path's gate again on the model's real weights and activations
    /// and compares 100 greedy tokens on f32 and on the fast path. A failure
    /// turns the path off (silently for the user: pill gone, status says f32,
    /// the console says why).
    pub async fn gate_loaded_model(&mut self) {
        let Some(gpu) = self.gpu.clone() else {
            return;
        };
        if gpu.fast_paths.get().f16_storage.is_none() {
            return;
        }
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let (prompt_text, ids) = gate_prompt(s);
        let Some(trainer) = s.gpu_trainer() else {
            return;
        };
        post(&WorkerOutput::Status {
            text: "verifying f16-storage matmul on this model (real weights, 100 greedy tokens on f32 and f16)…".into(),
        });
        let t0 = js::now_ms();
        let mut reports = self.gate_reports.clone();
        for r in &mut reports {
            let len = r.lines.len();
            if let Err(e) =
                tinygpt_gpu::gate::model_gate::run_model_gates(trainer, r, &ids, &prompt_text).await
            {
                return error("gating the fast paths on this model", e);
            }
            for line in &r.lines[len..] {
                let fail = line.contains("FAIL");
                log(
                    if fail { LogLevel::Warn } else { LogLevel::Info },
                    line.clone(),
                );
            }
            post(&WorkerOutput::GateReport(r.clone()));
        }
        let active = gpu.fast_paths.get().f16_storage.is_some();
        let secs = (js::now_ms() - t0) / 1e3;
        let status = if active {
            format!(
                "f16-storage matmul verified on this model in {secs:.1}s (real weights; 100 greedy tokens identical to f32) — ready to generate."
            )
        } else {
            "f16-storage matmul did not match f32 on this model — running on f32 — ready to generate."
                .to_string()
        };
        if self.caps.active.f16_storage != active {
            self.caps.active.f16_storage = active;
            post(&WorkerOutput::GpuCaps(self.caps.clone()));
        }
        post(&WorkerOutput::Status { text: status });
    }
}
