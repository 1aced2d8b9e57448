//! Inside the model for one text ([`Session::inspect`]): the next-character
//! distribution at every position (a context at a time) and every head's
//! attention weights over the last context. On the GPU it is the batched
//! inference forward (`GpuModel::forward_stages`, reading the f16 weight
//! cache where that fast path is active, as the decoder does — but not the
//! decoder itself, whose context restarts at half a window); its fused
//! attention kernel never stores the weights, so they are recomputed from
//! that forward's q and k rows with the CPU reference's attention
//! (`tinygpt_core::model::layers`). Without WebGPU the CPU reference
//! computes everything.

use super::{Backend, EngineError, Session};
use tinygpt_core::model::layers::attention_forward;
use tinygpt_protocol::inspect::{quantise, top_k, windows};
use tinygpt_protocol::{Inspection, INSPECT_TOP, MAX_INSPECT_CHARS};

/// Softmax of each `v`-wide row, in f64 sums.
fn softmax_rows(logits: &[f32], v: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(logits.len());
    for row in logits.chunks(v) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exps: Vec<f64> = row.iter().map(|&x| ((x - max) as f64).exp()).collect();
        let sum: f64 = exps.iter().sum();
        out.extend(exps.iter().map(|e| (e / sum) as f32));
    }
    out
}

impl Session {
    /// Runs `text` (its last [`MAX_INSPECT_CHARS`] characters) through the
    /// model, a context at a time ([`windows`]): every character's
    /// probabilities, and the attention weights of the last context. An
    /// unknown character or an empty text is refused by name.
    pub async fn inspect(&mut self, text: &str) -> Result<Inspection, EngineError> {
        let ids = self.vocab.encode(text)?;
        let ids = &ids[ids.len().saturating_sub(MAX_INSPECT_CHARS)..];
        if ids.is_empty() {
            return Err(EngineError::EmptyText);
        }
        let (len, v) = (ids.len(), self.config.vocab_size);
        let mut probs = Vec::with_capacity(len * v);
        let mut att = Vec::new();
        let plan = windows(len, self.config.block_size);
        for (k, &(start, first, end)) in plan.iter().enumerate() {
            let last = k + 1 == plan.len();
            let (logits, a) = self.forward_window(&ids[start..end], last).await?;
            probs.extend(softmax_rows(&logits[(first - start) * v..], v));
            if last {
                att = a;
            }
        }
        let chars = self.vocab.chars();
        let top = probs
            .chunks(v)
            .map(|p| top_k(p, chars, INSPECT_TOP))
            .collect();
        let next_prob = (0..len - 1)
            .map(|i| probs[i * v + ids[i + 1] as usize])
            .collect();
        let (start, _, end) = *plan.last().expect("a non-empty text has a window");
        Ok(Inspection {
            text: self.vocab.decode(ids),
            backend: self.backend_name().to_string(),
            top,
            next_prob,
            layers: self.config.n_layer,
            heads: self.config.n_head,
            attention_from: start,
            t: end - start,
            attention: quantise(&att),
        })
    }

    /// One window's logits `(t, V)` and, when `attention`, its weights
    /// `[layer][head][query][key]`.
    async fn forward_window(
        &mut self,
        ids: &[u32],
        attention: bool,
    ) -> Result<(Vec<f32>, Vec<f32>), EngineError> {
        let t = ids.len();
        let (l_n, nh, c) = (self.config.n_layer, self.config.n_head, self.config.d_model);
        match &mut self.backend {
            Backend::Cpu(tr) => {
                let acts = tr.model.forward(ids, None, 1, t)?;
                let att = match attention {
                    true => acts.blocks.iter().flat_map(|b| b.att.clone()).collect(),
                    false => Vec::new(),
                };
                Ok((acts.logits, att))
            }
            Backend::Gpu(tr) => {
                tr.model.prepare_inference(&tr.gpu.ctx).await?;
                let mut reg = std::mem::take(&mut *tr.gpu.registry.borrow_mut());
                let stages = tr.model.forward_stages(&tr.gpu.ctx, &mut reg, ids).await;
                *tr.gpu.registry.borrow_mut() = reg;
                let mut stages = stages?;
                let logits = stages.pop().map(|s| s.1).unwrap_or_default();
                let mut att = Vec::new();
                if attention {
                    att = vec![0.0; l_n * nh * t * t];
                    let qkvs = stages.iter().filter(|s| s.0.ends_with(" qkv"));
                    for (l, (_, qkv)) in qkvs.enumerate() {
                        let mut out = vec![0.0; t * c];
                        let head = &mut att[l * nh * t * t..(l + 1) * nh * t * t];
                        attention_forward(&mut out, head, qkv, 1, t, c, nh);
                    }
                }
                Ok((logits, att))
            }
        }
    }
}
