//! Per-stage localisation (seed 004 §7): the f32 path and a fast path run
//! the same prompt, every stage of the forward is compared in dependency
//! order with the gate's error-distribution metrics, and the first stage
//! whose error jumps is named — where a wrong kernel, or a precision loss,
//! enters the model.

use super::stats::error_distribution;
use crate::engine::{EngineError, GpuTrainer};
use crate::model::FastPaths;
use crate::ops::matmul::f16c::F16Compute;
use crate::ops::matmul::f16w::F16Storage;
use crate::ops::matmul::Fault;
use tinygpt_protocol::{ErrorDistribution, GateReport, LocalizeReport, StageReport};

/// A stage's relative L2 error "jumps" when it is this many times the
/// largest before it, and above [`JUMP_FLOOR`]: f16 storage alone moves
/// every stage by ~1e-4 and grows it gently layer by layer; a kernel fault
/// in one place moves that stage by orders of magnitude.
pub const JUMP_FACTOR: f64 = 10.0;
/// Errors below this never count as a jump (f32 rounding noise).
pub const JUMP_FLOOR: f64 = 1e-3;

/// The comparison of every stage, and the first whose error jumps.
#[derive(Clone, Debug)]
pub struct Localization {
    pub stages: Vec<StageReport>,
    pub first_jump: Option<usize>,
}

/// The fast paths `report`'s gate bound, passed or not (a failed path is
/// the one worth localising): what localisation compares with f32.
pub fn candidate(report: &GateReport) -> Option<FastPaths> {
    if !report.detected {
        return None;
    }
    let pack_on_gpu = report.pack.as_ref().is_some_and(|p| p.pack_on_gpu);
    let fault = report.fault.as_deref().and_then(Fault::parse);
    match report.path.as_str() {
        id if id == super::f16_storage::PATH.id => Some(FastPaths {
            f16_storage: Some(F16Storage {
                pack_on_gpu,
                fault,
                training: true,
            }),
            ..Default::default()
        }),
        id if id == super::f16_compute::PATH.id => Some(FastPaths {
            f16_compute: Some(F16Compute { pack_on_gpu, fault }),
            ..Default::default()
        }),
        _ => None,
    }
}

impl Localization {
    /// The report the page shows for `path` (a gate report's id).
    pub fn report(
        &self,
        path: &str,
        prompt: &str,
        fault: Option<String>,
        millis: f64,
    ) -> LocalizeReport {
        LocalizeReport {
            path: path.into(),
            prompt: prompt.into(),
            fault,
            stages: self.stages.clone(),
            first_jump: self.first_jump,
            jump_factor: JUMP_FACTOR,
            jump_floor: JUMP_FLOOR,
            lines: self.lines(),
            millis,
        }
    }

    /// One console line per stage, then the verdict.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .stages
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let d = &s.distribution;
                let mark = if Some(i) == self.first_jump { "  ← jumps here" } else { "" };
                format!(
                    "[localize] {:<24} rel_l2={:.2e}  cos={:.6}  p99 rel={:.2e}  max abs={:.2e}{mark}",
                    s.name, d.rel_l2, d.cosine, d.rel_diff[2], d.abs_diff[3]
                )
            })
            .collect();
        out.push(match self.first_jump {
            Some(i) => format!(
                "[localize] the error first jumps at {} (rel_l2 {:.2e}, over {JUMP_FACTOR}× every stage before it)",
                self.stages[i].name, self.stages[i].distribution.rel_l2
            ),
            None => "[localize] no stage's error jumps: the paths drift together, stage by stage".into(),
        });
        out
    }
}

/// The first stage whose rel_l2 exceeds [`JUMP_FLOOR`] and [`JUMP_FACTOR`]
/// times every stage before it (non-finite counts as a jump).
pub fn first_jump(stages: &[StageReport]) -> Option<usize> {
    let mut worst = 0.0f64;
    for (i, s) in stages.iter().enumerate() {
        let e = s.distribution.rel_l2;
        if !e.is_finite() || (e > JUMP_FLOOR && e > JUMP_FACTOR * worst) {
            return Some(i);
        }
        worst = worst.max(e);
    }
    None
}

/// Runs `prompt` on the f32 path and with `fast`, compares every stage.
/// `before_fast` runs once the fast paths are bound, before their forward
/// (a test injects a fault there). The trainer's paths are restored, with
/// a fresh f16 cache.
pub async fn localize<F: AsyncFnOnce(&mut GpuTrainer) -> Result<(), EngineError>>(
    t: &mut GpuTrainer,
    fast: FastPaths,
    prompt: &[u32],
    before_fast: F,
) -> Result<Localization, EngineError> {
    let saved = t.model.fast_paths();
    let reference = stages(t, FastPaths::default(), prompt).await?;
    set_paths(t, fast)?;
    before_fast(t).await?;
    let got = stages(t, fast, prompt).await;
    // Through f32, so the fast path's cache is rebuilt: nothing
    // `before_fast` did outlives the comparison.
    set_paths(t, FastPaths::default())?;
    set_paths(t, saved)?;
    let got = got?;
    let stages: Vec<StageReport> = reference
        .into_iter()
        .zip(got)
        .map(|((name, r), (_, f))| StageReport {
            name,
            distribution: error_distribution(&f, &r),
        })
        .collect();
    let first_jump = first_jump(&stages);
    Ok(Localization { stages, first_jump })
}

