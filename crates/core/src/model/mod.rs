//! The CPU reference GPT: the definition every GPU kernel is judged against.
//!
//! GPT-2 style, character level: token + learned position embeddings, `L`
//! pre-LayerNorm blocks (causal multi-head attention with fused QKV, then a
//! 4·C GELU MLP, each added to the residual stream), a final LayerNorm and a
//! head tied to the token embedding. Parameters live in one flat buffer laid
//! out by [`ParamLayout`].
//!
//! Shapes: `B` batch, `T` time, `C` channels, `V` vocab, `L` layers,
//! `NH` heads.

mod activations;
pub mod dropout;
mod float;
pub mod layers;

#[cfg(test)]
mod gradcheck;
#[cfg(test)]
mod layer_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod train_tests;

use std::ops::Range;

use tinygpt_protocol::{ConfigError, ModelConfig};

use crate::params::{ParamKind, ParamLayout};
use crate::rng::Rng;
use activations::BackwardScratch;
pub use activations::{Activations, BlockActivations};
pub use dropout::{Dropout, Mask, Site};
pub use float::{axpy, dot, erf, Float};
use layers::*;
use ParamKind::*;

/// Standard deviation of the weight and embedding init (GPT-2).
pub const INIT_STD: f32 = 0.02;

/// Why a model could not be built or run on an input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("invalid model config: {0}")]
    Config(#[from] ConfigError),
    #[error("parameter buffer holds {got} values but the config needs {expected}")]
    ParamCount { expected: usize, got: usize },
    #[error("batch shape {b}×{t} is empty")]
    EmptyBatch { b: usize, t: usize },
    #[error("sequence length {t} exceeds the model's block_size {block_size}")]
    SequenceTooLong { t: usize, block_size: usize },
    #[error("{what} holds {got} tokens but a {b}×{t} batch needs {}", b * t)]
    TokenCount {
        what: &'static str,
        got: usize,
        b: usize,
        t: usize,
    },
    #[error("{what}[{index}] = {token} is outside the vocabulary of {vocab_size} tokens")]
    TokenOutOfRange {
        what: &'static str,
        index: usize,
        token: u32,
        vocab_size: usize,
    },
    #[error("backward needs the activations of a forward pass given targets")]
    NoTargets,
}

/// Fresh parameters for `cfg`, fixed by `seed`: N(0, 0.02) for weights and
/// embeddings, N(0, 0.02/√(2L)) for the residual projections, LayerNorm
/// weights 1, every bias 0. Tensors draw from one [`Rng`] in storage order.
pub fn init_params(cfg: &ModelConfig, seed: u64) -> Vec<f32> {
    let layout = ParamLayout::new(cfg);
    let mut params = vec![0.0f32; layout.total];
    let mut rng = Rng::new(seed);
    let residual_std = INIT_STD / (2.0 * cfg.n_layer as f32).sqrt();
    for spec in &layout.tensors {
        let dst = &mut params[spec.range()];
        match spec.kind {
            Ln1W | Ln2W | LnfW => dst.fill(1.0),
            kind if kind.is_residual_projection() => dst
                .iter_mut()
                .for_each(|p| *p = residual_std * rng.normal()),
            TokEmb | PosEmb | QkvW | FcW => {
                dst.iter_mut().for_each(|p| *p = INIT_STD * rng.normal())
            }
            _ => {} // biases (LayerNorm ones included) stay 0
        }
    }
    params
}

/// One GPT: its config, layout and flat parameters. `F` is `f32` for real
/// use; the gradient checks run the same code in `f64` via [`Gpt::cast`].
#[derive(Clone, Debug, PartialEq)]
pub struct Gpt<F: Float = f32> {
    pub cfg: ModelConfig,
    pub layout: ParamLayout,
    pub params: Vec<F>,
}

impl Gpt<f32> {
    /// A freshly initialised model (see [`init_params`]).
    pub fn new(cfg: ModelConfig, seed: u64) -> Result<Self, ModelError> {
        cfg.validate()?;
        Self::from_params(cfg, init_params(&cfg, seed))
    }
}

impl<F: Float> Gpt<F> {
    /// Wraps existing parameters (a checkpoint), checking their count.
    pub fn from_params(cfg: ModelConfig, params: Vec<F>) -> Result<Self, ModelError> {
        cfg.validate()?;
        let layout = ParamLayout::new(&cfg);
        if params.len() != layout.total {
            return Err(ModelError::ParamCount {
                expected: layout.total,
                got: params.len(),
            });
        }
        Ok(Self {
            cfg,
            layout,
            params,
        })
    }

