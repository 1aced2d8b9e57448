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
    pub(super) decoder_kernels: DecoderKernels,
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

    /// `tokens` (up to the context) as one evaluation sequence; the targets
    /// are unused by what reads it.
    fn one_sequence(&self, tokens: &[u32]) -> Batch {
        let t = tokens.len().min(self.cfg.block_size);
        Batch {
            batch_size: 1,
            seq_len: t,
            inputs: tokens[..t].to_vec(),
            targets: tokens[..t].to_vec(),
        }
    }

    /// The input rows every forward linear of every layer really reads for
    /// `tokens` (one sequence), from an f32 forward whatever fast path is
    /// active: per layer `[ln1 → qkv, atty → attn_proj, ln2 → fc,
    /// gelu(fch) → fc_proj]`, each `(T, d_in)` with the linear's weight and
    /// bias kinds (what the real-weight gate feeds the f16 kernel).
    pub async fn linear_inputs(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        tokens: &[u32],
    ) -> Result<Vec<LinearInput>, GpuError> {
        use tinygpt_core::ParamKind::*;
        let batch = self.one_sequence(tokens);
        let t = batch.seq_len;
        let fast = self.fast;
        self.set_fast_paths(ctx, reg, FastPaths::default())?;
        let losses = self.submit_eval(ctx, reg, std::slice::from_ref(&batch));
        let mut out = Vec::new();
        if losses.is_ok() {
            let g = self.graph.as_ref().expect("bound by submit_eval");
            let c = self.cfg.d_model;
            for (l, blk) in g.acts.blocks.iter().enumerate() {
                let kinds = [
                    (&blk.ln1, QkvW, QkvB, c),
                    (&g.acts.blocks[l].atty, AttnProjW, AttnProjB, c),
                    (&blk.ln2, FcW, FcB, c),
                    (&blk.fch_gelu, FcProjW, FcProjB, 4 * c),
                ];
                for (buf, w, b, d_in) in kinds {
                    let rows = ctx.read_f32(buf, t * d_in).await?;
                    out.push(LinearInput {
                        layer: l,
                        w,
                        b,
                        d_in,
                        rows,
                    });
                }
            }
        }
        self.set_fast_paths(ctx, reg, fast)?;
        losses?;
        Ok(out)
    }

    /// Every stage of the forward for `tokens` (one sequence) with the fast
    /// paths active now, in dependency order, each `(name, values)`: the
    /// embedding, then per layer ln1, qkv, attention, the attention
    /// projection (res2 − res), res2, ln2, fc, GELU, the fc projection
    /// (res' − res2) and the residual stream after it, then ln_f and the
    /// logits (what `gate::localize` compares path against path). The f16
    /// cache is read as inference reads it: bring it up to date first.
    pub async fn forward_stages(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        tokens: &[u32],
    ) -> Result<Vec<(String, Vec<f32>)>, GpuError> {
        let batch = self.one_sequence(tokens);
        let t = batch.seq_len;
        self.submit_inference_forward(ctx, reg, &batch)?;
        let g = self.graph.as_ref().expect("bound by the forward");
        let (c, v) = (self.cfg.d_model, self.cfg.vocab_size);
        let diff = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
        let mut out = vec![(
            "embedding".to_string(),
            ctx.read_f32(&g.acts.res[0], t * c).await?,
        )];
        for (l, blk) in g.acts.blocks.iter().enumerate() {
            let res = ctx.read_f32(&g.acts.res[l], t * c).await?;
            let res2 = ctx.read_f32(&blk.res2, t * c).await?;
            let next = ctx.read_f32(&g.acts.res[l + 1], t * c).await?;
            let stage = |name: &str, values: Vec<f32>| (format!("layer {l} {name}"), values);
            out.push(stage("ln1", ctx.read_f32(&blk.ln1, t * c).await?));
            out.push(stage("qkv", ctx.read_f32(&blk.qkv, t * 3 * c).await?));
            out.push(stage("attention", ctx.read_f32(&blk.atty, t * c).await?));
            out.push(stage("attn_proj", diff(&res2, &res)));
            out.push(stage("residual", res2.clone()));
            out.push(stage("ln2", ctx.read_f32(&blk.ln2, t * c).await?));
            out.push(stage("fc", ctx.read_f32(&blk.fch, t * 4 * c).await?));
            out.push(stage("gelu", ctx.read_f32(&blk.fch_gelu, t * 4 * c).await?));
            out.push(stage("fc_proj", diff(&next, &res2)));
            out.push(stage("residual out", next));
        }
        out.push(("ln_f".into(), ctx.read_f32(&g.acts.lnf, t * c).await?));
        out.push(("logits".into(), ctx.read_f32(&g.acts.logits, t * v).await?));
        Ok(out)
    }

    /// Test hook (fault injection only): zeroes the f16 weight cache's copy
    /// of `kind` in layer `l`, as a one-layer kernel fault would corrupt it,
    /// after bringing the cache up to date so no repack undoes it.
    #[cfg(feature = "fault-injection")]
    pub async fn corrupt_f16_layer(
        &mut self,
        ctx: &GpuContext,
        kind: tinygpt_core::ParamKind,
        l: usize,
    ) -> Result<(), GpuError> {
        self.prepare_inference(ctx).await?;
        let spec = self.layout.get(kind);
        let per = spec.len / spec.shape[0];
        let first = spec.offset + l * per;
        let Some(cache) = &self.f16 else {
            return Ok(());
        };
        // Whole words inside the tensor: halves [first, first + per).
        let (w0, w1) = (first.div_ceil(2), (first + per) / 2);
        let zeros = vec![0u8; (w1 - w0) * 4];
        ctx.queue
            .write_buffer(cache.buffer(), (w0 * 4) as u64, &zeros);
        Ok(())
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
        self.decoder_for(ctx, reg, 1)
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
                (self.decoder_kernels, batch as u32, self.subgroup_sums(ctx)),
            )?);
        }
        Ok(self.decoder.as_mut().expect("bound above"))
    }
}
