//! Sampling with a KV cache: one token costs work proportional to the
//! context so far, and only what the sampler needs comes back.
//!
//! A step (one token at one position) is five dispatches per layer: the
//! QKV GEMV with the LayerNorm folded into its prologue, the attention
//! (which appends the token's keys and values to the layer's cache), the
//! projection GEMV adding into the residual row, the fc GEMV with the second
//! LayerNorm before and GELU after, and the fc_proj GEMV adding into the
//! residual row; plus the embedding, the head (final LayerNorm folded in)
//! and, when decoding greedily, the pick of the next token on the GPU. On a
//! CPU implementation the three LayerNorms run as dispatches of their own,
//! and the GEMVs and the attention without barriers, instead
//! ([`DecoderKernels`]): seven per layer and four more.
//!
//! Steps chain inside one submission: before each, a copy from a table
//! sets the position uniform, and the input token is either copied from
//! the host's list (a prompt) or left by the previous step's pick. Greedy
//! decoding therefore submits many tokens at once and reads back only their
//! ids; sampling with temperature reads the `V` logits of each token.

use super::builder::Flat;
use super::F16WeightCache;
use crate::buffers::PendingRead;
use crate::kernel::{record_pass, BoundKernel, Layout};
use crate::ops::argmax::{bind_greedy_pick, Pick, PICK_BYTES};
use crate::ops::attention::{
    bind_attention_decode, decode_position_buffer, DecodeDesc, KvCache, POSITION_BYTES,
};
use crate::ops::embedding::{bind_embedding_forward, EmbeddingDesc};
use crate::ops::layernorm::{bind_layernorm_forward, LayerNormDesc};
use crate::ops::matmul::f16w::bind_gemv_f16w;
use crate::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use crate::profile::{check_timestamps, DispatchTime, TimedDispatches};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::{ModelConfig, ParamKind, ParamKind::*};

/// What a step records after the blocks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Out {
    /// Nothing: a prompt token whose successor is known.
    None,
    /// The logits, for the host's sampler.
    Logits,
    /// The logits and the greedy pick.
    Pick,
}

/// How the decoder lays out a token's LayerNorms and GEMVs.
///
/// `Fused`: each LayerNorm in the prologue of the GEMV that reads it, every
/// workgroup recomputing the row's mean and 1/σ — one dispatch fewer per
/// LayerNorm, which a GPU's idle lanes pay for. `Separate`: the LayerNorm
/// kernel on the one row, then the same GEMV (8 columns × 32 lanes per
/// workgroup); both give the same bits (`gemv_row.wgsl` reproduces
/// `layernorm.wgsl`'s sums). `Columns`: the LayerNorms on their own, the
/// column-layout GEMVs ([`RowFusion::columns`]: one invocation per output
/// column, no workgroup memory, no barrier) and the attention with one
/// invocation per head (`attention_decode.wgsl`'s `main_serial`) — on a
/// CPU implementation of WebGPU, which pays per workgroup and per barrier,
/// the fastest by far (BENCHMARKS.md, "The decoder on CPU devices").
/// Its sums run in another order, so
/// its logits differ from the others' in the last bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecoderKernels {
    Fused,
    Separate,
    Columns,
}

impl DecoderKernels {
    /// `Columns` on a CPU implementation ([`GpuContext::cpu_device`]),
    /// `Fused` on a GPU.
    pub fn for_device(ctx: &GpuContext) -> Self {
        if ctx.cpu_device {
            Self::Columns
        } else {
            Self::Fused
        }
    }
}

/// The one-row buffers, caches and bound kernels of batch-1 decoding.
pub struct Decoder {
    desc: DecodeDesc,
    /// The embedding's input token.
    token: wgpu::Buffer,
    /// Tokens the host gives one submission, copied into `token` step by step.
    host_tokens: wgpu::Buffer,
    /// Row `p` holds position `p`, copied into `position` before each step.
    positions: wgpu::Buffer,
    position: wgpu::Buffer,
    logits: wgpu::Buffer,
    /// The greedy pick made at each position ([`PICK_BYTES`] each).
    picks: wgpu::Buffer,
    vocab: usize,
    /// The embedding and the blocks.
    body: Vec<BoundKernel>,
    /// The final LayerNorm and the tied head: one GEMV, or the LayerNorm
    /// and the GEMV.
    head: Vec<BoundKernel>,
    pick: BoundKernel,
    _buffers: Vec<wgpu::Buffer>,
    _caches: Vec<KvCache>,
    /// Tokens in the cache.
    pub len: usize,
}

