//! The training graph's backward ops (the vocabulary's second half; see
//! the parent module).

use super::{u, Buf, Builder, Grads, Linear, R};
use crate::ops::attention::{
    bind_attention_backward, bind_attention_backward_coop, AttentionBackwardBuffers,
};
use crate::ops::bias_grad::{bias_grad_partials, chunks};
use crate::ops::embedding::bind_embedding_backward;
use crate::ops::gelu::{bind_gelu_backward, bind_gelu_backward_columns, bind_gelu_backward_copy};
use crate::ops::layernorm::LayerNormGrads;
use crate::ops::matmul::coop::{bind_matmul_coop_split_k, CoopOptions};
use crate::ops::matmul::coop_stage::{Reuse, StagedRows};
use crate::ops::matmul::MatmulDesc;
use crate::ops::BoundOp;
use crate::GpuError;
use tinygpt_core::model::Site;
use tinygpt_core::ParamKind;

/// The backward ops: every parameter gradient accumulates into `grads`
/// (zeroed by the step first).
impl<'a, 'r> Builder<'a, 'r> {
    /// Tied head: `dx (N, C) = dlogits · tok_emb`; `dtok_emb += dlogitsᵀ · x`.
    pub fn head_backward(&mut self, dlogits: &Buf, x: &Buf, dx: &Buf) -> R {
        let (c, v) = (u(self.cfg.d_model), u(self.cfg.vocab_size));
        let tok = self.params.at(ParamKind::TokEmb, 0);
        let dx_desc = MatmulDesc {
            m: self.n(),
            k: v,
            n: c,
            ..Default::default()
        };
        let scale = self.grad_scale();
        // W staged as it is (not the forward's Wᵀ): see linear_backward.
        let b = (tok, None);
        let [dy_rows, _] = self.matmul(dx_desc, (dlogits.into(), scale), b, None, dx.into())?;
        let reuse = (dy_rows, (ParamKind::TokEmb, 0));
        self.weight_grad(
            (dlogits, x),
            (v, c),
            (self.grad(ParamKind::TokEmb, 0), None),
            reuse,
        )
    }

    /// `dW (rows, cols) += dyᵀ · x` (and `db += Σ dy` when given), summed
    /// over the N rows: K-split when its few output tiles would idle a GPU
    /// — with `db` as the split's row sums where it splits on the f32
    /// small-output kernel, else `db` by the column sum. A block's f32
    /// split keeps its slices for the reduce at the end of the backward
    /// (`deferred.rs`) where they fit; others go through the shared scratch
    /// and are reduced at once. On cooperative matrices it reads `dy` as
    /// the dX product staged it (`dy_rows`) and `x` as the weight's forward
    /// product did.
    fn weight_grad(
        &mut self,
        (dy, x): (&Buf, &Buf),
        dims: (u32, u32),
        (dw, db): Grads<'a>,
        (dy_rows, weight): (Option<StagedRows>, (ParamKind, usize)),
    ) -> R {
        let (rows, cols) = dims;
        let desc = MatmulDesc {
            m: rows,
            k: self.n(),
            n: cols,
            trans_a: true,
            accumulate: true,
            ..Default::default()
        };
        // Off tensor cores, reduced at the end where it can be; the tied
        // head's gradient at once (deferred.rs).
        let own = !self.coop && weight.0 != ParamKind::TokEmb;
        if own && self.weight_grad_deferred(desc, (dy.into(), x.into()), (dw, db))? {
            return Ok(());
        }
        let scratch = self.scratch.as_ref();
        if self.coop {
            let a = (dy.into(), CoopOptions::scaled(self.grad_scale()));
            let x_rows = self.forward_copy(weight);
            let reuse = Reuse {
                a: dy_rows.as_ref(),
                b: x_rows.as_ref(),
            };
            let (ctx, x) = (self.ctx, x.into());
            let op =
                bind_matmul_coop_split_k(ctx, self.reg, desc, a, x, None, dw, (scratch, reuse))?;
            self.push(op)?;
        } else {
            let (ctx, layout) = (self.ctx, self.layout);
            if let Some(db) = db {
                let split =
                    layout.bind_split_k_row_sums(ctx, self.reg, desc, dy, x, dw, db, scratch)?;
                if let Some(op) = split {
                    return self.push(op);
                }
            }
            let op = layout.bind_split_k(ctx, self.reg, desc, dy, x, None, dw, scratch)?;
            self.push(op)?;
        }
        let Some(db) = db else { return Ok(()) };
        self.bias_grad_deferred(dy.into(), db, rows)
    }

