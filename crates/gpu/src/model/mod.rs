//! `GpuModel`: the GPT of `tinygpt_core` trained and sampled on the GPU.
//!
//! Parameters, gradients and AdamW moments live in flat GPU buffers laid out
//! by [`ParamLayout`]; the tied head reads `tok_emb` directly. Every kernel is
//! bound once per batch shape; a training step is one submission (zero the
//! gradients, forward, backward, gradient norm, AdamW with the schedule and
//! clipping) and never waits on the CPU. The loss is read back only when
//! asked for.

mod acts;
mod builder;
mod decode;
mod f16_cache;
mod graph;

pub use acts::Acts;
pub use decode::{Decoder, DecoderKernels};
pub use f16_cache::F16WeightCache;

use crate::kernel::BoundKernel;
use crate::kernel::Layout;
use crate::ops::adamw::{bind_adamw, decay_mask, AdamWBuffers, OptState, StepScalars};
use crate::ops::dropout::DropoutDesc;
use crate::ops::grad_norm::bind_grad_norm;
use crate::ops::matmul::f16w::F16Storage;
use crate::ops::BoundOp;
use crate::profile::{check_timestamps, DispatchTime, TimedDispatches};
use crate::{GpuContext, GpuError, PipelineRegistry};
use builder::{Builder, Flat};
use tinygpt_core::data::Batch;
use tinygpt_core::{ModelConfig, ParamLayout, TrainConfig};

/// The ops bound for one `B × T` batch shape.
struct Graph {
    acts: Acts,
    /// Forward to the loss and its gradient, then backward.
    train: Vec<BoundOp>,
    /// Forward to the loss only (evaluation).
    eval: Vec<BoundOp>,
    /// Gradient norm, then the schedule and AdamW.
    optimizer: Vec<BoundOp>,
}

/// The model on the GPU.
pub struct GpuModel {
    pub cfg: ModelConfig,
    pub layout: ParamLayout,
    train_cfg: TrainConfig,
    params: wgpu::Buffer,
    grads: wgpu::Buffer,
    adam_m: wgpu::Buffer,
    adam_v: wgpu::Buffer,
    decay_mask: wgpu::Buffer,
    norm: wgpu::Buffer,
    opt_state: wgpu::Buffer,
    scalars: wgpu::Buffer,
    graph: Option<Graph>,
    decoder: Option<Decoder>,
    decoder_kernels: DecoderKernels,
    /// The training graph's kernel layout.
    kernel_layout: Layout,
    fast: FastPaths,
    /// The f16 weight cache, while f16 storage is active.
    f16: Option<F16WeightCache>,
    /// Ring of (loss, gradient norm) per train step, [`STEP_LOG_CAPACITY`]
    /// steps long, filled by the steps' own command buffers.
    step_log: wgpu::Buffer,
    /// Steps logged so far, and steps whose log was already read.
    steps_logged: u64,
    steps_read: u64,
}

/// Steps the loss log holds between two reads.
pub use tinygpt_protocol::memory::STEP_LOG_CAPACITY;

/// Which fast paths are active: what the model binds its kernels from
/// (set by the gates, `crate::gate`, once a path's gate passed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastPaths {
    pub f16_storage: Option<F16Storage>,
}

/// What one train step leaves for the host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepStats {
    /// Mean training loss of the step's batch.
    pub loss: f32,
    /// Global gradient norm before clipping.
    pub grad_norm: f32,
}

/// The logs of the steps since the previous read, on their way to the CPU.
pub struct StepLogRead {
    pending: crate::buffers::PendingRead,
    /// Steps whose logs the ring overwrote before this read (more than
    /// [`STEP_LOG_CAPACITY`] ran since the previous one): `finish` refuses
    /// rather than return losses that belong to other steps.
    skipped: u64,
}

impl StepLogRead {
    /// Waits for these steps only (later submissions keep running).
    pub async fn finish(self, ctx: &GpuContext) -> Result<Vec<StepStats>, GpuError> {
        if self.skipped > 0 {
            return Err(GpuError::Shape {
                op: "step log",
                detail: format!(
                    "{} steps ran before their losses were read: the log keeps the last {STEP_LOG_CAPACITY}",
                    self.skipped
                ),
            });
        }
        let v = self.pending.finish_f32(ctx).await?;
        Ok(v.chunks_exact(2)
            .map(|p| StepStats {
                loss: p[0],
                grad_norm: p[1],
            })
            .collect())
    }
}

