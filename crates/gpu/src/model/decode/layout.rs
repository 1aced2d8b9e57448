//! How the decoder lays out a token's kernels, per device class.

use crate::ops::attention::DecodeDesc;
use crate::ops::persistent::{persistent_fits, persistent_wide_offered, PersistentWidth};
use crate::GpuContext;

/// The widest rows for which the engine picks the `Persistent` layout
/// by itself ([`DecoderKernels::preferred_for`]).
pub const PERSISTENT_PREFERRED_MAX_C: u32 = 128;

/// The fewest bytes of weights a token's GEMVs stream (all layers) for
/// which the decode attention loads the next GEMVs' weights into L2 as it
/// runs ([`loads_ahead`]). Measured on the H100 (50 MB of L2;
/// BENCHMARKS.md, run 106): `nanogpt`'s 42.5 MB of f32 weights decode
/// 5–8 % faster with the loads ahead; its 21.2 MB of f16 weights as fast
/// (0 to −0.4 %), `small`'s 12.6 MB of f32 (and 6.3 MB of f16) weights
/// 0.4–2.4 % slower — those stay in L2 from one token to the next anyway.
pub const AHEAD_MIN_BYTES: u64 = 32 << 20;

/// Whether a decoder whose GEMVs stream `bytes` of weights a token loads
/// them into L2 ahead (`ops::ahead`): at [`AHEAD_MIN_BYTES`] and more.
pub fn loads_ahead(bytes: u64) -> bool {
    bytes >= AHEAD_MIN_BYTES
}

/// How the decoder lays out a token's LayerNorms and GEMVs.
///
/// `Prologue` (a GPU's): each LayerNorm in the prologue of the GEMV that
/// reads it, every workgroup recomputing the row's mean and 1/σ — one
/// dispatch fewer per LayerNorm, which a GPU's idle lanes pay for. `Fused`:
/// that, and the first LayerNorm, the QKV GEMV and the attention in one
/// kernel a head (`RowBuilder::qkv_attention`: one dispatch fewer a layer
/// again), the final LayerNorm, the head and the pick in one kernel a
/// sample (`RowBuilder::head_pick`: one fewer a token) — the same bits, but
/// a head's workgroup then streams its QKV weights alone where the GEMV
/// spread them over many: measured slower at every shape on the H100
/// (BENCHMARKS.md, run 73), so no device runs it by default. `Separate`:
/// the LayerNorm kernel on the one row, then the same GEMV (8 columns × 32
/// lanes per workgroup); all three give the same bits (`gemv_row.wgsl`
/// reproduces `layernorm.wgsl`'s sums). `Columns`: the LayerNorms on their
/// own, the column-layout GEMVs ([`RowFusion::columns`]: one invocation per
/// output column, no workgroup memory, no barrier) and the attention with
/// one invocation per head (`attention_decode.wgsl`'s `main_serial`) — on a
/// CPU implementation of WebGPU, which pays per workgroup and per barrier,
/// the fastest by far (BENCHMARKS.md, "The decoder on CPU devices").
/// Its sums run in another order, so
/// its logits differ from the others' in the last bits. `Stack`: the
/// LayerNorms in the GEMVs' prologues, and the attention's output
/// projection in the attention kernel, each head's workgroup projecting its
/// own outputs (`ops::attention::bind_attention_decode_proj`): the residual
/// row becomes a stack of shares that every reader sums
/// (`ops::attention::Stack`), one dispatch a layer fewer than `Prologue`
/// (`4·n_layer + 2` a token); the projection's sums run in another order
/// (per head, then the heads), so its logits too differ in the last bits.
/// `Persistent`: the whole token — every block, the final LayerNorm and
/// the head — in one workgroup per sample
/// (`ops::persistent::bind_decode_persistent`), and the pick inside it
/// where the device offers that (`ops::persistent::persistent_pick_offered`:
/// one dispatch a token), else after it (two), where one workgroup
/// streaming every weight is cheaper than the other layouts' launches
/// (small models); its own sums' orders. `PersistentWide`: the same in a
/// workgroup of 512 invocations (`ops::persistent::PersistentWidth::Wide`)
/// where the device offers it, else `Persistent`; its sums in its own
/// orders; measured slower than `Persistent` (BENCHMARKS.md, runs 83 and
/// 87), so picked by none. A model whose rows do not fit the kernel's
/// workgroup (`ops::persistent::persistent_fits`) decodes in `Prologue`
/// instead ([`DecoderKernels::for_model`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecoderKernels {
    Prologue,
    Fused,
    Separate,
    Columns,
    Stack,
    Persistent,
    PersistentWide,
}

