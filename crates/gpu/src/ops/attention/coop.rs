//! Causal attention on cooperative matrices (tensor cores): the forward's
//! QKᵀ and PV and the backward's five products on f16 tiles, summed in f32
//! — the training attention of the tensor-core path, for heads of 16, 32,
//! 48 or 64 dims. The same buffers, uniform and outputs as the f32 kernels
//! ([`super::bind_attention_forward`], [`super::bind_attention_backward`]);
//! the numbers of f16 operands: the tests hold them to an f64 reference
//! run on the f16-rounded inputs.
//!
//! A workgroup is four subgroups of the device's width (a pipeline per
//! width: 8 to 64), 64 rows of one head; each kernel is compiled per head
//! size too (`HS`, a shape constant: run 139 measured the forward 12 %
//! and dQ 10 % faster).

use super::desc::{AttentionBackwardBuffers, AttentionDesc};
use crate::kernel::{BoundKernel, Layout};
use crate::ops::common::{bind_kernel_shaped, shape_error};
use crate::ops::dropout::DropoutDesc;
use crate::ops::matmul::coop_stage::StagedRows;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use std::sync::atomic::{AtomicBool, Ordering};
use tinygpt_core::model::Site;

/// Whether the tensor-core path's attention runs on tensor cores
/// ([`set_engine_attention`]).
static ENGINE_ATTENTION: AtomicBool = AtomicBool::new(true);

/// Makes the tensor-core path activated from now on run its attention
/// (forward and backward) on these kernels (where the device and the
/// heads allow), or not. On by default (run 100: the nanoGPT step 1.1 ms
/// faster, the nanoGPT-protocol run at 1.4677; run 141, the forward too:
/// 1.4690); `--coop-attention off` turns it off.
pub fn set_engine_attention(on: bool) {
    ENGINE_ATTENTION.store(on, Ordering::Relaxed);
}

/// The tensor-core path's attention runs on tensor cores.
pub fn engine_attention() -> bool {
    ENGINE_ATTENTION.load(Ordering::Relaxed)
}

/// A kernel's source with what the three share appended (`$more` before
/// it: the backward kernels' tiles), the f16 copy's writes last.
macro_rules! coop_kernel {
    ($path:literal $(, $more:literal)?) => {
        concat!(
            include_str!($path),
            $(include_str!($more),)?
            include_str!("../../../../../shaders/attention_coop_common.wgsl"),
            include_str!("../../../../../shaders/dropout_mask.wgsl"),
            include_str!("../../../../../shaders/attention_dropout.wgsl"),
            include_str!("../../../../../shaders/copy16_write.wgsl"),
        )
    };
}
const FWD_WGSL: &str = coop_kernel!("../../../../../shaders/attention_coop_fwd.wgsl");
const BWD_DQ_WGSL: &str = coop_kernel!(
    "../../../../../shaders/attention_coop_bwd_dq.wgsl",
    "../../../../../shaders/attention_coop_bwd_common.wgsl"
);
const BWD_DKV_WGSL: &str = coop_kernel!(
    "../../../../../shaders/attention_coop_bwd_dkv.wgsl",
    "../../../../../shaders/attention_coop_bwd_common.wgsl"
);

/// The subgroup widths the kernels have pipelines for.
pub const COOP_ATTENTION_WIDTHS: [u32; 4] = [8, 16, 32, 64];

/// Rows a workgroup: four subgroups of 16.
const ROWS: u32 = 64;
/// The largest head the tiles hold.
pub const COOP_ATTENTION_MAX_HEAD: u32 = 64;

/// A kernel's pipeline for each width of [`COOP_ATTENTION_WIDTHS`]
/// (`WG` = four subgroups), with any further constants.
macro_rules! per_width {
    ($key:literal, $wgsl:expr $(, $c:literal = $v:literal)*) => {
        [
            KernelSource {
                key: concat!($key, "_sg8"),
                wgsl: $wgsl,
                entry: "main",
                constants: &[("WG", 32.0) $(, ($c, $v))*],
            },
            KernelSource {
                key: concat!($key, "_sg16"),
                wgsl: $wgsl,
                entry: "main",
                constants: &[("WG", 64.0) $(, ($c, $v))*],
            },
            KernelSource {
                key: concat!($key, "_sg32"),
                wgsl: $wgsl,
                entry: "main",
                constants: &[("WG", 128.0) $(, ($c, $v))*],
            },
            KernelSource {
                key: concat!($key, "_sg64"),
                wgsl: $wgsl,
                entry: "main",
                constants: &[("WG", 256.0) $(, ($c, $v))*],
            },
        ]
    };
}

pub const ATTENTION_COOP_FWD: [KernelSource; 4] = per_width!("attention_coop_fwd", FWD_WGSL);
pub const ATTENTION_COOP_BWD_DQ: [KernelSource; 4] =
    per_width!("attention_coop_bwd_dq", BWD_DQ_WGSL);
