//! [`GpuModel`]: its buffers, fast paths, evaluation, read-backs and
//! decoder (training is `train.rs`).

use super::builder::Flat;
use super::f16_cache::CacheReaders;
use super::{Acts, Decoder, DecoderKernels, F16WeightCache};
use crate::kernel::Layout;
use crate::ops::adamw::{decay_mask, OptState, StepScalars};
use crate::ops::matmul::f16c::F16Compute;
use crate::ops::matmul::f16w::F16Storage;
use crate::ops::BoundOp;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::data::Batch;
use tinygpt_core::{ModelConfig, ParamLayout, TrainConfig};
use tinygpt_protocol::memory::STEP_LOG_CAPACITY;

/// The ops bound for one `B × T` batch shape.
pub(super) struct Graph {
    pub(super) acts: Acts,
    /// Forward to the loss and its gradient, then backward.
    pub(super) train: Vec<BoundOp>,
    /// Forward to the loss only (evaluation).
    pub(super) eval: Vec<BoundOp>,
    /// Gradient norm, then the schedule and AdamW.
    pub(super) optimizer: Vec<BoundOp>,
}

/// The model on the GPU.
pub struct GpuModel {
    pub cfg: ModelConfig,
    pub layout: ParamLayout,
    pub(super) train_cfg: TrainConfig,
    pub(super) params: wgpu::Buffer,
    pub(super) grads: wgpu::Buffer,
    pub(super) adam_m: wgpu::Buffer,
    pub(super) adam_v: wgpu::Buffer,
    pub(super) decay_mask: wgpu::Buffer,
    pub(super) norm: wgpu::Buffer,
    pub(super) opt_state: wgpu::Buffer,
    pub(super) scalars: wgpu::Buffer,
    pub(super) graph: Option<Graph>,
    pub(super) decoder: Option<Decoder>,
    /// The decoder's layout as set ([`Self::set_decoder_kernels`]); none:
    /// the device's, preferred for the model's shape
    /// ([`DecoderKernels::preferred_for`]).
    pub(super) decoder_kernels: Option<DecoderKernels>,
    /// The training graph's kernel layout.
    pub(super) kernel_layout: Layout,
    pub(super) fast: FastPaths,
    /// The f16 weight cache, while f16 storage is active.
    pub(super) f16: Option<F16WeightCache>,
    /// Ring of (loss, gradient norm) per train step, [`STEP_LOG_CAPACITY`]
    /// steps long, filled by the steps' own command buffers.
    pub(super) step_log: wgpu::Buffer,
    /// Steps logged so far, and steps whose log was already read.
    pub(super) steps_logged: u64,
    pub(super) steps_read: u64,
}

/// What one forward linear of one layer reads ([`GpuModel::linear_inputs`]).
pub struct LinearInput {
    pub layer: usize,
    /// The linear's weight `(d_out, d_in)` and bias kinds.
    pub w: tinygpt_core::ParamKind,
    pub b: tinygpt_core::ParamKind,
    pub d_in: usize,
    /// `(T, d_in)` input rows.
    pub rows: Vec<f32>,
}

/// Which fast paths are active: what the model binds its kernels from
/// (set by the gates, `crate::gate`, once a path's gate passed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastPaths {
    pub f16_storage: Option<F16Storage>,
    pub f16_compute: Option<F16Compute>,
    /// Every training matmul on cooperative matrices (tensor cores).
    pub coop_matrix: bool,
    /// The training attention, forward and backward, on tensor cores too,
    /// wherever the device runs those kernels and the model's heads fit
    /// them (`ops::attention::coop`);
    /// the tensor-core path sets it as the engine's setting says
    /// ([`crate::ops::attention::engine_attention`]).
    pub coop_attention: bool,
    /// The decoder's GEMVs sum their lanes with subgroup shuffles (the
    /// same bits: `shaders/lanes_sg.wgsl`).
    pub subgroups: bool,
}

impl FastPaths {
    /// What the activation pills show.
    pub fn pills(self) -> tinygpt_protocol::ActivePaths {
        tinygpt_protocol::ActivePaths {
            f16_storage: self.f16_storage.is_some(),
            f16_compute: self.f16_compute.is_some(),
            coop_matrix: self.coop_matrix,
            subgroups: self.subgroups,
        }
    }

