//! The training graph, read like llm.c's `gpt2_forward`/`gpt2_backward`:
//! one line per op per layer (the op vocabulary is `builder/`). Bound
//! once per batch shape; a step only records it. Shapes: `N = B·T` rows,
//! `C` channels, `V` vocab, `L` layers.

use super::acts::Acts;
use super::builder::{Builder, Linear};
use crate::ops::attention::AttentionBackwardBuffers;
use crate::GpuError;
use tinygpt_core::model::Site;
use tinygpt_core::ParamKind::*;

type Buf = wgpu::Buffer;

/// The forward pass from `inputs` to `logits`, then the per-row and mean
/// loss and, with `with_loss_grad`, `dlogits`. With dropout the embedding
/// goes through `proj` (free until the first attention projection) and its
/// mask into the stream.
#[rustfmt::skip] // one line per op, as the module says
pub fn forward(g: &mut Builder, a: &Acts, with_loss_grad: bool) -> Result<(), GpuError> {
    let c = g.cfg.d_model;
    let encoded = if g.dropout.is_some() { &a.proj } else { &a.res[0] };
    g.encoder(&a.inputs, encoded)?; // (N, C)
    g.dropout(Site::Embedding, &a.proj, &a.res[0])?; // (N, C), training with dropout only
    g.layernorm(&a.res[0], stream_ln(a, 0))?; // (N, C): block 0's ln1
    for (l, blk) in a.blocks.iter().enumerate() {
        let x = &a.res[l];
        g.linear(&blk.ln1, (QkvW, QkvB, l), &blk.qkv, (c, 3 * c))?; // (N, 3C)
        g.attention(&blk.qkv, &blk.atty, &blk.lse, l)?; // (N, C), lse (B, NH, T)
        g.linear(&blk.atty, (AttnProjW, AttnProjB, l), &a.proj, (c, c))?; // (N, C)
        g.residual_layernorm(Site::AttnProj(l), (x, &a.proj, &blk.res2), ((Ln2W, Ln2B, l), (&blk.ln2, &blk.ln2_mean, &blk.ln2_rstd)))?; // res2 (N, C) and ln2 (N, C)
        g.linear_gelu(&blk.ln2, (FcW, FcB, l), (&blk.fch, &blk.fch_gelu), (c, 4 * c))?; // (N, 4C) before and after the GELU
        g.linear(&blk.fch_gelu, (FcProjW, FcProjB, l), &a.proj, (4 * c, c))?; // (N, C)
        g.residual_layernorm(Site::Mlp(l), (&blk.res2, &a.proj, &a.res[l + 1]), stream_ln(a, l + 1))?; // res[l+1] (N, C) and its LayerNorm (N, C)
    }
    g.head(&a.lnf, &a.logits)?; // (N, V)
    g.crossentropy(a, with_loss_grad.then_some(&a.dlogits)) // (N), (1), (N, V)
}

/// The LayerNorm that reads the stream entering block `l` (`res[l]`):
/// block `l`'s first, or after the last block the final one — the
/// forward computes each with the residual add before it.
fn stream_ln(a: &Acts, l: usize) -> (Linear, (&Buf, &Buf, &Buf)) {
    match a.blocks.get(l) {
        Some(blk) => ((Ln1W, Ln1B, l), (&blk.ln1, &blk.ln1_mean, &blk.ln1_rstd)),
        None => ((LnfW, LnfB, 0), (&a.lnf, &a.lnf_mean, &a.lnf_rstd)),
    }
}

/// The backward pass from `dlogits` into the builder's gradients, through
/// the forward's dropout masks. `dres` carries the stream's gradient down
/// the layers; `proj` is free during the backward and holds a branch's
/// masked gradient.
#[rustfmt::skip] // one line per op, as the module says
pub fn backward(g: &mut Builder, a: &Acts) -> Result<(), GpuError> {
    let c = g.cfg.d_model;
    let last = &a.res[g.cfg.n_layer];
    g.head_backward(&a.dlogits, &a.lnf, &a.dln)?; // dlnf (N, C), dtok_emb (V, C)
    g.layernorm_backward(false, &a.dln, last, (LnfW, LnfB, 0), (&a.lnf_mean, &a.lnf_rstd), &a.dres)?; // dres (N, C)
    for l in (0..g.cfg.n_layer).rev() {
        let blk = &a.blocks[l];
        let dy = g.branch_grad(Site::Mlp(l), &a.dres, &a.proj)?; // d fc_proj out (N, C)
        g.linear_gelu_backward(dy, (&blk.fch, &blk.fch_gelu), (&a.dfch_gelu, &a.dfch), (FcProjW, FcProjB, l), (4 * c, c))?; // dfch (N, 4C), through the GELU
        g.linear_backward(&a.dfch, &blk.ln2, &a.dln, (FcW, FcB, l), (c, 4 * c))?; // (N, C)
        g.layernorm_backward(true, &a.dln, &blk.res2, (Ln2W, Ln2B, l), (&blk.ln2_mean, &blk.ln2_rstd), &a.dres)?; // d res2 (N, C)
        let dy = g.branch_grad(Site::AttnProj(l), &a.dres, &a.proj)?; // d attn_proj out (N, C)
        g.linear_backward(dy, &blk.atty, &a.datty, (AttnProjW, AttnProjB, l), (c, c))?; // (N, C)
        let att = AttentionBackwardBuffers { qkv: &blk.qkv, out: &blk.atty, dout: &a.datty, lse: &blk.lse, dqkv: &a.dqkv };
        g.attention_backward(att, l)?; // dqkv (N, 3C)
        g.linear_backward(&a.dqkv, &blk.ln1, &a.dln, (QkvW, QkvB, l), (c, 3 * c))?; // (N, C)
        g.layernorm_backward(true, &a.dln, &a.res[l], (Ln1W, Ln1B, l), (&blk.ln1_mean, &blk.ln1_rstd), &a.dres)?; // d res[l] (N, C)
    }
    let dy = g.branch_grad(Site::Embedding, &a.dres, &a.proj)?; // (N, C)
    g.encoder_backward(&a.inputs, dy)?; // dtok_emb (V, C), dpos_emb (T, C)
    g.finish_backward() // the weight gradients' reduces, then the LayerNorms' and biases' column sums, left to here
}
