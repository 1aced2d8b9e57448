//! Activation and gradient buffers of one batch shape, allocated once.
//!
//! Every tensor has its own buffer: WebGPU forbids a dispatch to read and
//! write one buffer, and most ops read one activation and write the next.
//! Shapes: `N = B·T` rows, `C` channels, `V` vocab, `NH` heads.

use crate::{GpuContext, GpuError};
use tinygpt_core::ModelConfig;

/// What one transformer block keeps for its backward pass.
pub struct BlockActs {
    /// `ln1 (N, C)`, with its `mean (N)` and `rstd (N)`.
    pub ln1: wgpu::Buffer,
    pub ln1_mean: wgpu::Buffer,
    pub ln1_rstd: wgpu::Buffer,
    /// `qkv (N, 3C)`.
    pub qkv: wgpu::Buffer,
    /// `atty (N, C)`: attention output, heads concatenated.
    pub atty: wgpu::Buffer,
    /// `lse (B, NH, T)`: log-sum-exp of each query row.
    pub lse: wgpu::Buffer,
    /// `res2 (N, C)`: the stream after the attention residual.
    pub res2: wgpu::Buffer,
    pub ln2: wgpu::Buffer,
    pub ln2_mean: wgpu::Buffer,
    pub ln2_rstd: wgpu::Buffer,
    /// `fch (N, 4C)` before GELU and `fch_gelu (N, 4C)` after.
    pub fch: wgpu::Buffer,
    pub fch_gelu: wgpu::Buffer,
}

/// Forward activations and backward scratch for a `B × T` batch.
pub struct Acts {
    pub b: usize,
    pub t: usize,
    /// `inputs (N)` and `targets (N)` token ids.
    pub inputs: wgpu::Buffer,
    pub targets: wgpu::Buffer,
    /// `res[l] (N, C)`: the residual stream entering block `l`; `res[L]`
    /// leaves the last block.
    pub res: Vec<wgpu::Buffer>,
    pub blocks: Vec<BlockActs>,
    /// `proj (N, C)`: a projection's output before its residual add (not
    /// needed by backward, so one buffer serves every block).
    pub proj: wgpu::Buffer,
    pub lnf: wgpu::Buffer,
    pub lnf_mean: wgpu::Buffer,
    pub lnf_rstd: wgpu::Buffer,
    /// `logits (N, V)`, per-row `losses (N)`, the mean `loss (1)`.
    pub logits: wgpu::Buffer,
    pub losses: wgpu::Buffer,
    pub loss: wgpu::Buffer,
    /// Backward scratch: `dlogits (N, V)`, the stream gradient `dres (N, C)`,
    /// a LayerNorm output gradient `dln (N, C)`, `datty (N, C)`,
    /// `dqkv (N, 3C)`, `dfch_gelu (N, 4C)`, `dfch (N, 4C)`.
    pub dlogits: wgpu::Buffer,
    pub dres: wgpu::Buffer,
    pub dln: wgpu::Buffer,
    pub datty: wgpu::Buffer,
    pub dqkv: wgpu::Buffer,
    pub dfch_gelu: wgpu::Buffer,
    pub dfch: wgpu::Buffer,
}

impl Acts {
    pub fn new(ctx: &GpuContext, cfg: &ModelConfig, b: usize, t: usize) -> Result<Self, GpuError> {
        let (n, c, v) = (b * t, cfg.d_model, cfg.vocab_size);
        let z = |label: &str, len: usize| ctx.zeros(label, len);
        let blocks = (0..cfg.n_layer)
            .map(|_| {
                Ok(BlockActs {
                    ln1: z("ln1", n * c)?,
                    ln1_mean: z("ln1_mean", n)?,
                    ln1_rstd: z("ln1_rstd", n)?,
                    qkv: z("qkv", n * 3 * c)?,
                    atty: z("atty", n * c)?,
                    lse: z("lse", b * cfg.n_head * t)?,
                    res2: z("res2", n * c)?,
                    ln2: z("ln2", n * c)?,
                    ln2_mean: z("ln2_mean", n)?,
                    ln2_rstd: z("ln2_rstd", n)?,
                    fch: z("fch", n * 4 * c)?,
                    fch_gelu: z("fch_gelu", n * 4 * c)?,
                })
            })
            .collect::<Result<Vec<_>, GpuError>>()?;
        Ok(Self {
            b,
            t,
            inputs: z("inputs", n)?,
            targets: z("targets", n)?,
            res: (0..=cfg.n_layer)
                .map(|_| z("res", n * c))
                .collect::<Result<_, _>>()?,
            blocks,
            proj: z("proj", n * c)?,
            lnf: z("lnf", n * c)?,
            lnf_mean: z("lnf_mean", n)?,
            lnf_rstd: z("lnf_rstd", n)?,
            logits: z("logits", n * v)?,
            losses: z("losses", n)?,
            loss: z("loss", 1)?,
            dlogits: z("dlogits", n * v)?,
            dres: z("dres", n * c)?,
            dln: z("dln", n * c)?,
            datty: z("datty", n * c)?,
            dqkv: z("dqkv", n * 3 * c)?,
            dfch_gelu: z("dfch_gelu", n * 4 * c)?,
            dfch: z("dfch", n * 4 * c)?,
        })
    }
}
