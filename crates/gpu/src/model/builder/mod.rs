//! The training graph's vocabulary: one method per op, each binding its
//! kernel (in the model's kernel layout) and appending it to the graph, so
//! `graph.rs` reads as one line per op. Shapes: `N = B·T` rows, `C`
//! channels, `V` vocab; `(w, b, l)` names a parameter pair of layer `l`.

mod backward;
mod copies;
mod copy_set;
mod deferred;
mod regions;

use super::acts::Acts;
use super::F16WeightCache;
use crate::kernel::Layout;
use crate::ops::attention::{
    bind_attention_forward, bind_attention_forward_coop, coop_attention_unavailable, AttentionDesc,
};
use crate::ops::crossentropy::{bind_crossentropy, CrossEntropyDesc};
use crate::ops::dropout::{bind_dropout, DropoutDesc};
use crate::ops::embedding::{bind_embedding_forward, EmbeddingDesc};
use crate::ops::gelu::bind_gelu_forward;
use crate::ops::layernorm::{
    bind_layernorm_forward, bind_layernorm_residual, LayerNormDesc, ResidualAdd,
};
use crate::ops::matmul::coop::{bind_matmul_coop_staging, CoopOptions, Epilogue};
use crate::ops::matmul::coop_stage::{Reuse, StagedRows};
use crate::ops::matmul::f16w::bind_matmul_f16w;
use crate::ops::matmul::{split_k_scratch_floats, MatmulDesc};
use crate::ops::{BoundOp, View};
use crate::{GpuContext, GpuError, PipelineRegistry};
use std::collections::HashMap;
use tinygpt_core::model::Site;
use tinygpt_core::{ModelConfig, ParamKind, ParamLayout};

/// Views of one parameter tensor (or its gradient) of one layer in a flat buffer.
pub struct Flat<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub layout: &'a ParamLayout,
}

impl<'a> Flat<'a> {
    /// Layer `l` of the stacked tensor `kind` (layer 0 for unstacked ones).
    pub fn at(&self, kind: ParamKind, l: usize) -> View<'a> {
        let spec = self.layout.get(kind);
        let per = if spec.shape.len() > 1 && !matches!(kind, ParamKind::TokEmb | ParamKind::PosEmb)
        {
            spec.len / spec.shape[0]
        } else {
            0
        };
        View::at(self.buffer, (spec.offset + l * per) as u32)
    }
}

/// A weight and bias of one layer: `(w, b, l)`.
pub type Linear = (ParamKind, ParamKind, usize);

type Buf = wgpu::Buffer;
type R = Result<(), GpuError>;
/// A product's staged copies of op(A) and op(B), when on cooperative
/// matrices (`coop::StagedOp::staged`).
type Staged = [Option<StagedRows>; 2];
/// A weight's gradient and its bias's, when it has one.
type Grads<'a> = (View<'a>, Option<View<'a>>);

/// Binds ops in order for one batch shape (see the module docs).
pub struct Builder<'a, 'r> {
    pub ctx: &'a GpuContext,
    pub reg: &'r mut PipelineRegistry,
    pub cfg: &'a ModelConfig,
    pub params: Flat<'a>,
    /// Gradients (backward only).
    pub grads: Option<Flat<'a>>,
    pub layout: Layout,
    /// The f16 weights forward linears read, when f16 storage is active.
    pub f16: Option<&'a F16WeightCache>,
    /// Training dropout: masks the embedding and each residual branch.
    pub dropout: Option<DropoutDesc<'a>>,
    /// Every matmul on cooperative matrices (the tensor-core path): f16
    /// operands, f32 sums, each backward product's gradient operand scaled
    /// by [`Self::grad_scale`] as it is staged.
    pub coop: bool,
    /// The attention's backward on tensor cores where the device runs
    /// those kernels and the heads fit them (`ops::attention::coop`).
    pub coop_attention: bool,
    pub b: usize,
    pub t: usize,
    /// The K-split products' shared scratch.
    scratch: Option<Buf>,
    /// On cooperative matrices: each forward linear's input as its product
    /// staged it (X's rows), by weight, for the weight's gradient to read
    /// (the graph writes a linear's input once, before the linear).
    forward_staged: HashMap<(ParamKind, usize), StagedRows>,
    /// The reductions the backward leaves to its end (`deferred.rs`).
    deferred: regions::Deferred,
    /// The f16 copies producers write on tensor cores (`copies.rs`).
    copies: copy_set::Copies,
    pub ops: Vec<BoundOp>,
}

