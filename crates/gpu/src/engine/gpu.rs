//! The GPU backend of a session: a [`GpuModel`] on a shared device.

use super::EngineError;
use crate::gate::FastPaths;
use crate::model::{GpuModel, StepLogRead, StepStats};
use crate::ops::adamw::OptState;
use crate::{GpuContext, PipelineRegistry};
use std::cell::{Cell, RefCell};
use std::ops::ControlFlow;
use std::rc::Rc;
use tinygpt_core::checkpoint::{AdamMoments, Checkpoint};
use tinygpt_core::data::Batch;
use tinygpt_core::sample::{SampleParams, Sampler};
use tinygpt_core::{ModelConfig, TrainConfig};

/// A device and its pipelines, shared by every session on it.
pub struct Gpu {
    pub ctx: GpuContext,
    pub registry: RefCell<PipelineRegistry>,
    /// Fast paths whose gate passed on this device (none until the gates
    /// have run); models created on it bind their kernels from this.
    pub fast_paths: Cell<FastPaths>,
    /// Training runs above this many bytes are refused before allocation
    /// ([`tinygpt_protocol::MEMORY_BUDGET_BYTES`] unless changed).
    pub memory_budget: Cell<u64>,
}

impl Gpu {
    pub fn new(ctx: GpuContext) -> Rc<Self> {
        Rc::new(Self {
            ctx,
            registry: RefCell::new(PipelineRegistry::default()),
            fast_paths: Cell::new(FastPaths::default()),
            memory_budget: Cell::new(tinygpt_protocol::MEMORY_BUDGET_BYTES),
        })
    }

    /// Refuses a run whose buffers exceed this device's limits or the
    /// memory budget, before anything is allocated.
    pub fn check_fits(&self, cfg: &ModelConfig, train: &TrainConfig) -> Result<(), EngineError> {
        let plan = tinygpt_protocol::training_memory(cfg, train.batch_size, train.seq_len);
        let l = &self.ctx.limits;
        tinygpt_protocol::check_fits(
            &plan,
            l.max_storage_buffer_binding_size,
            l.max_buffer_size,
            self.memory_budget.get(),
        )
        .map_err(EngineError::TooBig)
    }
}

/// A model on the GPU with its device.
pub struct GpuTrainer {
    pub gpu: Rc<Gpu>,
    pub model: GpuModel,
}

impl GpuTrainer {
    pub fn new(gpu: Rc<Gpu>, config: ModelConfig, train: TrainConfig) -> Result<Self, EngineError> {
        gpu.check_fits(&config, &train)?;
        let params = tinygpt_core::init_params(&config, train.seed);
        let model = GpuModel::new(&gpu.ctx, config, &params, None, train, OptState::default())?;
        Self::on(gpu, model)
    }

    pub fn from_checkpoint(
        gpu: Rc<Gpu>,
        ckpt: &Checkpoint,
        train: TrainConfig,
    ) -> Result<Self, EngineError> {
        gpu.check_fits(&ckpt.config, &train)?;
        let moments = ckpt.adam.as_ref().map(|a| (a.m.as_slice(), a.v.as_slice()));
        let updates = ckpt.adam.as_ref().map_or(0, |a| a.step);
        let opt = OptState::resumed(ckpt.step as u32, updates as u32);
        let model = GpuModel::new(&gpu.ctx, ckpt.config, &ckpt.params, moments, train, opt)?;
        Self::on(gpu, model)
    }

    /// A trainer for `model` using the device's active fast paths.
    pub fn on(gpu: Rc<Gpu>, model: GpuModel) -> Result<Self, EngineError> {
        let mut t = Self { gpu, model };
        t.apply_fast_paths()?;
        Ok(t)
    }

    /// Rebinds the model with the device's current fast paths (after the
    /// gates ran, or were re-run with a model loaded).
    pub fn apply_fast_paths(&mut self) -> Result<(), EngineError> {
        let mut reg = self.gpu.registry.borrow_mut();
        let fast = self.gpu.fast_paths.get();
        Ok(self.model.set_fast_paths(&self.gpu.ctx, &mut reg, fast)?)
    }

