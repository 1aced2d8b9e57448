//! The f16 weight cache's freshness gate: the cache a fast path reads must
//! equal round-to-nearest-even of the current f32 weights. Checked on the
//! GPU (or the CPU, where the cache packs there) after the first step that
//! follows activation, before every save and every sample, and every
//! [`FRESHNESS_EVERY`] steps (the engine's run policy, `Run::cache_check_due`,
//! says when); a cache
//! that differs turns the path off, and training and sampling go on in f32
//! with nothing lost.

use crate::engine::{EngineError, GpuTrainer};

pub use crate::engine::run::FRESHNESS_EVERY;

/// What one check found.
#[derive(Clone, Debug, PartialEq)]
pub struct Freshness {
    /// Halves of the cache that differ from the f32 weights, of `total`.
    pub mismatches: u64,
    pub total: usize,
    /// The console line in the gate's format.
    pub line: String,
}

impl Freshness {
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

/// Checks the cache of an active f16-storage or f16-compute path (`None`:
/// neither active); a failure deactivates both on the device (they read
/// the same cache) and rebinds the model in f32.
pub async fn check_f16_cache(t: &mut GpuTrainer) -> Result<Option<Freshness>, EngineError> {
    let found = {
        let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
        let r = t.model.f16_cache_mismatches(&t.gpu.ctx, &mut reg).await;
        *t.gpu.registry.borrow_mut() = reg;
        r?
    };
    let Some((mismatches, total)) = found else {
        return Ok(None);
    };
    let label = match t.gpu.fast_paths.get().f16_storage {
        Some(_) => super::f16_storage::PATH.label,
        None => super::f16_compute::PATH.label,
    };
    let line = if mismatches == 0 {
        format!("[ops] {label} cache check: all {total} halves equal the f32 weights — PASS")
    } else {
        let mut off = t.gpu.fast_paths.get();
        off.f16_storage = None;
        off.f16_compute = None;
        t.gpu.fast_paths.set(off);
        t.apply_fast_paths()?;
        format!(
            "[ops] {label} cache check: {mismatches} of {total} halves differ from the f32 weights — FAIL — f32 path active"
        )
    };
    Ok(Some(Freshness {
        mismatches,
        total,
        line,
    }))
}
