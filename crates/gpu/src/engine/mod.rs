//! The engine facade the worker and the CLI drive: one training session on
//! either backend (the GPU model, or the CPU reference when there is no GPU),
//! with its data, schedule, evaluation, sampling and checkpoints.

mod cpu;
mod error;
mod gpu;
mod inspect;
pub mod live;
pub mod run;

pub use cpu::CpuTrainer;
pub use error::EngineError;
pub use gpu::{generate_greedy, generate_picked, generate_rows, Gpu, GpuTrainer, GREEDY_CHUNK};
use std::rc::Rc;

use crate::model::{StepLogRead, StepStats};
use crate::profile::DispatchTime;
use crate::GpuError;
use std::future::Future;
use std::ops::ControlFlow;
use tinygpt_core::checkpoint::{self, Checkpoint, WeightDtype};
use tinygpt_core::data::{BatchSampler, Dataset, Vocab};
use tinygpt_core::optim::lr_at;
use tinygpt_core::sample::{SampleError, SampleParams, Sampler};
use tinygpt_core::{ModelConfig, TrainConfig};

/// Seed offset of the validation sampler: every evaluation draws the same
/// windows, so successive validation losses are comparable.
const VAL_SEED_OFFSET: u64 = 0x5EED_0F7A;

/// Steps started by [`Session::submit_steps`], not yet read.
pub struct StepsInFlight {
    first_step: usize,
    inner: InFlight,
}

impl StepsInFlight {
    /// Index of the first of these steps.
    pub fn first_step(&self) -> usize {
        self.first_step
    }
}

enum InFlight {
    Done(Vec<StepStats>),
    Gpu(StepLogRead),
}

/// GPU steps submitted back to back, with one read of their losses.
pub const GPU_STEPS_PER_CALL: usize = 8;

/// The model and optimiser state of one backend.
pub enum Backend {
    Cpu(CpuTrainer),
    Gpu(Box<GpuTrainer>),
}

/// One model with what it needs to train, evaluate and sample.
pub struct Session {
    pub config: ModelConfig,
    pub train: TrainConfig,
    pub vocab: Vocab,
    /// Optimiser steps taken so far.
    pub step: usize,
    /// Where the model came from (preset run, file name, bundled).
    pub source: String,
    data: Option<Dataset>,
    sampler: BatchSampler,
    backend: Backend,
}

impl Session {
    /// A fresh model on `data`, initialised from `train.seed`, on the GPU
    /// when one is given, else on the CPU reference.
    pub fn new(
        config: ModelConfig,
        train: TrainConfig,
        data: Dataset,
        source: String,
        gpu: Option<Rc<Gpu>>,
    ) -> Result<Self, EngineError> {
        config.validate()?;
        train.validate(&config)?;
        if data.vocab.len() != config.vocab_size {
            return Err(EngineError::VocabMismatch {
                corpus: data.vocab.len(),
                model: config.vocab_size,
            });
        }
        let backend = match gpu {
            Some(gpu) => Backend::Gpu(Box::new(GpuTrainer::new(gpu, config, train)?)),
            None => Backend::Cpu(CpuTrainer::new(config, train.seed)?),
        };
        Ok(Self {
            config,
            train,
            vocab: data.vocab.clone(),
            step: 0,
            source,
            sampler: BatchSampler::new(train.seed),
            data: Some(data),
            backend,
        })
    }

    /// A session holding a loaded checkpoint (no data until one is attached).
    pub fn from_checkpoint(
        ckpt: Checkpoint,
        source: String,
        gpu: Option<Rc<Gpu>>,
    ) -> Result<Self, EngineError> {
        let vocab = Vocab::from_chars(ckpt.vocab.clone())?;
        let mut train = ckpt.train_config.unwrap_or_default();
        train.seq_len = train.seq_len.min(ckpt.config.block_size);
        train.validate(&ckpt.config)?;
        let step = ckpt.step as usize;
        let backend = match gpu {
            Some(gpu) => Backend::Gpu(Box::new(GpuTrainer::from_checkpoint(gpu, &ckpt, train)?)),
            None => Backend::Cpu(CpuTrainer::from_checkpoint(&ckpt)?),
        };
        Ok(Self {
            config: ckpt.config,
            train,
            vocab,
            step,
            source,
            sampler: BatchSampler::new(train.seed.wrapping_add(step as u64)),
            data: None,
            backend,
        })
    }