    /// For `y = x·Wᵀ + b` with `W (d_out, d_in)`: `dx = dy·W`, `dW += dyᵀ·x`,
    /// `db += Σ dy`.
    pub fn linear_backward(
        &mut self,
        dy: &Buf,
        x: &Buf,
        dx: &Buf,
        (w, b, l): Linear,
        (d_in, d_out): (usize, usize),
    ) -> R {
        let dx_desc = self.dx_desc(d_in, d_out);
        let (wv, scale) = (self.params.at(w, l), self.grad_scale());
        // W is staged again, as it is, where its forward product's Wᵀ
        // could be read (the `B_NK` pipeline): the staging is small (a
        // weight), and the plain pipelines load three blocks ahead — the
        // nanoGPT step 19.30 → 18.91 ms on the H100, the same loss bits
        // (run 122).
        let wb = (wv, None);
        let [dy_rows, _] = self.matmul(dx_desc, (dy.into(), scale), wb, None, dx.into())?;
        let grads = (self.grad(w, l), Some(self.grad(b, l)));
        self.weight_grad((dy, x), (u(d_out), u(d_in)), grads, (dy_rows, (w, l)))
    }

    /// A linear's input gradient `dx (N, d_in) = dy (N, d_out) · W`.
    fn dx_desc(&self, d_in: usize, d_out: usize) -> MatmulDesc {
        MatmulDesc {
            m: self.n(),
            k: u(d_out),
            n: u(d_in),
            ..Default::default()
        }
    }

    /// [`Builder::linear_backward`] of a linear reading `x = GELU(pre)`, on
    /// through the GELU: `dpre = GELU'(pre) ⊙ (dy·W)`. Off tensor cores the
    /// dX product's epilogue multiplies by GELU' (the GELU backward
    /// kernel's bits, one dispatch fewer); else the product into `dx` and
    /// the GELU backward.
    #[allow(clippy::too_many_arguments)]
    pub fn linear_gelu_backward(
        &mut self,
        dy: &Buf,
        (pre, x): (&Buf, &Buf),
        (dx, dpre): (&Buf, &Buf),
        (w, b, l): Linear,
        (d_in, d_out): (usize, usize),
    ) -> R {
        let fused = if self.coop {
            None
        } else {
            let desc = self.dx_desc(d_in, d_out);
            let (ctx, ops) = (self.ctx, (dy.into(), self.params.at(w, l)));
            let layout = self.layout;
            layout.bind_gelu_grad(ctx, self.reg, desc, ops, pre.into(), dpre.into())?
        };
        let Some(k) = fused else {
            self.linear_backward(dy, x, dx, (w, b, l), (d_in, d_out))?;
            return self.gelu_backward(pre, dx, dpre, d_in);
        };
        self.push(k)?;
        let grads = (self.grad(w, l), Some(self.grad(b, l)));
        self.weight_grad((dy, x), (u(d_out), u(d_in)), grads, (None, (w, l)))
    }

    /// LayerNorm backward from `dout`: `dx` overwritten (`accumulate` false)
    /// or added to, `dw`/`db` accumulated.
    #[allow(clippy::too_many_arguments)]
    pub fn layernorm_backward(
        &mut self,
        accumulate: bool,
        dout: &Buf,
        x: &Buf,
        (w, b, l): Linear,
        (mean, rstd): (&Buf, &Buf),
        dx: &Buf,
    ) -> R {
        let shape = (self.b * self.t, self.cfg.d_model);
        let copy = self.copy_for(dx, shape, self.grad_scale())?;
        let grads = LayerNormGrads {
            dout: dout.into(),
            x: x.into(),
            w: self.params.at(w, l),
            mean: mean.into(),
            rstd: rstd.into(),
            dx: dx.into(),
            dw: self.grad(w, l),
            db: self.grad(b, l),
            dx_copy: copy.as_ref(),
        };
        self.layernorm_backward_deferred(accumulate, grads)?;
        self.wrote(dx, copy.is_some());
        Ok(())
    }

