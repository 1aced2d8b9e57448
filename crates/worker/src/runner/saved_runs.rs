//! Saved runs: autosave, restore, list, delete.

use super::{set_state, RunMeta, Runner};
use crate::error::WorkerError;
use crate::js;
use crate::outbox::{error, log, post};
use crate::saves::{self, CorpusRef, Manifest};
use tinygpt_core::checkpoint;
use tinygpt_core::data::Dataset;
use tinygpt_gpu::engine::run::{Run, VAL_FRACTION};
use tinygpt_gpu::engine::Session;
use tinygpt_protocol::{LogLevel, RunState, StorageInfo, WorkerOutput};

impl Runner {
    pub(super) fn new_run(
        &mut self,
        name: String,
        corpus: CorpusRef,
        corpus_bytes: Option<Vec<u8>>,
    ) {
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
        self.check_weight_cache("saving", false).await;
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
    pub(super) async fn restore(&mut self, id: &str) -> Result<Manifest, WorkerError> {
        let (m, ckpt_bytes, corpus) = saves::load(id).await?;
        let ckpt = checkpoint::load(&ckpt_bytes)?;
        let corpus = match corpus {
            Some(bytes) => bytes,
            None => js::fetch_bytes(js::BUNDLED_CORPUS).await?,
        };
        let mut s = Session::from_checkpoint(ckpt, m.name.clone(), self.gpu.clone())?;
        let data = Dataset::from_bytes(&corpus, VAL_FRACTION, s.train.seq_len)?;
        s.attach_data(data)?;
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
        self.post_history();
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

    /// Posts one saved run's loss curve (for the chart's comparison).
    pub async fn post_run_curve(&self, id: &str) {
        match saves::manifest(id).await {
            Ok(m) => post(&WorkerOutput::RunCurve {
                id: m.id,
                name: m.name,
                train: m.history_train,
                val: m.history_val,
            }),
            Err(e) => error(&format!("reading the curve of saved run {id}"), e),
        }
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
                storage.problem = Some(e.to_string());
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
