//! The `Whole` layout's token step: the blocks and the head in one
//! dispatch (`ops::decode_whole`), a workgroup per sample, the pick after
//! it. Its rows live in one buffer ([`WholeRows`]: the kernel's GEMVs read
//! and write them through one binding); the embedding and the pick still
//! write the input row `x` of [`super::rows::Rows`], which the step copies
//! in first (the pick reads the logits from the rows buffer, so it cannot
//! write there too).

use super::rows::RowBuilder;
use super::{Records, Step};
use crate::ops::argmax::{bind_greedy_pick, bind_sample_pick};
use crate::ops::attention::KvCache;
use crate::ops::decode_whole::{bind_decode_whole, Row::*, WholeBuffers, WholeOps, WholeRows};
use crate::ops::View;
use crate::GpuError;
use tinygpt_core::ParamKind::*;

/// Binds a step reading `g`'s position uniform: the blocks of `n_layer`
/// layers over `cache` (every layer's block), and the same with the head.
#[rustfmt::skip] // one line per op
pub(super) fn bind_step(
    g: &mut RowBuilder<'_>,
    n_layer: usize,
    (cache, out): (&KvCache, &Records),
    (rows, layout): (&wgpu::Buffer, WholeRows),
) -> Result<Step, GpuError> {
    let (c, v, batch, r, p) = (g.desc.c, g.v, g.desc.batch, g.rows, g.params);
    g.encoder()?; // the input row x (C)
    let embedding = g.take().remove(0);
    let ln = |w, b, l| Some((p.at(w, l), p.at(b, l)));
    let lin = |w, b, l| (p.at(w, l), Some(p.at(b, l)));
    let mut s = WholeOps::new(g.desc, p.buffer, g.subgroups); // x = the input row
    for l in 0..n_layer {
        s.linear(ln(Ln1W, Ln1B, l), lin(QkvW, QkvB, l), (c, 3 * c), (X, Qkv), false, false)?; // qkv (3C), LayerNorm folded
        s.attention(l as u32)?; // atty (C); K, V appended to the layer's block
        s.linear(None, lin(AttnProjW, AttnProjB, l), (c, c), (Atty, X), false, true)?; // x += (C)
        s.linear(ln(Ln2W, Ln2B, l), lin(FcW, FcB, l), (c, 4 * c), (X, Fch), true, false)?; // fch (4C), GELU after the bias
        s.linear(None, lin(FcProjW, FcProjB, l), (4 * c, c), (Fch, X), false, true)?; // x += (C)
    }
    let position = g.positions().0;
    let bufs = || WholeBuffers { params: p.buffer, rows, x_in: &r.x, position, cache };
    let bare = bind_decode_whole(g.ctx, g.reg, g.desc, (s.ops(), layout), bufs())?;
    s.linear(ln(LnfW, LnfB, 0), (p.at(TokEmb, 0), None), (c, v), (X, Logits), false, false)?; // logits (V), the final LayerNorm folded
    let full = bind_decode_whole(g.ctx, g.reg, g.desc, (s.ops(), layout), bufs())?;
    let logits = View::at(rows, layout.logits);
    let pick = bind_greedy_pick(g.ctx, g.reg, (v, batch), logits, g.positions(), &r.token, &out.picks, g.next_input())?; // token, next position and x
    let sample = bind_sample_pick(g.ctx, g.reg, (v, batch), logits, &out.sample_params, g.positions(), &r.token, &out.picks, &out.draws, g.next_input())?;
    Ok(Step { embedding, kernels: vec![bare, full], bare: 0..1, full: 1..2, pick, sample })
}