    /// The f16 weight cache these paths need, and who reads it: the
    /// decoder's GEMVs under f16 storage; the training forward and
    /// evaluation through the f16-compute kernel when that is active (it
    /// is only activated where the GPU packs), else through f16 storage's
    /// when its training check passed.
    fn f16_cache(self) -> Option<(F16Storage, CacheReaders)> {
        let decode = self.f16_storage.is_some();
        match (self.f16_storage, self.f16_compute) {
            (s, Some(c)) => Some((
                F16Storage {
                    pack_on_gpu: c.pack_on_gpu,
                    fault: c.fault.or(s.and_then(|s| s.fault)),
                    training: true,
                },
                CacheReaders {
                    decode,
                    compute: true,
                },
            )),
            (Some(s), None) => Some((
                s,
                CacheReaders {
                    decode,
                    compute: false,
                },
            )),
            (None, None) => None,
        }
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
            decoder_kernels: None,
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
            .f16_cache()
            .map(|(cfg, readers)| {
                F16WeightCache::new(ctx, reg, cfg, &self.params, self.layout.total)
                    .map(|c| c.read_by(readers))
            })
            .transpose()?;
        self.fast = fast;
        Ok(())
    }

    /// The f16 weights for the training graph: only when the GPU packs,
    /// since a step must repack inside its own submission, and when the
    /// speed gate found the training forward faster with them.
    pub(super) fn train_f16(&self) -> Option<&F16WeightCache> {
        self.f16
            .as_ref()
            .filter(|c| c.packs_on_gpu() && c.for_training())
    }

    /// Brings the f16 weights up to date for sampling (see
    /// [`F16WeightCache::refresh`]).
    pub async fn prepare_inference(&mut self, ctx: &GpuContext) -> Result<(), GpuError> {
        match &mut self.f16 {
            Some(cache) => cache.refresh(ctx, &self.params, self.layout.total).await,
            None => Ok(()),
        }
    }

    /// The f16 weight cache brought up to date as its own logic does it,
    /// then compared with the f32 weights: how many of `total` halves
    /// differ (`None` without f16 storage). A cache that skipped an
    /// invalidation (the test-only `stale` fault) differs here.
    pub async fn f16_cache_mismatches(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
    ) -> Result<Option<(u64, usize)>, GpuError> {
        self.prepare_inference(ctx).await?;
        let total = self.layout.total;
        match &self.f16 {
            Some(cache) => Ok(Some((
                cache.mismatches(ctx, reg, &self.params, total).await?,
                total,
            ))),
            None => Ok(None),
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

    /// Lays the decoder's kernels out this way instead of the device's
    /// ([`DecoderKernels::for_device`], preferred for the model's shape);
    /// the decoder is rebound on next use (`Decoder::layout` says what it
    /// runs).
    pub fn set_decoder_kernels(&mut self, kernels: DecoderKernels) {
        if self.decoder_kernels != Some(kernels) {
            self.decoder_kernels = Some(kernels);
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
        self.decoder_for(ctx, reg, 1)
    }

    /// The layout the decoder is bound in: the one set, or the device's
    /// preferred for this model's shape.
    fn decoder_layout(&self, ctx: &GpuContext) -> DecoderKernels {
        if let Some(kernels) = self.decoder_kernels {
            return kernels;
        }
        let desc = crate::ops::attention::DecodeDesc {
            c: self.cfg.d_model as u32,
            nh: self.cfg.n_head as u32,
            t_max: self.cfg.block_size as u32,
            batch: 1,
        };
        DecoderKernels::for_device(ctx).preferred_for(&desc)
    }

    /// The subgroup size the decoder's GEMVs sum their lanes with: the
    /// adapter's, when the subgroups fast path is on.
    fn subgroup_sums(&self, ctx: &GpuContext) -> Option<u32> {
        self.fast
            .subgroups
            .then(|| ctx.subgroup_size().ok())
            .flatten()
    }

    /// [`Self::decoder`] for `batch` samples decoded together (bound again
    /// when the last one had another batch).
    pub fn decoder_for(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        batch: usize,
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
        if self.decoder.as_ref().is_some_and(|d| d.batch() != batch) {
            self.decoder = None;
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
                self.f16.as_ref().filter(|c| c.readers().decode),
                (
                    self.decoder_layout(ctx),
                    batch as u32,
                    self.subgroup_sums(ctx),
                ),
            )?);
        }
        Ok(self.decoder.as_mut().expect("bound above"))
    }
}