    /// A residual branch's output gradient: `dres` itself, or (with
    /// dropout) `dres` through the branch's mask into `scratch`.
    pub fn branch_grad<'b>(
        &mut self,
        site: Site,
        dres: &'b Buf,
        scratch: &'b Buf,
    ) -> Result<&'b Buf, GpuError> {
        Ok(match self.dropout {
            Some(_) => {
                self.dropout(site, dres, scratch)?;
                scratch
            }
            None => dres,
        })
    }

    /// `dfch (N, width) = GELU'(fch) ⊙ dout`. On tensor cores with the
    /// first stage of its column sums too, which the bias gradient of the
    /// linear before then finishes (`bias_grad_deferred`): the column
    /// form's bits, without that stage's reading dfch again.
    pub fn gelu_backward(&mut self, fch: &Buf, dout: &Buf, dfch: &Buf, width: usize) -> R {
        let rows = self.b * self.t;
        let copy = self.copy_for(dfch, (rows, width), self.grad_scale())?;
        let desc = self.bias_desc(u(width));
        let k = match &copy {
            Some(c) if chunks(desc.rows) > 1 => {
                let floats = bias_grad_partials(desc) as u64;
                let at = self.deferred.partials.need(floats, "partials")?;
                let (offset, shape) = (at.offset, (desc.rows, desc.cols));
                let ops = (fch.into(), dout.into());
                let outs = (dfch.into(), Some(c));
                let k = bind_gelu_backward_columns(self.ctx, self.reg, shape, ops, outs, at)?;
                self.deferred.first_stage = Some((dfch.clone(), offset, desc.cols));
                k
            }
            Some(c) => {
                let shape = (u(rows), u(width), None);
                let ops = (fch.into(), dout.into());
                bind_gelu_backward_copy(self.ctx, self.reg, shape, false, ops, dfch.into(), c)?
            }
            None => {
                bind_gelu_backward(self.ctx, self.reg, u(rows * width), false, fch, dout, dfch)?
            }
        };
        self.wrote(dfch, copy.is_some());
        self.push(k)
    }

    /// Attention backward of layer `l` into `dqkv (N, 3C)`.
    pub fn attention_backward(&mut self, bufs: AttentionBackwardBuffers<'_>, l: usize) -> R {
        let drop = self.dropout.map(|d| (d, Site::Attention(l)));
        let dqkv = bufs.dqkv;
        let coop = self.attention_on_tensor_cores();
        // On tensor cores dqkv's f16 copy too: the qkv dX product's op(A).
        let copy = match coop {
            true => {
                let shape = (self.b * self.t, 3 * self.cfg.d_model);
                self.copy_for(dqkv, shape, self.grad_scale())?
            }
            false => None,
        };
        let (ctx, att) = (self.ctx, self.att());
        let reg = &mut *self.reg;
        let kernels = match coop {
            true => bind_attention_backward_coop(ctx, reg, att, bufs, (drop, copy.as_ref()))?,
            false => bind_attention_backward(ctx, reg, att, bufs, drop)?,
        };
        self.wrote(dqkv, copy.is_some());
        self.push(BoundOp {
            kernels,
            scratch: Vec::new(),
        })
    }

    /// `dtok_emb[inputs] += dy`, `dpos_emb[t] += dy`.
    pub fn encoder_backward(&mut self, inputs: &Buf, dy: &Buf) -> R {
        let (dtok, dpos) = (
            self.grad(ParamKind::TokEmb, 0),
            self.grad(ParamKind::PosEmb, 0),
        );
        let emb = self.embedding();
        let k =
            bind_embedding_backward(self.ctx, self.reg, self.layout, emb, inputs, dy, dtok, dpos)?;
        self.push(k)
    }
}