fn set_paths(t: &mut GpuTrainer, fast: FastPaths) -> Result<(), EngineError> {
    let mut reg = t.gpu.registry.borrow_mut();
    Ok(t.model.set_fast_paths(&t.gpu.ctx, &mut reg, fast)?)
}

async fn stages(
    t: &mut GpuTrainer,
    fast: FastPaths,
    prompt: &[u32],
) -> Result<Vec<(String, Vec<f32>)>, EngineError> {
    if t.model.fast_paths() != fast {
        set_paths(t, fast)?;
    }
    t.model.prepare_inference(&t.gpu.ctx).await?;
    let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
    let r = t.model.forward_stages(&t.gpu.ctx, &mut reg, prompt).await;
    *t.gpu.registry.borrow_mut() = reg;
    Ok(r?)
}

/// Drift over a long generation (the seed's "what the gate does NOT
/// catch"): the logits of the f32 path and of a fast path, teacher-forced
/// through the KV-cache decoder over `tokens` (the cache restarting when
/// full), compared per position and summarised by cache depth.
#[derive(Clone, Debug)]
pub struct Drift {
    /// Positions compared.
    pub positions: usize,
    /// `(first depth, last depth, distribution)` per bucket of depths.
    pub buckets: Vec<(usize, usize, ErrorDistribution)>,
    pub overall: ErrorDistribution,
}

impl Drift {
    pub fn lines(&self) -> Vec<String> {
        let line = |what: String, d: &ErrorDistribution| {
            format!(
                "[drift] {what:<26} rel_l2={:.2e}  cos={:.6}  p99 rel={:.2e}  max abs={:.2e}",
                d.rel_l2, d.cosine, d.rel_diff[2], d.abs_diff[3]
            )
        };
        let mut out: Vec<String> = self
            .buckets
            .iter()
            .map(|(a, b, d)| line(format!("cache depth {a}–{b}"), d))
            .collect();
        out.push(line(
            format!("all {} positions", self.positions),
            &self.overall,
        ));
        out
    }
}

/// The logits at every position of `tokens` on the current paths.
async fn decoded_logits(t: &mut GpuTrainer, tokens: &[u32]) -> Result<Vec<Vec<f32>>, EngineError> {
    t.model.prepare_inference(&t.gpu.ctx).await?;
    let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
    let dec = t.model.decoder(&t.gpu.ctx, &mut reg);
    *t.gpu.registry.borrow_mut() = reg;
    let dec = dec?;
    dec.reset();
    let mut out = Vec::with_capacity(tokens.len());
    for &tok in tokens {
        if dec.len == dec.capacity() {
            dec.reset();
        }
        out.push(dec.push(&t.gpu.ctx, tok).await?);
    }
    Ok(out)
}

/// [`Drift`] of `fast` against f32 over `tokens`, in `buckets` of cache
/// depth. The trainer's paths are restored.
pub async fn drift(
    t: &mut GpuTrainer,
    fast: FastPaths,
    tokens: &[u32],
    buckets: usize,
) -> Result<Drift, EngineError> {
    let saved = t.model.fast_paths();
    set_paths(t, FastPaths::default())?;
    let reference = decoded_logits(t, tokens).await;
    set_paths(t, fast)?;
    let got = decoded_logits(t, tokens).await;
    set_paths(t, saved)?;
    let (reference, got) = (reference?, got?);
    let cap = t.model.cfg.block_size;
    let width = cap.div_ceil(buckets.max(1));
    let mut by_bucket = vec![(Vec::new(), Vec::new()); cap.div_ceil(width)];
    for (i, (r, f)) in reference.iter().zip(&got).enumerate() {
        let b = &mut by_bucket[(i % cap) / width];
        b.0.extend_from_slice(r);
        b.1.extend_from_slice(f);
    }
    let buckets = by_bucket
        .iter()
        .enumerate()
        .filter(|(_, (r, _))| !r.is_empty())
        .map(|(i, (r, f))| {
            (
                i * width,
                ((i + 1) * width).min(cap) - 1,
                error_distribution(f, r),
            )
        })
        .collect();
    let (r_all, f_all): (Vec<f32>, Vec<f32>) = (reference.concat(), got.concat());
    Ok(Drift {
        positions: tokens.len(),
        buckets,
        overall: error_distribution(&f_all, &r_all),
    })
}
