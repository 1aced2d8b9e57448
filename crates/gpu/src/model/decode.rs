//! Sampling with a KV cache: one token costs work proportional to the
//! context so far. Each layer appends the new token's keys and values to its
//! cache and attends over positions `0..=p`; only the `V` logits come back.

use super::graph::{bind_linear, F16Weights, Flat};
use crate::kernel::BoundKernel;
use crate::matmul::{bind_matmul, MatmulDesc};
use crate::ops::attention::{
    bind_attention_decode, bind_kv_append, decode_position_buffer, set_decode_position, DecodeDesc,
    KvCache,
};
use crate::ops::embedding::{bind_embedding_forward, EmbeddingDesc};
use crate::ops::gelu::bind_gelu_forward;
use crate::ops::layernorm::{bind_layernorm_forward, LayerNormDesc};
use crate::ops::residual::bind_residual_forward;
use crate::ops::BoundOp;
use crate::profile::{check_timestamps, DispatchTime, TimedDispatches};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::{ModelConfig, ParamKind::*};

/// The one-row buffers, caches and bound ops of batch-1 decoding.
pub struct Decoder {
    desc: DecodeDesc,
    token: wgpu::Buffer,
    position: wgpu::Buffer,
    logits: wgpu::Buffer,
    vocab: usize,
    ops: Vec<BoundOp>,
    _buffers: Vec<wgpu::Buffer>,
    _caches: Vec<KvCache>,
    /// Tokens in the cache.
    pub len: usize,
}

impl Decoder {
    pub fn new(
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        cfg: &ModelConfig,
        params: &Flat<'_>,
        f16: Option<F16Weights<'_>>,
    ) -> Result<Self, GpuError> {
        let (c, v) = (cfg.d_model as u32, cfg.vocab_size as u32);
        let desc = DecodeDesc {
            c,
            nh: cfg.n_head as u32,
            t_max: cfg.block_size as u32,
        };
        let position = decode_position_buffer(ctx);
        let token = ctx.zeros("decode_token", 1)?;
        let row = |label: &str, len: u32| ctx.zeros(label, len as usize);
        let xs: Vec<wgpu::Buffer> = (0..=cfg.n_layer)
            .map(|_| row("decode_x", c))
            .collect::<Result<_, _>>()?;
        let (ln, qkv, atty, proj, res2) = (
            row("decode_ln", c)?,
            row("decode_qkv", 3 * c)?,
            row("decode_atty", c)?,
            row("decode_proj", c)?,
            row("decode_res2", c)?,
        );
        let (fch, fch_gelu, logits) = (
            row("decode_fch", 4 * c)?,
            row("decode_fch_gelu", 4 * c)?,
            row("decode_logits", v)?,
        );
        let (mean, rstd) = (row("decode_mean", 1)?, row("decode_rstd", 1)?);
        let caches: Vec<KvCache> = (0..cfg.n_layer)
            .map(|_| KvCache::new(ctx, desc))
            .collect::<Result<_, _>>()?;
        let ln1 = LayerNormDesc {
            n: 1,
            c,
            accumulate: false,
        };
        let mut ops: Vec<BoundOp> = Vec::new();
        let emb = EmbeddingDesc {
            n: 1,
            t: 1,
            c,
            v,
            t_max: desc.t_max,
        };
        ops.push(
            bind_embedding_forward(
                ctx,
                reg,
                emb,
                &token,
                params.at(TokEmb, 0),
                params.at(PosEmb, 0),
                &xs[0],
                Some(&position),
            )?
            .into(),
        );
        for l in 0..cfg.n_layer {
            let x = &xs[l];
            ops.push(
                bind_layernorm_forward(
                    ctx,
                    reg,
                    ln1,
                    x,
                    params.at(Ln1W, l),
                    params.at(Ln1B, l),
                    &ln,
                    &mean,
                    &rstd,
                )?
                .into(),
            );
            ops.push(bind_linear(
                ctx,
                reg,
                f16,
                MatmulDesc::linear(1, c, 3 * c),
                &ln,
                params,
                (QkvW, QkvB, l),
                &qkv,
            )?);
            ops.push(bind_kv_append(ctx, reg, desc, &position, &qkv, &caches[l])?.into());
            ops.push(
                bind_attention_decode(ctx, reg, desc, &position, &qkv, &caches[l], &atty)?.into(),
            );
            ops.push(bind_linear(
                ctx,
                reg,
                f16,
                MatmulDesc::linear(1, c, c),
                &atty,
                params,
                (AttnProjW, AttnProjB, l),
                &proj,
            )?);
            ops.push(bind_residual_forward(ctx, reg, c, x, &proj, &res2)?.into());
            ops.push(
                bind_layernorm_forward(
                    ctx,
                    reg,
                    ln1,
                    &res2,
                    params.at(Ln2W, l),
                    params.at(Ln2B, l),
                    &ln,
                    &mean,
                    &rstd,
                )?
                .into(),
            );
            ops.push(bind_linear(
                ctx,
                reg,
                f16,
                MatmulDesc::linear(1, c, 4 * c),
                &ln,
                params,
                (FcW, FcB, l),
                &fch,
            )?);
            ops.push(bind_gelu_forward(ctx, reg, 4 * c, &fch, &fch_gelu)?.into());
            ops.push(bind_linear(
                ctx,
                reg,
                f16,
                MatmulDesc::linear(1, 4 * c, c),
                &fch_gelu,
                params,
                (FcProjW, FcProjB, l),
                &proj,
            )?);
            ops.push(bind_residual_forward(ctx, reg, c, &res2, &proj, &xs[l + 1])?.into());
        }
        ops.push(
            bind_layernorm_forward(
                ctx,
                reg,
                ln1,
                &xs[cfg.n_layer],
                params.at(LnfW, 0),
                params.at(LnfB, 0),
                &ln,
                &mean,
                &rstd,
            )?
            .into(),
        );
        let head = MatmulDesc {
            m: 1,
            k: c,
            n: v,
            trans_b: true,
            ..Default::default()
        };
        ops.push(bind_matmul(ctx, reg, head, &ln, params.at(TokEmb, 0), None, &logits)?.into());
        let mut buffers = xs;
        buffers.extend([ln, qkv, atty, proj, res2, fch, fch_gelu, mean, rstd]);
        Ok(Self {
            desc,
            token,
            position,
            logits,
            vocab: v as usize,
            ops,
            _buffers: buffers,
            _caches: caches,
            len: 0,
        })
    }

