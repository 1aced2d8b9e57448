//! The K-split matmul: partial products of K slices into a scratch, then
//! their ordered sum — and, for a weight gradient, its bias gradient in the
//! same two dispatches.

use super::desc::{check_operands, MatmulDesc, TileKernel};
use super::kernels::{KT, KT_SMALL, MATMUL_REDUCE, REDUCE_THREADS};
use super::tiled::bind_matmul;
use crate::ops::common::{bind_kernel, check_dim, grid, shape_error};
use crate::ops::{BoundOp, View};
use crate::registry::PipelineRegistry;
use crate::{GpuContext, GpuError};

/// `matmul_common.wgsl`'s ONES_COLUMN flag.
const ONES_COLUMN: u32 = 16;

/// Binds `desc` split along K through `scratch` when the shape gains from it
/// ([`MatmulDesc::split_k_slices`]) and `scratch` holds two or more `(M, N)`
/// slices: workgroup z of the tiled kernel writes the partial product of
/// its K range to slice z, then `reduce_slices` adds the slices in order
/// (and the bias, and C when accumulating) into C. Otherwise (or without a
/// scratch) the plain [`bind_matmul`]. Ops sharing one scratch buffer must
/// run one after the other, as the ops of one pass do.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_split_k<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
    scratch: Option<&wgpu::Buffer>,
) -> Result<BoundOp, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    match split(ctx, registry, desc, (a, b, bias, c), scratch, None)? {
        Some(op) => Ok(op),
        None => Ok(bind_matmul(ctx, registry, desc, a, b, bias, c)?.into()),
    }
}

/// A weight gradient `dW (M, N) (+)= dyᵀ · x` (`desc`: `trans_a`, no
/// `trans_b`, no bias) split along K as [`bind_matmul_split_k`] splits it,
/// with a column of ones after x's N: the partial products' last column is
/// then the bias gradient `db (M) (+)= Σ_rows dy`, summed by the same two
/// dispatches into `db` (in C's buffer; accumulated as C is). `None` when
/// the shape does not split here: the caller binds both the plain way.
#[allow(clippy::too_many_arguments)]
pub fn bind_weight_grad_split_k<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (dy, x): (View<'a>, View<'a>),
    dw: View<'a>,
    db: View<'a>,
    scratch: Option<&wgpu::Buffer>,
) -> Result<Option<BoundOp>, GpuError> {
    if desc.trans_b || desc.bias || !desc.trans_a {
        return Err(shape_error(
            "matmul",
            format!("a bias gradient rides on dyᵀ · x only, got {desc:?}"),
        ));
    }
    db.need("matmul", "bias gradient", desc.m as u64)?;
    if db.buffer != dw.buffer {
        return Err(shape_error(
            "matmul",
            "the bias gradient must share the weight gradient's buffer".into(),
        ));
    }
    split(ctx, registry, desc, (dy, x, None, dw), scratch, Some(db))
}

/// The split binding, or `None` when the shape does not split (with
/// `ones`, over N + 1 columns, the last written to `ones`).
fn split<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    (a, b, bias, c): (View<'a>, View<'a>, Option<View<'a>>, View<'a>),
    scratch: Option<&wgpu::Buffer>,
    ones: Option<View<'a>>,
) -> Result<Option<BoundOp>, GpuError> {
    let n = desc.n + ones.is_some() as u32;
    let slab = desc.m as u64 * n as u64;
    let fit = scratch.map_or(0, |s| s.size() / 4 / slab.max(1));
    let split = desc.split_k();
    let wanted = split.slices.min(fit.min(u32::MAX as u64) as u32);
    let Some(scratch) = scratch.filter(|_| wanted >= 2) else {
        return Ok(None);
    };
    check_operands("matmul", &desc, a, (Some(b), b.buffer), bias, c)?;
    if [a.buffer, b.buffer, c.buffer]
        .into_iter()
        .chain(bias.map(|v| v.buffer))
        .any(|buf| buf == scratch)
    {
        return Err(shape_error(
            "matmul",
            "the split-K scratch is also an operand".into(),
        ));
    }
    // Slices are multiples of the kernel's K step.
    let (kernel, k_step) = if split.small_tiles {
        (TileKernel::Small, KT_SMALL)
    } else {
        (TileKernel::General, KT)
    };
    let k_chunk = desc.k.div_ceil(wanted).next_multiple_of(k_step);
    let slices = desc.k.div_ceil(k_chunk);
    let wide = MatmulDesc { n, ..desc };
    let [x, y, _] = kernel.grid(ctx, &wide);
    check_dim(ctx, "matmul", "K slices", slices)?;
    let partial = MatmulDesc {
        bias: false,
        accumulate: false,
        ..wide
    };
    let (flag, ones_off) = ones.map_or((0, 0), |v| (ONES_COLUMN, v.offset));
    let offsets = [a.offset, b.offset, a.offset, 0];
    let mut params = partial.params(offsets, [k_chunk, slices], flag);
    params._pad = [desc.n, ones_off];
    let uniform = params.upload(ctx, "matmul_split_k_params");
    let buffers = [(1, a.buffer), (2, b.buffer), (3, a.buffer), (4, scratch)];
    let stage1 = bind_kernel(
        ctx,
        registry,
        kernel.source(),
        &uniform,
        &buffers,
        [x, y, slices],
    );
    // An unused bias binding still needs a buffer: the scratch is read-only here.
    let bias = bias.unwrap_or(View::from(scratch));
    let offsets = [0, 0, bias.offset, c.offset];
    let mut params = wide.params(offsets, [k_chunk, slices], flag);
    params._pad = [desc.n, ones_off];
    let uniform = params.upload(ctx, "matmul_reduce_params");
    let buffers = [(1, scratch), (3, bias.buffer), (4, c.buffer)];
    let groups = grid(ctx, (slab as u32).div_ceil(REDUCE_THREADS));
    let stage2 = bind_kernel(ctx, registry, &MATMUL_REDUCE, &uniform, &buffers, groups);
    Ok(Some(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![scratch.clone()],
    }))
}
