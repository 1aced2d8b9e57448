//! The decoder's final LayerNorm, tied head and pick in one dispatch of one
//! workgroup per row (`shaders/decode_head.wgsl`): each workgroup computes
//! its row's logits with the bits of the LayerNorm-prologue head GEMV,
//! writes them, and picks from them as `bind_greedy_pick` or
//! `bind_sample_pick` would.

use super::records::{check_rule, NextInput, Records};
use crate::kernel::BoundKernel;
use crate::ops::attention::DECODE_QKV_MAX_C;
use crate::ops::common::{bind_kernel, check_no_alias, shape_error};
use crate::ops::matmul::{gemv_source, MatmulDesc};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The fused kernel's source with the pick `$pick`.
macro_rules! head_source {
    ($pick:literal) => {
        gemv_source!(
            "../../../../../shaders/lanes_wg.wgsl",
            "../../../../../shaders/decode_columns.wgsl",
            "../../../../../shaders/decode_columns_f32.wgsl",
            "../../../../../shaders/decode_head.wgsl",
            "../../../../../shaders/pick_common.wgsl",
            $pick,
            "../../../../../shaders/pick_next_input.wgsl"
        )
    };
}

pub const HEAD_GREEDY_PICK: KernelSource = KernelSource {
    key: "head_greedy_pick",
    wgsl: head_source!("../../../../../shaders/argmax.wgsl"),
    entry: "head_pick",
    constants: &[],
};

pub const HEAD_SAMPLE_PICK: KernelSource = KernelSource {
    key: "head_sample_pick",
    wgsl: head_source!("../../../../../shaders/sample_pick.wgsl"),
    ..HEAD_GREEDY_PICK
};

/// The widest vocabulary the decoder computes in the pick's workgroup:
/// past it, a row's logits take more passes of 32 columns (four at 128)
/// than the head GEMV's own dispatch is likely to cost — a choice made
/// without a measurement past V = 65 (BENCHMARKS.md).
pub const HEAD_PICK_MAX_V: u32 = 128;

/// Storage buffers the fused head binds with the seeded pick (one fewer
/// with the greedy one): past WebGPU's default of 8 a stage, so the
/// decoder fuses only where the device offers them
/// (`tests/shaders.rs` counts them in the kernels).
pub const HEAD_PICK_STORAGE_BUFFERS: u32 = 10;

/// Whether `ctx`'s device binds the fused head's storage buffers.
pub fn head_pick_offered(ctx: &GpuContext) -> bool {
    ctx.limits.max_storage_buffers_per_shader_stage >= HEAD_PICK_STORAGE_BUFFERS
}

/// What the head reads: the residual rows (C each; not the rows the pick
/// writes the next input to), the final LayerNorm's weight and bias (C
/// each) and `tok_emb (V, C)`, all three in one buffer; and where the
/// logits go (V a row).
#[derive(Clone, Copy, Debug)]
pub struct Head<'a> {
    pub x: &'a wgpu::Buffer,
    pub ln: (View<'a>, View<'a>),
    pub tok_emb: View<'a>,
    pub logits: &'a wgpu::Buffer,
    pub c: u32,
}

impl Head<'_> {
    /// Whether the fused kernel takes `v` logits of rows of C.
    pub fn fits(&self, v: u32) -> bool {
        v <= HEAD_PICK_MAX_V && self.c <= DECODE_QKV_MAX_C
    }
}

/// The pick after the head: greedy, or seeded with the rule's uniform and
/// the draws (`bind_sample_pick`'s).
#[derive(Clone, Copy, Debug)]
pub enum Rule<'a> {
    Greedy,
    Sample {
        params: &'a wgpu::Buffer,
        draws: &'a wgpu::Buffer,
    },
}

/// Binds the fused head and pick of `rows` rows of `v` logits: each row's
/// final LayerNorm and tied head (the logits written to `head.logits`),
/// then the pick by `rule`, writing what `bind_greedy_pick` writes.
/// Refuses a head that does not [`Head::fits`].
pub fn bind_head_pick(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (rule, v, rows): (Rule<'_>, u32, u32),
    head: Head<'_>,
    records: Records<'_>,
    next_input: NextInput<'_>,
) -> Result<BoundKernel, GpuError> {
    const OP: &str = "head_pick";
    if !head_pick_offered(ctx) {
        return Err(shape_error(
            OP,
            format!(
                "the fused head binds {HEAD_PICK_STORAGE_BUFFERS} storage buffers; this device offers {}",
                ctx.limits.max_storage_buffers_per_shader_stage
            ),
        ));
    }
    let bound = records.check(ctx, OP, (v, rows), head.logits, next_input)?;
    if !head.fits(v) {
        return Err(shape_error(
            OP,
            format!(
                "V = {v}, C = {}: the fused head takes V ≤ {HEAD_PICK_MAX_V}, C ≤ {DECODE_QKV_MAX_C}",
                head.c
            ),
        ));
    }
    let (lw, lb) = head.ln;
    let n = head.c as u64;
    lw.need(OP, "LayerNorm weight", n)?;
    lb.need(OP, "LayerNorm bias", n)?;
    head.tok_emb.need(OP, "tok_emb", v as u64 * n)?;
    if lb.buffer != lw.buffer || head.tok_emb.buffer != lw.buffer {
        return Err(shape_error(
            OP,
            "the LayerNorm weights and tok_emb must share one buffer".into(),
        ));
    }
    if head.x.size() < 4 * rows as u64 * n || head.logits.size() < 4 * (v * rows) as u64 {
        return Err(shape_error(
            OP,
            format!("x needs {rows} rows of {n}, the logits {rows} of {v}"),
        ));
    }
    let written = [("logits", head.logits), ("the next input", next_input.x)];
    check_no_alias(OP, &written, &[("x", head.x), ("weights", lw.buffer)])?;
    let desc = MatmulDesc {
        m: rows,
        k: head.c,
        n: v,
        trans_b: true,
        ..Default::default()
    };
    let mut params = desc.params([0, head.tok_emb.offset, 0, 0], [lw.offset, lb.offset], 0);
    params.aux = [1, 0];
    let uniform = params.upload(ctx, "head_pick_params");
    let mut buffers = vec![
        (1, head.x),
        (2, lw.buffer),
        (4, head.logits),
        (5, lw.buffer),
    ];
    let src = match rule {
        Rule::Greedy => &HEAD_GREEDY_PICK,
        Rule::Sample { params, draws } => {
            check_rule(OP, params, draws, records.picks)?;
            buffers.extend([(15, draws), (16, params)]);
            &HEAD_SAMPLE_PICK
        }
    };
    buffers.extend(bound.entries());
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &uniform,
        &buffers,
        [rows, 1, 1],
    ))
}