    /// Attaches a corpus so a loaded model can continue training. The corpus
    /// must use exactly the model's vocabulary.
    pub fn attach_data(&mut self, data: Dataset) -> Result<(), EngineError> {
        if data.vocab != self.vocab {
            return Err(EngineError::VocabMismatch {
                corpus: data.vocab.len(),
                model: self.vocab.len(),
            });
        }
        self.data = Some(data);
        Ok(())
    }

    /// Where the training-batch stream is, for an exact resume.
    pub fn sampler_state(&self) -> [u64; 4] {
        self.sampler.state()
    }

    /// Resumes the training-batch stream saved by [`Self::sampler_state`].
    pub fn set_sampler_state(&mut self, state: [u64; 4]) {
        self.sampler = BatchSampler::from_state(state);
    }

    /// Test hook of the browser's non-finite test: a NaN in the final
    /// LayerNorm's weight makes every row's loss NaN on the next step.
    pub fn poison_weights_for_test(&mut self) {
        let layout = tinygpt_core::ParamLayout::new(&self.config);
        let i = layout
            .get(tinygpt_core::params::ParamKind::LnfW)
            .range()
            .start;
        match &mut self.backend {
            Backend::Cpu(tr) => tr.model.params[i] = f32::NAN,
            Backend::Gpu(tr) => tr.gpu.ctx.queue.write_buffer(
                tr.model.params_buffer(),
                (i * 4) as u64,
                &f32::NAN.to_le_bytes(),
            ),
        }
    }

    /// Takes one training step with every dispatch in its own timestamped
    /// pass and returns the GPU time of each (the browser's profile hook;
    /// `tinygpt bench --profile` natively). Needs `TIMESTAMP_QUERY`.
    pub async fn profile_step(&mut self) -> Result<Vec<DispatchTime>, EngineError> {
        let data = self.data.as_ref().ok_or(EngineError::NoData)?;
        let Backend::Gpu(tr) = &mut self.backend else {
            return Err(GpuError::Shape {
                op: "profile_step",
                detail: "the model trains on the CPU, not on a GPU".into(),
            }
            .into());
        };
        let (b, t) = (self.train.batch_size, self.train.seq_len);
        let batch = self.sampler.try_next_batch(&data.train, b, t)?;
        // Moved out for the await (a RefCell guard must not cross one).
        let mut reg = std::mem::take(&mut *tr.gpu.registry.borrow_mut());
        let times = tr
            .model
            .profile_train_step(&tr.gpu.ctx, &mut reg, &batch)
            .await;
        *tr.gpu.registry.borrow_mut() = reg;
        let times = times?;
        self.step += 1;
        Ok(times)
    }

    pub fn has_data(&self) -> bool {
        self.data.is_some()
    }

