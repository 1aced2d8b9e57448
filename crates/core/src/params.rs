//! The parameter layout: one flat `f32` allocation with named views.
//!
//! Every consumer — CPU reference, GPU engine, optimiser, clipping,
//! checkpoints — walks the same table, so the optimiser and checkpointing are
//! each one loop. Tensors of the same kind are stacked over layers
//! (llm.c style): `qkv_w: (L, 3C, C)` holds the fused Q, K, V projections of
//! every layer, rows `[0, C)` Q, `[C, 2C)` K, `[2C, 3C)` V.
//!
//! Linear weights are stored `(out, in)` as in PyTorch: `y = x · Wᵀ + b`.

use tinygpt_protocol::ModelConfig;

/// The kinds of parameter tensors, in storage order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// `tok_emb: (V, C)`; also the tied output head.
    TokEmb,
    /// `pos_emb: (T_max, C)`.
    PosEmb,
    /// `ln1_w: (L, C)`.
    Ln1W,
    /// `ln1_b: (L, C)`.
    Ln1B,
    /// `qkv_w: (L, 3C, C)`.
    QkvW,
    /// `qkv_b: (L, 3C)`.
    QkvB,
    /// `attn_proj_w: (L, C, C)`: the attention output projection.
    AttnProjW,
    /// `attn_proj_b: (L, C)`.
    AttnProjB,
    /// `ln2_w: (L, C)`.
    Ln2W,
    /// `ln2_b: (L, C)`.
    Ln2B,
    /// `fc_w: (L, 4C, C)`: MLP `fc_in`.
    FcW,
    /// `fc_b: (L, 4C)`.
    FcB,
    /// `fc_proj_w: (L, C, 4C)`: MLP `fc_out`.
    FcProjW,
    /// `fc_proj_b: (L, C)`.
    FcProjB,
    /// `lnf_w: (C)`.
    LnfW,
    /// `lnf_b: (C)`.
    LnfB,
}

/// All kinds in storage order.
pub const PARAM_KINDS: [ParamKind; 16] = [
    ParamKind::TokEmb,
    ParamKind::PosEmb,
    ParamKind::Ln1W,
    ParamKind::Ln1B,
    ParamKind::QkvW,
    ParamKind::QkvB,
    ParamKind::AttnProjW,
    ParamKind::AttnProjB,
    ParamKind::Ln2W,
    ParamKind::Ln2B,
    ParamKind::FcW,
    ParamKind::FcB,
    ParamKind::FcProjW,
    ParamKind::FcProjB,
    ParamKind::LnfW,
    ParamKind::LnfB,
];

impl ParamKind {
    /// Stable name used in checkpoints and GPU labels.
    pub fn name(self) -> &'static str {
        match self {
            ParamKind::TokEmb => "tok_emb",
            ParamKind::PosEmb => "pos_emb",
            ParamKind::Ln1W => "ln1_w",
            ParamKind::Ln1B => "ln1_b",
            ParamKind::QkvW => "qkv_w",
            ParamKind::QkvB => "qkv_b",
            ParamKind::AttnProjW => "attn_proj_w",
            ParamKind::AttnProjB => "attn_proj_b",
            ParamKind::Ln2W => "ln2_w",
            ParamKind::Ln2B => "ln2_b",
            ParamKind::FcW => "fc_w",
            ParamKind::FcB => "fc_b",
            ParamKind::FcProjW => "fc_proj_w",
            ParamKind::FcProjB => "fc_proj_b",
            ParamKind::LnfW => "lnf_w",
            ParamKind::LnfB => "lnf_b",
        }
    }

    /// Full shape of the stacked tensor for `cfg`.
    pub fn shape(self, cfg: &ModelConfig) -> Vec<usize> {
        let (v, t, l, c) = (cfg.vocab_size, cfg.block_size, cfg.n_layer, cfg.d_model);
        match self {
            ParamKind::TokEmb => vec![v, c],
            ParamKind::PosEmb => vec![t, c],
            ParamKind::Ln1W | ParamKind::Ln1B | ParamKind::Ln2W | ParamKind::Ln2B => vec![l, c],
            ParamKind::QkvW => vec![l, 3 * c, c],
            ParamKind::QkvB => vec![l, 3 * c],
            ParamKind::AttnProjW => vec![l, c, c],
            ParamKind::AttnProjB | ParamKind::FcProjB => vec![l, c],
            ParamKind::FcW => vec![l, 4 * c, c],
            ParamKind::FcB => vec![l, 4 * c],
            ParamKind::FcProjW => vec![l, c, 4 * c],
            ParamKind::LnfW | ParamKind::LnfB => vec![c],
        }
    }

    /// Weight decay applies to matrices and embeddings, never to biases or
    /// LayerNorm parameters.
    pub fn decays(self) -> bool {
        matches!(
            self,
            ParamKind::TokEmb
                | ParamKind::PosEmb
                | ParamKind::QkvW
                | ParamKind::AttnProjW
                | ParamKind::FcW
                | ParamKind::FcProjW
        )
    }

    /// Residual output projections get the GPT-2 scaled init N(0, 0.02/√(2L)).
    pub fn is_residual_projection(self) -> bool {
        matches!(self, ParamKind::AttnProjW | ParamKind::FcProjW)
    }
}