impl GpuModel {
    /// Uploads `params` (flat, [`ParamLayout`] order) and optional AdamW
    /// moments resumed at `step` after `updates` applied updates.
    pub fn new(
        ctx: &GpuContext,
        cfg: ModelConfig,
        params: &[f32],
        moments: Option<(&[f32], &[f32])>,
        train_cfg: TrainConfig,
        opt: OptState,
    ) -> Result<Self, GpuError> {
        let layout = ParamLayout::new(&cfg);
        if params.len() != layout.total {
            return Err(GpuError::Shape {
                op: "GpuModel::new",
                detail: format!(
                    "{} parameters given, the config needs {}",
                    params.len(),
                    layout.total
                ),
            });
        }
        let (m, v) = match moments {
            Some((m, v)) => (ctx.upload("adam_m", m)?, ctx.upload("adam_v", v)?),
            None => (
                ctx.zeros("adam_m", layout.total)?,
                ctx.zeros("adam_v", layout.total)?,
            ),
        };
        Ok(Self {
            params: ctx.upload("params", params)?,
            grads: ctx.zeros("grads", layout.total)?,
            adam_m: m,
            adam_v: v,
            decay_mask: ctx
                .upload_bytes("decay_mask", bytemuck::cast_slice(&decay_mask(&layout)))?,
            norm: ctx.zeros("grad_norm", 1)?,
            opt_state: opt.upload(ctx)?,
            scalars: StepScalars::buffer(ctx)?,
            cfg,
            layout,
            train_cfg,
            graph: None,
            decoder: None,
            decoder_kernels: DecoderKernels::for_device(ctx),
            kernel_layout: Layout::for_device(ctx),
            fast: FastPaths::default(),
            f16: None,
            step_log: ctx.zeros("step_log", (2 * STEP_LOG_CAPACITY) as usize)?,
            steps_logged: 0,
            steps_read: 0,
        })
    }

    /// The fast paths this model binds its kernels with.
    pub fn fast_paths(&self) -> FastPaths {
        self.fast
    }

    /// Switches fast paths (only ones whose gate passed); every bound graph
    /// is rebound on next use.
    pub fn set_fast_paths(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        fast: FastPaths,
    ) -> Result<(), GpuError> {
        if fast == self.fast {
            return Ok(());
        }
        self.graph = None;
        self.decoder = None;
        self.f16 = fast
            .f16_storage
            .map(|cfg| F16WeightCache::new(ctx, reg, cfg, &self.params, self.layout.total))
            .transpose()?;
        self.fast = fast;
        Ok(())
    }

    /// The f16 weights for the training graph: only when the GPU packs,
    /// since a step must repack inside its own submission.
    fn train_f16(&self) -> Option<&F16WeightCache> {
        self.f16.as_ref().filter(|c| c.packs_on_gpu())
    }

    /// Brings the f16 weights up to date for sampling (see
    /// [`F16WeightCache::refresh`]).
    pub async fn prepare_inference(&mut self, ctx: &GpuContext) -> Result<(), GpuError> {
        match &mut self.f16 {
            Some(cache) => cache.refresh(ctx, &self.params, self.layout.total).await,
            None => Ok(()),
        }
    }

    pub fn params_buffer(&self) -> &wgpu::Buffer {
        &self.params
    }

    /// Bytes this model holds on the GPU now (parameter state plus any
    /// bound training graph).
    pub fn memory_bytes(&self) -> u64 {
        let (b, t) = self.graph.as_ref().map_or((0, 0), |g| (g.acts.b, g.acts.t));
        let plan = tinygpt_protocol::training_memory(&self.cfg, b, t);
        let acts = if b == 0 { 0 } else { plan.activation_bytes };
        plan.state_bytes + acts
    }

