//! How the page follows the worker: [`Store::apply`] folds each
//! [`WorkerOutput`] into the store's signals, one small method per family
//! of messages (errors, the model and its saves, the run, sampling, files,
//! the fast paths' gates).

use crate::chart::{LossHistory, Overlay, MAX_OVERLAYS};
use crate::{files, format, Pending, Store};
use leptos::prelude::*;
use tinygpt_protocol::{
    GateReport, ModelInfo, RunState, SavedRunInfo, StorageInfo, WorkerInput, WorkerOutput,
};

impl Store {
    /// Folds one worker message into the signals.
    pub(crate) fn apply(&self, msg: WorkerOutput) {
        match msg {
            WorkerOutput::Ready => {
                self.worker_ready.set(true);
                // Sent once the worker listens: earlier messages can be lost.
                self.send(WorkerInput::ListGallery);
            }
            WorkerOutput::GpuCaps(c) => self.caps.set(Some(c)),
            WorkerOutput::Status { text } => self.status.set(text),
            WorkerOutput::Log { level, text } => self.log(level, text),
            WorkerOutput::Error { context, message } => self.worker_error(context, message),
            WorkerOutput::ModelInfo(info) => self.model_arrived(info),
            WorkerOutput::SavedRuns { runs, storage } => self.saves_listed(runs, storage),
            WorkerOutput::RunSaved { id, step } => self.last_saved.set(Some((id, step))),
            WorkerOutput::History { train, val } => {
                self.progress.set(None);
                self.history.set(LossHistory { train, val });
            }
            WorkerOutput::RunCurve {
                id,
                name,
                train,
                val,
            } => self.overlays.update(|o| {
                o.retain(|x| x.id != id);
                if o.len() < MAX_OVERLAYS {
                    let history = LossHistory { train, val };
                    o.push(Overlay { id, name, history });
                }
            }),
            WorkerOutput::Gallery { cards, problem } => self.gallery.set(Some((cards, problem))),
            WorkerOutput::Inspection(i) => {
                self.inspection.set(Some(i));
                self.inspected.update(|n| *n += 1);
            }
            WorkerOutput::LiveSample(s) => self.live_samples.update(|l| crate::live::push(l, s)),
            WorkerOutput::RunState { state } => self.run_state_changed(state),
            WorkerOutput::Progress(p) => {
                self.history.update(|h| h.push(&p));
                self.progress.set(Some(p));
            }
            WorkerOutput::SampleChunk {
                sample,
                text,
                tokens,
                tokens_per_s,
                first_token_ms,
            } => self.sample.update(|s| {
                if let Some(t) = s.texts.get_mut(sample) {
                    t.push_str(&text);
                }
                s.tokens = tokens;
                s.tokens_per_s = tokens_per_s;
                s.first_token_ms = first_token_ms;
            }),
            WorkerOutput::SampleDone {
                tokens,
                tokens_per_s,
                first_token_ms,
            } => self.sample.update(|s| {
                s.tokens = tokens;
                s.tokens_per_s = tokens_per_s;
                s.first_token_ms = first_token_ms;
                s.running = false;
                s.done = true;
            }),
            WorkerOutput::Checkpoint { name, bytes } => self.checkpoint_arrived(name, bytes),
            WorkerOutput::Busy { busy } => self.worker_busy.set(busy),
            WorkerOutput::GateReport(report) => self.gate_reported(*report),
            WorkerOutput::Localization(report) => {
                self.localizations.update(|l| {
                    l.retain(|r| r.path != report.path);
                    l.push(report);
                });
                self.localized.update(|n| *n += 1);
            }
            WorkerOutput::PrecisionLog { records, problem } => {
                self.precision_log.set(Some((records, problem)))
            }
        }
    }

    /// A request failed: the load or sampling it belonged to is over.
    fn worker_error(&self, context: String, message: String) {
        if self.pending.get_untracked() == Pending::Load {
            self.checkpoint_note.set(None);
        }
        self.pending.set(Pending::None);
        if context.starts_with("sampling") {
            self.sample.update(|s| s.running = false);
        }
        self.banner(&context, message);
    }

    /// A model is in; a saved run loaded to resume continues to its target.
    fn model_arrived(&self, info: ModelInfo) {
        let resume = self.resume_pending.get_untracked();
        if resume.is_some() && resume == info.run_id {
            self.resume_pending.set(None);
            if info.target_step > info.step {
                self.send(WorkerInput::Continue {
                    steps: info.target_step - info.step,
                });
            }
        }
        self.model.set(Some(info));
    }

    /// The saved runs; after a crash, the run to restore is loaded.
    fn saves_listed(&self, runs: Vec<SavedRunInfo>, storage: StorageInfo) {
        if let Some(id) = self.restore_after_restart.get_untracked() {
            self.restore_after_restart.set(None);
            if runs.iter().any(|r| r.id == id) {
                self.send(WorkerInput::LoadSavedRun { id });
            }
        }
        self.saved_runs.set(runs);
        self.storage.set(Some(storage));
    }

    /// The run's state; a new run starting or a load finishing clears the
    /// chart, as [`Pending`] says.
    fn run_state_changed(&self, state: RunState) {
        let pending = self.pending.get_untracked();
        let starts_new = pending == Pending::NewRun && state == RunState::Running;
        let loaded = pending == Pending::Load && state == RunState::Idle;
        if loaded {
            self.checkpoint_note
                .set(Some("Checkpoint loaded.".to_string()));
        }
        if starts_new {
            self.runs_started.update(|n| *n += 1);
        }
        if starts_new || loaded {
            self.history.set(LossHistory::default());
            self.live_samples.set(Vec::new());
            self.progress.set(None);
            self.pending.set(Pending::None);
        }
        self.run_state.set(state);
    }

    /// A checkpoint to download: hands it to the browser and says so.
    fn checkpoint_arrived(&self, name: String, bytes: Vec<u8>) {
        match files::download(&name, &bytes) {
            Ok(()) => self.checkpoint_note.set(Some(format!(
                "Saved {name} ({}).",
                format::bytes(bytes.len() as u64)
            ))),
            Err(e) => self.show_error(&format!("downloading {name}"), e),
        }
    }

    /// A fast path's gate report replaces that path's earlier one (and the
    /// precision log, when shown, is read again: the worker kept it).
    fn gate_reported(&self, report: GateReport) {
        if self.precision_log.with_untracked(|l| l.is_some()) {
            self.send(WorkerInput::ListPrecisionLog);
        }
        self.gates
            .update(|g| match g.iter_mut().find(|r| r.path == report.path) {
                Some(old) => *old = report,
                None => g.push(report),
            })
    }
}