/// Greedy picks on their way back (see [`Decoder::submit_greedy`]).
pub struct PendingPicks(PendingRead);

impl PendingPicks {
    /// Waits for the picks of their submission only.
    pub async fn finish(self, ctx: &GpuContext) -> Result<Vec<Pick>, GpuError> {
        Ok(Pick::parse(&self.0.finish(ctx).await?))
    }
}

/// Binds one linear of layer `l` for a single row, `out (N) [+]= x'·Wᵀ + b`
/// with `x'` the row `x (K)` after `fusion`'s LayerNorm, GELU applied after
/// the bias, and `accumulate` adding into `out` (a residual add). The f16
/// weights are read when given: the decoder's counterpart of
/// `Builder::linear`, the only other place a fast path swaps a kernel.
#[allow(clippy::too_many_arguments)]
fn bind_row_linear<'a>(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    f16: Option<&'a F16WeightCache>,
    (k, n): (u32, u32),
    x: &'a wgpu::Buffer,
    params: &Flat<'a>,
    (w, b, l): (ParamKind, ParamKind, usize),
    fusion: RowFusion<'a>,
    accumulate: bool,
    out: &'a wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let desc = MatmulDesc {
        accumulate,
        ..MatmulDesc::linear(1, k, n)
    };
    let bias = Some(params.at(b, l));
    match f16 {
        Some(f) => {
            let weights = f.at(params.at(w, l).offset);
            bind_gemv_f16w(ctx, reg, desc, x, weights, bias, fusion, out)
        }
        None => bind_gemv(ctx, reg, desc, x, params.at(w, l), bias, fusion, out),
    }
}