    /// Binds (once per shape) the training graph for `B × T` batches.
    fn graph(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        b: usize,
        t: usize,
    ) -> Result<&Graph, GpuError> {
        let stale = self
            .graph
            .as_ref()
            .is_none_or(|g| g.acts.b != b || g.acts.t != t);
        if stale {
            self.graph = None;
            let acts = Acts::new(ctx, &self.cfg, b, t)?;
            let params = Flat {
                buffer: &self.params,
                layout: &self.layout,
            };
            let grads = Flat {
                buffer: &self.grads,
                layout: &self.layout,
            };
            let dropout = (self.train_cfg.dropout > 0.0).then_some(DropoutDesc {
                p: self.train_cfg.dropout,
                seed: self.train_cfg.seed,
                state: &self.opt_state,
            });
            let (f16, layout) = (self.train_f16(), self.kernel_layout);
            let mut g = Builder::new(ctx, reg, &self.cfg, params, layout, f16, dropout, &acts);
            graph::forward(&mut g, &acts, true)?;
            g.backward(grads)?;
            graph::backward(&mut g, &acts)?;
            let train = std::mem::take(&mut g.ops);
            g.dropout = None;
            graph::forward(&mut g, &acts, false)?;
            let eval = g.ops;
            let optimizer = self.bind_optimizer(ctx, reg)?;
            self.graph = Some(Graph {
                acts,
                train,
                eval,
                optimizer,
            });
        }
        Ok(self.graph.as_ref().expect("bound above"))
    }

    fn bind_optimizer(
        &self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
    ) -> Result<Vec<BoundOp>, GpuError> {
        let n = self.layout.total as u32;
        let norm = bind_grad_norm(ctx, reg, self.kernel_layout, n, &self.grads, &self.norm)?;
        let adam = bind_adamw(
            ctx,
            reg,
            &self.train_cfg,
            n,
            AdamWBuffers {
                params: &self.params,
                grads: &self.grads,
                m: &self.adam_m,
                v: &self.adam_v,
                decay_mask: &self.decay_mask,
                norm: &self.norm,
                state: &self.opt_state,
                scalars: &self.scalars,
            },
        )?;
        Ok(vec![norm, adam])
    }

    /// Changes the schedule (e.g. a run extended by "continue").
    pub fn set_train_config(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        cfg: TrainConfig,
    ) -> Result<(), GpuError> {
        // The training graph binds the dropout rate and seed: rebind it on
        // its next step if they change.
        if (cfg.dropout, cfg.seed) != (self.train_cfg.dropout, self.train_cfg.seed) {
            self.graph = None;
        }
        self.train_cfg = cfg;
        if self.graph.is_some() {
            let optimizer = self.bind_optimizer(ctx, reg)?;
            if let Some(g) = &mut self.graph {
                g.optimizer = optimizer;
            }
        }
        Ok(())
    }

    fn write_batch(ctx: &GpuContext, acts: &Acts, batch: &Batch) {
        ctx.queue
            .write_buffer(&acts.inputs, 0, bytemuck::cast_slice(&batch.inputs));
        ctx.queue
            .write_buffer(&acts.targets, 0, bytemuck::cast_slice(&batch.targets));
    }

