//! A whole decoded token step in one dispatch (`shaders/decode_whole.wgsl`):
//! one workgroup per sample runs the step's ops in turn — the same GEMV,
//! LayerNorm and attention code as the one-op kernels, every sum in their
//! order, so the same bits as the decoder's `Fused` layout. [`WholeOps`]
//! lists a step's ops one line per op (as the decoder binds its kernels);
//! [`bind_decode_whole`] binds them into one dispatch.

use super::attention::{DecodeDesc, KvCache, POSITION_BYTES};
use super::common::{shape_error, View};
use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The step, its sums through workgroup memory.
pub const DECODE_WHOLE: KernelSource = KernelSource {
    key: "decode_whole",
    wgsl: concat!(
        include_str!("../../../../shaders/decode_whole.wgsl"),
        include_str!("../../../../shaders/gemv_lanes.wgsl"),
        include_str!("../../../../shaders/gemv_row.wgsl"),
        include_str!("../../../../shaders/ln_sum.wgsl"),
        include_str!("../../../../shaders/lanes_wg.wgsl"),
        include_str!("../../../../shaders/erf.wgsl"),
        include_str!("../../../../shaders/attention_decode_body.wgsl"),
        include_str!("../../../../shaders/reduce_wg.wgsl")
    ),
    entry: "main",
    constants: &[],
};

/// [`DECODE_WHOLE`] with the lanes' and the attention's sums on subgroup
/// shuffles (the subgroups fast path: the same bits).
pub const DECODE_WHOLE_SG: KernelSource = KernelSource {
    key: "decode_whole_sg",
    wgsl: concat!(
        include_str!("../../../../shaders/decode_whole.wgsl"),
        include_str!("../../../../shaders/gemv_lanes.wgsl"),
        include_str!("../../../../shaders/gemv_row.wgsl"),
        include_str!("../../../../shaders/ln_sum.wgsl"),
        include_str!("../../../../shaders/lanes_sg.wgsl"),
        include_str!("../../../../shaders/erf.wgsl"),
        include_str!("../../../../shaders/attention_decode_body.wgsl"),
        include_str!("../../../../shaders/reduce_sg.wgsl")
    ),
    entry: "main",
    constants: &[],
};

/// Storage buffers the kernel binds (its limit is checked before binding).
const STORAGE_BINDINGS: u32 = 11;
/// Row regions start on 256-byte boundaries (the strictest storage
/// binding offset alignment WebGPU allows).
const ALIGN_WORDS: u32 = 64;

const OP_COPY: u32 = 0;
const OP_GEMV: u32 = 1;
const OP_GEMV_LN: u32 = 2;
const OP_ATTENTION: u32 = 3;
/// gemv_row.wgsl's flags.
const HAS_BIAS: u32 = 4;
const ACCUMULATE: u32 = 8;
const GELU: u32 = 64;

/// One op of the step: decode_whole.wgsl's `Params`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WholeOp {
    kind: u32,
    k: u32,
    n: u32,
    flags: u32,
    a_off: u32,
    b_off: u32,
    bias_off: u32,
    c_off: u32,
    ln_w_off: u32,
    ln_b_off: u32,
    groups: u32,
    sg: u32,
    c: u32,
    nh: u32,
    hs: u32,
    t_max: u32,
    scale: f32,
    kv_off: u32,
}

/// Where each row of a step starts in the one rows buffer (words; every
/// region holds `batch` rows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeRows {
    pub x: u32,
    pub qkv: u32,
    pub atty: u32,
    pub fch: u32,
    pub logits: u32,
    /// Words of the whole buffer.
    pub len: u32,
}

impl WholeRows {
    /// The regions for `batch` rows of `C` channels and `V` logits.
    pub fn new(c: u32, v: u32, batch: u32) -> Self {
        let mut at = 0;
        let mut region = |width: u32| {
            let start = at;
            at += (width * batch).div_ceil(ALIGN_WORDS) * ALIGN_WORDS;
            start
        };
        let (x, qkv, atty, fch, logits) = (
            region(c),
            region(3 * c),
            region(c),
            region(4 * c),
            region(v),
        );
        Self {
            x,
            qkv,
            atty,
            fch,
            logits,
            len: at,
        }
    }
}

