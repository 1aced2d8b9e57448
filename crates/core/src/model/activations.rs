//! What a forward pass keeps for its backward pass, and the backward's
//! reusable gradient buffers. Shapes: `B` batch, `T` time, `C` channels,
//! `V` vocab, `NH` heads.

use tinygpt_protocol::ModelConfig;

use super::float::Float;

/// What one block keeps for its backward pass.
#[derive(Clone, Debug)]
pub struct BlockActivations<F = f32> {
    pub ln1: Vec<F>,       // (B,T,C)
    pub ln1_mean: Vec<F>,  // (B,T)
    pub ln1_rstd: Vec<F>,  // (B,T)
    pub qkv: Vec<F>,       // (B,T,3C)
    pub att: Vec<F>,       // (B,NH,T,T) softmax probabilities, 0 above the diagonal
    pub atty: Vec<F>,      // (B,T,C) attention output, before attn_proj
    pub residual2: Vec<F>, // (B,T,C) x + attn_proj(atty)
    pub ln2: Vec<F>,       // (B,T,C)
    pub ln2_mean: Vec<F>,  // (B,T)
    pub ln2_rstd: Vec<F>,  // (B,T)
    pub fch: Vec<F>,       // (B,T,4C) before GELU
    pub fch_gelu: Vec<F>,  // (B,T,4C)
    pub residual3: Vec<F>, // (B,T,C) the block's output
}

/// Everything one forward pass computed.
#[derive(Clone, Debug)]
pub struct Activations<F = f32> {
    pub b: usize,
    pub t: usize,
    pub inputs: Vec<u32>,                 // (B,T)
    pub targets: Option<Vec<u32>>,        // (B,T)
    pub encoded: Vec<F>,                  // (B,T,C) tok_emb + pos_emb
    pub blocks: Vec<BlockActivations<F>>, // L of them
    pub lnf: Vec<F>,                      // (B,T,C)
    pub lnf_mean: Vec<F>,                 // (B,T)
    pub lnf_rstd: Vec<F>,                 // (B,T)
    pub logits: Vec<F>,                   // (B,T,V)
    pub probs: Vec<F>,                    // (B,T,V) softmax; empty without targets
    pub losses: Vec<F>,                   // (B,T) nats; empty without targets
    /// Mean of `losses`: nats per character; `None` without targets.
    pub loss: Option<F>,
    /// The masks this pass applied, for its backward.
    pub dropout: Option<super::Dropout>,
}

impl<F: Float> BlockActivations<F> {
    fn zeros(bt: usize, c: usize, nh: usize, t: usize) -> Self {
        let z = |n: usize| vec![F::ZERO; n];
        Self {
            ln1: z(bt * c),
            ln1_mean: z(bt),
            ln1_rstd: z(bt),
            qkv: z(bt * 3 * c),
            att: z(bt * nh * t),
            atty: z(bt * c),
            residual2: z(bt * c),
            ln2: z(bt * c),
            ln2_mean: z(bt),
            ln2_rstd: z(bt),
            fch: z(bt * 4 * c),
            fch_gelu: z(bt * 4 * c),
            residual3: z(bt * c),
        }
    }
}

impl<F: Float> Activations<F> {
    /// Zeroed buffers for a `b×t` batch (`probs` and `losses` only with
    /// targets).
    pub(super) fn zeros(
        cfg: &ModelConfig,
        inputs: &[u32],
        targets: Option<&[u32]>,
        b: usize,
        t: usize,
    ) -> Self {
        let ModelConfig {
            vocab_size: v,
            d_model: c,
            n_head: nh,
            n_layer,
            ..
        } = *cfg;
        let bt = b * t;
        let z = |n: usize| vec![F::ZERO; n];
        let with_targets = |n: usize| if targets.is_some() { z(n) } else { Vec::new() };
        Self {
            b,
            t,
            inputs: inputs.to_vec(),
            targets: targets.map(<[u32]>::to_vec),
            encoded: z(bt * c),
            blocks: (0..n_layer)
                .map(|_| BlockActivations::zeros(bt, c, nh, t))
                .collect(),
            lnf: z(bt * c),
            lnf_mean: z(bt),
            lnf_rstd: z(bt),
            logits: z(bt * v),
            probs: with_targets(bt * v),
            losses: with_targets(bt),
            loss: None,
            dropout: None,
        }
    }

    /// The residual stream entering block `l` (or the final LayerNorm when
    /// `l == L`).
    pub(super) fn block_input(&self, l: usize) -> &[F] {
        if l == 0 {
            &self.encoded
        } else {
            &self.blocks[l - 1].residual3
        }
    }
}

/// Gradient buffers reused by every block of one backward pass.
pub(super) struct BackwardScratch<F> {
    pub dfch_gelu: Vec<F>, // (B,T,4C)
    pub dfch: Vec<F>,      // (B,T,4C)
    pub dln: Vec<F>,       // (B,T,C)
    pub datty: Vec<F>,     // (B,T,C)
    pub dqkv: Vec<F>,      // (B,T,3C)
    pub dproj: Vec<F>,     // (B,T,C) a branch's output, after its dropout mask
}

impl<F: Float> BackwardScratch<F> {
    pub fn zeros(bt: usize, c: usize) -> Self {
        let z = |n: usize| vec![F::ZERO; n];
        Self {
            dfch_gelu: z(bt * 4 * c),
            dfch: z(bt * 4 * c),
            dln: z(bt * c),
            datty: z(bt * c),
            dqkv: z(bt * 3 * c),
            dproj: z(bt * c),
        }
    }

    /// Zeroes every buffer: the layer backwards accumulate.
    pub fn clear(&mut self) {
        for buf in [
            &mut self.dfch_gelu,
            &mut self.dfch,
            &mut self.dln,
            &mut self.datty,
            &mut self.dqkv,
        ] {
            buf.fill(F::ZERO);
        }
    }
}
