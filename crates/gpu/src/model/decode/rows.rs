//! The decoder's vocabulary: one method per op of a token step, each
//! binding its one-row kernel in the decoder's layout ([`DecoderKernels`]),
//! so that `Decoder::new` reads as one line per op.

use super::layout::{loads_ahead, DecoderKernels};
use crate::kernel::{BoundKernel, Layout};
use crate::model::builder::{Flat, Linear};
use crate::model::F16WeightCache;
use crate::ops::ahead::Ahead;
use crate::ops::argmax::{bind_head_pick, head_pick_offered, Head, NextInput, Records, Rule};
use crate::ops::attention::{
    bind_attention_decode_ahead, bind_attention_decode_proj, bind_attention_decode_qkv, DecodeDesc,
    KvCache, ProjWeights, QkvWeight, QkvWeights, Stack,
};
use crate::ops::embedding::{bind_embedding_forward, EmbeddingDesc};
use crate::ops::layernorm::{bind_layernorm_forward, LayerNormDesc};
use crate::ops::matmul::f16w::bind_gemv_f16w;
use crate::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use crate::ops::persistent::{
    bind_decode_persistent, bind_decode_persistent_pick, persistent_pick_offered,
    PersistentWeights, PersistentWidth,
};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::ParamKind::{self, AttnProjW, FcProjW, FcW, LnfB, LnfW, PosEmb, QkvW, TokEmb};

/// The activations of a token step (`C` channels, `V` vocab), a row per
/// sample decoded together.
pub(super) struct Rows {
    /// The embedding's input tokens, and the two position uniforms: steps
    /// alternate between them, each step's pick writing the other.
    pub token: wgpu::Buffer,
    pub position: [wgpu::Buffer; 2],
    /// The residual row `x (C)` — two: a step reads and adds into the one
    /// of its parity, and its pick writes the next step's input into the
    /// other, so that a kernel that computes the logits and picks can read
    /// one and write the other — then `qkv (3C)`, `atty (C)`, `fch (4C)`,
    /// `logits (V)`.
    pub x: [wgpu::Buffer; 2],
    pub qkv: wgpu::Buffer,
    pub atty: wgpu::Buffer,
    pub fch: wgpu::Buffer,
    pub logits: wgpu::Buffer,
    /// A LayerNorm's output row and statistics when it runs on its own.
    pub xn: wgpu::Buffer,
    pub mean: wgpu::Buffer,
    pub rstd: wgpu::Buffer,
    /// The `Stack` layout's residual stacks (`slots` rows each), layer
    /// `l`'s in `stacks[l % 2]`, so that a layer's attention reads the
    /// previous layer's stack and writes its own; none in other layouts.
    pub stacks: Vec<wgpu::Buffer>,
    pub slots: u32,
}

impl Rows {
    /// Rows of `c` channels and `v` logits for `batch` samples, and two
    /// stacks of `slots` rows (none for 0).
    pub fn new(
        ctx: &GpuContext,
        (c, v): (usize, usize),
        batch: usize,
        slots: u32,
    ) -> Result<Self, GpuError> {
        let row = |label: &str, len: usize| ctx.zeros(label, len * batch);
        let stacks = match slots {
            0 => Vec::new(),
            n => vec![
                row("decode_stack", n as usize * c)?,
                row("decode_stack", n as usize * c)?,
            ],
        };
        Ok(Self {
            token: row("decode_token", 1)?,
            position: [0; 2].map(|_| crate::ops::attention::decode_position_buffer(ctx)),
            x: [row("decode_x", c)?, row("decode_x_next", c)?],
            qkv: row("decode_qkv", 3 * c)?,
            atty: row("decode_atty", c)?,
            fch: row("decode_fch", 4 * c)?,
            logits: row("decode_logits", v)?,
            xn: row("decode_xn", c)?,
            mean: row("decode_mean", 1)?,
            rstd: row("decode_rstd", 1)?,
            stacks,
            slots,
        })
    }
}

/// A GEMV's input: a row, read through a LayerNorm prologue or not, with
/// GELU after the bias or not.
#[derive(Clone, Copy)]
pub(super) struct Input<'a> {
    row: &'a wgpu::Buffer,
    fusion: RowFusion<'a>,
}

