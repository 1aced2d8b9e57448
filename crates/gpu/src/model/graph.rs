//! The training graph as bound kernels: forward (to the mean loss), then
//! backward into the flat gradient buffer. Bound once per batch shape;
//! a step only records them.

use super::acts::Acts;
use crate::kernel::Layout;
use crate::ops::attention::{
    bind_attention_backward, bind_attention_forward, AttentionBackwardBuffers, AttentionDesc,
};
use crate::ops::bias_grad::{bind_bias_grad, BiasGradDesc};
use crate::ops::crossentropy::{bind_crossentropy, CrossEntropyDesc};
use crate::ops::dropout::{bind_dropout, DropoutDesc};
use crate::ops::embedding::{bind_embedding_backward, bind_embedding_forward, EmbeddingDesc};
use crate::ops::gelu::{bind_gelu_backward, bind_gelu_forward};
use crate::ops::layernorm::{
    bind_layernorm_backward, bind_layernorm_forward, LayerNormDesc, LayerNormGrads,
};
use crate::ops::matmul::f16w::bind_matmul_f16w;
use crate::ops::matmul::f16w::Fault;
use crate::ops::matmul::{split_k_scratch_floats, MatmulDesc};
use crate::ops::residual::bind_residual_forward;
use crate::ops::{BoundOp, View};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::model::Site;
use tinygpt_core::{ModelConfig, ParamKind, ParamLayout};
use ParamKind::*;

/// Views of one parameter tensor (or its gradient) of one layer in a flat buffer.
pub struct Flat<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: &'a ParamLayout,
}

impl<'a> Flat<'a> {
    /// Layer `l` of the stacked tensor `kind` (layer 0 for unstacked ones).
    pub fn at(&self, kind: ParamKind, l: usize) -> View<'a> {
        let spec = self.layout.get(kind);
        let per = if spec.shape.len() > 1 && !matches!(kind, TokEmb | PosEmb) {
            spec.len / spec.shape[0]
        } else {
            0
        };
        View::at(self.buffer, (spec.offset + l * per) as u32)
    }
}

fn u(x: usize) -> u32 {
    x as u32
}

/// The packed-half copy of the parameters (same element indices as the
/// flat buffer) that forward linears read when f16 storage is active.
#[derive(Clone, Copy)]
pub struct F16Weights<'a> {
    pub buffer: &'a wgpu::Buffer,
    /// Test-only kernel fault of the gate framework.
    pub fault: Option<Fault>,
}

/// Binds one forward linear `out (M, N) = x (M, K) · Wᵀ + b`, with `W` and
/// `b` the `w`/`b` tensors of layer `l`: the one place a fast path swaps
/// the kernel. Backward matmuls and the tied head never come through here.
#[allow(clippy::too_many_arguments)]
pub fn bind_linear<'a>(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    mm: Layout,
    f16: Option<F16Weights<'a>>,
    desc: MatmulDesc,
    x: impl Into<View<'a>>,
    params: &Flat<'a>,
    (w, b, l): (ParamKind, ParamKind, usize),
    out: impl Into<View<'a>>,
) -> Result<BoundOp, GpuError> {
    let bias = Some(params.at(b, l));
    Ok(match f16 {
        Some(f) => {
            let w_off = params.at(w, l).offset;
            bind_matmul_f16w(ctx, reg, f.fault, desc, x, f.buffer, w_off, bias, out)?
        }
        None => mm.bind(ctx, reg, desc, x, params.at(w, l), bias, out)?,
    }
    .into())
}