/// A row of the step a GEMV reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    X,
    Qkv,
    Atty,
    Fch,
    Logits,
}

/// A step's ops, one method per op, in the order they run.
pub struct WholeOps<'a> {
    desc: DecodeDesc,
    rows: WholeRows,
    /// The flat parameters every weight view must lie in.
    params: &'a wgpu::Buffer,
    /// The subgroup size of the `_sg` kernel, else 0.
    sg: u32,
    ops: Vec<WholeOp>,
}

impl<'a> WholeOps<'a> {
    /// A step starting with the copy of the input rows into x.
    pub fn new(desc: DecodeDesc, params: &'a wgpu::Buffer, sg: Option<u32>) -> Self {
        let rows = WholeRows::new(desc.c, 0, desc.batch);
        let copy = WholeOp {
            kind: OP_COPY,
            n: desc.c,
            c_off: rows.x,
            ..Default::default()
        };
        Self {
            desc,
            rows,
            params,
            sg: sg.unwrap_or(0),
            ops: vec![copy],
        }
    }

    /// The rows' layout with room for `v` logits.
    pub fn rows(&self, v: u32) -> WholeRows {
        WholeRows::new(self.desc.c, v, self.desc.batch)
    }

    fn at(&self, row: Row) -> u32 {
        let r = self.rows;
        match row {
            Row::X => r.x,
            Row::Qkv => r.qkv,
            Row::Atty => r.atty,
            Row::Fch => r.fch,
            // The last region: its start does not depend on V.
            Row::Logits => r.logits,
        }
    }

    fn offset(&self, v: View<'_>, what: &str) -> Result<u32, GpuError> {
        if v.buffer != self.params {
            return Err(shape_error(
                "decode_whole",
                format!("{what} is not in the parameters' buffer"),
            ));
        }
        Ok(v.offset)
    }

    /// `to (n) [+]= [LayerNorm](from (k)) · Wᵀ [+ b]`, then GELU when
    /// asked (after the bias, before the add).
    #[allow(clippy::too_many_arguments)]
    pub fn linear(
        &mut self,
        ln: Option<(View<'_>, View<'_>)>,
        (w, b): (View<'_>, Option<View<'_>>),
        (k, n): (u32, u32),
        (from, to): (Row, Row),
        gelu: bool,
        add: bool,
    ) -> Result<(), GpuError> {
        let mut op = WholeOp {
            kind: if ln.is_some() { OP_GEMV_LN } else { OP_GEMV },
            k,
            n,
            a_off: self.at(from),
            b_off: self.offset(w, "a weight")?,
            c_off: self.at(to),
            sg: self.sg,
            ..Default::default()
        };
        if let Some((lw, lb)) = ln {
            op.ln_w_off = self.offset(lw, "a LayerNorm weight")?;
            op.ln_b_off = self.offset(lb, "a LayerNorm bias")?;
        }
        if let Some(b) = b {
            op.bias_off = self.offset(b, "a bias")?;
            op.flags |= HAS_BIAS;
        }
        op.flags |= if gelu { GELU } else { 0 } | if add { ACCUMULATE } else { 0 };
        self.ops.push(op);
        Ok(())
    }

    /// Layer `l`'s attention: atty from qkv, the token's keys and values
    /// appended to the layer's block of the caches.
    pub fn attention(&mut self, l: u32) -> Result<(), GpuError> {
        let d = self.desc;
        let hs = super::attention::head_size(d.c, d.nh)?;
        self.ops.push(WholeOp {
            kind: OP_ATTENTION,
            c: d.c,
            nh: d.nh,
            hs,
            t_max: d.t_max,
            scale: super::attention::scale(hs),
            kv_off: l * d.batch * d.t_max * d.c,
            sg: self.sg,
            ..Default::default()
        });
        Ok(())
    }

    /// The ops so far.
    pub fn ops(&self) -> &[WholeOp] {
        &self.ops
    }
}