impl Decoder {
    pub fn new(
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        cfg: &ModelConfig,
        params: &Flat<'_>,
        f16: Option<&F16WeightCache>,
        layout: DecoderKernels,
    ) -> Result<Self, GpuError> {
        let (c, v) = (cfg.d_model as u32, cfg.vocab_size as u32);
        let desc = DecodeDesc {
            c,
            nh: cfg.n_head as u32,
            t_max: cfg.block_size as u32,
        };
        let t_max = cfg.block_size;
        let position = decode_position_buffer(ctx);
        let table: Vec<u32> = (0..desc.t_max).flat_map(|p| [p, 0, 0, 0]).collect();
        let positions = ctx.upload_bytes("decode_positions", bytemuck::cast_slice(&table))?;
        let token = ctx.zeros("decode_token", 1)?;
        let host_tokens = ctx.zeros("decode_host_tokens", t_max)?;
        let picks = ctx.zeros("decode_picks", t_max * (PICK_BYTES as usize / 4))?;
        let row = |label: &str, len: u32| ctx.zeros(label, len as usize);
        let (x, qkv, atty, fch, logits) = (
            row("decode_x", c)?,
            row("decode_qkv", 3 * c)?,
            row("decode_atty", c)?,
            row("decode_fch", 4 * c)?,
            row("decode_logits", v)?,
        );
        let caches: Vec<KvCache> = (0..cfg.n_layer)
            .map(|_| KvCache::new(ctx, desc))
            .collect::<Result<_, _>>()?;
        // The normalised row and its statistics (used when the LayerNorm
        // runs on its own).
        let (xn, mean, rstd) = (
            row("decode_xn", c)?,
            row("decode_mean", 1)?,
            row("decode_rstd", 1)?,
        );
        let ln_desc = LayerNormDesc {
            n: 1,
            c,
            accumulate: false,
            // The column layout's LayerNorm: one invocation for the row.
            layout: if layout == DecoderKernels::Columns {
                Layout::Cpu
            } else {
                Layout::Gpu
            },
        };
        // What every GEMV runs with: the column layout, or nothing.
        let plain = RowFusion {
            columns: layout == DecoderKernels::Columns,
            ..RowFusion::default()
        };
        // LayerNorm (w, b) of layer l before a GEMV: either folded into
        // the GEMV (its fusion), or a kernel pushed to `kernels` writing
        // `xn`, which the GEMV then reads. Returns the GEMV's input row
        // and fusion.
        let ln = |reg: &mut PipelineRegistry,
                  kernels: &mut Vec<BoundKernel>,
                  (w, b, l): (ParamKind, ParamKind, usize)|
         -> Result<(&wgpu::Buffer, RowFusion<'_>), GpuError> {
            let (w, b) = (params.at(w, l), params.at(b, l));
            Ok(match layout {
                DecoderKernels::Fused => (
                    &x,
                    RowFusion {
                        layernorm: Some((w, b)),
                        ..plain
                    },
                ),
                DecoderKernels::Separate | DecoderKernels::Columns => {
                    kernels.push(bind_layernorm_forward(
                        ctx, reg, ln_desc, &x, w, b, &xn, &mean, &rstd,
                    )?);
                    (&xn, plain)
                }
            })
        };
        let emb = EmbeddingDesc {
            n: 1,
            t: 1,
            c,
            v,
            t_max: desc.t_max,
        };
        let mut body = vec![bind_embedding_forward(
            ctx,
            reg,
            emb,
            &token,
            params.at(TokEmb, 0),
            params.at(PosEmb, 0),
            &x,
            Some(&position),
        )?];
        for (l, cache) in caches.iter().enumerate() {
            let qkv_op = (QkvW, QkvB, l);
            let (src, fusion) = ln(reg, &mut body, (Ln1W, Ln1B, l))?;
            let dims = (c, 3 * c);
            body.push(bind_row_linear(
                ctx, reg, f16, dims, src, params, qkv_op, fusion, false, &qkv,
            )?);
            body.push(bind_attention_decode(
                ctx,
                reg,
                plain.columns,
                desc,
                &position,
                &qkv,
                cache,
                &atty,
            )?);
            let proj = (AttnProjW, AttnProjB, l);
            body.push(bind_row_linear(
                ctx,
                reg,
                f16,
                (c, c),
                &atty,
                params,
                proj,
                plain,
                true,
                &x,
            )?);
            let (src, fusion) = ln(reg, &mut body, (Ln2W, Ln2B, l))?;
            let fusion = RowFusion {
                gelu: true,
                ..fusion
            };
            let dims = (c, 4 * c);
            body.push(bind_row_linear(
                ctx,
                reg,
                f16,
                dims,
                src,
                params,
                (FcW, FcB, l),
                fusion,
                false,
                &fch,
            )?);
            let fc_proj = (FcProjW, FcProjB, l);
            body.push(bind_row_linear(
                ctx,
                reg,
                f16,
                (4 * c, c),
                &fch,
                params,
                fc_proj,
                plain,
                true,
                &x,
            )?);
        }
        let head_desc = MatmulDesc {
            m: 1,
            k: c,
            n: v,
            trans_b: true,
            ..Default::default()
        };
        let tok_emb = params.at(TokEmb, 0);
        let mut head = Vec::new();
        let (src, fusion) = ln(reg, &mut head, (LnfW, LnfB, 0))?;
        head.push(bind_gemv(
            ctx, reg, head_desc, src, tok_emb, None, fusion, &logits,
        )?);
        let pick = bind_greedy_pick(ctx, reg, v, &logits, &position, &token, &picks)?;
        Ok(Self {
            desc,
            token,
            host_tokens,
            positions,
            position,
            logits,
            picks,
            vocab: v as usize,
            body,
            head,
            pick,
            _buffers: vec![x, qkv, atty, fch, xn, mean, rstd],
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
        self.submit(ctx, &[token], 1, Out::Logits)?;
        ctx.read_f32(&self.logits, self.vocab).await
    }

    /// Appends `token` without computing the logits (prompt prefill).
    pub fn feed(&mut self, ctx: &GpuContext, token: u32) -> Result<(), GpuError> {
        self.submit(ctx, &[token], 1, Out::None)
    }

    /// Greedy decoding of `picks` (≥ 1) tokens in one submission, without
    /// waiting: appends the `host` tokens (a prompt; the successor of its
    /// last token is the first pick) — or, when `host` is empty, the last
    /// pick of the previous submission, still in the token buffer — then
    /// each pick in turn. Returns the read of the picked ids, in order. A
    /// next submission may follow before this read is awaited.
    pub fn submit_greedy(
        &mut self,
        ctx: &GpuContext,
        host: &[u32],
        picks: usize,
    ) -> Result<PendingPicks, GpuError> {
        if picks == 0 {
            return Err(self.shape("a greedy submission picks at least one token".into()));
        }
        let steps = host.len().max(1) + picks - 1;
        let first = self.len + steps - picks;
        self.submit(ctx, host, steps, Out::Pick)?;
        let at = PICK_BYTES * first as u64;
        Ok(PendingPicks(ctx.start_read(&[(
            &self.picks,
            at,
            PICK_BYTES * picks as u64,
        )])))
    }

    /// Decodes one greedy step after `token`, each dispatch in its own
    /// timestamped pass; waits and returns the GPU time of every dispatch
    /// in order. Needs `TIMESTAMP_QUERY`.
    pub async fn profile_step(
        &mut self,
        ctx: &GpuContext,
        token: u32,
    ) -> Result<Vec<DispatchTime>, GpuError> {
        check_timestamps(ctx)?;
        self.check_room(1)?;
        ctx.queue
            .write_buffer(&self.host_tokens, 0, bytemuck::bytes_of(&token));
        let mut enc = encoder(ctx);
        self.start_step(&mut enc, 0, 1);
        let timed = TimedDispatches::record(ctx, &mut enc, &self.kernels(Out::Pick))?;
        ctx.queue.submit([enc.finish()]);
        self.len += 1;
        timed.read(ctx).await
    }

    /// Submits `steps` steps at the next positions: the `host` tokens, then
    /// (greedy) the tokens the picks leave. Every step records the blocks;
    /// those from the last host token on also record `out`.
    fn submit(
        &mut self,
        ctx: &GpuContext,
        host: &[u32],
        steps: usize,
        out: Out,
    ) -> Result<(), GpuError> {
        self.check_room(steps)?;
        if !host.is_empty() {
            ctx.queue
                .write_buffer(&self.host_tokens, 0, bytemuck::cast_slice(host));
        }
        let inner = self.kernels(Out::None);
        let last = self.kernels(out);
        let mut enc = encoder(ctx);
        for i in 0..steps {
            self.start_step(&mut enc, i, host.len());
            let kernels = if i + 1 < host.len() { &inner } else { &last };
            record_pass(&mut enc, "decode", kernels);
        }
        ctx.queue.submit([enc.finish()]);
        self.len += steps;
        Ok(())
    }

    /// Records the copies that start step `i` of a submission: its position
    /// (`len + i`), and host token `i` when there is one.
    fn start_step(&self, enc: &mut wgpu::CommandEncoder, i: usize, host: usize) {
        if i < host {
            enc.copy_buffer_to_buffer(&self.host_tokens, 4 * i as u64, &self.token, 0, 4);
        }
        let at = POSITION_BYTES * (self.len + i) as u64;
        enc.copy_buffer_to_buffer(&self.positions, at, &self.position, 0, POSITION_BYTES);
    }

    /// The dispatches of one step.
    fn kernels(&self, out: Out) -> Vec<&BoundKernel> {
        let mut k: Vec<&BoundKernel> = self.body.iter().collect();
        if out != Out::None {
            k.extend(&self.head);
        }
        if out == Out::Pick {
            k.push(&self.pick);
        }
        k
    }

    fn check_room(&self, steps: usize) -> Result<(), GpuError> {
        if self.len + steps > self.capacity() {
            return Err(self.shape(format!(
                "{steps} more tokens do not fit: {} of {} positions are taken",
                self.len,
                self.capacity()
            )));
        }
        Ok(())
    }

    fn shape(&self, detail: String) -> GpuError {
        GpuError::Shape {
            op: "decoder",
            detail,
        }
    }
}

fn encoder(ctx: &GpuContext) -> wgpu::CommandEncoder {
    ctx.device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("decode"),
        })
}
