//! A layer's decode attention with each head's share of the output
//! projection after it (`shaders/attention_decode_proj.wgsl`): what the
//! decoder's `Stack` layout runs instead of the attention and the
//! projection GEMV, keeping the residual row as a stack of slots that its
//! readers sum ([`Stack`]).

use super::decode::{check_subgroups, DecodeDesc, KvCache};
use super::shape::need;
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_no_alias, shape_error};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

macro_rules! proj_source {
    ($reduce:literal) => {
        concat!(
            include_str!("../../../../../shaders/attention_decode_proj.wgsl"),
            include_str!("../../../../../shaders/attention_decode_common.wgsl"),
            include_str!($reduce)
        )
    };
}

const PROJ_WG: &str = proj_source!("../../../../../shaders/reduce_wg.wgsl");
const PROJ_SG: &str = proj_source!("../../../../../shaders/reduce_sg.wgsl");

/// By `[f16 weights][subgroup reductions]`: f32 or packed-half projection
/// weights, the attention's reductions through workgroup memory or on
/// subgroup shuffles (the same bits).
pub const ATTENTION_DECODE_PROJ: [[KernelSource; 2]; 2] = [
    [
        KernelSource {
            key: "attention_decode_proj",
            wgsl: PROJ_WG,
            entry: "main",
            constants: &[],
        },
        KernelSource {
            key: "attention_decode_proj_sg",
            wgsl: PROJ_SG,
            entry: "main",
            constants: &[],
        },
    ],
    [
        KernelSource {
            key: "attention_decode_proj_f16w",
            wgsl: PROJ_WG,
            entry: "main",
            constants: &[("HALF_W", 1.0)],
        },
        KernelSource {
            key: "attention_decode_proj_f16w_sg",
            wgsl: PROJ_SG,
            entry: "main",
            constants: &[("HALF_W", 1.0)],
        },
    ],
];

/// The residual row of `batch` samples kept as shares: `slots` blocks of
/// `batch` rows of `C`, slot `i` of sample `b` at `(i·batch + b)·C`, the row
/// being their sum in slot order (what `shaders/gemv_row.wgsl`'s `row_in`
/// and the attention's slot 0 compute). A decoder layer's stack has
/// `NH + 2` slots: the row before the attention, each head's share of the
/// projection (the bias in head 0's), the fc projection's output.
#[derive(Clone, Copy, Debug)]
pub struct Stack<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub slots: u32,
}

impl Stack<'_> {
    /// Slots of a decoder layer's stack of `nh` heads.
    pub fn layer_slots(nh: u32) -> u32 {
        nh + 2
    }

    fn check(&self, desc: &DecodeDesc, what: &str) -> Result<(), GpuError> {
        if self.slots == 0 {
            return Err(shape_error("attention", format!("{what}: no slots")));
        }
        need(self.buffer, self.slots as u64 * desc.rows(1), what, desc)
    }
}

/// The output projection `W (C, C)` and its bias (`C`): f32 in the flat
/// parameters, or `W` as packed halves (the f16 weight cache, a row's
/// halves from element `w.offset`) with the bias in the flat parameters.
#[derive(Clone, Copy, Debug)]
pub struct ProjWeights<'a> {
    pub w: View<'a>,
    pub half: bool,
    pub bias: View<'a>,
}

/// Binds one layer's attention for `desc.batch` samples (the query in
/// `qkv`, its keys and values appended to `cache` at the position), each
/// head's share of `· Wᵀ` into slot `h + 1` of `out` (head 0's + bias), and
/// slot 0 of `out`: the sum of `src`'s slots (the residual row before the
/// attention). `out` has at least `NH + 1` slots. `subgroups`: the
/// attention's reductions on shuffles of that size (the same bits).
#[allow(clippy::too_many_arguments)]
pub fn bind_attention_decode_proj(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    subgroups: Option<u32>,
    desc: DecodeDesc,
    position: &wgpu::Buffer,
    qkv: &wgpu::Buffer,
    (cache, weights): (&KvCache, ProjWeights<'_>),
    (src, out): (Stack<'_>, Stack<'_>),
) -> Result<BoundKernel, GpuError> {
    let hs = desc.check(ctx, position, cache)?;
    need(qkv, desc.rows(3), "qkv rows", &desc)?;
    src.check(&desc, "the source rows")?;
    out.check(&desc, "the stack")?;
    if out.slots < desc.nh + 1 {
        return Err(shape_error(
            "attention",
            format!("a stack of {} slots for {} heads", out.slots, desc.nh),
        ));
    }
    let c = desc.c as u64;
    weights.bias.need("attention", "projection bias", c)?;
    let halves = weights.w.offset as u64 + c * c;
    let w_bytes = if weights.half {
        halves.div_ceil(2) * 4
    } else {
        halves * 4
    };
    if weights.w.buffer.size() < w_bytes {
        return Err(shape_error(
            "attention",
            format!(
                "the projection weight holds {} bytes, needs {w_bytes}",
                weights.w.buffer.size()
            ),
        ));
    }
    let written = [
        ("K cache", &cache.k),
        ("V cache", &cache.v),
        ("stack", out.buffer),
    ];
    let read = [
        ("qkv", qkv),
        ("source rows", src.buffer),
        ("weights", weights.w.buffer),
        ("bias", weights.bias.buffer),
    ];
    check_no_alias("attention", &written, &read)?;
    if let Some(n) = subgroups {
        check_subgroups(ctx, n)?;
    }
    let src_kernel = &ATTENTION_DECODE_PROJ[weights.half as usize][subgroups.is_some() as usize];
    let sg = subgroups.unwrap_or(0);
    let uniform = ctx.uniform("attention_decode_proj", &desc.uniform_bytes(hs, sg));
    let words = [src.slots, weights.w.offset, weights.bias.offset, 0];
    let proj = ctx.uniform("attention_decode_proj_params", bytemuck::cast_slice(&words));
    let buffers = [
        (1, position),
        (2, qkv),
        (3, &cache.k),
        (4, &cache.v),
        (5, out.buffer),
        (6, &proj),
        (7, src.buffer),
        (8, weights.w.buffer),
        (9, weights.bias.buffer),
    ];
    Ok(bind_kernel(
        ctx,
        registry,
        src_kernel,
        &uniform,
        &buffers,
        [desc.nh, desc.batch, 1],
    ))
}
