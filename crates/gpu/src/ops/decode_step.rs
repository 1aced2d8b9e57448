//! The persistent decode step (`shaders/decode_step.wgsl`): a token's
//! blocks and head in one dispatch whose workgroups cross grid barriers
//! (`shaders/grid_sync.wgsl`) between the stages, instead of a dispatch
//! per stage — the decoder's `Persistent` layout.
//!
//! Every workgroup of the dispatch must be resident at once, which a GPU
//! with far more cores than [`STEP_GROUPS`] workgroups gives in practice
//! and no API promises: a wait that gives up sets the `sync` buffer's
//! flag ([`crate::ops::floor::GridSync`]), which the decoder reads back
//! with its picks and turns into an error. On a CPU implementation of
//! WebGPU the step runs as one workgroup.

use super::attention::{head_size, scale, POSITION_BYTES};
use super::common::{shape_error, uniform};
use crate::kernel::BoundKernel;
use crate::ops::floor::GridSync;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_core::{ParamLayout, PARAM_KINDS};

const WGSL: &str = concat!(
    include_str!("../../../../shaders/decode_step.wgsl"),
    include_str!("../../../../shaders/grid_sync.wgsl"),
    include_str!("../../../../shaders/erf.wgsl")
);

pub const DECODE_STEP: KernelSource = KernelSource {
    key: "decode_step",
    wgsl: WGSL,
    entry: "main",
    constants: &[],
};

/// [`DECODE_STEP`] reading the linears' weights from the f16 cache.
pub const DECODE_STEP_F16W: KernelSource = KernelSource {
    key: "decode_step_f16w",
    wgsl: WGSL,
    entry: "main",
    constants: &[("F16W", 1.0)],
};

/// Workgroups of the step on a GPU.
pub const STEP_GROUPS: u32 = 64;

/// The largest GEMV input the step stages (`4C`): `C ≤ 512`.
const MAX_K: u32 = 2048;

/// A step's shape: the model's, the samples decoded together and the
/// workgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepDesc {
    pub c: u32,
    pub nh: u32,
    pub n_layer: u32,
    pub v: u32,
    pub t_max: u32,
    pub batch: u32,
    pub groups: u32,
}

impl StepDesc {
    /// Why this shape cannot run as one step, if it cannot.
    pub fn unsupported(&self) -> Option<String> {
        if let Err(e) = head_size(self.c, self.nh) {
            return Some(e.to_string());
        }
        if !self.c.is_multiple_of(4) || 4 * self.c > MAX_K {
            return Some(format!(
                "C = {} (a multiple of 4 up to {})",
                self.c,
                MAX_K / 4
            ));
        }
        if self.groups == 0 || self.groups > 0xffff || self.batch == 0 {
            return Some(format!("{self:?}: groups 1..65535 and a batch ≥ 1"));
        }
        None
    }

    fn kv_len(&self) -> u64 {
        2 * (self.n_layer * self.batch * self.t_max * self.c) as u64
    }
}

/// The buffers a step's dispatches share: the activations (`8C` a sample),
/// every layer's K and V cache, and the grid barrier's words.
pub struct StepScratch {
    pub desc: StepDesc,
    pub act: wgpu::Buffer,
    pub kv: wgpu::Buffer,
    pub sync: wgpu::Buffer,
}

impl StepScratch {
    pub fn new(ctx: &GpuContext, d: &StepDesc) -> Result<Self, GpuError> {
        Ok(Self {
            desc: *d,
            act: ctx.zeros("decode_step_act", (8 * d.c * d.batch) as usize)?,
            kv: ctx.zeros("decode_step_kv", d.kv_len() as usize)?,
            sync: ctx.zeros("decode_step_sync", GridSync::BYTES / 4)?,
        })
    }
}

/// The weights a step reads: the flat f32 parameters and their layout,
/// and the packed f16 copy when the linears read it.
pub struct StepWeights<'a> {
    pub params: &'a wgpu::Buffer,
    pub layout: &'a ParamLayout,
    pub f16: Option<&'a wgpu::Buffer>,
}

/// Binds one token step reading the position in `position`, the residual
/// rows `x` (`C` a sample: the embedding or the previous pick wrote them)
/// and writing `logits` (`V` a sample).
pub fn bind_decode_step(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    d: StepDesc,
    w: &StepWeights<'_>,
    (position, x, logits): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    scratch: &StepScratch,
) -> Result<BoundKernel, GpuError> {
    let hs = head_size(d.c, d.nh)?;
    if let Some(why) = d.unsupported() {
        return Err(shape_error("decode_step", why));
    }
    let offsets: Vec<u32> = PARAM_KINDS
        .iter()
        .map(|&k| w.layout.get(k).offset as u32)
        .collect();
    let rows = |n: u32| 4 * (n * d.batch) as u64;
    if offsets.iter().any(|o| o % 4 != 0)
        || position.size() < POSITION_BYTES
        || x.size() < rows(d.c)
        || logits.size() < rows(d.v)
        || scratch.kv.size() < 4 * d.kv_len()
        || scratch.act.size() < rows(8 * d.c)
    {
        return Err(shape_error(
            "decode_step",
            format!("{d:?}: a buffer is too small or a tensor offset is not a multiple of 4"),
        ));
    }
    let head = [d.c, d.nh, hs, d.t_max, d.batch, d.v, d.n_layer, 0];
    let words: Vec<u32> = head
        .into_iter()
        .chain([scale(hs).to_bits(), 0, 0, 0])
        .chain(offsets)
        .collect();
    let u = uniform(ctx, "decode_step_params", &words);
    let src = if w.f16.is_some() {
        &DECODE_STEP_F16W
    } else {
        &DECODE_STEP
    };
    let entries = [
        (1, position),
        (2, w.params),
        (3, w.params),
        (4, w.f16.unwrap_or(w.params)),
        (5, x),
        (6, &scratch.act),
        (7, logits),
        (8, &scratch.kv),
        (9, &scratch.sync),
    ];
    Ok(super::common::bind_kernel(
        ctx,
        reg,
        src,
        &u,
        &entries,
        [d.groups, 1, 1],
    ))
}