    /// `"webgpu"` or `"cpu"`.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Cpu(_) => "cpu",
            Backend::Gpu(_) => "webgpu",
        }
    }

    /// Steps worth submitting back to back before reading their losses:
    /// a GPU queues [`GPU_STEPS_PER_CALL`] behind one read, the CPU computes
    /// each step as it is asked for.
    pub fn steps_per_call(&self) -> usize {
        match self.backend {
            Backend::Cpu(_) => 1,
            Backend::Gpu(_) => GPU_STEPS_PER_CALL,
        }
    }

    /// Bytes the model and its training state occupy on the backend.
    pub fn memory_bytes(&self) -> u64 {
        match &self.backend {
            Backend::Cpu(t) => t.memory_bytes(),
            Backend::Gpu(t) => t.model.memory_bytes(),
        }
    }

    /// Rebinds a GPU model with its device's current fast paths.
    pub fn apply_fast_paths(&mut self) -> Result<(), EngineError> {
        match &mut self.backend {
            Backend::Gpu(t) => t.apply_fast_paths(),
            Backend::Cpu(_) => Ok(()),
        }
    }

    /// The GPU trainer, when this session runs on the GPU.
    pub fn gpu_trainer(&mut self) -> Option<&mut GpuTrainer> {
        match &mut self.backend {
            Backend::Gpu(t) => Some(t),
            Backend::Cpu(_) => None,
        }
    }

    /// Learning rate of the next step.
    pub fn lr(&self) -> f32 {
        lr_at(self.step, &self.train)
    }

    /// Makes the schedule end at `steps` (a run extended by "continue").
    pub fn set_total_steps(&mut self, steps: usize) -> Result<(), EngineError> {
        self.train.steps = steps;
        if let Backend::Gpu(tr) = &mut self.backend {
            tr.set_train_config(self.train)?;
        }
        Ok(())
    }

    /// Starts `n` optimiser steps. On the GPU they are submitted back to back
    /// with a read of their losses queued behind them, and nothing waits: the
    /// caller may submit the next steps before awaiting these, so the GPU
    /// never idles on a read-back. The CPU reference runs them here.
    pub fn submit_steps(&mut self, n: usize) -> Result<StepsInFlight, EngineError> {
        let data = self.data.as_ref().ok_or(EngineError::NoData)?;
        let (b, t) = (self.train.batch_size, self.train.seq_len);
        let first_step = self.step;
        let inner = match &mut self.backend {
            Backend::Cpu(tr) => {
                let mut stats = Vec::with_capacity(n);
                for _ in 0..n {
                    let batch = self.sampler.try_next_batch(&data.train, b, t)?;
                    let s = tr.step(&batch, &self.train, self.step)?;
                    stats.push(s);
                    self.step += 1;
                    if !s.loss.is_finite() || !s.grad_norm.is_finite() {
                        break;
                    }
                }
                InFlight::Done(stats)
            }
            Backend::Gpu(tr) => {
                // Refused before a batch is drawn: the batch stream is untouched.
                GpuTrainer::check_step_count(n)?;
                let batches = (0..n)
                    .map(|_| self.sampler.try_next_batch(&data.train, b, t))
                    .collect::<Result<Vec<_>, _>>()?;
                let read = tr.submit_steps(&batches)?;
                self.step += n;
                InFlight::Gpu(read)
            }
        };
        Ok(StepsInFlight { first_step, inner })
    }

    /// Waits for steps started by [`Self::submit_steps`] and returns their
    /// losses. A non-finite loss or gradient norm is an error naming the
    /// step; that step's update was not applied (both backends skip it).
    pub async fn finish_steps(&self, steps: StepsInFlight) -> Result<Vec<StepStats>, EngineError> {
        let stats = match (steps.inner, &self.backend) {
            (InFlight::Done(s), _) => s,
            (InFlight::Gpu(read), Backend::Gpu(tr)) => tr.finish_steps(read).await?,
            (InFlight::Gpu(_), Backend::Cpu(_)) => unreachable!("GPU steps on a CPU session"),
        };
        if let Some(i) = stats
            .iter()
            .position(|s| !s.loss.is_finite() || !s.grad_norm.is_finite())
        {
            return Err(EngineError::NonFinite {
                step: steps.first_step + i,
                loss: stats[i].loss,
                grad_norm: stats[i].grad_norm,
            });
        }
        Ok(stats)
    }

    /// Runs `n` optimiser steps and returns the training loss of the last.
    pub async fn train_steps(&mut self, n: usize) -> Result<f32, EngineError> {
        Ok(self
            .train_losses(n)
            .await?
            .last()
            .copied()
            .unwrap_or(f32::NAN))
    }

    /// Runs `n` optimiser steps and returns every step's training loss.
    pub async fn train_losses(&mut self, n: usize) -> Result<Vec<f32>, EngineError> {
        let mut losses = Vec::with_capacity(n);
        // In groups the GPU's loss log holds, so that every loss is read.
        while losses.len() < n {
            let k = (n - losses.len()).min(crate::model::STEP_LOG_CAPACITY as usize);
            let steps = self.submit_steps(k)?;
            let stats = self.finish_steps(steps).await?;
            losses.extend(stats.iter().map(|s| s.loss));
        }
        Ok(losses)
    }

    /// Mean loss over `train.eval_batches` fixed validation windows.
    pub async fn eval_loss(&mut self) -> Result<f32, EngineError> {
        let data = self.data.as_ref().ok_or(EngineError::NoData)?;
        let (b, t) = (self.train.batch_size, self.train.seq_len);
        let mut sampler = BatchSampler::new(self.train.seed ^ VAL_SEED_OFFSET);
        let tokens = if data.val.is_empty() {
            &data.train
        } else {
            &data.val
        };
        let batches = (0..self.train.eval_batches)
            .map(|_| sampler.try_next_batch(tokens, b, t))
            .collect::<Result<Vec<_>, _>>()?;
        match &mut self.backend {
            Backend::Cpu(tr) => {
                let total = batches
                    .iter()
                    .map(|batch| tr.loss(batch).map(f64::from))
                    .sum::<Result<f64, _>>()?;
                Ok((total / batches.len() as f64) as f32)
            }
            Backend::Gpu(tr) => tr.eval(&batches).await,
        }
    }

    /// Encodes `prompt` (a clear error names an unknown character) and
    /// generates up to `n` characters, streaming each through `on_text`,
    /// which stops generation by returning `Break`. The CPU reference awaits
    /// `tick()` after every token (the worker yields to its event loop there,
    /// so a Stop message can arrive); the GPU path already awaits each
    /// read-back (per token, or per chunk of greedy tokens).
    pub async fn generate<F: Future<Output = ()>>(
        &mut self,
        prompt: &str,
        n: usize,
        params: &SampleParams,
        mut on_text: impl FnMut(&str) -> ControlFlow<()>,
        tick: impl FnMut() -> F,
    ) -> Result<String, EngineError> {
        let on_text = |_: usize, text: &str| on_text(text);
        let mut texts = self
            .generate_samples(prompt, n, params, 1, on_text, tick)
            .await?;
        Ok(texts.swap_remove(0))
    }

    /// [`Self::generate`] of `samples` continuations of `prompt`, sample `i`
    /// drawing with [`SampleParams::for_sample`]`(i)` (its text is the one
    /// a single sample of seed `seed + i` gives); `on_text` sees
    /// `(sample, text)`. On the GPU the samples decode together (one
    /// dispatch per op for all of them); the CPU reference runs them in
    /// turn.
    pub async fn generate_samples<F: Future<Output = ()>>(
        &mut self,
        prompt: &str,
        n: usize,
        params: &SampleParams,
        samples: usize,
        mut on_text: impl FnMut(usize, &str) -> ControlFlow<()>,
        mut tick: impl FnMut() -> F,
    ) -> Result<Vec<String>, EngineError> {
        params.validate()?;
        tinygpt_protocol::check_num_samples(samples, params.temperature)
            .map_err(SampleError::Samples)?;
        let ids = self.vocab.encode(prompt)?;
        let vocab = &self.vocab;
        let mut buf = String::new();
        let mut emit = |row: usize, id: u32| {
            buf.clear();
            buf.push_str(&vocab.decode(&[id]));
            on_text(row, &buf)
        };
        let rows = match &mut self.backend {
            Backend::Cpu(tr) => {
                let mut rows = Vec::with_capacity(samples);
                for row in 0..samples {
                    let mut sampler = Sampler::new(params.for_sample(row))?;
                    let block = self.config.block_size;
                    let mut context = if ids.is_empty() { vec![0] } else { ids.clone() };
                    let mut out = Vec::with_capacity(n);
                    for _ in 0..n {
                        let start = context.len().saturating_sub(block);
                        let next = sampler.sample(&tr.model.logits_last(&context[start..])?)?;
                        out.push(next);
                        context.push(next);
                        if emit(row, next).is_break() {
                            rows.push(out);
                            return Ok(rows.iter().map(|r| self.vocab.decode(r)).collect());
                        }
                        tick().await;
                    }
                    rows.push(out);
                }
                rows
            }
            Backend::Gpu(tr) => {
                tr.generate_samples(&ids, n, params, samples, &mut emit)
                    .await?
            }
        };
        Ok(rows.iter().map(|r| self.vocab.decode(r)).collect())
    }

    /// The whole state as a checkpoint (f32 weights plus AdamW moments).
    pub async fn checkpoint(&self) -> Result<Checkpoint, EngineError> {
        let (params, adam) = match &self.backend {
            Backend::Cpu(tr) => (tr.model.params.clone(), tr.moments()),
            Backend::Gpu(tr) => (tr.params().await?, tr.moments().await?),
        };
        Ok(Checkpoint {
            config: self.config,
            vocab: self.vocab.chars().to_vec(),
            step: self.step as u64,
            params,
            adam: Some(adam),
            train_config: Some(self.train),
            extra: Default::default(),
        })
    }

    /// The serialized checkpoint.
    pub async fn save(&self, dtype: WeightDtype) -> Result<Vec<u8>, EngineError> {
        Ok(checkpoint::save(&self.checkpoint().await?, dtype)?)
    }
}
