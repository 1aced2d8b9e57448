//! The loaded-model gate: a fast path proven again on the model's own weights.

use super::Runner;
use crate::js;
use crate::outbox::{error, log, post};
use tinygpt_gpu::engine::Session;
use tinygpt_gpu::gate::FastPaths;
use tinygpt_protocol::{GateReport, LogLevel, WorkerOutput};

/// The active paths' matmuls as the status line names them
/// (`f16-storage and f16-compute matmul`); empty when none is.
fn active_labels(reports: &[GateReport]) -> String {
    let labels: Vec<&str> = reports
        .iter()
        .filter(|r| r.active)
        .map(|r| r.label.as_str())
        .collect();
    match labels.is_empty() {
        true => String::new(),
        false => format!("{} matmul", labels.join(" and ")),
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
        let Some(mut reports) = self.retime_for_model().await else {
            return;
        };
        let before = gpu.fast_paths.get();
        if before == FastPaths::default() {
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
        let names = active_labels(&reports);
        let what = if before.f16_storage.is_some() {
            "real weights, 100 greedy tokens on f32 and f16"
        } else {
            "real weights and their activations"
        };
        post(&WorkerOutput::Status {
            text: format!("verifying {names} on this model ({what})…"),
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
            post(&WorkerOutput::GateReport(Box::new(r.clone())));
        }
        crate::precision_log::keep(&reports, &self.caps.adapter, "loaded model").await;
        let after = gpu.fast_paths.get();
        let secs = (js::now_ms() - t0) / 1e3;
        let status = if after == before {
            format!(
                "{names} verified on this model in {secs:.1}s ({what}: within the gate) — ready to generate."
            )
        } else {
            format!(
                "{names}: did not match f32 on this model — now {} — ready to generate.",
                match active_labels(&reports) {
                    n if n.is_empty() => "running on f32".to_string(),
                    n => format!("{n} active"),
                }
            )
        };
        if self.caps.active != after.pills() {
            self.caps.active = after.pills();
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
            post(&WorkerOutput::GateReport(Box::new(r.clone())));
        }
        let active = t.gpu.fast_paths.get().pills();
        if self.caps.active != active {
            self.caps.active = active;
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
        if gpu.fast_paths.get() == FastPaths::default() {
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
            post(&WorkerOutput::GateReport(Box::new(r.clone())));
            failed.push(r.clone());
        }
        crate::precision_log::keep(&failed, &self.caps.adapter, "freshness").await;
        self.caps.active = Default::default();
        post(&WorkerOutput::GpuCaps(self.caps.clone()));
        post(&WorkerOutput::Status {
            text: format!(
                "the f16 weight cache no longer matched the weights ({} of {} halves) — running on f32, nothing lost",
                check.mismatches, check.total
            ),
        });
    }
}
