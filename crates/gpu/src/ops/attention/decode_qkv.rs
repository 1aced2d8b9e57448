//! A layer's first LayerNorm, QKV linear and decode attention in one
//! dispatch of one workgroup per head (`shaders/attention_decode_qkv.wgsl`):
//! what the decoder's `Fused` layout runs, with f32 weights or f16-stored
//! ones, giving the bits of the LayerNorm-prologue GEMV followed by
//! [`bind_attention_decode`].

use super::decode::{check_subgroups, DecodeDesc, KvCache};
use super::shape::need;
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_no_alias, shape_error};
use crate::ops::matmul::f16w::PackedW;
use crate::ops::matmul::{f16w_source, gemv_source, variants, Fault, MatmulDesc, VARIANTS};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The f32 kernel: gemv.wgsl's source with the fused kernel's files and
/// `$reduce` (the attention's reductions) appended.
macro_rules! f32_source {
    ($reduce:literal) => {
        gemv_source!(
            "../../../../../shaders/lanes_wg.wgsl",
            "../../../../../shaders/decode_columns.wgsl",
            "../../../../../shaders/decode_columns_f32.wgsl",
            "../../../../../shaders/attention_decode_qkv.wgsl",
            "../../../../../shaders/attention_decode_common.wgsl",
            $reduce
        )
    };
}

/// The f16-storage kernel: the f16-storage kernels' source with the fused
/// kernel's files and `$reduce` appended.
macro_rules! f16w_qkv_source {
    ($reduce:literal) => {
        f16w_source!(
            "../../../../../shaders/lanes_wg.wgsl",
            "../../../../../shaders/decode_columns.wgsl",
            "../../../../../shaders/decode_columns_f16w.wgsl",
            "../../../../../shaders/attention_decode_qkv.wgsl",
            "../../../../../shaders/attention_decode_common.wgsl",
            $reduce
        )
    };
}

/// f32 weights, the attention's reductions through workgroup memory.
pub const ATTENTION_DECODE_QKV: KernelSource = KernelSource {
    key: "attention_decode_qkv",
    wgsl: f32_source!("../../../../../shaders/reduce_wg.wgsl"),
    entry: "qkv_attention",
    constants: &[],
};

/// [`ATTENTION_DECODE_QKV`] with the attention's reductions on subgroup
/// shuffles (the same bits).
pub const ATTENTION_DECODE_QKV_SG: KernelSource = KernelSource {
    key: "attention_decode_qkv_sg",
    wgsl: f32_source!("../../../../../shaders/reduce_sg.wgsl"),
    ..ATTENTION_DECODE_QKV
};

/// f16-stored weights by `[subgroup reductions][fault variant]` (the real
/// kernel, then the f16-accumulate and dropped-K-tail test variants of the
/// f16-storage GEMV, so that the decoder's fused kernel carries the faults
/// its gate must catch).
pub const ATTENTION_DECODE_QKV_F16W: [[KernelSource; VARIANTS]; 2] = [
    variants(
        [
            "attention_decode_qkv_f16w",
            "attention_decode_qkv_f16w_fault_f16acc",
            "attention_decode_qkv_f16w_fault_droptail",
        ],
        "qkv_attention",
        f16w_qkv_source!("../../../../../shaders/reduce_wg.wgsl"),
    ),
    variants(
        [
            "attention_decode_qkv_f16w_sg",
            "attention_decode_qkv_f16w_sg_fault_f16acc",
            "attention_decode_qkv_f16w_sg_fault_droptail",
        ],
        "qkv_attention",
        f16w_qkv_source!("../../../../../shaders/reduce_sg.wgsl"),
    ),
];

/// The widest row the decoder's fused kernels stage (`XN_MAX` in
/// `decode_columns.wgsl`): past it, the decoder binds the GEMV and the
/// attention (and the head and the pick).
pub const DECODE_QKV_MAX_C: u32 = 1024;

/// The QKV linear's weight `W (3C, C)`: f32 in the flat parameters, or
/// packed halves (rows and C multiples of four halves: the aligned GEMV's
/// order).
#[derive(Clone, Copy, Debug)]
pub enum QkvWeight<'a> {
    F32(View<'a>),
    F16(PackedW<'a>),
}

/// What the fused kernel reads besides the rows: the LayerNorm's weight
/// and bias (C each) and the QKV linear's bias (3C), in one buffer (the
/// flat parameters; an f32 `W` too), and `W`.
#[derive(Clone, Copy, Debug)]
pub struct QkvWeights<'a> {
    pub ln: (View<'a>, View<'a>),
    pub w: QkvWeight<'a>,
    pub bias: View<'a>,
}