impl Input<'_> {
    /// GELU of each output after its bias.
    pub fn gelu(self) -> Self {
        Self {
            fusion: RowFusion {
                gelu: true,
                ..self.fusion
            },
            ..self
        }
    }
}

type R = Result<(), GpuError>;

/// Binds a token step's kernels in order into `kernels`.
pub(super) struct RowBuilder<'a> {
    pub ctx: &'a GpuContext,
    pub reg: &'a mut PipelineRegistry,
    pub params: &'a Flat<'a>,
    /// The f16 weights the linears read, when f16 storage is active.
    pub f16: Option<&'a F16WeightCache>,
    pub layout: DecoderKernels,
    /// The subgroup size the GEMVs sum their lanes with, when the
    /// subgroups fast path is active ([`RowFusion::subgroups`]).
    pub subgroups: Option<u32>,
    pub desc: DecodeDesc,
    /// The vocabulary.
    pub v: u32,
    pub rows: &'a Rows,
    /// Which of the two position buffers the step reads.
    pub parity: usize,
    pub kernels: Vec<BoundKernel>,
}

impl<'a> RowBuilder<'a> {
    /// The kernels bound so far, leaving none.
    pub fn take(&mut self) -> Vec<BoundKernel> {
        std::mem::take(&mut self.kernels)
    }

    /// The position this step reads, and the one its pick writes.
    pub fn positions(&self) -> (&'a wgpu::Buffer, &'a wgpu::Buffer) {
        let p = &self.rows.position;
        (&p[self.parity], &p[1 - self.parity])
    }