/// What the step binds: the flat parameters, the rows buffer
/// ([`WholeRows`]), the input rows the embedding or the pick wrote, the
/// position uniform, and every layer's caches in one [`KvCache`]
/// (`n_layer` blocks of one layer's size).
pub struct WholeBuffers<'a> {
    pub params: &'a wgpu::Buffer,
    pub rows: &'a wgpu::Buffer,
    pub x_in: &'a wgpu::Buffer,
    pub position: &'a wgpu::Buffer,
    pub cache: &'a KvCache,
}

/// Binds `ops` into one dispatch of `desc.batch` workgroups.
pub fn bind_decode_whole(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: DecodeDesc,
    (ops, layout): (&[WholeOp], WholeRows),
    bufs: WholeBuffers<'_>,
) -> Result<BoundKernel, GpuError> {
    check(ctx, desc, (ops, layout), &bufs)?;
    let src = if ops.iter().any(|o| o.sg != 0) {
        &DECODE_WHOLE_SG
    } else {
        &DECODE_WHOLE
    };
    let pipeline = registry.get(&ctx.device, src);
    let table = ctx.upload_bytes("decode_whole_ops", bytemuck::cast_slice(ops))?;
    let slice = |start: u32, words: u32| wgpu::BufferBinding {
        buffer: bufs.rows,
        offset: 4 * start as u64,
        size: wgpu::BufferSize::new(4 * words as u64),
    };
    let (c, b) = (desc.c, desc.batch);
    let resources = [
        (0, table.as_entire_binding()),
        (1, whole(bufs.rows)),
        (2, whole(bufs.params)),
        (3, whole(bufs.params)),
        (4, whole(bufs.rows)),
        (5, whole(bufs.params)),
        (6, whole(bufs.position)),
        (
            7,
            wgpu::BindingResource::Buffer(slice(layout.qkv, 3 * c * b)),
        ),
        (8, whole(&bufs.cache.k)),
        (9, whole(&bufs.cache.v)),
        (10, wgpu::BindingResource::Buffer(slice(layout.atty, c * b))),
        (11, whole(bufs.x_in)),
    ];
    let entries: Vec<wgpu::BindGroupEntry<'_>> = resources
        .into_iter()
        .map(|(binding, resource)| wgpu::BindGroupEntry { binding, resource })
        .collect();
    let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(src.key),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    Ok(BoundKernel {
        key: src.key,
        pipeline,
        bind_group,
        workgroups: [b, 1, 1],
        _uniform: Some(table),
    })
}

fn whole(buffer: &wgpu::Buffer) -> wgpu::BindingResource<'_> {
    buffer.as_entire_binding()
}

fn check(
    ctx: &GpuContext,
    desc: DecodeDesc,
    (ops, layout): (&[WholeOp], WholeRows),
    bufs: &WholeBuffers<'_>,
) -> Result<(), GpuError> {
    let err = |detail: String| Err(shape_error("decode_whole", detail));
    let limit = ctx.limits.max_storage_buffers_per_shader_stage;
    if limit < STORAGE_BINDINGS {
        return err(format!(
            "the step binds {STORAGE_BINDINGS} storage buffers; this device allows {limit}"
        ));
    }
    let hs = super::attention::head_size(desc.c, desc.nh)?;
    if hs > 128 || desc.batch == 0 || desc.t_max == 0 || ops.is_empty() {
        return err(format!(
            "{desc:?}: heads of at most 128 dims, a batch and a context of at least 1, ops"
        ));
    }
    let cache_len = desc.cache_len() * ops.iter().filter(|o| o.kind == OP_ATTENTION).count() as u64;
    let sizes = [
        (bufs.rows, layout.len as u64, "the rows"),
        (bufs.x_in, (desc.c * desc.batch) as u64, "the input rows"),
        (&bufs.cache.k, cache_len, "the K caches"),
        (&bufs.cache.v, cache_len, "the V caches"),
    ];
    for (buffer, words, what) in sizes {
        if buffer.size() < 4 * words {
            return err(format!(
                "{what} hold {} bytes, need {}",
                buffer.size(),
                4 * words
            ));
        }
    }
    if bufs.position.size() < POSITION_BYTES {
        return err("the position uniform is too small".into());
    }
    let align = ctx.limits.min_storage_buffer_offset_alignment;
    if (4 * ALIGN_WORDS) % align != 0 {
        return err(format!("storage offsets must align to {align} bytes"));
    }
    Ok(())
}