impl QkvWeights<'_> {
    /// Whether the fused kernel takes these weights for rows of `c`: f32,
    /// or f16 whose rows start at multiples of four halves.
    pub fn fit(&self, c: u32) -> bool {
        match self.w {
            QkvWeight::F32(_) => c <= DECODE_QKV_MAX_C,
            QkvWeight::F16(w) => c <= DECODE_QKV_MAX_C && (w.offset | c).is_multiple_of(4),
        }
    }

    /// Checks the sizes, the one buffer and the alignment; returns the flat
    /// parameters.
    fn check(&self, c: u32) -> Result<&wgpu::Buffer, GpuError> {
        let (lw, lb) = self.ln;
        let n = c as u64;
        lw.need("attention", "LayerNorm weight", n)?;
        lb.need("attention", "LayerNorm bias", n)?;
        self.bias.need("attention", "QKV bias", 3 * n)?;
        let mut flat = vec![lb.buffer, self.bias.buffer];
        match self.w {
            QkvWeight::F32(w) => {
                w.need("attention", "QKV weight", 3 * n * n)?;
                flat.push(w.buffer);
            }
            QkvWeight::F16(w) => {
                let halves = w.offset as u64 + 3 * n * n;
                if w.buffer.size() < halves.div_ceil(2) * 4 {
                    return Err(shape_error(
                        "attention",
                        format!("packed QKV weight holds {} bytes", w.buffer.size()),
                    ));
                }
            }
        }
        if flat.iter().any(|b| *b != lw.buffer) {
            return Err(shape_error(
                "attention",
                "the LayerNorm weights, the QKV bias and f32 weights must share one buffer".into(),
            ));
        }
        if !self.fit(c) {
            return Err(shape_error(
                "attention",
                format!(
                    "C = {c}: the fused QKV attention stages rows of at most {DECODE_QKV_MAX_C}, and f16 rows must start at multiples of four halves"
                ),
            ));
        }
        Ok(lw.buffer)
    }

    fn source(&self, sg: bool) -> &'static KernelSource {
        match self.w {
            QkvWeight::F32(_) if sg => &ATTENTION_DECODE_QKV_SG,
            QkvWeight::F32(_) => &ATTENTION_DECODE_QKV,
            QkvWeight::F16(w) => {
                &ATTENTION_DECODE_QKV_F16W[sg as usize][Fault::kernel_index(w.fault)]
            }
        }
    }
}

/// Binds the fused step of one layer for `desc.batch` samples: each
/// sample's row of `x (C)` normalised with `weights.ln`, its head's columns
/// of `· Wᵀ + bias` — q scaled, k and v appended to its `cache` at the
/// position — and the attention over positions `0..=P`, written to `out
/// (C)`. `subgroups`: the attention's reductions on shuffles of that size
/// (the same bits). Refuses weights that do not [`QkvWeights::fit`].
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
    let flat = weights.check(desc.c)?;
    need(x, desc.rows(1), "x rows", &desc)?;
    need(out, desc.rows(1), "out rows", &desc)?;
    let written = [("K cache", &cache.k), ("V cache", &cache.v), ("out", out)];
    let packed = match weights.w {
        QkvWeight::F16(w) => w.buffer,
        QkvWeight::F32(_) => flat,
    };
    let read = [("x", x), ("weights", flat), ("packed weights", packed)];
    check_no_alias("attention", &written, &read)?;
    if let Some(n) = subgroups {
        check_subgroups(ctx, n)?;
    }
    let (w_buffer, w_off, w_binding) = match weights.w {
        QkvWeight::F32(w) => (w.buffer, w.offset, 2),
        QkvWeight::F16(w) => (w.buffer, w.offset, 6),
    };
    let (lw, lb) = weights.ln;
    let gemv = MatmulDesc::linear(desc.batch, desc.c, 3 * desc.c);
    let mut params = gemv.params(
        [0, w_off, weights.bias.offset, 0],
        [lw.offset, lb.offset],
        0,
    );
    params.aux = [1, 0];
    let uniform = params.upload(ctx, "attention_decode_qkv_gemv");
    let sg = subgroups.unwrap_or(0);
    let attention = ctx.uniform("attention_decode_qkv", &desc.uniform_bytes(hs, sg));
    let buffers = [
        (1, x),
        (w_binding, w_buffer),
        (3, flat),
        (5, flat),
        (20, &attention),
        (21, position),
        (22, &cache.k),
        (23, &cache.v),
        (24, out),
    ];
    // The bind group keeps the attention's uniform alive (wgpu counts its
    // references); the kernel keeps the GEMV's.
    Ok(bind_kernel(
        ctx,
        registry,
        weights.source(subgroups.is_some()),
        &uniform,
        &buffers,
        [desc.nh, desc.batch, 1],
    ))
}