    /// What every GEMV runs with: the column layout, or the lanes summed
    /// through workgroup memory or with subgroups.
    fn plain(&self) -> RowFusion<'a> {
        let columns = self.layout == DecoderKernels::Columns;
        RowFusion {
            columns,
            subgroups: self.subgroups.filter(|_| !columns),
            ..RowFusion::default()
        }
    }

    /// `row` read as it is.
    pub fn row(&self, row: &'a wgpu::Buffer) -> Input<'a> {
        Input {
            row,
            fusion: self.plain(),
        }
    }

    /// The residual row this step reads and adds into.
    pub fn x(&self) -> &'a wgpu::Buffer {
        &self.rows.x[self.parity]
    }

    /// Where the step's pick writes the next step's input row: the other
    /// `x`, from the embedding tables.
    pub fn next_input(&self) -> NextInput<'a> {
        NextInput {
            tok_emb: self.params.at(TokEmb, 0),
            pos_emb: self.params.at(PosEmb, 0),
            x: &self.rows.x[1 - self.parity],
            c: self.desc.c,
            t_max: self.desc.t_max,
        }
    }

    /// `x (C) = tok_emb[token] + pos_emb[position]`.
    pub fn encoder(&mut self) -> R {
        let emb = EmbeddingDesc {
            n: self.desc.batch,
            t: 1,
            c: self.desc.c,
            v: self.v,
            t_max: self.desc.t_max,
        };
        let (tok, pos) = (self.params.at(TokEmb, 0), self.params.at(PosEmb, 0));
        let r = self.rows;
        let k = bind_embedding_forward(
            self.ctx,
            self.reg,
            emb,
            &r.token,
            tok,
            pos,
            self.x(),
            Some(self.positions().0),
        )?;
        self.kernels.push(k);
        Ok(())
    }

    /// The residual row that layer `l` starts from (`l` = the layers: the
    /// final LayerNorm's input): `x`, or in the `Stack` layout the previous
    /// layer's whole stack (the first layer's is `x`).
    pub fn residual_in(&self, l: usize) -> Stack<'a> {
        match (self.layout, l) {
            (DecoderKernels::Stack, 1..) => self.stack(l - 1, self.rows.slots),
            _ => Stack {
                buffer: self.x(),
                slots: 1,
            },
        }
    }

    /// The first `slots` slots of layer `l`'s stack (`Stack` layout).
    pub fn stack(&self, l: usize, slots: u32) -> Stack<'a> {
        Stack {
            buffer: &self.rows.stacks[l % 2],
            slots,
        }
    }

    /// Slot `i` of layer `l`'s stack, to write (`Stack` layout).
    pub fn stack_slot(&self, l: usize, i: u32) -> View<'a> {
        let row = self.desc.batch * self.desc.c;
        View::at(&self.rows.stacks[l % 2], i * row)
    }

    /// LayerNorm `(w, b, l)` of `x`, as the next GEMV will read it.
    pub fn layernorm(&mut self, ln: Linear) -> Result<Input<'a>, GpuError> {
        self.layernorm_at(self.residual_in(0), ln)
    }

    /// LayerNorm `(w, b, l)` of the row `src` holds (the sum of its slots),
    /// as the next GEMV will read it: folded into its prologue (`Prologue`,
    /// `Fused`, `Stack`), or a kernel of its own writing `xn` (a row of one
    /// slot only).
    pub fn layernorm_at(
        &mut self,
        src: Stack<'a>,
        (w, b, l): Linear,
    ) -> Result<Input<'a>, GpuError> {
        let (w, b) = (self.params.at(w, l), self.params.at(b, l));
        let r = self.rows;
        if self.layout.layernorm_in_prologue() {
            let fusion = RowFusion {
                layernorm: Some((w, b)),
                slots: src.slots,
                ..self.plain()
            };
            return Ok(Input {
                row: src.buffer,
                fusion,
            });
        }
        if src.slots != 1 {
            return Err(GpuError::Shape {
                op: "decoder",
                detail: "a LayerNorm kernel of its own reads a row of one slot".into(),
            });
        }
        let desc = LayerNormDesc {
            n: self.desc.batch,
            c: self.desc.c,
            accumulate: false,
            // The column layout's LayerNorm: one invocation for the row.
            layout: match self.layout {
                DecoderKernels::Columns => Layout::Cpu,
                _ => Layout::Gpu,
            },
        };
        let k = bind_layernorm_forward(
            self.ctx, self.reg, desc, src.buffer, w, b, &r.xn, &r.mean, &r.rstd, None,
        )?;
        self.kernels.push(k);
        Ok(self.row(&r.xn))
    }

    /// `out (n) [+]= input (k) · Wᵀ + b`, adding into `out` with `add` (a
    /// residual): the decoder's counterpart of `Builder::linear`, the only
    /// other place a fast path swaps a kernel.
    pub fn linear(
        &mut self,
        input: Input<'a>,
        (w, b, l): Linear,
        (k, n): (u32, u32),
        add: bool,
        out: impl Into<View<'a>>,
    ) -> R {
        let out = out.into();
        let desc = MatmulDesc {
            accumulate: add,
            ..MatmulDesc::linear(self.desc.batch, k, n)
        };
        let (wv, bias) = (self.params.at(w, l), Some(self.params.at(b, l)));
        let (x, fusion) = (input.row, input.fusion);
        let kernel = match self.f16 {
            Some(f) => bind_gemv_f16w(
                self.ctx,
                self.reg,
                desc,
                x,
                f.at(wv.offset),
                bias,
                fusion,
                out,
            )?,
            None => bind_gemv(self.ctx, self.reg, desc, x, wv, bias, fusion, out)?,
        };
        self.kernels.push(kernel);
        Ok(())
    }

    /// `atty (C)` from `qkv (3C)`, the token's keys and values appended to
    /// `cache` (layer `l`'s), the weights of the GEMVs after it loaded into
    /// L2 meanwhile ([`Self::ahead`]).
    pub fn attention(&mut self, cache: &KvCache, l: usize) -> R {
        let (r, serial) = (self.rows, self.layout == DecoderKernels::Columns);
        let subgroups = self.subgroups.filter(|_| !serial);
        let io = (self.positions().0, &r.qkv, cache, &r.atty);
        let ahead = self.ahead(l);
        let (ctx, desc) = (self.ctx, self.desc);
        let k = bind_attention_decode_ahead(ctx, self.reg, (serial, subgroups), desc, io, ahead)?;
        self.kernels.push(k);
        Ok(())
    }

    /// What layer `l`'s attention loads into L2 for the GEMVs after it:
    /// the weights of its projection, fc and fc projection, and the next
    /// layer's QKV weights (in the f16 copy when the GEMVs read that) —
    /// where a token's GEMVs stream enough weights ([`loads_ahead`]).
    fn ahead(&self, l: usize) -> Option<Ahead<'a>> {
        let layout = self.params.layout;
        let half = self.f16.is_some();
        let words = |kind: ParamKind, l: usize| -> (u32, u32) {
            let spec = layout.get(kind);
            if l >= spec.shape[0] {
                return (0, 0);
            }
            let (at, n) = (
                self.params.at(kind, l).offset,
                (spec.len / spec.shape[0]) as u32,
            );
            match half {
                true => (at / 2, (at + n).div_ceil(2) - at / 2),
                false => (at, n),
            }
        };
        let gemvs = [QkvW, AttnProjW, FcW, FcProjW];
        let elements: usize = gemvs.iter().map(|&k| layout.get(k).len).sum();
        if !loads_ahead(elements as u64 * if half { 2 } else { 4 }) {
            return None;
        }
        Some(Ahead {
            buffer: self.f16.map_or(self.params.buffer, |f| f.at(0).buffer),
            ranges: [
                words(AttnProjW, l),
                words(FcW, l),
                words(FcProjW, l),
                words(QkvW, l + 1),
            ],
        })
    }

    /// Layer `l`'s stack (`Stack` layout): slot 0 the residual row it
    /// starts from, slot `h + 1` head `h`'s share of the projection `proj`
    /// of the attention over `cache` (`qkv`'s keys and values appended).
    pub fn attention_proj(&mut self, cache: &KvCache, (w, b, l): Linear) -> R {
        let (wv, bias) = (self.params.at(w, l), self.params.at(b, l));
        let weights = match self.f16 {
            Some(f) => {
                let packed = f.at(wv.offset);
                ProjWeights {
                    w: View::at(packed.buffer, packed.offset),
                    half: true,
                    bias,
                }
            }
            None => ProjWeights {
                w: wv,
                half: false,
                bias,
            },
        };
        let stacks = (self.residual_in(l), self.stack(l, self.rows.slots));
        let k = bind_attention_decode_proj(
            self.ctx,
            self.reg,
            self.subgroups,
            self.desc,
            self.positions().0,
            &self.rows.qkv,
            (cache, weights),
            stacks,
        )?;
        self.kernels.push(k);
        Ok(())
    }

    /// `atty (C)`: the LayerNorm `ln` of `x`, the linear `qkv` and the
    /// attention over `cache` (the token's keys and values appended). One
    /// kernel a head where it applies — the `Fused` layout, with weights
    /// the kernel takes ([`QkvWeights::fit`]), the same bits — else the
    /// three ops.
    pub fn qkv_attention(&mut self, ln: Linear, qkv: Linear, cache: &KvCache) -> R {
        let (c, r) = (self.desc.c, self.rows);
        let at = |(w, b, l): Linear| (self.params.at(w, l), self.params.at(b, l));
        let (wv, bias) = at(qkv);
        let weights = QkvWeights {
            ln: at(ln),
            w: match self.f16 {
                Some(f) => QkvWeight::F16(f.at(wv.offset)),
                None => QkvWeight::F32(wv),
            },
            bias,
        };
        if self.layout != DecoderKernels::Fused || !weights.fit(c) {
            let input = self.layernorm(ln)?;
            self.linear(input, qkv, (c, 3 * c), false, &r.qkv)?;
            return self.attention(cache, qkv.2);
        }
        let k = bind_attention_decode_qkv(
            self.ctx,
            self.reg,
            self.subgroups,
            self.desc,
            self.positions().0,
            self.x(),
            weights,
            (cache, &r.atty),
        )?;
        self.kernels.push(k);
        Ok(())
    }

    /// `logits (V)` from `x` through every block (the token's keys and
    /// values appended to `cache`, all layers' in one), the final
    /// LayerNorm and the tied head, in one kernel of `width` (`Persistent`,
    /// `PersistentWide`).
    pub fn persistent(&mut self, cache: &KvCache, width: PersistentWidth) -> R {
        let offset = |k: ParamKind| self.params.at(k, 0).offset;
        let weights = self.persistent_weights(&offset);
        let io = (self.x(), &self.rows.logits);
        let at = (self.desc, width);
        let k = bind_decode_persistent(
            self.ctx,
            self.reg,
            at,
            self.positions().0,
            &weights,
            cache,
            io,
        )?;
        self.kernels.push(k);
        Ok(())
    }

    /// What `persistent` binds, then each pick (greedy, seeded) from the
    /// logits, in one kernel each — where the device offers it
    /// (`persistent_pick_offered`), else none.
    pub fn persistent_pick(
        &mut self,
        cache: &KvCache,
        width: PersistentWidth,
        (picks, params, draws): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<Option<[BoundKernel; 2]>, GpuError> {
        if !persistent_pick_offered(&self.ctx.limits, width) {
            return Ok(None);
        }
        let offset = |k: ParamKind| self.params.at(k, 0).offset;
        let weights = self.persistent_weights(&offset);
        let r = self.rows;
        let records = Records {
            positions: self.positions(),
            token: &r.token,
            picks,
        };
        let io = (self.x(), &r.logits);
        let mut bind = |rule| {
            let at = (self.desc, width, rule);
            let next = self.next_input();
            bind_decode_persistent_pick(self.ctx, self.reg, at, &weights, cache, io, records, next)
        };
        let greedy = bind(Rule::Greedy)?;
        let sample = bind(Rule::Sample { params, draws })?;
        Ok(Some([greedy, sample]))
    }

    /// The model as the persistent kernel reads it, parameters at `offset`.
    fn persistent_weights<'o>(&self, offset: &'o dyn Fn(ParamKind) -> u32) -> PersistentWeights<'o>
    where
        'a: 'o,
    {
        PersistentWeights {
            flat: self.params.buffer,
            offset,
            halves: self.f16.map(|f| f.at(0).buffer),
            fault: self.f16.and_then(|f| f.at(0).fault),
            n_layer: self.params.layout.get(ParamKind::Ln1W).shape[0] as u32,
            vocab: self.v,
        }
    }

    /// The tied head, always f32: `logits (V) = input · tok_embᵀ`.
    pub fn head(&mut self, input: Input<'a>) -> R {
        let desc = MatmulDesc {
            m: self.desc.batch,
            k: self.desc.c,
            n: self.v,
            trans_b: true,
            ..Default::default()
        };
        let tok = self.params.at(TokEmb, 0);
        let k = bind_gemv(
            self.ctx,
            self.reg,
            desc,
            input.row,
            tok,
            None,
            input.fusion,
            &self.rows.logits,
        )?;
        self.kernels.push(k);
        Ok(())
    }
}