    /// Submits one step per batch and starts reading their losses; nothing
    /// waits, so the caller can submit more steps before awaiting these.
    pub fn submit_steps(&mut self, batches: &[Batch]) -> Result<StepLogRead, EngineError> {
        let mut reg = self.gpu.registry.borrow_mut();
        for batch in batches {
            self.model.train_step(&self.gpu.ctx, &mut reg, batch)?;
        }
        Ok(self.model.start_step_log_read(&self.gpu.ctx))
    }

    /// Waits for the step logs of one [`Self::submit_steps`].
    pub async fn finish_steps(&self, read: StepLogRead) -> Result<Vec<StepStats>, EngineError> {
        Ok(read.finish(&self.gpu.ctx).await?)
    }

    /// Runs one step per batch and returns the last loss.
    pub async fn steps(&mut self, batches: &[Batch]) -> Result<f32, EngineError> {
        let read = self.submit_steps(batches)?;
        let stats = self.finish_steps(read).await?;
        Ok(stats.last().map_or(f32::NAN, |s| s.loss))
    }

    pub async fn eval(&mut self, batches: &[Batch]) -> Result<f32, EngineError> {
        let losses = {
            let mut reg = self.gpu.registry.borrow_mut();
            self.model.submit_eval(&self.gpu.ctx, &mut reg, batches)?
        };
        let values = self.gpu.ctx.read_f32(&losses, batches.len()).await?;
        Ok((values.iter().map(|&x| x as f64).sum::<f64>() / values.len().max(1) as f64) as f32)
    }

    pub fn set_train_config(&mut self, cfg: TrainConfig) -> Result<(), EngineError> {
        let mut reg = self.gpu.registry.borrow_mut();
        Ok(self.model.set_train_config(&self.gpu.ctx, &mut reg, cfg)?)
    }

    /// KV-cached generation. Past the context window the cache restarts from
    /// the last half window (amortised O(T) per token).
    pub async fn generate(
        &mut self,
        prompt: &[u32],
        n: usize,
        params: &SampleParams,
        mut on_token: impl FnMut(u32) -> ControlFlow<()>,
    ) -> Result<Vec<u32>, EngineError> {
        let mut sampler = Sampler::new(*params)?;
        let gpu = self.gpu.clone();
        self.model.prepare_inference(&gpu.ctx).await?;
        let dec = {
            let mut reg = gpu.registry.borrow_mut();
            self.model.decoder(&gpu.ctx, &mut reg)?
        };
        let cap = dec.capacity();
        let mut context: Vec<u32> = if prompt.is_empty() {
            vec![0]
        } else {
            prompt.to_vec()
        };
        let start = context.len().saturating_sub(cap);
        dec.reset();
        let window = &context[start..];
        for &t in &window[..window.len() - 1] {
            dec.feed(&gpu.ctx, t)?;
        }
        let mut logits = dec.push(&gpu.ctx, window[window.len() - 1]).await?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let next = sampler.sample(&logits)?;
            out.push(next);
            context.push(next);
            if on_token(next).is_break() || out.len() == n {
                break;
            }
            if dec.len == cap {
                dec.reset();
                let keep = &context[context.len() - cap / 2..context.len() - 1];
                for &t in keep {
                    dec.feed(&gpu.ctx, t)?;
                }
            }
            logits = dec.push(&gpu.ctx, next).await?;
        }
        Ok(out)
    }

    pub async fn params(&self) -> Result<Vec<f32>, EngineError> {
        Ok(self.model.read_params(&self.gpu.ctx).await?)
    }

    pub async fn moments(&self) -> Result<AdamMoments, EngineError> {
        let (m, v, state) = self.model.read_optimizer(&self.gpu.ctx).await?;
        Ok(AdamMoments {
            m,
            v,
            step: state.updates as u64,
        })
    }
}
