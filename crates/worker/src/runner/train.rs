//! Starting, continuing, pausing and stopping a run; a chunk of training.

use super::{set_state, Runner};
use crate::js;
use crate::outbox::{error, log, post};
use crate::saves::CorpusRef;
use std::sync::atomic::Ordering;
use tinygpt_core::data::Dataset;
use tinygpt_core::{ModelConfig, TrainConfig};
use tinygpt_gpu::engine::run::{self, Run, VAL_FRACTION};
use tinygpt_gpu::engine::{EngineError, Session};
use tinygpt_protocol::{CorpusSource, LogLevel, ModelShape, RunState, WorkerOutput};

/// A chunk of training ends after this much wall time, so the worker stays
/// responsive and progress is reported several times a second.
const CHUNK_MS: f64 = 150.0;

/// An uploaded corpus kept to copy into the run's directory.
type KeptCorpus = Option<(String, Vec<u8>)>;

/// A new run's corpus read into a dataset, with its name and (uploaded) its
/// bytes; `None` once an error is posted.
async fn corpus_dataset(
    corpus: CorpusSource,
    seq_len: usize,
) -> Option<(String, Dataset, KeptCorpus)> {
    let (name, bytes, kept) = match corpus {
        CorpusSource::Bundled => match js::fetch_bytes(js::BUNDLED_CORPUS).await {
            Ok(b) => ("the bundled Shakespeare corpus".to_string(), b, None),
            Err(e) => {
                error("loading the bundled corpus", e);
                return None;
            }
        },
        CorpusSource::Upload { name, bytes } => {
            let kept = Some((name.clone(), bytes.clone()));
            (name, bytes, kept)
        }
    };
    let reading = format!("reading the corpus {name}");
    if bytes.len() > tinygpt_protocol::MAX_CORPUS_BYTES {
        let mib = bytes.len() as f64 / (1u64 << 20) as f64;
        let max = tinygpt_protocol::MAX_CORPUS_BYTES >> 20;
        error(
            &reading,
            format!("it is {mib:.1} MiB; the playground trains on corpora up to {max} MiB"),
        );
        return None;
    }
    match Dataset::from_bytes(&bytes, VAL_FRACTION, seq_len) {
        Ok(d) => Some((name, d, kept)),
        Err(e) => {
            error(&reading, e);
            None
        }
    }
}

impl Runner {
    /// Starts a fresh run; on any error the current model stays.
    pub async fn start(
        &mut self,
        shape: ModelShape,
        train: TrainConfig,
        corpus: CorpusSource,
        run_name: Option<String>,
    ) {
        self.drain().await;
        let Some((name, data, corpus_bytes)) = corpus_dataset(corpus, train.seq_len).await else {
            return;
        };
        let config = ModelConfig {
            vocab_size: data.vocab.len(),
            block_size: shape.block_size,
            n_layer: shape.n_layer,
            n_head: shape.n_head,
            d_model: shape.d_model,
        };
        let source = format!(
            "{}L/{}H/{}C on {name}",
            config.n_layer, config.n_head, config.d_model
        );
        // The engine validates the configuration (once, here).
        let s = match Session::new(config, train, data, source, self.gpu.clone()) {
            Ok(s) => s,
            Err(EngineError::Config(e)) => return error("checking the hyper-parameters", e),
            Err(e) => return error("starting training", e),
        };
        if let Some(reason) = &self.gpu_reason {
            if let Err(e) = run::check_cpu_trainable(&config, reason) {
                return error("starting training", e);
            }
        }
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
        let corpus_label = match &corpus_ref {
            CorpusRef::Bundled => "Shakespeare".to_string(),
            CorpusRef::Stored { name } => name.clone(),
        };
        let default_name = format!(
            "{}L/{}H/{}C · {corpus_label} · {}",
            config.n_layer,
            config.n_head,
            config.d_model,
            js::clock_label()
        );
        self.new_run(run_name.unwrap_or(default_name), corpus_ref, corpus_bytes);
        self.begin(train.steps).await;
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
        self.plan.live.every = self.live_every;
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
            let at_live = self.plan.live.every.boundary().is_some() && self.live_due();
            if js::now_ms() - t0 >= CHUNK_MS || at_save || at_live {
                break;
            }
        }
        self.report(losses, val_loss);
        let step = self.session.as_ref().map(|s| s.step);
        if step.is_some_and(|s| self.plan.cache_check_due(s)) {
            self.drain().await;
            self.check_weight_cache("the next steps", true).await;
        }
        if self.live_due() && self.state == RunState::Running {
            self.live_sample().await;
        }
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
}