/// Binds the forward pass from `inputs` to `logits`; with `targets`, also
/// the per-row and mean loss, and (when `dlogits` is wanted) its gradient.
/// Forward linears read `f16` weights when given (see [`bind_linear`]);
/// `dropout` (training only) masks the embedding output and each residual
/// branch before its add.
#[allow(clippy::too_many_arguments)]
pub fn bind_forward(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    cfg: &ModelConfig,
    params: &Flat<'_>,
    a: &Acts,
    with_loss_grad: bool,
    mm: Layout,
    f16: Option<F16Weights<'_>>,
    dropout: Option<DropoutDesc<'_>>,
) -> Result<Vec<BoundOp>, GpuError> {
    let (b, t, c, v) = (a.b, a.t, cfg.d_model, cfg.vocab_size);
    let n = b * t;
    let mut ops: Vec<BoundOp> = Vec::new();
    let emb = EmbeddingDesc {
        n: u(n),
        t: u(t),
        c: u(c),
        v: u(v),
        t_max: u(cfg.block_size),
    };
    // With dropout the embedding goes through `proj` (free until the first
    // attention projection) and its mask into the stream.
    let encoded = if dropout.is_some() {
        &a.proj
    } else {
        &a.res[0]
    };
    ops.push(
        bind_embedding_forward(
            ctx,
            reg,
            emb,
            &a.inputs,
            params.at(TokEmb, 0),
            params.at(PosEmb, 0),
            encoded,
            None,
        )?
        .into(),
    );
    let nc = u(n * c);
    // `out = base + branch`, through the branch's dropout mask when training with it.
    let residual = |reg: &mut PipelineRegistry,
                    site: Site,
                    base: &wgpu::Buffer,
                    branch: &wgpu::Buffer,
                    out: &wgpu::Buffer|
     -> Result<BoundOp, GpuError> {
        Ok(match dropout {
            Some(d) => bind_dropout(ctx, reg, d, site, nc, Some(base), branch, out)?,
            None => bind_residual_forward(ctx, reg, nc, base, branch, out)?,
        }
        .into())
    };
    if let Some(d) = dropout {
        ops.push(bind_dropout(ctx, reg, d, Site::Embedding, nc, None, &a.proj, &a.res[0])?.into());
    }
    let ln = LayerNormDesc {
        n: u(n),
        c: u(c),
        accumulate: false,
        layout: mm,
    };
    for (l, blk) in a.blocks.iter().enumerate() {
        let x = &a.res[l];
        ops.push(
            bind_layernorm_forward(
                ctx,
                reg,
                ln,
                x,
                params.at(Ln1W, l),
                params.at(Ln1B, l),
                &blk.ln1,
                &blk.ln1_mean,
                &blk.ln1_rstd,
            )?
            .into(),
        );
        ops.push(bind_linear(
            ctx,
            reg,
            mm,
            f16,
            MatmulDesc::linear(u(n), u(c), u(3 * c)),
            &blk.ln1,
            params,
            (QkvW, QkvB, l),
            &blk.qkv,
        )?);
        let att = AttentionDesc {
            b: u(b),
            t: u(t),
            c: u(c),
            nh: u(cfg.n_head),
            layout: mm,
        };
        let att_drop = dropout.map(|d| (d, Site::Attention(l)));
        ops.push(
            bind_attention_forward(ctx, reg, att, &blk.qkv, &blk.atty, &blk.lse, att_drop)?.into(),
        );
        ops.push(bind_linear(
            ctx,
            reg,
            mm,
            f16,
            MatmulDesc::linear(u(n), u(c), u(c)),
            &blk.atty,
            params,
            (AttnProjW, AttnProjB, l),
            &a.proj,
        )?);
        ops.push(residual(reg, Site::AttnProj(l), x, &a.proj, &blk.res2)?);
        ops.push(
            bind_layernorm_forward(
                ctx,
                reg,
                ln,
                &blk.res2,
                params.at(Ln2W, l),
                params.at(Ln2B, l),
                &blk.ln2,
                &blk.ln2_mean,
                &blk.ln2_rstd,
            )?
            .into(),
        );
        ops.push(bind_linear(
            ctx,
            reg,
            mm,
            f16,
            MatmulDesc::linear(u(n), u(c), u(4 * c)),
            &blk.ln2,
            params,
            (FcW, FcB, l),
            &blk.fch,
        )?);
        ops.push(bind_gelu_forward(ctx, reg, u(n * 4 * c), &blk.fch, &blk.fch_gelu)?.into());
        ops.push(bind_linear(
            ctx,
            reg,
            mm,
            f16,
            MatmulDesc::linear(u(n), u(4 * c), u(c)),
            &blk.fch_gelu,
            params,
            (FcProjW, FcProjB, l),
            &a.proj,
        )?);
        ops.push(residual(
            reg,
            Site::Mlp(l),
            &blk.res2,
            &a.proj,
            &a.res[l + 1],
        )?);
    }
    let last = &a.res[cfg.n_layer];
    ops.push(
        bind_layernorm_forward(
            ctx,
            reg,
            ln,
            last,
            params.at(LnfW, 0),
            params.at(LnfB, 0),
            &a.lnf,
            &a.lnf_mean,
            &a.lnf_rstd,
        )?
        .into(),
    );
    // Tied head: logits = lnf · tok_embᵀ, always f32.
    let head = MatmulDesc {
        m: u(n),
        k: u(c),
        n: u(v),
        trans_b: true,
        ..Default::default()
    };
    ops.push(
        mm.bind(
            ctx,
            reg,
            head,
            &a.lnf,
            params.at(TokEmb, 0),
            None,
            &a.logits,
        )?
        .into(),
    );
    let ce = CrossEntropyDesc {
        n: u(n),
        v: u(v),
        n_total: u(n),
        accumulate: false,
        layout: mm,
    };
    let dlogits = with_loss_grad.then(|| View::from(&a.dlogits));
    ops.push(bind_crossentropy(
        ctx, reg, ce, &a.logits, &a.targets, &a.losses, dlogits, &a.loss,
    )?);
    Ok(ops)
}

