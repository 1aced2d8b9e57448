//! A layer's first LayerNorm, QKV linear and decode attention in one
//! dispatch of one workgroup per head (`shaders/attention_decode_qkv.wgsl`):
//! what the decoder's `Fused` layout runs with f32 weights, with the bits of
//! the LayerNorm-prologue GEMV followed by [`bind_attention_decode`].

use super::decode::check_subgroups;
use super::shape::{need, scale};
use super::{DecodeDesc, KvCache};
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_no_alias, shape_error};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The fused kernel's source: its own, then what it shares with the GEMV
/// (`gemv_row.wgsl`, `ln_sum.wgsl`, `lanes_wg.wgsl`, `erf.wgsl`) and with
/// the decode attention (`attention_decode_common.wgsl`), and `$reduce`.
macro_rules! decode_qkv {
    ($reduce:literal) => {
        concat!(
            include_str!("../../../../../shaders/attention_decode_qkv.wgsl"),
            include_str!("../../../../../shaders/gemv_row.wgsl"),
            include_str!("../../../../../shaders/ln_sum.wgsl"),
            include_str!("../../../../../shaders/lanes_wg.wgsl"),
            include_str!("../../../../../shaders/erf.wgsl"),
            include_str!("../../../../../shaders/attention_decode_common.wgsl"),
            include_str!($reduce)
        )
    };
}

/// The attention's reductions through workgroup memory.
pub const ATTENTION_DECODE_QKV: KernelSource = KernelSource {
    key: "attention_decode_qkv",
    wgsl: decode_qkv!("../../../../../shaders/reduce_wg.wgsl"),
    entry: "main",
    constants: &[],
};

/// [`ATTENTION_DECODE_QKV`] with the attention's reductions on subgroup
/// shuffles (the same bits).
pub const ATTENTION_DECODE_QKV_SG: KernelSource = KernelSource {
    key: "attention_decode_qkv_sg",
    wgsl: decode_qkv!("../../../../../shaders/reduce_sg.wgsl"),
    ..ATTENTION_DECODE_QKV
};

/// The widest row the fused kernel stages (`XN_MAX` in its source): past
/// it, the decoder binds the GEMV and the attention.
pub const DECODE_QKV_MAX_C: u32 = 1024;

/// The weights the fused kernel reads: the LayerNorm's weight and bias (C
/// each) and the QKV linear's `W (3C, C)` and bias (3C), all in one buffer
/// (the flat parameters).
#[derive(Clone, Copy, Debug)]
pub struct QkvWeights<'a> {
    pub ln: (View<'a>, View<'a>),
    pub w: View<'a>,
    pub bias: View<'a>,
}

impl QkvWeights<'_> {
    fn check(&self, c: u32) -> Result<&wgpu::Buffer, GpuError> {
        let (lw, lb) = self.ln;
        let c = c as u64;
        lw.need("attention", "LayerNorm weight", c)?;
        lb.need("attention", "LayerNorm bias", c)?;
        self.w.need("attention", "QKV weight", 3 * c * c)?;
        self.bias.need("attention", "QKV bias", 3 * c)?;
        let one = [lb.buffer, self.w.buffer, self.bias.buffer];
        if one.iter().any(|b| *b != lw.buffer) {
            return Err(shape_error(
                "attention",
                "the LayerNorm and QKV weights must share one buffer".into(),
            ));
        }
        Ok(lw.buffer)
    }
}

/// Binds the fused step of one layer for `desc.batch` samples: each
/// sample's row of `x (C)` normalised with `weights.ln`, its head's columns
/// of `· Wᵀ + bias` — q scaled, k and v appended to its `cache` at the
/// position — and the attention over positions `0..=P`, written to `out
/// (C)`. `subgroups`: the attention's reductions on shuffles of that size
/// (the same bits). Refuses C past [`DECODE_QKV_MAX_C`].
#[allow(clippy::too_many_arguments)]
pub fn bind_attention_decode_qkv(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    subgroups: Option<u32>,
    desc: DecodeDesc,
    position: &wgpu::Buffer,
    x: &wgpu::Buffer,
    weights: QkvWeights<'_>,
    (cache, out): (&KvCache, &wgpu::Buffer),
) -> Result<BoundKernel, GpuError> {
    let hs = desc.check(ctx, position, cache)?;
    if desc.c > DECODE_QKV_MAX_C {
        return Err(shape_error(
            "attention",
            format!(
                "C = {}: the fused QKV attention stages rows of at most {DECODE_QKV_MAX_C}",
                desc.c
            ),
        ));
    }
    need(x, desc.rows(1), "x rows", &desc)?;
    need(out, desc.rows(1), "out rows", &desc)?;
    let params = weights.check(desc.c)?;
    let written = [("K cache", &cache.k), ("V cache", &cache.v), ("out", out)];
    check_no_alias("attention", &written, &[("x", x), ("weights", params)])?;
    let src = match subgroups {
        Some(n) => {
            check_subgroups(ctx, n)?;
            &ATTENTION_DECODE_QKV_SG
        }
        None => &ATTENTION_DECODE_QKV,
    };
    let words: [u32; 16] = [
        desc.batch,
        desc.c,
        3 * desc.c,
        // gemv_row.wgsl's HAS_BIAS.
        4,
        0,
        weights.w.offset,
        weights.bias.offset,
        0,
        weights.ln.0.offset,
        weights.ln.1.offset,
        desc.nh,
        hs,
        desc.t_max,
        scale(hs).to_bits(),
        subgroups.unwrap_or(0),
        0,
    ];
    let uniform = ctx.uniform("attention_decode_qkv_params", bytemuck::cast_slice(&words));
    let buffers = [
        (1, position),
        (2, x),
        (3, params),
        (4, params),
        (5, params),
        (6, &cache.k),
        (7, &cache.v),
        (8, out),
    ];
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &uniform,
        &buffers,
        [desc.nh, desc.batch, 1],
    ))
}