pub const ATTENTION_COOP_BWD_DKV: [KernelSource; 4] =
    per_width!("attention_coop_bwd_dkv", BWD_DKV_WGSL);
/// dK/dV with dS in a tile of its own (`DS_TILE`): one loop for both
/// products' terms, where the device offers [`DKV_DS_TILE_BYTES`].
pub const ATTENTION_COOP_BWD_DKV_DS: [KernelSource; 4] =
    per_width!("attention_coop_bwd_dkv_ds", BWD_DKV_WGSL, "DS_TILE" = 1.0);

/// The workgroup memory of [`ATTENTION_COOP_BWD_DKV_DS`]'s pipelines: the
/// backward's (`attention_coop_bwd_common.wgsl`) and dS's tiles, 9,728
/// halves and 4,224 floats.
pub const DKV_DS_TILE_BYTES: u32 = 9728 * 2 + 4224 * 4;

/// Why the tensor-core attention cannot run for `desc` on this device,
/// if it cannot.
pub fn coop_attention_unavailable(ctx: &GpuContext, desc: &AttentionDesc) -> Option<String> {
    if cfg!(target_arch = "wasm32") {
        return Some("cooperative matrices are native only: wgpu 30 has no WebGPU form".into());
    }
    if !ctx.coop_attention {
        return Some(
            "the adapter offers no 16×16×16 f16 → f32 cooperative matrix on subgroups of one \
             width from 8 to 64"
                .into(),
        );
    }
    let hs = desc.c.checked_div(desc.nh).unwrap_or(0);
    if desc.nh == 0 || !desc.c.is_multiple_of(desc.nh) || hs == 0 || !hs.is_multiple_of(16) {
        return Some(format!("head size {hs} is not a multiple of 16"));
    }
    if hs > COOP_ATTENTION_MAX_HEAD {
        return Some(format!(
            "head size {hs} is over the tiles' {COOP_ATTENTION_MAX_HEAD}"
        ));
    }
    None
}

