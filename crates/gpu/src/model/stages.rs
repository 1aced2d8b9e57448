//! What the gates read of a forward (`gate::model_gate`,
//! `gate::localize`): the input rows of every forward linear, every stage
//! of the forward, and (fault injection) a corrupted layer of the f16
//! weight cache.

use super::gpu_model::{FastPaths, GpuModel, LinearInput};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::data::Batch;

impl GpuModel {
    /// `tokens` (up to the context) as one evaluation sequence; the targets
    /// are unused by what reads it.
    fn one_sequence(&self, tokens: &[u32]) -> Batch {
        let t = tokens.len().min(self.cfg.block_size);
        Batch {
            batch_size: 1,
            seq_len: t,
            inputs: tokens[..t].to_vec(),
            targets: tokens[..t].to_vec(),
        }
    }

    /// The input rows every forward linear of every layer really reads for
    /// `tokens` (one sequence), from an f32 forward whatever fast path is
    /// active: per layer `[ln1 → qkv, atty → attn_proj, ln2 → fc,
    /// gelu(fch) → fc_proj]`, each `(T, d_in)` with the linear's weight and
    /// bias kinds (what the real-weight gate feeds the f16 kernel).
    pub async fn linear_inputs(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        tokens: &[u32],
    ) -> Result<Vec<LinearInput>, GpuError> {
        use tinygpt_core::ParamKind::*;
        let batch = self.one_sequence(tokens);
        let t = batch.seq_len;
        let fast = self.fast;
        self.set_fast_paths(ctx, reg, FastPaths::default())?;
        let losses = self.submit_eval(ctx, reg, std::slice::from_ref(&batch));
        let mut out = Vec::new();
        if losses.is_ok() {
            let g = self.graph.as_ref().expect("bound by submit_eval");
            let c = self.cfg.d_model;
            for (l, blk) in g.acts.blocks.iter().enumerate() {
                let kinds = [
                    (&blk.ln1, QkvW, QkvB, c),
                    (&g.acts.blocks[l].atty, AttnProjW, AttnProjB, c),
                    (&blk.ln2, FcW, FcB, c),
                    (&blk.fch_gelu, FcProjW, FcProjB, 4 * c),
                ];
                for (buf, w, b, d_in) in kinds {
                    let rows = ctx.read_f32(buf, t * d_in).await?;
                    out.push(LinearInput {
                        layer: l,
                        w,
                        b,
                        d_in,
                        rows,
                    });
                }
            }
        }
        self.set_fast_paths(ctx, reg, fast)?;
        losses?;
        Ok(out)
    }

    /// Every stage of the forward for `tokens` (one sequence) with the fast
    /// paths active now, in dependency order, each `(name, values)`: the
    /// embedding, then per layer ln1, qkv, attention, the attention
    /// projection (res2 − res), res2, ln2, fc, GELU, the fc projection
    /// (res' − res2) and the residual stream after it, then ln_f and the
    /// logits (what `gate::localize` compares path against path). The f16
    /// cache is read as inference reads it: bring it up to date first.
    pub async fn forward_stages(
        &mut self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        tokens: &[u32],
    ) -> Result<Vec<(String, Vec<f32>)>, GpuError> {
        let batch = self.one_sequence(tokens);
        let t = batch.seq_len;
        self.submit_inference_forward(ctx, reg, &batch)?;
        let g = self.graph.as_ref().expect("bound by the forward");
        let (c, v) = (self.cfg.d_model, self.cfg.vocab_size);
        let diff = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<_>>();
        let mut out = vec![(
            "embedding".to_string(),
            ctx.read_f32(&g.acts.res[0], t * c).await?,
        )];
        for (l, blk) in g.acts.blocks.iter().enumerate() {
            let res = ctx.read_f32(&g.acts.res[l], t * c).await?;
            let res2 = ctx.read_f32(&blk.res2, t * c).await?;
            let next = ctx.read_f32(&g.acts.res[l + 1], t * c).await?;
            let stage = |name: &str, values: Vec<f32>| (format!("layer {l} {name}"), values);
            out.push(stage("ln1", ctx.read_f32(&blk.ln1, t * c).await?));
            out.push(stage("qkv", ctx.read_f32(&blk.qkv, t * 3 * c).await?));
            out.push(stage("attention", ctx.read_f32(&blk.atty, t * c).await?));
            out.push(stage("attn_proj", diff(&res2, &res)));
            out.push(stage("residual", res2.clone()));
            out.push(stage("ln2", ctx.read_f32(&blk.ln2, t * c).await?));
            out.push(stage("fc", ctx.read_f32(&blk.fch, t * 4 * c).await?));
            out.push(stage("gelu", ctx.read_f32(&blk.fch_gelu, t * 4 * c).await?));
            out.push(stage("fc_proj", diff(&next, &res2)));
            out.push(stage("residual out", next));
        }
        out.push(("ln_f".into(), ctx.read_f32(&g.acts.lnf, t * c).await?));
        out.push(("logits".into(), ctx.read_f32(&g.acts.logits, t * v).await?));
        Ok(out)
    }

    /// Test hook (fault injection only): zeroes the f16 weight cache's copy
    /// of `kind` in layer `l`, as a one-layer kernel fault would corrupt it,
    /// after bringing the cache up to date so no repack undoes it.
    #[cfg(feature = "fault-injection")]
    pub async fn corrupt_f16_layer(
        &mut self,
        ctx: &GpuContext,
        kind: tinygpt_core::ParamKind,
        l: usize,
    ) -> Result<(), GpuError> {
        self.prepare_inference(ctx).await?;
        let spec = self.layout.get(kind);
        let per = spec.len / spec.shape[0];
        let first = spec.offset + l * per;
        let Some(cache) = &self.f16 else {
            return Ok(());
        };
        // Whole words inside the tensor: halves [first, first + per).
        let (w0, w1) = (first.div_ceil(2), (first + per) / 2);
        let zeros = vec![0u8; (w1 - w0) * 4];
        ctx.queue
            .write_buffer(cache.buffer(), (w0 * 4) as u64, &zeros);
        Ok(())
    }
}
