//! The GPU backend of a session: a [`GpuModel`] on a shared device.

use super::error::EngineError;
use crate::model::FastPaths;
use crate::model::{Decoder, GpuModel, StepLogRead, StepStats, STEP_LOG_CAPACITY};
use crate::ops::adamw::OptState;
use crate::{GpuContext, PipelineRegistry};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::rc::Rc;
use tinygpt_core::checkpoint::{AdamMoments, Checkpoint};
use tinygpt_core::data::Batch;
use tinygpt_core::sample::{SampleError, SampleParams, Sampler};
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

/// Tokens one greedy submission decodes at most: they cost one read-back
/// of their ids, and the stream shows them together.
pub const GREEDY_CHUNK: usize = 8;

/// Submissions queued at most while the host waits for the oldest one's
/// picks. Recording a token's dispatches costs the host most of what the
/// GPU spends on them at small shapes (H200, `tiny`: 68 of 89 µs, `bench
/// --profile`'s decode chain, run 37; H100, `small`: 57 of 94 µs, run
/// 106), so the host must always be recording the chunk after next: with
/// two chunks queued and each twice the last, the GPU waited while the
/// host recorded the larger one (BENCHMARKS.md, "The decoder's host
/// side"). For the same reason the chunks grow as the Fibonacci numbers
/// (1, 1, 2, 3, 5, 8), not by doubling: the host records each chunk while
/// the GPU runs the two before it, whose tokens add up to it.
pub const CHUNKS_IN_FLIGHT: usize = 4;

/// Greedy generation of up to `n` tokens after `prompt` with the picks made
/// on the GPU: the same tokens as sampling greedily from each token's
/// logits on the CPU, with one submission and one read-back per chunk of
/// tokens instead of per token. The first chunk is one token (the first
/// token comes as soon as before), each next one the sum of the two
/// before (1, 1, 2, 3, 5) up to [`GREEDY_CHUNK`], and up to
/// [`CHUNKS_IN_FLIGHT`] chunks are queued
/// behind the one being read, so the GPU does not wait for the host
/// while it records the next. Chunks end where the
/// cache is full; the cache then restarts from the last half window.
/// `on_token` sees each token as its chunk arrives and stops generation by
/// returning `Break`; logits that are not finite are refused as the CPU
/// sampler refuses them.
pub async fn generate_greedy(
    ctx: &GpuContext,
    dec: &mut Decoder,
    prompt: &[u32],
    n: usize,
    on_token: impl FnMut(u32) -> ControlFlow<()>,
) -> Result<Vec<u32>, EngineError> {
    generate_picked(ctx, dec, prompt, n, None, on_token).await
}

/// [`generate_greedy`], or with a `sampler` its seeded rule on the GPU
/// (`shaders/sample_pick.wgsl`): each pick takes the sampler's next draw,
/// in token order, so a seed gives the CPU reference's tokens for the same
/// logits (`tinygpt_core::sample::pick`).
pub async fn generate_picked(
    ctx: &GpuContext,
    dec: &mut Decoder,
    prompt: &[u32],
    n: usize,
    sampler: Option<&mut Sampler>,
    mut on_token: impl FnMut(u32) -> ControlFlow<()>,
) -> Result<Vec<u32>, EngineError> {
    let samplers = sampler.map(std::slice::from_mut);
    let mut rows = generate_rows(ctx, dec, prompt, n, samplers, |_, t| on_token(t)).await?;
    Ok(rows.swap_remove(0))
}