impl DecoderKernels {
    /// `Columns` on a CPU implementation ([`GpuContext::cpu_device`]),
    /// `Prologue` on a GPU.
    pub fn for_device(ctx: &GpuContext) -> Self {
        if ctx.cpu_device {
            Self::Columns
        } else {
            Self::Prologue
        }
    }

    /// Every layout, in the order `tinygpt bench --decoder` lists them.
    pub const ALL: [DecoderKernels; 7] = [
        DecoderKernels::Prologue,
        DecoderKernels::Fused,
        DecoderKernels::Separate,
        DecoderKernels::Columns,
        DecoderKernels::Stack,
        DecoderKernels::Persistent,
        DecoderKernels::PersistentWide,
    ];

    /// Its name (`tinygpt bench --decoder`, the bench's sample rows).
    pub fn name(self) -> &'static str {
        match self {
            Self::Prologue => "prologue",
            Self::Fused => "fused",
            Self::Separate => "separate",
            Self::Columns => "columns",
            Self::Stack => "stack",
            Self::Persistent => "persistent",
            Self::PersistentWide => "persistent-wide",
        }
    }

    /// The layout the engine picks for a model of `desc`'s shape on a
    /// device whose layout is `self` ([`Self::for_device`]): `Persistent`
    /// in place of `Prologue` where it fits and the rows are at most
    /// [`PERSISTENT_PREFERRED_MAX_C`] wide — measured faster there on the
    /// H100 (BENCHMARKS.md, runs 78–80: `tiny`, C 128, 84 against 99 µs a
    /// token) and slower at C 256 (`small`: 194 against 111) — else
    /// itself. Never `PersistentWide`: slower than `Persistent` on the H100
    /// (run 87: 97.1 against 84.4 µs a `tiny` token).
    pub fn preferred_for(self, desc: &DecodeDesc) -> Self {
        match self {
            Self::Prologue if persistent_fits(desc) && desc.c <= PERSISTENT_PREFERRED_MAX_C => {
                Self::Persistent
            }
            k => k,
        }
    }

    /// The layout a model of `desc`'s shape decodes in on a device of
    /// `limits`: this one; `Persistent` for `PersistentWide` where the
    /// device does not offer the wide workgroup; `Prologue` for either
    /// where the rows do not fit the kernel's workgroup.
    pub fn for_model(self, desc: &DecodeDesc, limits: &wgpu::Limits) -> Self {
        match self {
            Self::Persistent | Self::PersistentWide if !persistent_fits(desc) => Self::Prologue,
            Self::PersistentWide if !persistent_wide_offered(limits) => Self::Persistent,
            k => k,
        }
    }

    /// The persistent kernel's width, in the layouts that run it.
    pub fn persistent_width(self) -> Option<PersistentWidth> {
        match self {
            Self::Persistent => Some(PersistentWidth::Narrow),
            Self::PersistentWide => Some(PersistentWidth::Wide),
            _ => None,
        }
    }

    /// The layout named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether each LayerNorm runs in the prologue of the GEMV that reads
    /// it (`Prologue`, `Fused` and `Stack`).
    pub fn layernorm_in_prologue(self) -> bool {
        matches!(self, Self::Prologue | Self::Fused | Self::Stack)
    }
}

#[cfg(test)]
mod tests {
    use super::loads_ahead;

    /// A token's GEMV weights: 12·C² a layer (QKV, projection, fc, fc
    /// projection), `bytes` each.
    fn streamed(layers: u64, c: u64, bytes: u64) -> u64 {
        layers * 12 * c * c * bytes
    }

    #[test]
    fn only_weights_that_overflow_l2_load_ahead() {
        assert!(loads_ahead(streamed(6, 384, 4)), "nanogpt f32");
        assert!(!loads_ahead(streamed(6, 384, 2)), "nanogpt f16");
        assert!(!loads_ahead(streamed(4, 256, 4)), "small f32");
        assert!(!loads_ahead(streamed(4, 128, 4)), "tiny f32");
    }
}
