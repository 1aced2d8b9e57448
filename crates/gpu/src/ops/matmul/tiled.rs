//! Binding one f32 matmul: the GEMV for one row times a linear weight,
//! else a tile kernel.

use super::desc::{check_operands, MatmulDesc, TileKernel};
use super::gemv::{bind_gemv, RowFusion};
use super::kernels::KT;
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, check_no_alias, shape_error};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// Binds one matmul to its operands (views into larger buffers allowed):
/// the GEMV kernel for `M = 1` with `trans_b`, else the tile kernel of
/// [`MatmulDesc::tile_kernel`]. The 64×64 and 128×128 kernels sum each
/// output over K in the same order; the small-output kernel and the GEMV
/// in others. `bias` is required iff
/// `desc.bias`. C must not share a buffer with A, B or the bias (WebGPU
/// forbids reading and writing one buffer in a dispatch).
pub fn bind_matmul<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    if desc.is_gemv() {
        return bind_gemv(ctx, registry, desc, a, b, bias, RowFusion::default(), c);
    }
    bind_matmul_tiled(ctx, registry, desc.tile_kernel(), desc, a, b, bias, c)
}

/// Binds `desc` to tile kernel `kernel` whatever its size (what
/// [`bind_matmul`] does with the kernel of [`MatmulDesc::tile_kernel`]):
/// for tests on small shapes.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_tiled<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    kernel: TileKernel,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let groups = kernel.grid(ctx, &desc);
    let c = (c.into(), None);
    bind_with(
        ctx,
        registry,
        (kernel.source(), groups),
        desc,
        a,
        b,
        bias,
        c,
    )
}

/// [`bind_matmul_tiled`] with the GELU epilogue: `C` as it binds it, and
/// `GELU(C)` into `gelu` (C's shape). Never split along K.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_tiled_gelu<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    kernel: TileKernel,
    desc: MatmulDesc,
    (a, b, bias): (View<'a>, View<'a>, Option<View<'a>>),
    c: View<'a>,
    gelu: View<'a>,
) -> Result<BoundKernel, GpuError> {
    gelu.need("matmul", "gelu", desc.m as u64 * desc.n as u64)?;
    check_no_alias(
        "matmul",
        &[("gelu", gelu.buffer)],
        &[("a", a.buffer), ("b", b.buffer), ("c", c.buffer)],
    )?;
    let groups = kernel.grid(ctx, &desc);
    let src = (kernel.source_gelu(), groups);
    bind_with(ctx, registry, src, desc, a, b, bias, (c, Some(gelu)))
}

/// [`bind_matmul_tiled`] with the GELU-backward epilogue: the product is
/// the gradient at a GELU's output, and C receives it times GELU' of the
/// GELU's input `pre` (C's shape) — the GELU backward kernel's bits, in
/// the product's dispatch. No bias and no accumulation (the GELU backward
/// would add its product to C, not the product's sum); never split along K.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_tiled_gelu_grad<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    kernel: TileKernel,
    desc: MatmulDesc,
    (a, b): (View<'a>, View<'a>),
    pre: View<'a>,
    c: View<'a>,
) -> Result<BoundKernel, GpuError> {
    if desc.bias || desc.accumulate {
        let why = "the GELU-backward epilogue takes no bias and no accumulation";
        return Err(shape_error("matmul", format!("{desc:?}: {why}")));
    }
    pre.need("matmul", "GELU input", desc.m as u64 * desc.n as u64)?;
    check_no_alias("matmul", &[("c", c.buffer)], &[("GELU input", pre.buffer)])?;
    let groups = kernel.grid(ctx, &desc);
    let src = (kernel.source_gelu_grad(), groups);
    bind_with(ctx, registry, src, desc, a, b, None, (c, Some(pre)))
}

/// Binds `src` over `workgroups`; `c`'s second view, where given, is the
/// epilogue's `aux` (the GELU written, or the GELU's input read).
#[allow(clippy::too_many_arguments)]
fn bind_with<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (src, workgroups): (&KernelSource, [u32; 3]),
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    (c, gelu): (View<'a>, Option<View<'a>>),
) -> Result<BoundKernel, GpuError> {
    let (a, b) = (a.into(), b.into());
    check_operands("matmul", &desc, a, (Some(b), b.buffer), bias, c)?;
    // An unused bias binding still needs a buffer: A is read-only, so reuse it.
    let bias = bias.unwrap_or(a);
    let offsets = [a.offset, b.offset, bias.offset, c.offset];
    let k_chunk = desc.k.next_multiple_of(KT).max(KT);
    let mut params = desc.params(offsets, [k_chunk, 1], 0);
    params.aux[0] = gelu.map_or(0, |g| g.offset);
    let uniform = params.upload(ctx, "matmul_params");
    let mut buffers = vec![
        (1, a.buffer),
        (2, b.buffer),
        (3, bias.buffer),
        (4, c.buffer),
    ];
    buffers.extend(gelu.map(|g| (8, g.buffer)));
    Ok(bind_kernel(
        ctx, registry, src, &uniform, &buffers, workgroups,
    ))
}
