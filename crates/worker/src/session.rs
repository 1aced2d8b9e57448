//! Training and sampling requests, served from the worker's event loop.
//!
//! Training runs in short chunks; between chunks the loop yields to the JS
//! event loop so Pause, Stop and other messages are handled promptly.

use crate::js;
use crate::saves::{self, CorpusRef, Manifest};
use crate::worker::{log, post};
use std::cell::Cell;
use std::ops::ControlFlow;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tinygpt_core::data::Dataset;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::{checkpoint, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::run::{self, Run, VAL_FRACTION};
use tinygpt_gpu::engine::{EngineError, Gpu, Session, StepsInFlight};
use tinygpt_protocol::{
    CorpusSource, GateReport, GpuCaps, LogLevel, ModelInfo, ModelShape, RunState, SampleRequest,
    StorageInfo, WorkerOutput, DEFAULT_AUTOSAVE_STEPS,
};

/// A chunk of training ends after this much wall time, so the worker stays
/// responsive and progress is reported several times a second.
const CHUNK_MS: f64 = 150.0;
/// The CPU sampling path yields to the event loop this often.
const YIELD_MS: f64 = 30.0;

/// The model the worker holds and where its run is.
pub struct Runner {
    pub session: Option<Session>,
    pub state: RunState,
    /// The run's policy and history (`tinygpt_gpu::engine::run`).
    plan: Run,
    /// GPU steps submitted and not yet read back.
    in_flight: Option<StepsInFlight>,
    /// Set by the message handler when a Stop-sampling request arrives.
    pub stop_sampling: Rc<Cell<bool>>,
    /// What the worker reported at start-up, updated by later gates.
    pub caps: GpuCaps,
    /// The start-up gate reports, extended by the loaded-model gates.
    pub gate_reports: Vec<GateReport>,
    /// The WebGPU device, when there is one.
    pub gpu: Option<Rc<Gpu>>,
    /// Why there is no WebGPU (the CPU path is used instead).
    pub gpu_reason: Option<String>,
    /// The saved run the model autosaves into, once it trains.
    run: Option<RunMeta>,
    /// Autosave interval in steps (0: only on pause, stop and the end).
    pub autosave_every: usize,
    /// Test-only faults are honoured (`?test_hooks=1`).
    pub test_hooks: bool,
    /// Test hook: crash halfway through the next autosave.
    pub crash_next_save: bool,
    /// Raised while a lost device is being replaced: errors that follow
    /// are the loss's, and the recovery explains them.
    pub device_lost: Arc<AtomicBool>,
    /// Bring-ups of the GPU so far (a lost device's late callback is told
    /// apart from the current device's).
    pub gpu_generation: u32,
    /// The last checkpoint loaded from a file or the bundle, to reload
    /// after a device loss when it has no saved run.
    pub last_loaded: Option<(String, Vec<u8>)>,
}

/// The saved run the current model belongs to.
struct RunMeta {
    id: String,
    name: String,
    created_ms: f64,
    corpus: CorpusRef,
    /// An uploaded corpus not yet copied into the run's directory.
    corpus_bytes: Option<Vec<u8>>,
    /// The manifest of the last completed save.
    saved: Option<Manifest>,
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
            plan: Run::default(),
            in_flight: None,
            stop_sampling,
            gpu_reason: caps.unavailable_reason.clone(),
            caps,
            gate_reports,
            run: None,
            autosave_every: DEFAULT_AUTOSAVE_STEPS,
            test_hooks: false,
            crash_next_save: false,
            device_lost: Arc::new(AtomicBool::new(false)),
            gpu_generation: 0,
            last_loaded: None,
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
                run_id: self.run.as_ref().map(|r| r.id.clone()),
                target_step: self.plan.target_step,
            }));
        }
    }

    /// Starts a fresh run; on any error the current model stays.
    pub async fn start(
        &mut self,
        shape: ModelShape,
        train: TrainConfig,
        corpus: CorpusSource,
        run_name: Option<String>,
    ) {
        self.drain().await;
        let (name, bytes, corpus_bytes) = match corpus {
            CorpusSource::Bundled => match js::fetch_bytes(js::BUNDLED_CORPUS).await {
                Ok(b) => ("the bundled Shakespeare corpus".to_string(), b, None),
                Err(e) => return error("loading the bundled corpus", e),
            },
            CorpusSource::Upload { name, bytes } => {
                let kept = Some((name.clone(), bytes.clone()));
                (name, bytes, kept)
            }
        };
        if bytes.len() > tinygpt_protocol::MAX_CORPUS_BYTES {
            return error(
                &format!("reading the corpus {name}"),
                format!(
                    "it is {:.1} MiB; the playground trains on corpora up to {} MiB",
                    bytes.len() as f64 / (1u64 << 20) as f64,
                    tinygpt_protocol::MAX_CORPUS_BYTES >> 20
                ),
            );
        }
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
            if let Err(e) = run::check_cpu_trainable(&config, reason) {
                return error("starting training", e);
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
                self.plan = Run::default();
                let (corpus_ref, corpus_bytes) = match corpus_bytes {
                    None => (CorpusRef::Bundled, None),
                    Some((n, b)) => (CorpusRef::Stored { name: n }, Some(b)),
                };
                let default_name = format!(
                    "{}L/{}H/{}C · {} · {}",
                    config.n_layer,
                    config.n_head,
                    config.d_model,
                    match &corpus_ref {
                        CorpusRef::Bundled => "Shakespeare".to_string(),
                        CorpusRef::Stored { name } => name.clone(),
                    },
                    js::clock_label()
                );
                self.new_run(run_name.unwrap_or(default_name), corpus_ref, corpus_bytes);
                self.begin(train.steps).await;
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
        if let Err(e) = run::check_continue_steps(steps) {
            return error("continuing training", e);
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
        if self.run.is_none() {
            let s = self.session.as_ref().expect("checked above");
            let name = format!("{} (continued) · {}", s.source, js::clock_label());
            self.new_run(name, CorpusRef::Bundled, None);
        }
        self.begin(steps).await;
    }

    async fn begin(&mut self, steps: usize) {
        let s = self
            .session
            .as_mut()
            .expect("begin is called with a session");
        let total = s.train.steps.max(s.step + steps);
        if let Err(e) = s.set_total_steps(total) {
            return error("starting training", e);
        }
        self.plan.eval_every = s.train.eval_interval;
        self.plan.begin(s.step, steps, js::now_ms());
        // A restore point before the first step.
        if self.run.as_ref().is_some_and(|r| r.saved.is_none()) {
            self.plan.pause(js::now_ms());
            self.autosave("the run's start").await;
            self.plan.resume(js::now_ms());
        }
        self.post_model_info();
        set_state(self, RunState::Running);
    }

    pub async fn pause(&mut self) {
        if self.state == RunState::Running {
            self.drain().await;
            self.plan.pause(js::now_ms());
            set_state(self, RunState::Paused);
            self.autosave("pause").await;
        }
    }

    pub fn resume(&mut self) {
        if self.state == RunState::Paused {
            self.plan.resume(js::now_ms());
            set_state(self, RunState::Running);
        }
    }

    pub async fn stop(&mut self) {
        if matches!(self.state, RunState::Running | RunState::Paused) {
            self.drain().await;
            self.plan.pause(js::now_ms());
            set_state(self, RunState::Stopped);
            self.post_model_info();
            self.autosave("stop").await;
        }
    }

    /// Trains for about [`CHUNK_MS`] and reports progress.
    ///
    /// On the GPU, steps go out in groups of
    /// [`tinygpt_gpu::engine::GPU_STEPS_PER_CALL`], each
    /// with a read of its losses queued behind it; a group's losses are
    /// awaited only once the next group is submitted, so the GPU never idles
    /// on a read-back. The last group stays in flight across chunks.
    pub async fn train_chunk(&mut self) {
        let t0 = js::now_ms();
        let mut losses = Vec::new();
        let mut val_loss = None;
        // Autosaves count from the run's last save, while it has a saved run.
        let saved = self.run.as_ref().map(|r| r.saved.as_ref().map(|m| m.step));
        self.plan.autosave_every = if saved.is_some() {
            self.autosave_every
        } else {
            0
        };
        self.plan.saved_step = saved.flatten();
        loop {
            let Some(s) = self.session.as_mut() else {
                return;
            };
            let n = self.plan.next_steps(s.step, s.steps_per_call());
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
            if self.plan.at_eval(s.step) {
                // Evaluation reads back anyway: settle the steps first.
                match self.settle().await {
                    Ok(more) => losses.extend(more),
                    Err(e) => return self.fail_training(e).await,
                }
                let s = self.session.as_mut().expect("still there");
                match s.eval_loss().await {
                    Ok(v) => val_loss = Some(v),
                    Err(e) => error("evaluating", e),
                }
                break;
            }
            let at_save = self.plan.autosave_due(s.step);
            if js::now_ms() - t0 >= CHUNK_MS || at_save {
                break;
            }
        }
        self.report(losses, val_loss);
        let step = self.session.as_ref().map(|s| s.step);
        if step.is_some_and(|s| self.plan.autosave_due(s)) {
            self.drain().await;
            if self.state == RunState::Running {
                self.autosave("autosave").await;
            }
        }
        if step.is_some_and(|s| self.plan.done(s)) && self.in_flight.is_none() {
            self.plan.pause(js::now_ms());
            set_state(self, RunState::Finished);
            self.post_model_info();
            self.autosave("the end of the run").await;
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
        self.plan.pause(js::now_ms());
        if self.device_lost.load(Ordering::SeqCst) {
            // The device-lost handler recovers and explains.
            set_state(self, RunState::Stopped);
            return;
        }
        let diverged = matches!(e, EngineError::NonFinite { .. });
        error("training", e);
        set_state(self, RunState::Stopped);
        let saved = self
            .run
            .as_ref()
            .and_then(|r| r.saved.as_ref())
            .map(|m| m.id.clone());
        if let (true, Some(id)) = (diverged, saved) {
            match self.restore(&id).await {
                Ok(m) => {
                    let text = format!(
                        "Training diverged (non-finite loss); restored the last good state, the save at step {}. Lower the learning rate before continuing.",
                        m.step
                    );
                    log(LogLevel::Warn, format!("[train] {text}"));
                    post(&WorkerOutput::Status { text });
                    set_state(self, RunState::Stopped);
                }
                Err(e) => error("restoring the last good state", e),
            }
        }
        self.post_model_info();
    }

    /// Posts progress up to the last step whose loss was read.
    fn report(&mut self, losses: Vec<f32>, val_loss: Option<f32>) {
        let Some(s) = self.session.as_ref() else {
            return;
        };
        let step = self.in_flight.as_ref().map_or(s.step, |f| f.first_step());
        if let Some(p) = self.plan.record(s, step, losses, val_loss, js::now_ms()) {
            post(&WorkerOutput::Progress(p));
        }
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

/// Saved runs: autosave, restore, list, delete.
impl Runner {
    fn new_run(&mut self, name: String, corpus: CorpusRef, corpus_bytes: Option<Vec<u8>>) {
        let now = js_sys::Date::now();
        self.run = Some(RunMeta {
            id: format!("run-{}", now as u64),
            name,
            created_ms: now,
            corpus,
            corpus_bytes,
            saved: None,
        });
    }

    /// Saves the run (weights, moments, step, data stream, history) into its
    /// private-storage directory. A failure is reported and training goes
    /// on; the previous save stays intact either way.
    pub async fn autosave(&mut self, why: &str) {
        self.drain().await;
        let (Some(s), Some(run)) = (self.session.as_ref(), self.run.as_ref()) else {
            return;
        };
        let bytes = match s.save(checkpoint::WeightDtype::F32).await {
            Ok(b) => b,
            Err(e) => return error(&format!("saving the run at {why}"), e),
        };
        let manifest = Manifest {
            version: 0,
            id: run.id.clone(),
            name: run.name.clone(),
            created_ms: run.created_ms,
            saved_ms: js_sys::Date::now(),
            slot: String::new(),
            step: s.step,
            target_step: self.plan.target_step,
            config: s.config,
            train: s.train,
            corpus: run.corpus.clone(),
            sampler: s.sampler_state(),
            history_train: self.plan.history_train.clone(),
            history_val: self.plan.history_val.clone(),
            checkpoint_bytes: 0,
        };
        let previous = run.saved.as_ref().map(|m| m.slot.clone());
        let crash = std::mem::take(&mut self.crash_next_save);
        let result = saves::save(
            manifest,
            previous.as_deref(),
            &bytes,
            run.corpus_bytes.as_deref(),
            crash,
        )
        .await;
        if crash {
            panic!("test hook: the worker crashed halfway through an autosave");
        }
        match result {
            Ok(m) => {
                let step = m.step;
                let run = self.run.as_mut().expect("checked above");
                run.corpus_bytes = None;
                let id = run.id.clone();
                run.saved = Some(m);
                log(
                    LogLevel::Info,
                    format!("[save] saved {id} at step {step} ({why})"),
                );
                // The list first: once the page says "saved at step N",
                // its list of saves already holds step N.
                self.post_saved_runs().await;
                post(&WorkerOutput::RunSaved { id, step });
            }
            Err(e) => error(
                &format!("saving the run at {why} (training goes on; the previous save is intact)"),
                e,
            ),
        }
    }

    /// Replaces the model by a saved run, exactly as it was saved. The
    /// current model stays when anything is wrong with the save.
    async fn restore(&mut self, id: &str) -> Result<Manifest, String> {
        let (m, ckpt_bytes, corpus) = saves::load(id).await?;
        let ckpt = checkpoint::load(&ckpt_bytes).map_err(|e| e.to_string())?;
        let corpus = match corpus {
            Some(bytes) => bytes,
            None => js::fetch_bytes(js::BUNDLED_CORPUS).await?,
        };
        let mut s = Session::from_checkpoint(ckpt, m.name.clone(), self.gpu.clone())
            .map_err(|e| e.to_string())?;
        let data = Dataset::from_bytes(&corpus, VAL_FRACTION, s.train.seq_len)
            .map_err(|e| e.to_string())?;
        s.attach_data(data).map_err(|e| e.to_string())?;
        s.set_sampler_state(m.sampler);
        self.in_flight = None;
        self.session = Some(s);
        self.plan = Run::restored(
            m.target_step,
            m.history_train.clone(),
            m.history_val.clone(),
        );
        self.run = Some(RunMeta {
            id: m.id.clone(),
            name: m.name.clone(),
            created_ms: m.created_ms,
            corpus: m.corpus.clone(),
            corpus_bytes: None,
            saved: Some(m.clone()),
        });
        post(&WorkerOutput::History {
            train: self.plan.history_train.clone(),
            val: self.plan.history_val.clone(),
        });
        set_state(self, RunState::Idle);
        self.post_model_info();
        Ok(m)
    }

    /// Loads a saved run (the Saved runs panel, or a restart's restore).
    pub async fn load_saved_run(&mut self, id: &str) {
        self.drain().await;
        if matches!(self.state, RunState::Running | RunState::Paused) {
            self.stop().await;
        }
        match self.restore(id).await {
            Ok(m) => {
                log(
                    LogLevel::Info,
                    format!(
                        "[save] restored {:?} at step {} of {}",
                        m.name, m.step, m.target_step
                    ),
                );
                self.gate_loaded_model().await;
            }
            Err(e) => error(
                &format!("restoring the saved run {id} (your current model is unchanged)"),
                e,
            ),
        }
    }

    pub async fn delete_saved_run(&mut self, id: &str) {
        if self.run.as_ref().is_some_and(|r| r.id == id) {
            // The model stays; it simply no longer has a save.
            self.run = None;
            self.post_model_info();
        }
        if let Err(e) = saves::delete(id).await {
            error(&format!("deleting the saved run {id}"), e);
        }
        self.post_saved_runs().await;
    }

    /// Posts the saved runs and the storage they use.
    pub async fn post_saved_runs(&self) {
        let mut storage = StorageInfo::default();
        let runs = match saves::list().await {
            Ok((runs, problems)) => {
                for p in problems {
                    log(
                        LogLevel::Warn,
                        format!("[save] skipped an unreadable save: {p}"),
                    );
                }
                storage.available = true;
                runs
            }
            Err(e) => {
                storage.problem = Some(e);
                Vec::new()
            }
        };
        if let Ok((usage, quota)) = crate::opfs::estimate().await {
            storage.usage = usage;
            storage.quota = quota;
        }
        storage.persisted = crate::opfs::persisted().await;
        post(&WorkerOutput::SavedRuns { runs, storage });
    }

    /// Test hook: a NaN in the weights, so the next step's loss is NaN.
    pub fn poison_weights(&mut self) {
        match self.session.as_mut() {
            Some(s) => {
                s.poison_weights_for_test();
                log(LogLevel::Warn, "[test] wrote a NaN into the weights".into());
            }
            None => error("the poison test hook", "there is no model"),
        }
    }
}

/// Device loss: drop everything on the old device, take the new one.
impl Runner {
    /// The saved run of the current model, when it has a completed save.
    pub fn saved_run_id(&self) -> Option<String> {
        self.run
            .as_ref()
            .filter(|r| r.saved.is_some())
            .map(|r| r.id.clone())
    }

    /// Forgets the model and the steps in flight (their device is gone).
    pub async fn drop_model(&mut self) {
        self.in_flight = None;
        self.session = None;
        self.plan.pause(js::now_ms());
        if self.state != RunState::Idle {
            set_state(self, RunState::Idle);
        }
    }

    /// Uses a newly brought-up device (or none, with the reason).
    pub fn set_gpu(&mut self, gpu: Option<Rc<Gpu>>, caps: GpuCaps, reports: Vec<GateReport>) {
        self.gpu = gpu;
        self.gpu_reason = caps.unavailable_reason.clone();
        self.caps = caps;
        self.gate_reports = reports;
    }
}
