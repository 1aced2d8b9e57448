//! The page's precision views: per-stage localisation of each detected fast
//! path on the model held now, and the device's precision log.

use super::Runner;
use crate::js;
use crate::outbox::{error, log, post};
use crate::precision_log;
use tinygpt_gpu::engine::{EngineError, GpuTrainer};
use tinygpt_gpu::gate::localize::{candidate, localize, Localization};
use tinygpt_gpu::gate::FastPaths;
use tinygpt_protocol::{LogLevel, WorkerOutput};

/// [`localize`], with the test hook's one-layer fault when `corrupt` (only
/// a fault-injection build sets it): layer 1's fc (layer 0's in a
/// one-layer model) zeroed in the fast path's cache.
async fn compare(
    t: &mut GpuTrainer,
    fast: FastPaths,
    ids: &[u32],
    corrupt: bool,
) -> Result<Localization, EngineError> {
    #[cfg(feature = "fault-injection")]
    if corrupt {
        let layer = t.model.cfg.n_layer.min(2) - 1;
        return localize(t, fast, ids, async move |t| {
            let kind = tinygpt_core::ParamKind::FcW;
            Ok(t.model.corrupt_f16_layer(&t.gpu.ctx, kind, layer).await?)
        })
        .await;
    }
    let _ = corrupt;
    localize(t, fast, ids, async |_| Ok(())).await
}

impl Runner {
    /// Runs `prompt` on the f32 path and on each detected fast path (its
    /// gate passed or not), compares every stage and posts the reports. A
    /// prompt longer than the model's context keeps its last characters.
    pub async fn localize(&mut self, prompt: &str) {
        const WHAT: &str = "localising the fast paths";
        self.drain().await;
        let reports = self.gate_reports.clone();
        let corrupt = std::mem::take(&mut self.corrupt_localization);
        let Some(s) = self.session.as_mut() else {
            return error(
                WHAT,
                "there is no model yet: train one or load a checkpoint",
            );
        };
        if prompt.is_empty() {
            return error(
                WHAT,
                "the prompt is empty: the stages compared are the prompt's",
            );
        }
        let ids = match s.vocab.encode(prompt) {
            Ok(ids) => ids,
            Err(e) => return error(WHAT, e),
        };
        let keep = s.config.block_size;
        let ids = &ids[ids.len().saturating_sub(keep)..];
        let Some(trainer) = s.gpu_trainer() else {
            return error(
                WHAT,
                "this model runs on the CPU: there is no fast path to compare",
            );
        };
        let paths: Vec<_> = reports
            .iter()
            .filter_map(|r| Some((r, candidate(r)?)))
            .collect();
        if paths.is_empty() {
            return error(
                WHAT,
                "no fast path was detected on this GPU: nothing to compare",
            );
        }
        post(&WorkerOutput::Busy { busy: true });
        for (r, fast) in paths {
            let t0 = js::now_ms();
            match compare(trainer, fast, ids, corrupt).await {
                Ok(l) => {
                    let report = l.report(&r.path, prompt, r.fault.clone(), js::now_ms() - t0);
                    for line in &report.lines {
                        log(LogLevel::Info, line.clone());
                    }
                    post(&WorkerOutput::Localization(report));
                }
                Err(e) => error(&format!("localising {}", r.label), e),
            }
        }
        post(&WorkerOutput::Busy { busy: false });
    }

    /// Posts every record of the precision log.
    pub async fn post_precision_log(&mut self) {
        let (records, problem) = match precision_log::read().await {
            Ok(r) => (r, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        post(&WorkerOutput::PrecisionLog { records, problem });
    }

    /// Empties the precision log, then posts it.
    pub async fn clear_precision_log(&mut self) {
        if let Err(e) = precision_log::clear().await {
            error("clearing the precision log", e);
        }
        self.post_precision_log().await;
    }
}