fn u(x: usize) -> u32 {
    x as u32
}

impl<'a, 'r> Builder<'a, 'r> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &'a GpuContext,
        reg: &'r mut PipelineRegistry,
        cfg: &'a ModelConfig,
        params: Flat<'a>,
        layout: Layout,
        f16: Option<&'a F16WeightCache>,
        dropout: Option<DropoutDesc<'a>>,
        a: &Acts,
    ) -> Self {
        Self {
            ctx,
            reg,
            cfg,
            params,
            grads: None,
            layout,
            f16,
            dropout,
            coop: false,
            coop_attention: false,
            b: a.b,
            t: a.t,
            scratch: None,
            forward_staged: HashMap::new(),
            deferred: Default::default(),
            copies: Default::default(),
            ops: Vec::new(),
        }
    }

    /// Switches to the backward: gradients go into `grads`, the K-split
    /// products share one scratch of the size the memory plan counts, and
    /// what the backward leaves to its end has its buffers (`deferred.rs`).
    pub fn backward(&mut self, grads: Flat<'a>) -> R {
        self.make_scratch()?;
        self.make_deferred()?;
        self.grads = Some(grads);
        Ok(())
    }

    /// Makes the K-split products' one scratch, of the size the memory
    /// plan counts, if there is none: before the forward, its tensor-core
    /// products split too ([`bind_matmul_coop_staging`]; a graph
    /// built without one runs them whole, as an inference forward does).
    pub fn make_scratch(&mut self) -> R {
        let floats = split_k_scratch_floats(self.cfg, self.b * self.t) as usize;
        if self.scratch.is_none() && floats > 0 {
            self.scratch = Some(self.ctx.zeros("matmul_split_k_scratch", floats)?);
        }
        Ok(())
    }

    fn n(&self) -> u32 {
        u(self.b * self.t)
    }

    fn grad(&self, kind: ParamKind, l: usize) -> View<'a> {
        self.grads.as_ref().expect("backward() first").at(kind, l)
    }

    fn push(&mut self, op: impl Into<BoundOp>) -> R {
        self.ops.push(op.into());
        Ok(())
    }

    /// What a backward product's gradient operand is multiplied by on
    /// cooperative matrices (and its result divided by): the loss is a mean
    /// over N = B·T rows, so its gradients are of order 1/N, in f16's
    /// subnormals for large batches; N rounded up to a power of two brings
    /// them back to order one, exactly.
    pub fn grad_scale(&self) -> f32 {
        self.n().next_power_of_two() as f32
    }

    /// `C = op(A)·op(B) [+ bias] [+ C]` on cooperative matrices when the
    /// path is active (op(A) times `scale` as staged; op(B) read from
    /// `b_rows` where that copy fits), else in the layout's f32 kernel
    /// (`scale` and `b_rows` unused). On cooperative matrices: the
    /// operands' copies as staged ([`StagedOp::staged`]).
    fn matmul<'v>(
        &mut self,
        desc: MatmulDesc,
        (a, scale): (View<'v>, f32),
        (b, b_rows): (View<'v>, Option<&StagedRows>),
        bias: Option<View<'v>>,
        c: View<'v>,
    ) -> Result<Staged, GpuError> {
        if !self.coop {
            let k = self.layout.bind(self.ctx, self.reg, desc, a, b, bias, c)?;
            self.wrote(c.buffer, false);
            self.push(k)?;
            return Ok([None, None]);
        }
        self.coop_matmul(desc, (a, CoopOptions::scaled(scale)), (b, b_rows), bias, c)
    }

    /// `C = op(A)·op(B) [+ bias] [+ C]` on cooperative matrices, as `opts`
    /// say, op(A) read from its producer's f16 copy and op(B) from
    /// `b_rows` where they fit; the operands' copies as staged.
    fn coop_matmul<'v>(
        &mut self,
        desc: MatmulDesc,
        (a, opts): (View<'v>, CoopOptions<'v>),
        (b, b_rows): (View<'v>, Option<&StagedRows>),
        bias: Option<View<'v>>,
        c: View<'v>,
    ) -> Result<Staged, GpuError> {
        let a_rows = self
            .fresh_copy(a, (desc.m, desc.k))
            .filter(|_| !desc.trans_a);
        self.wrote(c.buffer, false);
        let reuse = Reuse {
            a: a_rows.as_ref(),
            b: b_rows,
        };
        let (ctx, b, scratch) = (self.ctx, (b, reuse), self.scratch.as_ref());
        let op = bind_matmul_coop_staging(ctx, self.reg, desc, (a, opts), b, bias, c, scratch)?;
        op.kernels.into_iter().try_for_each(|k| self.push(k))?;
        Ok(op.staged)
    }

    /// Keeps a forward linear's staged input for the weight's gradient.
    fn keep_staged(&mut self, weight: (ParamKind, usize), [input, _]: Staged) -> R {
        if let Some(rows) = input {
            self.forward_staged.insert(weight, rows);
        }
        Ok(())
    }

    /// The forward's staged copy of a linear's input.
    fn forward_copy(&self, weight: (ParamKind, usize)) -> Option<StagedRows> {
        self.forward_staged.get(&weight).cloned()
    }

    fn embedding(&self) -> EmbeddingDesc {
        let c = self.cfg;
        EmbeddingDesc {
            n: self.n(),
            t: u(self.t),
            c: u(c.d_model),
            v: u(c.vocab_size),
            t_max: u(c.block_size),
        }
    }

    fn ln(&self, accumulate: bool) -> LayerNormDesc {
        LayerNormDesc {
            n: self.n(),
            c: u(self.cfg.d_model),
            accumulate,
            layout: self.layout,
        }
    }

    fn att(&self) -> AttentionDesc {
        AttentionDesc {
            b: u(self.b),
            t: u(self.t),
            c: u(self.cfg.d_model),
            nh: u(self.cfg.n_head),
            layout: self.layout,
        }
    }

    /// `out = tok_emb[inputs] + pos_emb[t]`.
    pub fn encoder(&mut self, inputs: &Buf, out: &Buf) -> R {
        let (tok, pos) = (
            self.params.at(ParamKind::TokEmb, 0),
            self.params.at(ParamKind::PosEmb, 0),
        );
        let k = bind_embedding_forward(
            self.ctx,
            self.reg,
            self.embedding(),
            inputs,
            tok,
            pos,
            out,
            None,
        )?;
        self.wrote(out, false);
        self.push(k)
    }

    /// `out = mask(x)` for the training dropout at `site`; no-op without dropout.
    pub fn dropout(&mut self, site: Site, x: &Buf, out: &Buf) -> R {
        let Some(d) = self.dropout else { return Ok(()) };
        let nc = u(self.b * self.t * self.cfg.d_model);
        let k = bind_dropout(self.ctx, self.reg, d, site, nc, None, x, out)?;
        self.wrote(out, false);
        self.push(k)
    }

    /// `(out, mean, rstd) = LayerNorm(x; w, b)`.
    pub fn layernorm(
        &mut self,
        x: &Buf,
        ((w, b, l), (out, mean, rstd)): (Linear, (&Buf, &Buf, &Buf)),
    ) -> R {
        let (w, b) = (self.params.at(w, l), self.params.at(b, l));
        let copy = self.copy_for(out, (self.b * self.t, self.cfg.d_model), 1.0)?;
        let (ln, c) = (self.ln(false), copy.as_ref());
        let k = bind_layernorm_forward(self.ctx, self.reg, ln, x, w, b, out, mean, rstd, c)?;
        self.wrote(out, copy.is_some());
        self.push(k)
    }

    /// `out (N, d_out) = x (N, d_in) · Wᵀ + b`: the one place a fast path
    /// swaps a training-graph kernel (the f16 weights when active).
    pub fn linear(
        &mut self,
        x: &Buf,
        (w, b, l): Linear,
        out: &Buf,
        (d_in, d_out): (usize, usize),
    ) -> R {
        let desc = MatmulDesc::linear(self.n(), u(d_in), u(d_out));
        let (wv, bias) = (self.params.at(w, l), Some(self.params.at(b, l)));
        match self.f16.filter(|_| !self.coop) {
            Some(f) => {
                let k = bind_matmul_f16w(self.ctx, self.reg, desc, x, f.at(wv.offset), bias, out)?;
                self.wrote(out, false);
                self.push(k)
            }
            None => {
                let staged = self.matmul(desc, (x.into(), 1.0), (wv, None), bias, out.into())?;
                self.keep_staged((w, l), staged)
            }
        }
    }

    /// Causal self-attention of layer `l`: `out (N, C)` and the per-row `lse`.
    pub fn attention(&mut self, qkv: &Buf, out: &Buf, lse: &Buf, l: usize) -> R {
        let drop = self.dropout.map(|d| (d, Site::Attention(l)));
        let (coop, att) = (self.attention_on_tensor_cores(), self.att());
        // On tensor cores `out`'s f16 copy too: the projection's op(A).
        let copy = match coop {
            true => self.copy_for(out, (self.b * self.t, self.cfg.d_model), 1.0)?,
            false => None,
        };
        let (ctx, reg) = (self.ctx, &mut *self.reg);
        let k = match coop {
            true => {
                bind_attention_forward_coop(ctx, reg, att, (qkv, out, lse), (drop, copy.as_ref()))?
            }
            false => bind_attention_forward(ctx, reg, att, qkv, out, lse, drop)?,
        };
        self.wrote(out, copy.is_some());
        self.push(k)
    }

    /// Whether the attention binds the tensor-core kernels, forward and
    /// backward (the forward in one pass since run 138: 248 µs a nanoGPT
    /// layer on the H100 against the f32 kernel's 301).
    pub fn attention_on_tensor_cores(&self) -> bool {
        self.coop_attention && coop_attention_unavailable(self.ctx, &self.att()).is_none()
    }

    /// `out = base + mask(branch)` (the branch's dropout mask when training
    /// with it), then the LayerNorm `ln` of `out`: one dispatch
    /// ([`bind_layernorm_residual`]; the bits of the add and the LayerNorm
    /// apart).
    pub fn residual_layernorm(
        &mut self,
        site: Site,
        (base, branch, out): (&Buf, &Buf, &Buf),
        ((w, b, l), (y, mean, rstd)): (Linear, (&Buf, &Buf, &Buf)),
    ) -> R {
        let add = ResidualAdd {
            base: base.into(),
            branch: branch.into(),
            drop: self.dropout.map(|d| (d, site)),
            x: out.into(),
        };
        let wb = [self.params.at(w, l), self.params.at(b, l)];
        let outs = [y.into(), mean.into(), rstd.into()];
        let copy = self.copy_for(y, (self.b * self.t, self.cfg.d_model), 1.0)?;
        let (ln, c) = (self.ln(false), copy.as_ref());
        let k = bind_layernorm_residual(self.ctx, self.reg, ln, add, wb, outs, c)?;
        self.wrote(out, false);
        self.wrote(y, copy.is_some());
        self.push(k)
    }

    /// `fch (N, d_out) = x · Wᵀ + b` and `fch_gelu = GELU(fch)`: one
    /// matmul with the GELU in its epilogue (on cooperative matrices, or
    /// the f32 tile kernels), else the linear and the GELU. On
    /// cooperative matrices a training graph writes `fch_gelu` as its f16
    /// copy alone ([`Epilogue::GeluCopy`]; run 144: the GELU epilogue
    /// cost 89 µs a nanoGPT layer over the same product's plain one).
    pub fn linear_gelu(
        &mut self,
        x: &Buf,
        (w, b, l): Linear,
        (fch, fch_gelu): (&Buf, &Buf),
        (d_in, d_out): (usize, usize),
    ) -> R {
        let desc = MatmulDesc::linear(self.n(), u(d_in), u(d_out));
        if !self.coop {
            return self.linear_gelu_f32(x, (w, b, l), (fch, fch_gelu), desc);
        }
        let copy = self.copy_for(fch_gelu, (self.b * self.t, d_out), 1.0)?;
        // Training reads GELU(fch) only as its copy (the next product's
        // op(A), that weight's gradient's op(B)); an inference forward
        // writes the f32 too (the gates' stages read it).
        let epilogue = match (&copy, self.grads.is_some()) {
            (Some(c), true) => Epilogue::GeluCopy(fch_gelu.into(), c),
            (c, _) => Epilogue::Gelu(fch_gelu.into(), c.as_ref()),
        };
        let opts = CoopOptions {
            epilogue,
            ..Default::default()
        };
        let (wv, bias) = (self.params.at(w, l), Some(self.params.at(b, l)));
        let staged = self.coop_matmul(desc, (x.into(), opts), (wv, None), bias, fch.into())?;
        self.wrote(fch_gelu, copy.is_some());
        self.keep_staged((w, l), staged)
    }

    /// [`Builder::linear_gelu`] off tensor cores: the f32 tile kernel with
    /// the GELU in its epilogue, or (f16 weights active, or one row) the
    /// linear and the GELU.
    fn linear_gelu_f32(
        &mut self,
        x: &Buf,
        (w, b, l): Linear,
        (fch, fch_gelu): (&Buf, &Buf),
        desc: MatmulDesc,
    ) -> R {
        let (wv, bias) = (self.params.at(w, l), Some(self.params.at(b, l)));
        let fused = match self.f16 {
            Some(_) => None,
            None => {
                let (ops, gelu) = ((x.into(), wv, bias), fch_gelu.into());
                let layout = self.layout;
                layout.bind_gelu(self.ctx, self.reg, desc, ops, fch.into(), gelu)?
            }
        };
        let Some(k) = fused else {
            self.linear(x, (w, b, l), fch, (desc.k as usize, desc.n as usize))?;
            return self.gelu(fch, fch_gelu, desc.n as usize);
        };
        self.wrote(fch, false);
        self.wrote(fch_gelu, false);
        self.push(k)?;
        self.keep_staged((w, l), [None, None])
    }

    /// `out (N, width) = GELU(x)`.
    pub fn gelu(&mut self, x: &Buf, out: &Buf, width: usize) -> R {
        let k = bind_gelu_forward(self.ctx, self.reg, u(self.b * self.t * width), x, out)?;
        self.wrote(out, false);
        self.push(k)
    }

    /// Tied head, always f32: `logits (N, V) = x (N, C) · tok_embᵀ`.
    pub fn head(&mut self, x: &Buf, logits: &Buf) -> R {
        let (c, v) = (self.cfg.d_model, self.cfg.vocab_size);
        let desc = MatmulDesc {
            m: self.n(),
            k: u(c),
            n: u(v),
            trans_b: true,
            ..Default::default()
        };
        let tok = self.params.at(ParamKind::TokEmb, 0);
        let staged = self.matmul(desc, (x.into(), 1.0), (tok, None), None, logits.into())?;
        self.keep_staged((ParamKind::TokEmb, 0), staged)
    }

    /// Per-row `losses (N)`, their mean `loss (1)`, and `dlogits` when given.
    pub fn crossentropy(&mut self, a: &Acts, dlogits: Option<&Buf>) -> R {
        let desc = CrossEntropyDesc {
            n: self.n(),
            v: u(self.cfg.vocab_size),
            n_total: self.n(),
            accumulate: false,
            layout: self.layout,
        };
        let d = dlogits.map(View::from);
        let op = bind_crossentropy(
            self.ctx, self.reg, desc, &a.logits, &a.targets, &a.losses, d, &a.loss,
        )?;
        if let Some(d) = dlogits {
            self.wrote(d, false);
        }
        self.push(op)
    }
}