/// The pipeline of `family` for the device's subgroup width.
fn pick(ctx: &GpuContext, family: &'static [KernelSource; 4]) -> &'static KernelSource {
    let w = ctx.info.subgroup_min_size;
    let i = COOP_ATTENTION_WIDTHS.iter().position(|&x| x == w);
    &family[i.unwrap_or(2)]
}

/// Checks the device and the shape; returns HS.
fn validate(ctx: &GpuContext, desc: &AttentionDesc) -> Result<u32, GpuError> {
    if let Some(why) = coop_attention_unavailable(ctx, desc) {
        return Err(shape_error("tensor-core attention", why));
    }
    let grid = grid(desc);
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    if desc.b == 0 || desc.t == 0 || grid.iter().any(|&g| g > max) {
        return Err(shape_error(
            "tensor-core attention",
            format!("{desc:?} needs {grid:?} workgroups; each must be 1..={max}"),
        ));
    }
    Ok(desc.c / desc.nh)
}

/// The backward's gradient scale: B·T rounded up to a power of two (the
/// tensor-core matmuls' `Builder::grad_scale`). The loss gradients of a
/// mean over B·T rows are of order 1/(B·T) and smaller: scaled by it as
/// they are staged, they keep f16's 11 bits (`attention_coop_common.wgsl`).
pub fn coop_grad_scale(desc: &AttentionDesc) -> f32 {
    (desc.b * desc.t).next_power_of_two() as f32
}

/// `(row blocks of 64, NH, B)`.
fn grid(desc: &AttentionDesc) -> [u32; 3] {
    [desc.t.div_ceil(ROWS), desc.nh, desc.b]
}

/// The buffer of the kernels' f16 copy (binding 15): `copy`'s, checked
/// against the output `out` (`rows × cols`) and the scale the kernel
/// writes it at; without one, two words the kernel never writes (`COPY`
/// off).
fn copy_buffer(
    ctx: &GpuContext,
    copy: Option<&StagedRows>,
    out: &wgpu::Buffer,
    shape: (u32, u32),
    scale: f32,
) -> Result<wgpu::Buffer, GpuError> {
    let Some(c) = copy else {
        return ctx.zeros("attention_no_copy", 2);
    };
    let (buffer, _) = c.producer_binding("tensor-core attention", out.into(), shape)?;
    if c.scale() != scale {
        return Err(shape_error(
            "tensor-core attention",
            format!(
                "an f16 copy scaled by {} where the kernel writes it scaled by {scale}",
                c.scale()
            ),
        ));
    }
    Ok(buffer.clone())
}

/// [`super::bind_attention_forward`] on tensor cores; with `copy`, `out`'s
/// f16 copy too (the projection's op(A): `StagedRows::for_producer`).
pub fn bind_attention_forward_coop(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: AttentionDesc,
    (qkv, out, lse): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    (dropout, copy): (Option<(DropoutDesc<'_>, Site)>, Option<&StagedRows>),
) -> Result<BoundKernel, GpuError> {
    let hs = validate(ctx, &desc)?;
    desc.check_forward((qkv, out, lse))?;
    let copy16 = copy_buffer(ctx, copy, out, (desc.b * desc.t, desc.c), 1.0)?;
    let bytes = AttentionDesc {
        layout: Layout::Gpu,
        ..desc
    }
    .uniform_bytes(hs, dropout);
    let uniform = ctx.uniform("attention_coop_fwd_params", &bytes);
    let state = dropout.map_or(qkv, |(d, _)| d.state);
    let buffers = [(1, qkv), (2, out), (3, lse), (4, state), (15, &copy16)];
    let src = pick(ctx, &ATTENTION_COOP_FWD);
    Ok(bind_kernel_shaped(
        ctx,
        registry,
        (src, &[("HS", hs), ("COPY", copy.is_some() as u32)]),
        &uniform,
        &buffers,
        grid(&desc),
    ))
}

/// [`super::bind_attention_backward`] on tensor cores: the dQ kernel
/// (which also writes the row terms D) then the dK/dV kernel; with `copy`,
/// `dqkv`'s f16 copy too, scaled by [`coop_grad_scale`] (the qkv dX
/// product's op(A)).
pub fn bind_attention_backward_coop(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: AttentionDesc,
    bufs: AttentionBackwardBuffers<'_>,
    (dropout, copy): (Option<(DropoutDesc<'_>, Site)>, Option<&StagedRows>),
) -> Result<Vec<BoundKernel>, GpuError> {
    let scaled = (dropout, coop_grad_scale(&desc), copy);
    let ds_tile = dkv_ds_tile_unavailable(ctx).is_none();
    bind_attention_backward_coop_variant(ctx, registry, desc, bufs, scaled, ds_tile)
}

/// [`bind_attention_backward_coop`] with the gradients staged scaled by
/// `grad_scale` (a power of two) instead of [`coop_grad_scale`]: the gate's
/// fault variant stages them unscaled (1).
pub fn bind_attention_backward_coop_scaled(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: AttentionDesc,
    bufs: AttentionBackwardBuffers<'_>,
    dropout: Option<(DropoutDesc<'_>, Site)>,
    grad_scale: f32,
) -> Result<Vec<BoundKernel>, GpuError> {
    let ds_tile = dkv_ds_tile_unavailable(ctx).is_none();
    let scaled = (dropout, grad_scale, None);
    bind_attention_backward_coop_variant(ctx, registry, desc, bufs, scaled, ds_tile)
}

/// Why this device cannot run [`ATTENTION_COOP_BWD_DKV_DS`], if it cannot.
pub fn dkv_ds_tile_unavailable(ctx: &GpuContext) -> Option<String> {
    let offered = ctx.limits.max_compute_workgroup_storage_size;
    (offered < DKV_DS_TILE_BYTES).then(|| {
        format!(
            "dK/dV with a dS tile needs {DKV_DS_TILE_BYTES} bytes of workgroup memory; this \
             device offers {offered}"
        )
    })
}

/// [`bind_attention_backward_coop_scaled`] on the dK/dV kernel chosen:
/// with its dS tile (`ds_tile`, an error where the device cannot run it)
/// or without; with `copy`, `dqkv`'s f16 copy too (scaled by
/// `grad_scale`, as the copy must be).
pub fn bind_attention_backward_coop_variant(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: AttentionDesc,
    bufs: AttentionBackwardBuffers<'_>,
    (dropout, grad_scale, copy): (Option<(DropoutDesc<'_>, Site)>, f32, Option<&StagedRows>),
    ds_tile: bool,
) -> Result<Vec<BoundKernel>, GpuError> {
    let hs = validate(ctx, &desc)?;
    if let Some(why) = dkv_ds_tile_unavailable(ctx).filter(|_| ds_tile) {
        return Err(shape_error("tensor-core attention", why));
    }
    desc.check_backward(&bufs)?;
    let shape = (desc.b * desc.t, 3 * desc.c);
    let copy16 = copy_buffer(ctx, copy, bufs.dqkv, shape, grad_scale)?;
    let mut bytes = AttentionDesc {
        layout: Layout::Gpu,
        ..desc
    }
    .uniform_bytes(hs, dropout);
    bytes[24..28].copy_from_slice(&grad_scale.to_le_bytes());
    let state = dropout.map_or(bufs.qkv, |(d, _)| d.state);
    let dkv = match ds_tile {
        true => &ATTENTION_COOP_BWD_DKV_DS,
        false => &ATTENTION_COOP_BWD_DKV,
    };
    let sources = [pick(ctx, &ATTENTION_COOP_BWD_DQ), pick(ctx, dkv)];
    desc.bind_backward(
        (ctx, registry),
        (&bufs, state, Some(&copy16)),
        (
            sources,
            &bytes,
            &[("HS", hs), ("COPY", copy.is_some() as u32)],
        ),
        grid(&desc),
    )
}
