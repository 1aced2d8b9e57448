//! A token step's kernels, bound one line per op (as `graph.rs` binds
//! training), and where its picks go.

use super::rows::RowBuilder;
use super::DecoderKernels;
use crate::kernel::BoundKernel;
use crate::ops::argmax::{bind_greedy_pick, bind_sample_pick, sample_params_words, PICK_BYTES};
use crate::ops::attention::KvCache;
use crate::{GpuContext, GpuError};
use tinygpt_core::sample::SampleParams;
use tinygpt_core::ParamKind::*;

/// The dispatches of a token step reading one of the two position
/// uniforms.
pub(super) struct Step {
    /// The embedding: only where a step starts from the host's token (a
    /// pick writes the next step's input row itself).
    pub embedding: BoundKernel,
    pub blocks: Vec<BoundKernel>,
    /// The final LayerNorm and the tied head: one GEMV, or the LayerNorm
    /// and the GEMV.
    pub head: Vec<BoundKernel>,
    pub pick: BoundKernel,
    /// The seeded pick.
    pub sample: BoundKernel,
    /// The final LayerNorm, the head and the greedy or the seeded pick in
    /// one kernel, where the layout has it (`RowBuilder::head_pick`).
    pub head_pick: Option<[BoundKernel; 2]>,
    /// The whole step and the greedy or the seeded pick in one kernel,
    /// where the layout has it (`RowBuilder::persistent_pick`).
    pub token_pick: Option<[BoundKernel; 2]>,
}

/// Where the picks go: their records, and the seeded pick's rule and draws.
pub(super) struct Records {
    pub picks: wgpu::Buffer,
    pub sample_params: wgpu::Buffer,
    pub draws: wgpu::Buffer,
}

impl Records {
    /// Room for `rows` picks (a row per position and sample) over `v` logits.
    pub fn new(ctx: &GpuContext, v: u32, rows: usize) -> Result<Self, GpuError> {
        let words = sample_params_words(v, 0, &SampleParams::default());
        Ok(Self {
            picks: ctx.zeros("decode_picks", rows * (PICK_BYTES as usize / 4))?,
            sample_params: ctx.uniform("decode_sample_params", bytemuck::cast_slice(&words)),
            draws: ctx.zeros("decode_draws", rows)?,
        })
    }
}

/// Binds the dispatches of a step reading `g`'s position uniform, one
/// line per op (as `graph.rs` binds training).
#[rustfmt::skip] // one line per op
pub(super) fn bind_step(g: &mut RowBuilder<'_>, caches: &[KvCache], out: &Records) -> Result<Step, GpuError> {
    let (v, batch, r) = (g.v, g.desc.batch, g.rows);
    g.encoder()?; // x (C)
    let embedding = g.take().remove(0);
    let persistent = g.layout.persistent_width();
    match (g.layout, persistent) {
        (_, Some(width)) => g.persistent(&caches[0], width)?, // logits (V): every block, the final LayerNorm, the head
        (DecoderKernels::Stack, _) => bind_stack_blocks(g, caches)?,
        _ => bind_blocks(g, caches)?,
    }
    let blocks = g.take();
    if persistent.is_none() {
        let lnf = g.layernorm_at(g.residual_in(caches.len()), (LnfW, LnfB, 0))?;
        g.head(lnf)?; // logits (V)
    }
    let head = g.take();
    let pick = bind_greedy_pick(g.ctx, g.reg, (v, batch), &r.logits, g.positions(), &r.token, &out.picks, g.next_input())?; // token, next position and x
    let sample = bind_sample_pick(g.ctx, g.reg, (v, batch), &r.logits, &out.sample_params, g.positions(), &r.token, &out.picks, &out.draws, g.next_input())?;
    let records = (&out.picks, &out.sample_params, &out.draws);
    let head_pick = g.head_pick(records)?; // the head and each pick in one kernel, or none
    let token_pick = match persistent {
        Some(width) => g.persistent_pick(&caches[0], width, records)?, // the whole step and each pick in one kernel, or none
        None => None,
    };
    Ok(Step { embedding, blocks, head, pick, sample, head_pick, token_pick })
}

/// The blocks of a step, the residual row `x` added into.
#[rustfmt::skip] // one line per op
fn bind_blocks(g: &mut RowBuilder<'_>, caches: &[KvCache]) -> Result<(), GpuError> {
    let (c, r) = (g.desc.c, g.rows);
    for (l, cache) in caches.iter().enumerate() {
        g.qkv_attention((Ln1W, Ln1B, l), (QkvW, QkvB, l), cache)?; // atty (C); K, V appended to the cache
        g.linear(g.row(&r.atty), (AttnProjW, AttnProjB, l), (c, c), true, g.x())?; // x += (C)
        let ln2 = g.layernorm((Ln2W, Ln2B, l))?;
        g.linear(ln2.gelu(), (FcW, FcB, l), (c, 4 * c), false, &r.fch)?; // fch (4C), GELU after the bias
        g.linear(g.row(&r.fch), (FcProjW, FcProjB, l), (4 * c, c), true, g.x())?; // x += (C)
    }
    Ok(())
}

/// The blocks of a step in the `Stack` layout: each layer's residual row a
/// stack of shares (slot 0 the row it starts from, a slot per head's share
/// of the projection, the fc projection's output last), each reader
/// summing the slots.
#[rustfmt::skip] // one line per op
fn bind_stack_blocks(g: &mut RowBuilder<'_>, caches: &[KvCache]) -> Result<(), GpuError> {
    let (c, nh, r) = (g.desc.c, g.desc.nh, g.rows);
    for (l, cache) in caches.iter().enumerate() {
        let ln1 = g.layernorm_at(g.residual_in(l), (Ln1W, Ln1B, l))?;
        g.linear(ln1, (QkvW, QkvB, l), (c, 3 * c), false, &r.qkv)?; // qkv (3C)
        g.attention_proj(cache, (AttnProjW, AttnProjB, l))?; // slots 0..=NH: the row, each head's share of the projection; K, V appended
        let ln2 = g.layernorm_at(g.stack(l, nh + 1), (Ln2W, Ln2B, l))?;
        g.linear(ln2.gelu(), (FcW, FcB, l), (c, 4 * c), false, &r.fch)?; // fch (4C), GELU after the bias
        g.linear(g.row(&r.fch), (FcProjW, FcProjB, l), (4 * c, c), false, g.stack_slot(l, nh + 1))?; // slot NH + 1
    }
    Ok(())
}
