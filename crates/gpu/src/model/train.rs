//! Training on the GPU: the graph bound once per batch shape, a step
//! recorded into one submission, and the step log its losses travel in.

use super::builder::{Builder, Flat};
use super::gpu_model::{GpuModel, Graph};
use super::{graph, Acts, F16WeightCache};
use crate::kernel::BoundKernel;
use crate::ops::adamw::{bind_adamw, AdamWBuffers};
use crate::ops::dropout::DropoutDesc;
use crate::ops::grad_norm::bind_grad_norm;
use crate::ops::BoundOp;
use crate::profile::{check_timestamps, DispatchTime, TimedDispatches};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::data::Batch;
use tinygpt_core::TrainConfig;
/// Steps the loss log holds between two reads.
pub use tinygpt_protocol::memory::STEP_LOG_CAPACITY;

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
    /// Binds (once per shape) the training graph for `B × T` batches.
    pub(super) fn graph(
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
            g.coop = self.fast.coop_matrix;
            g.coop_attention = self.fast.coop_attention;
            g.make_scratch()?;
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

    /// Runs the forward of one `batch` as inference runs it: with the f16
    /// cache wherever one is active — bring it up to date first
    /// ([`GpuModel::prepare_inference`]) — also where the GPU does not
    /// pack, whose training graph stays f32 (the evaluation ops would read
    /// a cache that training left stale). Activations stay in the graph's
    /// buffers for the caller to read.
    pub(super) fn submit_inference_forward(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batch: &tinygpt_core::data::Batch,
    ) -> Result<(), GpuError> {
        self.check_batch(batch)?;
        self.graph(ctx, reg, batch.batch_size, batch.seq_len)?;
        let g = self.graph.as_ref().expect("bound above");
        let f16 = self.f16.as_ref().filter(|c| c.is_fresh());
        let params = Flat {
            buffer: &self.params,
            layout: &self.layout,
        };
        let acts = &g.acts;
        let mut b = Builder::new(
            ctx,
            reg,
            &self.cfg,
            params,
            self.kernel_layout,
            f16,
            None,
            acts,
        );
        b.coop = self.fast.coop_matrix;
        b.coop_attention = self.fast.coop_attention;
        graph::forward(&mut b, acts, false)?;
        Self::write_batch(ctx, acts, batch);
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("inference_forward"),
            });
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            for op in &b.ops {
                op.record(&mut pass);
            }
        }
        ctx.queue.submit([enc.finish()]);
        Ok(())
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

    pub(super) fn write_batch(ctx: &GpuContext, acts: &Acts, batch: &Batch) {
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

    pub(super) fn check_batch(&self, batch: &Batch) -> Result<(), GpuError> {
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
}
