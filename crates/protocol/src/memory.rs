//! What a training run allocates on the GPU, computed before allocating.
//!
//! The UI shows this estimate and the worker refuses a run that exceeds the
//! device's limits or the memory budget with it; a native test checks that
//! the engine's real allocation equals it byte for byte.

use crate::ModelConfig;
use serde::{Deserialize, Serialize};

/// GPU memory a training run may use in the playground. WebGPU does not say
/// how much memory a device has; a run above this is refused before any
/// allocation, so a laptop GPU is never driven into a device loss.
pub const MEMORY_BUDGET_BYTES: u64 = 4 << 30;

/// Steps of (loss, gradient norm) the engine's step log holds.
pub const STEP_LOG_CAPACITY: u64 = 4096;

/// Bytes of one training run at `B × T`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// Weights, gradients, both AdamW moments, the decay mask, optimiser
    /// counters and the step log.
    pub state_bytes: u64,
    /// Activations and backward scratch of one `B × T` batch.
    pub activation_bytes: u64,
    /// The largest single buffer, which must fit the device's
    /// `maxStorageBufferBindingSize` and `maxBufferSize`.
    pub largest_buffer_bytes: u64,
    /// Its name, for the refusal message.
    pub largest_buffer: &'static str,
}

impl MemoryPlan {
    pub fn total(&self) -> u64 {
        self.state_bytes + self.activation_bytes
    }
}

/// The buffers [`MemoryPlan::total`] counts: every storage buffer the engine
/// creates for training `cfg` at `B × T` (uniforms of a few bytes aside).
pub fn training_memory(cfg: &ModelConfig, b: usize, t: usize) -> MemoryPlan {
    let p = cfg.num_params() as u64;
    let (n, c, v, l, nh) = (
        (b * t) as u64,
        cfg.d_model as u64,
        cfg.vocab_size as u64,
        cfg.n_layer as u64,
        cfg.n_head as u64,
    );
    let f = 4u64;
    // params, grads, m, v; decay mask (one bit per parameter, in u32 words);
    // grad norm (1), optimiser counters (4 u32), step scalars (8 u32),
    // step log (loss and norm per step).
    let state_bytes =
        4 * p * f + p.div_ceil(32).max(1) * f + f + 16 + 32 + 2 * STEP_LOG_CAPACITY * f;
    let per_block = n * (c + 2 + 3 * c + c + 1 + c + 2 + 8 * c) + b as u64 * nh * t as u64;
    let floats = 2 * n
        + (l + 1) * n * c
        + l * per_block
        + n * c
        + n * c
        + 2 * n
        + n * v
        + n
        + 1
        + n * v
        + n * c * 3
        + n * 3 * c
        + 2 * n * 4 * c;
    let candidates = [
        ("logits (B·T × vocab)", n * v * f),
        ("MLP activations (B·T × 4·d_model)", n * 4 * c * f),
        ("parameters", p * f),
    ];
    let (largest_buffer, largest_buffer_bytes) = candidates
        .into_iter()
        .max_by_key(|x| x.1)
        .expect("three candidates");
    MemoryPlan {
        state_bytes,
        activation_bytes: floats * f,
        largest_buffer_bytes,
        largest_buffer,
    }
}

/// Why a run does not fit, in words that name the limit.
pub fn check_fits(
    plan: &MemoryPlan,
    max_binding_bytes: u64,
    max_buffer_bytes: u64,
    budget_bytes: u64,
) -> Result<(), String> {
    let gib = |x: u64| x as f64 / (1u64 << 30) as f64;
    let limit = max_binding_bytes.min(max_buffer_bytes);
    if plan.largest_buffer_bytes > limit {
        return Err(format!(
            "its {} buffer needs {:.2} GiB, above this GPU's limit of {:.2} GiB per buffer (maxStorageBufferBindingSize / maxBufferSize); lower the batch size or the sequence length",
            plan.largest_buffer,
            gib(plan.largest_buffer_bytes),
            gib(limit)
        ));
    }
    if plan.total() > budget_bytes {
        return Err(format!(
            "it needs {:.2} GiB of GPU memory ({:.2} GiB of weights and optimiser state, {:.2} GiB of activations), above the playground's budget of {:.2} GiB; lower the batch size, the sequence length or the model size",
            gib(plan.total()),
            gib(plan.state_bytes),
            gib(plan.activation_bytes),
            gib(budget_bytes)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Preset;

    #[test]
    fn presets_fit_the_budget_and_an_absurd_batch_is_refused_naming_the_limit() {
        for p in crate::PRESETS {
            let plan = training_memory(&p.model(83), p.batch_size, p.block_size);
            assert!(plan.total() < MEMORY_BUDGET_BYTES, "{}: {plan:?}", p.name);
            check_fits(&plan, 2 << 30, 2 << 30, MEMORY_BUDGET_BYTES).unwrap();
        }
        let large = Preset::by_name("large").unwrap();
        let plan = training_memory(&large.model(83), 512, large.block_size);
        let err = check_fits(&plan, 256 << 20, 256 << 20, MEMORY_BUDGET_BYTES).unwrap_err();
        assert!(err.contains("maxStorageBufferBindingSize"), "{err}");
        let err = check_fits(&plan, u64::MAX, u64::MAX, MEMORY_BUDGET_BYTES).unwrap_err();
        assert!(err.contains("budget of 4.00 GiB"), "{err}");
    }
}