    /// Checks and uploads `batch`, binds its graph if needed, and records a
    /// step into a new encoder: the gradients cleared, then `record` given
    /// every dispatch in order (a stale f16 repack first, the forward and
    /// backward, and with `optimizer` the gradient norm and AdamW).
    fn encode_step<R>(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batch: &Batch,
        optimizer: bool,
        record: impl FnOnce(&mut wgpu::CommandEncoder, &[&BoundKernel]) -> Result<R, GpuError>,
    ) -> Result<(wgpu::CommandEncoder, R), GpuError> {
        self.check_batch(batch)?;
        self.graph(ctx, reg, batch.batch_size, batch.seq_len)?;
        // This step's forward reads the weights as they are now; its AdamW
        // changes them, which is where the f16 cache goes stale.
        let repack = self.f16.as_mut().and_then(F16WeightCache::take_repack);
        let g = self.graph.as_ref().expect("bound");
        Self::write_batch(ctx, &g.acts, batch);
        let opt: &[BoundOp] = if optimizer { &g.optimizer } else { &[] };
        let kernels: Vec<&BoundKernel> = repack
            .into_iter()
            .chain(g.train.iter().chain(opt).flat_map(|op| &op.kernels))
            .collect();
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("train_step"),
            });
        enc.clear_buffer(&self.grads, 0, None);
        let out = record(&mut enc, &kernels)?;
        if optimizer {
            if let Some(cache) = &mut self.f16 {
                cache.invalidate();
            }
        }
        Ok((enc, out))
    }

    /// Records and submits one training step on `batch`; nothing waits.
    /// The step's mean loss is left in the loss buffer for [`Self::read_loss`].
    pub fn train_step(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batch: &Batch,
    ) -> Result<(), GpuError> {
        let (mut enc, ()) = self.encode_step(ctx, reg, batch, true, |enc, kernels| {
            crate::kernel::record_pass(enc, "train_step", kernels);
            Ok(())
        })?;
        // The step's loss and gradient norm into the step log, read back
        // later without stalling (see `start_step_log_read`).
        let g = self.graph.as_ref().expect("bound by encode_step");
        let slot = (self.steps_logged % STEP_LOG_CAPACITY) * 8;
        enc.copy_buffer_to_buffer(&g.acts.loss, 0, &self.step_log, slot, 4);
        enc.copy_buffer_to_buffer(&self.norm, 0, &self.step_log, slot + 4, 4);
        self.steps_logged += 1;
        ctx.queue.submit([enc.finish()]);
        Ok(())
    }

    /// Starts reading the [`StepStats`] of every train step submitted since
    /// the previous read, without waiting: steps submitted afterwards keep
    /// the GPU busy while these values travel.
    pub fn start_step_log_read(&mut self, ctx: &GpuContext) -> StepLogRead {
        let skipped = (self.steps_logged - self.steps_read).saturating_sub(STEP_LOG_CAPACITY);
        let first = self.steps_read + skipped;
        let count = self.steps_logged - first;
        self.steps_read = self.steps_logged;
        let start = first % STEP_LOG_CAPACITY;
        let head = count.min(STEP_LOG_CAPACITY - start);
        let mut ranges = vec![(&self.step_log, start * 8, head * 8)];
        if count > head {
            ranges.push((&self.step_log, 0, (count - head) * 8));
        }
        StepLogRead {
            pending: ctx.start_read(&ranges),
            skipped,
        }
    }

    /// One training step exactly as [`Self::train_step`] runs it, but each
    /// dispatch in its own timestamped pass; waits and returns the GPU time
    /// of every dispatch in order. Needs `TIMESTAMP_QUERY`.
    pub async fn profile_train_step(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batch: &Batch,
    ) -> Result<Vec<DispatchTime>, GpuError> {
        check_timestamps(ctx)?;
        let (enc, timed) = self.encode_step(ctx, reg, batch, true, |enc, kernels| {
            TimedDispatches::record(ctx, enc, kernels)
        })?;
        ctx.queue.submit([enc.finish()]);
        timed.read(ctx).await
    }

    /// Forward and backward only (no optimizer): the gradients stay in the
    /// gradient buffer, for parity tests against the CPU reference.
    pub fn forward_backward(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batch: &Batch,
    ) -> Result<(), GpuError> {
        let (enc, ()) = self.encode_step(ctx, reg, batch, false, |enc, kernels| {
            crate::kernel::record_pass(enc, "forward_backward", kernels);
            Ok(())
        })?;
        ctx.queue.submit([enc.finish()]);
        Ok(())
    }

    /// Mean loss of the last step or evaluation (waits for it).
    pub async fn read_loss(&self, ctx: &GpuContext) -> Result<f32, GpuError> {
        let g = self.graph.as_ref().ok_or_else(|| GpuError::Shape {
            op: "read_loss",
            detail: "no step has run yet".into(),
        })?;
        Ok(ctx.read_f32(&g.acts.loss, 1).await?[0])
    }

    /// Submits a forward pass per batch, each mean loss copied into the
    /// returned buffer (one f32 per batch); nothing waits.
    pub fn submit_eval(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batches: &[Batch],
    ) -> Result<wgpu::Buffer, GpuError> {
        let losses = ctx.zeros("eval_losses", batches.len())?;
        let Some(first) = batches.first() else {
            return Ok(losses);
        };
        self.graph(ctx, reg, first.batch_size, first.seq_len)?;
        if let Some(k) = self.f16.as_mut().and_then(F16WeightCache::take_repack) {
            crate::kernel::submit(ctx, "repack_f16", &[k]);
        }
        let g = self.graph.as_ref().expect("bound");
        for (i, batch) in batches.iter().enumerate() {
            self.check_batch(batch)?;
            if (batch.batch_size, batch.seq_len) != (g.acts.b, g.acts.t) {
                return Err(GpuError::Shape {
                    op: "eval",
                    detail: "every evaluation batch must have the same shape".into(),
                });
            }
            Self::write_batch(ctx, &g.acts, batch);
            let mut enc = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("eval"),
                });
            {
                let mut pass = enc.begin_compute_pass(&Default::default());
                for op in &g.eval {
                    op.record(&mut pass);
                }
            }
            enc.copy_buffer_to_buffer(&g.acts.loss, 0, &losses, (i * 4) as u64, 4);
            ctx.queue.submit([enc.finish()]);
        }
        Ok(losses)
    }

    /// Mean loss over `batches` without training (one read-back).
    pub async fn eval_loss(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batches: &[Batch],
    ) -> Result<f32, GpuError> {
        let losses = self.submit_eval(ctx, reg, batches)?;
        let values = ctx.read_f32(&losses, batches.len()).await?;
        Ok((values.iter().map(|&x| x as f64).sum::<f64>() / values.len().max(1) as f64) as f32)
    }

    fn check_batch(&self, batch: &Batch) -> Result<(), GpuError> {
        let n = batch.batch_size * batch.seq_len;
        let v = self.cfg.vocab_size as u32;
        if batch.seq_len == 0
            || batch.seq_len > self.cfg.block_size
            || batch.inputs.len() != n
            || batch.targets.len() != n
        {
            return Err(GpuError::Shape {
                op: "batch",
                detail: format!(
                    "{}×{} batch for block_size {}",
                    batch.batch_size, batch.seq_len, self.cfg.block_size
                ),
            });
        }
        if let Some(&bad) = batch.inputs.iter().chain(&batch.targets).find(|&&x| x >= v) {
            return Err(GpuError::Shape {
                op: "batch",
                detail: format!("token {bad} outside the vocabulary of {v}"),
            });
        }
        Ok(())
    }

    /// The parameters, read back.
    pub async fn read_params(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        ctx.read_f32(&self.params, self.layout.total).await
    }

    /// The gradients of the last step, read back.
    pub async fn read_grads(&self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        ctx.read_f32(&self.grads, self.layout.total).await
    }

    /// AdamW moments and the optimiser counters, read back.
    pub async fn read_optimizer(
        &self,
        ctx: &GpuContext,
    ) -> Result<(Vec<f32>, Vec<f32>, OptState), GpuError> {
        let m = ctx.read_f32(&self.adam_m, self.layout.total).await?;
        let v = ctx.read_f32(&self.adam_v, self.layout.total).await?;
        let state = OptState::from_bytes(
            &ctx.read_bytes(&self.opt_state, crate::ops::adamw::OPT_STATE_BYTES)
                .await?,
        );
        Ok((m, v, state))
    }

    /// How the training graph's kernels lay out their work (by default
    /// [`Layout::for_device`]); the graph is rebound on next use.
    pub fn set_kernel_layout(&mut self, layout: Layout) {
        if layout != self.kernel_layout {
            self.kernel_layout = layout;
            self.graph = None;
        }
    }

    /// How the decoder lays out its LayerNorms and GEMVs (by default
    /// [`DecoderKernels::for_device`]); the decoder is rebound on next use.
    pub fn set_decoder_kernels(&mut self, kernels: DecoderKernels) {
        if kernels != self.decoder_kernels {
            self.decoder_kernels = kernels;
            self.decoder = None;
        }
    }

    /// The KV-cache decoder, bound on first use. With f16 storage active
    /// the packed weights must be current: a GPU repack is submitted here;
    /// CPU packing needs [`Self::prepare_inference`] first.
    pub fn decoder(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
    ) -> Result<&mut Decoder, GpuError> {
        if let Some(cache) = &mut self.f16 {
            if let Some(k) = cache.take_repack() {
                crate::kernel::submit(ctx, "repack_f16", &[k]);
            } else if !cache.is_fresh() {
                return Err(GpuError::Shape {
                    op: "decoder",
                    detail: "the f16 weight copy is stale: call prepare_inference first".into(),
                });
            }
        }
        if self.decoder.is_none() {
            self.decoder = Some(Decoder::new(
                ctx,
                reg,
                &self.cfg,
                &Flat {
                    buffer: &self.params,
                    layout: &self.layout,
                },
                self.f16.as_ref(),
                self.decoder_kernels,
            )?);
        }
        Ok(self.decoder.as_mut().expect("bound above"))
    }
}
