//! The loaded-model gate: a fast path proven again on the model's own weights.

use super::Runner;
use crate::js;
use crate::outbox::{error, log, post};
use tinygpt_gpu::engine::Session;
use tinygpt_protocol::{GateReport, LogLevel, WorkerOutput};

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
        let Some(mut reports) = self.retime_for_model().await else {
            return;
        };
        if gpu.fast_paths.get().f16_storage.is_none() {
            return;
        }
        let Some(s) = self.session.as_mut() else {
            return;
        };
        let (prompt_text, ids) = gate_prompt(s);
        let vocab = s.vocab.clone();
        let decode = |ids: &[u32]| vocab.decode(ids);
        let Some(trainer) = s.gpu_trainer() else {
            return;
        };
        post(&WorkerOutput::Status {
            text: "verifying f16-storage matmul on this model (real weights, 100 greedy tokens on f32 and f16)…".into(),
        });
        let t0 = js::now_ms();
        for r in &mut reports {
            let len = r.lines.len();
            if let Err(e) = tinygpt_gpu::gate::model_gate::run_model_gates(
                trainer,
                r,
                &ids,
                &prompt_text,
                &decode,
            )
            .await
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
        crate::precision_log::keep(&reports, &self.caps.adapter, "loaded model").await;
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

impl Runner {
    /// With a model of another shape than the one the speed gate timed: times
    /// each precise path again at this model's shape (`gate::model_speed`),
    /// and says what changed. Returns the start-up reports as this model
    /// sees them; `None` when the timing could not run (reported).
    async fn retime_for_model(&mut self) -> Option<Vec<GateReport>> {
        let mut reports = self.gate_reports.clone();
        let Some(t) = self.session.as_mut().and_then(|s| s.gpu_trainer()) else {
            return Some(reports);
        };
        for r in &mut reports {
            match tinygpt_gpu::gate::model_speed::retime_for_model(t, r, js::now_ms).await {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => {
                    error("timing the fast paths at this model's shape", e);
                    return None;
                }
            }
            if let Some(line) = r.lines.iter().find(|l| l.contains(" speed: ")) {
                log(LogLevel::Info, format!("{line} (at this model's shape)"));
            }
            post(&WorkerOutput::GateReport(r.clone()));
        }
        let active = t.gpu.fast_paths.get().f16_storage.is_some();
        if self.caps.active.f16_storage != active {
            self.caps.active.f16_storage = active;
            post(&WorkerOutput::GpuCaps(self.caps.clone()));
            post(&WorkerOutput::Status {
                text: format!(
                    "at this model's shape{} — ready to generate.",
                    tinygpt_gpu::gate::status_suffix(&reports)
                ),
            });
        }
        Some(reports)
    }
}

impl Runner {
    /// The freshness gate (`gate::freshness`): with f16 storage active,
    /// checks that its weight cache equals the current f32 weights, before
    /// `why` (a save, a sample), or on the run policy's schedule when
    /// `scheduled` (after a run's first steps, then every
    /// `FRESHNESS_EVERY`). A failure turns the path off — pill, status line
    /// and gate report say so — and the run goes on in f32.
    pub async fn check_weight_cache(&mut self, why: &str, scheduled: bool) {
        let Some(gpu) = self.gpu.clone() else {
            return;
        };
        if gpu.fast_paths.get().f16_storage.is_none() {
            return;
        }
        let first = scheduled && self.plan.cache_checked.is_none();
        if scheduled {
            self.plan.cache_checked = self.session.as_ref().map(|s| s.step);
        }
        let Some(t) = self.session.as_mut().and_then(|s| s.gpu_trainer()) else {
            return;
        };
        let check = match tinygpt_gpu::gate::freshness::check_f16_cache(t).await {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => return error(&format!("checking the f16 weight cache before {why}"), e),
        };
        if check.passed() {
            if first {
                log(LogLevel::Info, format!("{} (before {why})", check.line));
            }
            return;
        }
        log(LogLevel::Warn, format!("{} (before {why})", check.line));
        let mut failed = Vec::new();
        for r in self.gate_reports.iter_mut().filter(|r| r.active) {
            r.active = false;
            r.passed = false;
            r.lines.push(check.line.clone());
            post(&WorkerOutput::GateReport(r.clone()));
            failed.push(r.clone());
        }
        crate::precision_log::keep(&failed, &self.caps.adapter, "freshness").await;
        self.caps.active.f16_storage = false;
        post(&WorkerOutput::GpuCaps(self.caps.clone()));
        post(&WorkerOutput::Status {
            text: format!(
                "the f16 weight cache no longer matched the weights ({} of {} halves) — running on f32, nothing lost",
                check.mismatches, check.total
            ),
        });
    }
}