    /// The same model in another precision.
    pub fn cast<G: Float>(&self) -> Gpt<G> {
        Gpt {
            cfg: self.cfg,
            layout: self.layout.clone(),
            params: self.params.iter().map(|&p| G::of(p.to_f64())).collect(),
        }
    }

    /// Where layer `l` of a stacked kind lives (the whole tensor for the
    /// unstacked `tok_emb`, `pos_emb`, `lnf_*`, whatever `l`).
    fn range(&self, kind: ParamKind, l: usize) -> Range<usize> {
        let spec = self.layout.get(kind);
        match kind {
            TokEmb | PosEmb | LnfW | LnfB => spec.range(),
            _ => {
                let per = spec.len / spec.shape[0];
                spec.offset + l * per..spec.offset + (l + 1) * per
            }
        }
    }

    fn p(&self, kind: ParamKind, l: usize) -> &[F] {
        &self.params[self.range(kind, l)]
    }

    /// The gradients of two kinds at layer `l`, `first` stored before `second`
    /// (a weight and its bias, or the two embeddings).
    fn grad_pair<'g>(
        &self,
        grads: &'g mut [F],
        first: ParamKind,
        second: ParamKind,
        l: usize,
    ) -> (&'g mut [F], &'g mut [F]) {
        let (a, b) = (self.range(first, l), self.range(second, l));
        let (lo, hi) = grads.split_at_mut(b.start);
        (&mut lo[a], &mut hi[..b.len()])
    }

    /// Refuses a batch the model cannot run, naming what is wrong.
    fn check_batch(
        &self,
        inputs: &[u32],
        targets: Option<&[u32]>,
        b: usize,
        t: usize,
    ) -> Result<(), ModelError> {
        if b == 0 || t == 0 {
            return Err(ModelError::EmptyBatch { b, t });
        }
        if t > self.cfg.block_size {
            return Err(ModelError::SequenceTooLong {
                t,
                block_size: self.cfg.block_size,
            });
        }
        let named = [("inputs", Some(inputs)), ("targets", targets)];
        for (what, tokens) in named {
            let Some(tokens) = tokens else { continue };
            if tokens.len() != b * t {
                return Err(ModelError::TokenCount {
                    what,
                    got: tokens.len(),
                    b,
                    t,
                });
            }
            let vocab_size = self.cfg.vocab_size;
            if let Some(index) = tokens.iter().position(|&tok| tok as usize >= vocab_size) {
                return Err(ModelError::TokenOutOfRange {
                    what,
                    index,
                    token: tokens[index],
                    vocab_size,
                });
            }
        }
        Ok(())
    }

    /// Runs the model on `B` sequences of `T` tokens (`inputs`, row-major
    /// `(B,T)`); with `targets` it also computes the loss and keeps what
    /// [`Gpt::backward`] needs.
    pub fn forward(
        &self,
        inputs: &[u32],
        targets: Option<&[u32]>,
        b: usize,
        t: usize,
    ) -> Result<Activations<F>, ModelError> {
        self.forward_train(inputs, targets, b, t, None)
    }

    /// [`Gpt::forward`] of a training step with `dropout` on the embedding
    /// output and on each residual branch before its add; the backward
    /// applies the same masks.
    pub fn forward_train(
        &self,
        inputs: &[u32],
        targets: Option<&[u32]>,
        b: usize,
        t: usize,
        dropout: Option<Dropout>,
    ) -> Result<Activations<F>, ModelError> {
        self.check_batch(inputs, targets, b, t)?;
        let ModelConfig {
            vocab_size: v,
            d_model: c,
            n_layer,
            ..
        } = self.cfg;
        let mut acts = Activations::zeros(&self.cfg, inputs, targets, b, t);
        let (tok_emb, pos_emb) = (self.p(TokEmb, 0), self.p(PosEmb, 0));
        encoder_forward(&mut acts.encoded, inputs, tok_emb, pos_emb, t, c);
        acts.dropout = dropout;
        if let Some(d) = dropout {
            d.apply(Site::Embedding, &mut acts.encoded);
        }
        // (B,T,C) a branch's output before its residual add
        let mut proj = vec![F::ZERO; b * t * c];
        for l in 0..n_layer {
            let (done, todo) = acts.blocks.split_at_mut(l);
            let x = done.last().map_or(&acts.encoded, |prev| &prev.residual3);
            self.block_forward(l, x, &mut todo[0], &mut proj, b, t, dropout);
        }
        let x = acts
            .blocks
            .last()
            .map_or(&acts.encoded, |last| &last.residual3);
        let (lnf_w, lnf_b) = (self.p(LnfW, 0), self.p(LnfB, 0));
        layernorm_forward(
            &mut acts.lnf,
            &mut acts.lnf_mean,
            &mut acts.lnf_rstd,
            x,
            lnf_w,
            lnf_b,
        );
        // The tied head: logits = lnf · tok_embᵀ, no bias.
        matmul_forward(&mut acts.logits, &acts.lnf, tok_emb, None, c, v);
        if let Some(targets) = targets {
            let loss =
                crossentropy_forward(&mut acts.probs, &mut acts.losses, &acts.logits, targets, v);
            acts.loss = Some(loss);
        }
        Ok(acts)
    }

    /// One pre-LN block: `x + attn(ln1(x))`, then `+ mlp(ln2(·))`, each
    /// branch through `dropout` when given.
    #[allow(clippy::too_many_arguments)]
    fn block_forward(
        &self,
        l: usize,
        x: &[F],
        a: &mut BlockActivations<F>,
        proj: &mut [F],
        b: usize,
        t: usize,
        dropout: Option<Dropout>,
    ) {
        let ModelConfig {
            d_model: c,
            n_head: nh,
            ..
        } = self.cfg;
        let p = |kind| self.p(kind, l);
        layernorm_forward(
            &mut a.ln1,
            &mut a.ln1_mean,
            &mut a.ln1_rstd,
            x,
            p(Ln1W),
            p(Ln1B),
        );
        matmul_forward(&mut a.qkv, &a.ln1, p(QkvW), Some(p(QkvB)), c, 3 * c);
        let mask = dropout.map(|d| d.mask(Site::Attention(l)));
        attention_forward_masked(&mut a.atty, &mut a.att, &a.qkv, b, t, c, nh, mask);
        matmul_forward(proj, &a.atty, p(AttnProjW), Some(p(AttnProjB)), c, c);
        if let Some(d) = dropout {
            d.apply(Site::AttnProj(l), proj);
        }
        residual_forward(&mut a.residual2, x, proj);
        layernorm_forward(
            &mut a.ln2,
            &mut a.ln2_mean,
            &mut a.ln2_rstd,
            &a.residual2,
            p(Ln2W),
            p(Ln2B),
        );
        matmul_forward(&mut a.fch, &a.ln2, p(FcW), Some(p(FcB)), c, 4 * c);
        gelu_forward(&mut a.fch_gelu, &a.fch);
        matmul_forward(proj, &a.fch_gelu, p(FcProjW), Some(p(FcProjB)), 4 * c, c);
        if let Some(d) = dropout {
            d.apply(Site::Mlp(l), proj);
        }
        residual_forward(&mut a.residual3, &a.residual2, proj);
    }

    /// Gradient of the mean loss with respect to every parameter, in the
    /// same flat layout as `params`.
    pub fn backward(&self, acts: &Activations<F>) -> Result<Vec<F>, ModelError> {
        let targets = acts.targets.as_deref().ok_or(ModelError::NoTargets)?;
        let ModelConfig {
            vocab_size: v,
            d_model: c,
            n_layer,
            ..
        } = self.cfg;
        let bt = acts.b * acts.t;
        let z = |n: usize| vec![F::ZERO; n];
        let mut grads = z(self.layout.total);
        let mut dlogits = z(bt * v); // (B,T,V)
        crossentropy_backward(&mut dlogits, &acts.probs, targets, v);
        let mut dlnf = z(bt * c); // (B,T,C)
        let dtok_emb = &mut grads[self.range(TokEmb, 0)];
        matmul_backward(
            &mut dlnf,
            dtok_emb,
            None,
            &dlogits,
            &acts.lnf,
            self.p(TokEmb, 0),
            c,
            v,
        );
        let mut dres = z(bt * c); // (B,T,C) gradient of the residual stream
        let (dw, db) = self.grad_pair(&mut grads, LnfW, LnfB, 0);
        let x = acts.block_input(n_layer);
        layernorm_backward(
            &mut dres,
            dw,
            db,
            &dlnf,
            x,
            self.p(LnfW, 0),
            &acts.lnf_mean,
            &acts.lnf_rstd,
        );
        let mut scratch = BackwardScratch::zeros(bt, c);
        for l in (0..n_layer).rev() {
            self.block_backward(l, acts, &mut dres, &mut grads, &mut scratch);
        }
        if let Some(d) = acts.dropout {
            d.apply(Site::Embedding, &mut dres);
        }
        let (dtok, dpos) = self.grad_pair(&mut grads, TokEmb, PosEmb, 0);
        encoder_backward(dtok, dpos, &dres, &acts.inputs, acts.t, c);
        Ok(grads)
    }

    /// Block `l` in reverse. On entry `dres` is the gradient of the block's
    /// output; on return, of its input (the residual adds pass it through).
    fn block_backward(
        &self,
        l: usize,
        acts: &Activations<F>,
        dres: &mut [F],
        grads: &mut [F],
        s: &mut BackwardScratch<F>,
    ) {
        let ModelConfig {
            d_model: c,
            n_head: nh,
            ..
        } = self.cfg;
        let (a, x) = (&acts.blocks[l], acts.block_input(l));
        let p = |kind| self.p(kind, l);
        s.clear();
        // A branch's output gradient: the stream's, through its dropout mask.
        let branch = |site: Site, dres: &[F], dproj: &mut Vec<F>| {
            dproj.copy_from_slice(dres);
            if let Some(d) = acts.dropout {
                d.apply(site, dproj);
            }
        };
        // MLP branch: residual3 = residual2 + fc_proj(gelu(fc(ln2(residual2)))).
        branch(Site::Mlp(l), dres, &mut s.dproj);
        let (dw, db) = self.grad_pair(grads, FcProjW, FcProjB, l);
        matmul_backward(
            &mut s.dfch_gelu,
            dw,
            Some(db),
            &s.dproj,
            &a.fch_gelu,
            p(FcProjW),
            4 * c,
            c,
        );
        gelu_backward(&mut s.dfch, &a.fch, &s.dfch_gelu);
        let (dw, db) = self.grad_pair(grads, FcW, FcB, l);
        matmul_backward(&mut s.dln, dw, Some(db), &s.dfch, &a.ln2, p(FcW), c, 4 * c);
        let (dw, db) = self.grad_pair(grads, Ln2W, Ln2B, l);
        layernorm_backward(
            dres,
            dw,
            db,
            &s.dln,
            &a.residual2,
            p(Ln2W),
            &a.ln2_mean,
            &a.ln2_rstd,
        );
        // Attention branch: residual2 = x + attn_proj(attention(qkv(ln1(x)))).
        branch(Site::AttnProj(l), dres, &mut s.dproj);
        let (dw, db) = self.grad_pair(grads, AttnProjW, AttnProjB, l);
        matmul_backward(
            &mut s.datty,
            dw,
            Some(db),
            &s.dproj,
            &a.atty,
            p(AttnProjW),
            c,
            c,
        );
        let mask = acts.dropout.map(|d| d.mask(Site::Attention(l)));
        attention_backward_masked(
            &mut s.dqkv,
            &s.datty,
            &a.qkv,
            &a.att,
            acts.b,
            acts.t,
            c,
            nh,
            mask,
        );
        s.dln.fill(F::ZERO);
        let (dw, db) = self.grad_pair(grads, QkvW, QkvB, l);
        matmul_backward(&mut s.dln, dw, Some(db), &s.dqkv, &a.ln1, p(QkvW), c, 3 * c);
        let (dw, db) = self.grad_pair(grads, Ln1W, Ln1B, l);
        layernorm_backward(dres, dw, db, &s.dln, x, p(Ln1W), &a.ln1_mean, &a.ln1_rstd);
    }

    /// Forward with targets, then backward: `(mean loss, gradients)`.
    pub fn forward_backward(
        &self,
        inputs: &[u32],
        targets: &[u32],
        b: usize,
        t: usize,
    ) -> Result<(F, Vec<F>), ModelError> {
        self.forward_backward_train(inputs, targets, b, t, None)
    }

    /// [`Gpt::forward_backward`] of a training step with `dropout`.
    pub fn forward_backward_train(
        &self,
        inputs: &[u32],
        targets: &[u32],
        b: usize,
        t: usize,
        dropout: Option<Dropout>,
    ) -> Result<(F, Vec<F>), ModelError> {
        let acts = self.forward_train(inputs, Some(targets), b, t, dropout)?;
        let grads = self.backward(&acts)?;
        let loss = acts.loss.ok_or(ModelError::NoTargets)?;
        Ok((loss, grads))
    }

    /// Mean loss in nats per character, without keeping the activations.
    pub fn loss(
        &self,
        inputs: &[u32],
        targets: &[u32],
        b: usize,
        t: usize,
    ) -> Result<F, ModelError> {
        let acts = self.forward(inputs, Some(targets), b, t)?;
        acts.loss.ok_or(ModelError::NoTargets)
    }

    /// Next-token logits `(V)` after `tokens`, one sequence, its last
    /// `block_size` tokens used as context. Recomputes the whole window: fine
    /// on a CPU at this size.
    pub fn logits_last(&self, tokens: &[u32]) -> Result<Vec<F>, ModelError> {
        let window = &tokens[tokens.len().saturating_sub(self.cfg.block_size)..];
        let acts = self.forward(window, None, 1, window.len())?;
        let v = self.cfg.vocab_size;
        Ok(acts.logits[(window.len() - 1) * v..].to_vec())
    }
}