/// [`generate_picked`] for the decoder's batch of samples at once, each
/// continuing `prompt` with its own sampler (`samplers`: one per sample;
/// `None` is greedy), every pick of every sample in the same submissions.
/// `on_token` sees `(sample, token)`, a step's samples in order; the
/// result holds each sample's tokens.
pub async fn generate_rows(
    ctx: &GpuContext,
    dec: &mut Decoder,
    prompt: &[u32],
    n: usize,
    mut samplers: Option<&mut [Sampler]>,
    mut on_token: impl FnMut(usize, u32) -> ControlFlow<()>,
) -> Result<Vec<Vec<u32>>, EngineError> {
    let (cap, rows) = (dec.capacity(), dec.batch());
    if samplers.as_ref().is_some_and(|s| s.len() != rows) {
        return Err(SampleError::Samples(format!("one sampler per sample ({rows})")).into());
    }
    let start = if prompt.is_empty() {
        vec![0]
    } else {
        prompt.to_vec()
    };
    let mut contexts = vec![start; rows];
    // Tokens the next submission appends before its picks, a step at a time.
    let mut host = steps_of(&contexts, contexts[0].len().saturating_sub(cap));
    dec.reset();
    let mut out = vec![Vec::with_capacity(n); rows];
    let mut in_flight = VecDeque::new();
    let (mut submitted, mut chunk, mut last) = (0, 1, 0);
    while out[0].len() < n {
        while in_flight.len() < CHUNKS_IN_FLIGHT && submitted < n {
            // Host tokens only start a cache, so this never underflows.
            let room = cap - dec.len - (host.len() / rows).saturating_sub(1);
            if room == 0 {
                break;
            }
            let k = chunk.min(n - submitted).min(room);
            let pending = match samplers.as_deref_mut() {
                Some(s) => {
                    let draws: Vec<f32> = (0..k * rows).map(|i| s[i % rows].next_draw()).collect();
                    let params = *s[0].params();
                    dec.submit_picks(ctx, &host, k, Some((&params, &draws)))?
                }
                None => dec.submit_greedy(ctx, &host, k)?,
            };
            in_flight.push_back(pending);
            host.clear();
            submitted += k;
            (last, chunk) = (chunk, (last + chunk).min(GREEDY_CHUNK));
        }
        let Some(read) = in_flight.pop_front() else {
            // The cache is full and every pick is out: the last half window,
            // ending with the newest pick (not in the cache yet).
            dec.reset();
            host = steps_of(&contexts, contexts[0].len() - (cap / 2).max(1));
            continue;
        };
        for (i, pick) in read.finish(ctx).await?.into_iter().enumerate() {
            if let Some((index, value)) = pick.non_finite {
                return Err(SampleError::NonFiniteLogit { index, value }.into());
            }
            let row = i % rows;
            out[row].push(pick.token);
            contexts[row].push(pick.token);
            if on_token(row, pick.token).is_break() {
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// The contexts' tokens from `from` on, a step (every sample's token) at a
/// time: the decoder's host tokens.
fn steps_of(contexts: &[Vec<u32>], from: usize) -> Vec<u32> {
    (from..contexts[0].len())
        .flat_map(|i| contexts.iter().map(move |c| c[i]))
        .collect()
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
    /// waits, so the caller can submit more steps before awaiting these. At
    /// most [`STEP_LOG_CAPACITY`] steps: the GPU's log of losses keeps no
    /// more, and none may be lost.
    pub fn submit_steps(&mut self, batches: &[Batch]) -> Result<StepLogRead, EngineError> {
        Self::check_step_count(batches.len())?;
        let mut reg = self.gpu.registry.borrow_mut();
        for batch in batches {
            self.model.train_step(&self.gpu.ctx, &mut reg, batch)?;
        }
        Ok(self.model.start_step_log_read(&self.gpu.ctx))
    }

    /// Refuses more steps in one [`Self::submit_steps`] than the GPU's log
    /// of losses keeps.
    pub fn check_step_count(n: usize) -> Result<(), EngineError> {
        if n as u64 > STEP_LOG_CAPACITY {
            return Err(crate::GpuError::Shape {
                op: "submit_steps",
                detail: format!(
                    "{n} steps in one submission; at most {STEP_LOG_CAPACITY} are read back at once"
                ),
            }
            .into());
        }
        Ok(())
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
    /// the last half window (amortised O(T) per token). Every pick is made
    /// on the GPU, many tokens per submission ([`generate_picked`]): greedy,
    /// or the seeded sampler's rule with its draws.
    pub async fn generate(
        &mut self,
        prompt: &[u32],
        n: usize,
        params: &SampleParams,
        mut on_token: impl FnMut(u32) -> ControlFlow<()>,
    ) -> Result<Vec<u32>, EngineError> {
        let mut rows = self
            .generate_samples(prompt, n, params, 1, |_, t| on_token(t))
            .await?;
        Ok(rows.swap_remove(0))
    }

    /// [`Self::generate`] of `samples` continuations of `prompt` decoded
    /// together ([`generate_rows`]), sample `i` with the seed of
    /// [`SampleParams::for_sample`]`(i)`; `on_token` sees `(sample, token)`.
    pub async fn generate_samples(
        &mut self,
        prompt: &[u32],
        n: usize,
        params: &SampleParams,
        samples: usize,
        on_token: impl FnMut(usize, u32) -> ControlFlow<()>,
    ) -> Result<Vec<Vec<u32>>, EngineError> {
        tinygpt_protocol::check_num_samples(samples, params.temperature)
            .map_err(SampleError::Samples)?;
        let mut samplers = (0..samples)
            .map(|i| Sampler::new(params.for_sample(i)))
            .collect::<Result<Vec<_>, _>>()?;
        let gpu = self.gpu.clone();
        self.model.prepare_inference(&gpu.ctx).await?;
        let dec = {
            let mut reg = gpu.registry.borrow_mut();
            self.model.decoder_for(&gpu.ctx, &mut reg, samples)?
        };
        let samplers = (!params.is_greedy()).then_some(samplers.as_mut_slice());
        generate_rows(&gpu.ctx, dec, prompt, n, samplers, on_token).await
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
