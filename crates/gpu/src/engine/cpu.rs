//! The CPU backend: the reference model trained by the reference AdamW. It is
//! the worker's fallback when there is no WebGPU, and `tinygpt train --cpu`.

use super::error::EngineError;
use crate::model::StepStats;
use tinygpt_core::checkpoint::{AdamMoments, Checkpoint};
use tinygpt_core::data::Batch;
use tinygpt_core::model::Dropout;
use tinygpt_core::optim::{clip_grad_norm, lr_at, AdamW};
use tinygpt_core::{Gpt, ModelConfig, TrainConfig};

/// The reference model and its optimiser state.
pub struct CpuTrainer {
    pub model: Gpt,
    pub opt: AdamW,
}

impl CpuTrainer {
    pub fn new(config: ModelConfig, seed: u64) -> Result<Self, EngineError> {
        let model = Gpt::new(config, seed)?;
        let opt = AdamW::new(model.params.len());
        Ok(Self { model, opt })
    }

    pub fn from_checkpoint(ckpt: &Checkpoint) -> Result<Self, EngineError> {
        let model = Gpt::from_params(ckpt.config, ckpt.params.clone())?;
        let opt = match &ckpt.adam {
            Some(a) => AdamW::from_state(a.m.clone(), a.v.clone(), a.step)?,
            None => AdamW::new(model.params.len()),
        };
        Ok(Self { model, opt })
    }

    /// Step number `step`: forward, backward, clip, AdamW. Returns the loss
    /// and the gradient norm; a non-finite one leaves the weights untouched.
    pub fn step(
        &mut self,
        batch: &Batch,
        cfg: &TrainConfig,
        step: usize,
    ) -> Result<StepStats, EngineError> {
        let (loss, mut grads) = self.model.forward_backward_train(
            &batch.inputs,
            &batch.targets,
            batch.batch_size,
            batch.seq_len,
            Dropout::at_step(cfg.dropout, cfg.seed, step),
        )?;
        let lr = lr_at(step, cfg);
        let norm = clip_grad_norm(&mut grads, cfg);
        let stats = StepStats {
            loss,
            grad_norm: norm,
        };
        if !loss.is_finite() || !norm.is_finite() {
            return Ok(stats);
        }
        let layout = self.model.layout.clone();
        self.opt
            .update(&mut self.model.params, &grads, &layout, cfg, lr)?;
        Ok(stats)
    }

    pub fn loss(&self, batch: &Batch) -> Result<f32, EngineError> {
        Ok(self.model.loss(
            &batch.inputs,
            &batch.targets,
            batch.batch_size,
            batch.seq_len,
        )?)
    }

    pub fn moments(&self) -> AdamMoments {
        moments(&self.opt.m, &self.opt.v, self.opt.step)
    }

    /// Parameters, gradients-free training state (two moments).
    pub fn memory_bytes(&self) -> u64 {
        (self.model.params.len() * 3 * 4) as u64
    }
}

fn moments(m: &[f32], v: &[f32], step: u64) -> AdamMoments {
    AdamMoments {
        m: m.to_vec(),
        v: v.to_vec(),
        step,
    }
}