/// Binds the backward pass from `dlogits` into `grads` (which the step
/// zeroes first: every parameter gradient accumulates), through the masks of
/// the forward's `dropout`.
#[allow(clippy::too_many_arguments)]
pub fn bind_backward(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    cfg: &ModelConfig,
    params: &Flat<'_>,
    grads: &Flat<'_>,
    a: &Acts,
    mm: Layout,
    dropout: Option<DropoutDesc<'_>>,
) -> Result<Vec<BoundOp>, GpuError> {
    let (b, t, c, v) = (a.b, a.t, cfg.d_model, cfg.vocab_size);
    let n = b * t;
    let mut ops: Vec<BoundOp> = Vec::new();
    // Tied head: dlnf = dlogits · tok_emb; dtok_emb += dlogitsᵀ · lnf.
    ops.push(
        mm.bind(
            ctx,
            reg,
            MatmulDesc {
                m: u(n),
                k: u(v),
                n: u(c),
                ..Default::default()
            },
            &a.dlogits,
            params.at(TokEmb, 0),
            None,
            &a.dln,
        )?
        .into(),
    );
    let dw_head = MatmulDesc {
        m: u(v),
        k: u(n),
        n: u(c),
        trans_a: true,
        accumulate: true,
        ..Default::default()
    };
    // A weight gradient `dW += dyᵀ·x` sums over the B·T rows: K-split
    // through one shared scratch when its few output tiles would idle a GPU.
    let scratch = split_k_scratch(ctx, cfg, a)?;
    let scratch = scratch.as_ref();
    ops.push(mm.bind_split_k(
        ctx,
        reg,
        dw_head,
        &a.dlogits,
        &a.lnf,
        None,
        grads.at(TokEmb, 0),
        scratch,
    )?);
    // dres = LNf backward (overwrites: it starts the stream's gradient).
    let ln_over = LayerNormDesc {
        n: u(n),
        c: u(c),
        accumulate: false,
        layout: mm,
    };
    let ln_acc = LayerNormDesc {
        accumulate: true,
        ..ln_over
    };
    ops.push(bind_layernorm_backward(
        ctx,
        reg,
        ln_over,
        LayerNormGrads {
            dout: (&a.dln).into(),
            x: (&a.res[cfg.n_layer]).into(),
            w: params.at(LnfW, 0),
            mean: (&a.lnf_mean).into(),
            rstd: (&a.lnf_rstd).into(),
            dx: (&a.dres).into(),
            dw: grads.at(LnfW, 0),
            db: grads.at(LnfB, 0),
        },
    )?);
    // For a linear `y = x·Wᵀ + b` with `W (out, in)`: dx = dy·W, dW += dyᵀ·x, db += Σ dy.
    let linear_backward = |reg: &mut PipelineRegistry,
                           ops: &mut Vec<BoundOp>,
                           dy: &wgpu::Buffer,
                           x: &wgpu::Buffer,
                           dx: &wgpu::Buffer,
                           w: ParamKind,
                           bias: ParamKind,
                           l: usize,
                           d_in: usize,
                           d_out: usize|
     -> Result<(), GpuError> {
        ops.push(
            mm.bind(
                ctx,
                reg,
                MatmulDesc {
                    m: u(n),
                    k: u(d_out),
                    n: u(d_in),
                    ..Default::default()
                },
                dy,
                params.at(w, l),
                None,
                dx,
            )?
            .into(),
        );
        let dw = MatmulDesc {
            m: u(d_out),
            k: u(n),
            n: u(d_in),
            trans_a: true,
            accumulate: true,
            ..Default::default()
        };
        ops.push(mm.bind_split_k(ctx, reg, dw, dy, x, None, grads.at(w, l), scratch)?);
        ops.push(bind_bias_grad(
            ctx,
            reg,
            BiasGradDesc {
                rows: u(n),
                cols: u(d_out),
                accumulate: true,
                layout: mm,
            },
            dy,
            grads.at(bias, l),
        )?);
        Ok(())
    };
    let nc = u(n * c);
    // A branch's output gradient: `dres` itself, or (with dropout) `dres`
    // through the branch's mask into `proj`, free during the backward.
    let branch_grad = |reg: &mut PipelineRegistry,
                       ops: &mut Vec<BoundOp>,
                       site: Site|
     -> Result<&wgpu::Buffer, GpuError> {
        Ok(match dropout {
            Some(d) => {
                ops.push(bind_dropout(ctx, reg, d, site, nc, None, &a.dres, &a.proj)?.into());
                &a.proj
            }
            None => &a.dres,
        })
    };
    for l in (0..cfg.n_layer).rev() {
        let blk = &a.blocks[l];
        // dres holds d res[l+1]; through the MLP residual (and its mask) it
        // is also d fc_proj's output.
        let dy = branch_grad(reg, &mut ops, Site::Mlp(l))?;
        linear_backward(
            reg,
            &mut ops,
            dy,
            &blk.fch_gelu,
            &a.dfch_gelu,
            FcProjW,
            FcProjB,
            l,
            4 * c,
            c,
        )?;
        ops.push(
            bind_gelu_backward(
                ctx,
                reg,
                u(n * 4 * c),
                false,
                &blk.fch,
                &a.dfch_gelu,
                &a.dfch,
            )?
            .into(),
        );
        linear_backward(
            reg,
            &mut ops,
            &a.dfch,
            &blk.ln2,
            &a.dln,
            FcW,
            FcB,
            l,
            c,
            4 * c,
        )?;
        // d res2 = d res[l+1] + LN2's dx: accumulate into dres.
        ops.push(bind_layernorm_backward(
            ctx,
            reg,
            ln_acc,
            LayerNormGrads {
                dout: (&a.dln).into(),
                x: (&blk.res2).into(),
                w: params.at(Ln2W, l),
                mean: (&blk.ln2_mean).into(),
                rstd: (&blk.ln2_rstd).into(),
                dx: (&a.dres).into(),
                dw: grads.at(Ln2W, l),
                db: grads.at(Ln2B, l),
            },
        )?);
        let dy = branch_grad(reg, &mut ops, Site::AttnProj(l))?;
        linear_backward(
            reg, &mut ops, dy, &blk.atty, &a.datty, AttnProjW, AttnProjB, l, c, c,
        )?;
        let att = AttentionDesc {
            b: u(b),
            t: u(t),
            c: u(c),
            nh: u(cfg.n_head),
            layout: mm,
        };
        let att_ops = bind_attention_backward(
            ctx,
            reg,
            att,
            AttentionBackwardBuffers {
                qkv: &blk.qkv,
                out: &blk.atty,
                dout: &a.datty,
                lse: &blk.lse,
                dqkv: &a.dqkv,
            },
            dropout.map(|d| (d, Site::Attention(l))),
        )?;
        ops.push(BoundOp {
            kernels: att_ops,
            scratch: Vec::new(),
        });
        linear_backward(
            reg,
            &mut ops,
            &a.dqkv,
            &blk.ln1,
            &a.dln,
            QkvW,
            QkvB,
            l,
            c,
            3 * c,
        )?;
        // d res[l] = d res2 + LN1's dx.
        ops.push(bind_layernorm_backward(
            ctx,
            reg,
            ln_acc,
            LayerNormGrads {
                dout: (&a.dln).into(),
                x: (&a.res[l]).into(),
                w: params.at(Ln1W, l),
                mean: (&blk.ln1_mean).into(),
                rstd: (&blk.ln1_rstd).into(),
                dx: (&a.dres).into(),
                dw: grads.at(Ln1W, l),
                db: grads.at(Ln1B, l),
            },
        )?);
    }
    let emb = EmbeddingDesc {
        n: u(n),
        t: u(t),
        c: u(c),
        v: u(v),
        t_max: u(cfg.block_size),
    };
    let dy = branch_grad(reg, &mut ops, Site::Embedding)?;
    ops.push(bind_embedding_backward(
        ctx,
        reg,
        mm,
        emb,
        &a.inputs,
        dy,
        grads.at(TokEmb, 0),
        grads.at(PosEmb, 0),
    )?);
    Ok(ops)
}

/// The scratch every K-split weight gradient of the backward shares (they
/// run one after another), of the size the memory plan counts for it.
fn split_k_scratch(
    ctx: &GpuContext,
    cfg: &ModelConfig,
    a: &Acts,
) -> Result<Option<wgpu::Buffer>, GpuError> {
    match split_k_scratch_floats(cfg, a.b * a.t) {
        0 => Ok(None),
        floats => Ok(Some(ctx.zeros("matmul_split_k_scratch", floats as usize)?)),
    }
}