impl RowBuilder<'_> {
    /// The final LayerNorm, the tied head and the greedy and the seeded
    /// pick in one kernel each ([`bind_head_pick`]), writing the picks to
    /// `picks` with the seeded rule's `params` and `draws`: in the `Fused`
    /// layout where the head [`Head::fits`] and the device binds its
    /// storage buffers, else none.
    pub fn head_pick(
        &mut self,
        (picks, params, draws): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<Option<[BoundKernel; 2]>, GpuError> {
        let r = self.rows;
        let head = Head {
            x: self.x(),
            ln: (self.params.at(LnfW, 0), self.params.at(LnfB, 0)),
            tok_emb: self.params.at(TokEmb, 0),
            logits: &r.logits,
            c: self.desc.c,
        };
        let fused = self.layout == DecoderKernels::Fused && head_pick_offered(self.ctx);
        if !fused || !head.fits(self.v) {
            return Ok(None);
        }
        let records = Records {
            positions: self.positions(),
            token: &r.token,
            picks,
        };
        let (v, rows) = (self.v, self.desc.batch);
        let mut bind = |rule| {
            let next = self.next_input();
            bind_head_pick(self.ctx, self.reg, (rule, v, rows), head, records, next)
        };
        let greedy = bind(Rule::Greedy)?;
        let sample = bind(Rule::Sample { params, draws })?;
        Ok(Some([greedy, sample]))
    }
}