    /// Capacity of the cache (the model's context).
    pub fn capacity(&self) -> usize {
        self.desc.t_max as usize
    }

    /// Forgets the cached context.
    pub fn reset(&mut self) {
        self.len = 0;
    }

    /// Appends `token` at the next position and returns the logits (V) of
    /// the next token. Errors when the cache is full.
    pub async fn push(&mut self, ctx: &GpuContext, token: u32) -> Result<Vec<f32>, GpuError> {
        self.feed(ctx, token)?;
        ctx.read_f32(&self.logits, self.vocab).await
    }

    /// Appends `token` without reading the logits (prompt prefill).
    pub fn feed(&mut self, ctx: &GpuContext, token: u32) -> Result<(), GpuError> {
        let (enc, ()) = self.encode(ctx, token, |enc, kernels| {
            crate::kernel::record_pass(enc, "decode", kernels);
            Ok(())
        })?;
        ctx.queue.submit([enc.finish()]);
        self.len += 1;
        Ok(())
    }

    /// Appends `token` as [`Self::feed`] does, but each dispatch in its own
    /// timestamped pass; waits and returns the GPU time of every dispatch in
    /// order. Needs `TIMESTAMP_QUERY`.
    pub async fn profile_feed(
        &mut self,
        ctx: &GpuContext,
        token: u32,
    ) -> Result<Vec<DispatchTime>, GpuError> {
        check_timestamps(ctx)?;
        let (enc, timed) = self.encode(ctx, token, |enc, kernels| {
            TimedDispatches::record(ctx, enc, kernels)
        })?;
        ctx.queue.submit([enc.finish()]);
        self.len += 1;
        timed.read(ctx).await
    }

    /// Writes the position and the token, then lets `record` put every
    /// dispatch of one decode step into a new encoder.
    fn encode<R>(
        &self,
        ctx: &GpuContext,
        token: u32,
        record: impl FnOnce(&mut wgpu::CommandEncoder, &[&BoundKernel]) -> Result<R, GpuError>,
    ) -> Result<(wgpu::CommandEncoder, R), GpuError> {
        set_decode_position(ctx, &self.position, self.desc, self.len as u32)?;
        ctx.queue
            .write_buffer(&self.token, 0, bytemuck::bytes_of(&token));
        let mut enc = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("decode"),
            });
        let kernels: Vec<&BoundKernel> = self.ops.iter().flat_map(|op| &op.kernels).collect();
        let out = record(&mut enc, &kernels)?;
        Ok((enc, out))
    }
}