/// One named view into the flat parameter buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorSpec {
    pub kind: ParamKind,
    pub shape: Vec<usize>,
    /// Offset in elements from the start of the flat buffer.
    pub offset: usize,
    /// Number of elements.
    pub len: usize,
}

impl TensorSpec {
    pub fn range(&self) -> std::ops::Range<usize> {
        self.offset..self.offset + self.len
    }
}

/// The table of every parameter tensor for one model config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamLayout {
    pub tensors: Vec<TensorSpec>,
    pub total: usize,
}

impl ParamLayout {
    pub fn new(cfg: &ModelConfig) -> Self {
        let mut offset = 0;
        let tensors = PARAM_KINDS
            .iter()
            .map(|&kind| {
                let shape = kind.shape(cfg);
                let len = shape.iter().product();
                let spec = TensorSpec {
                    kind,
                    shape,
                    offset,
                    len,
                };
                offset += len;
                spec
            })
            .collect();
        Self {
            tensors,
            total: offset,
        }
    }

    /// The spec of one kind.
    #[track_caller]
    pub fn get(&self, kind: ParamKind) -> &TensorSpec {
        // Every kind is in the table by construction; a miss is a bug.
        self.tensors
            .iter()
            .find(|t| t.kind == kind)
            .expect("every ParamKind is in the layout")
    }

    /// The slice of `kind` in `flat`.
    pub fn view<'a>(&self, flat: &'a [f32], kind: ParamKind) -> &'a [f32] {
        &flat[self.get(kind).range()]
    }

    /// The mutable slice of `kind` in `flat`.
    pub fn view_mut<'a>(&self, flat: &'a mut [f32], kind: ParamKind) -> &'a mut [f32] {
        &mut flat[self.get(kind).range()]
    }

    /// The slice of layer `layer` of a stacked per-layer tensor.
    pub fn layer<'a>(&self, flat: &'a [f32], kind: ParamKind, layer: usize) -> &'a [f32] {
        let spec = self.get(kind);
        let per = spec.len / spec.shape[0];
        &flat[spec.offset + layer * per..spec.offset + (layer + 1) * per]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinygpt_protocol::PRESETS;

    #[test]
    fn layout_total_matches_config_count() {
        for p in PRESETS {
            let cfg = p.model(65);
            assert_eq!(ParamLayout::new(&cfg).total, cfg.num_params(), "{}", p.name);
        }
    }

    #[test]
    fn views_are_contiguous_and_disjoint() {
        let cfg = PRESETS[0].model(65);
        let layout = ParamLayout::new(&cfg);
        let mut end = 0;
        for t in &layout.tensors {
            assert_eq!(t.offset, end);
            end += t.len;
        }
        assert_eq!(end, layout.total);
    }
}
