//! The tensor-core matmul's operands as f16 (`shaders/coop_stage.wgsl`):
//! each product stages op(A) as `[M′][K′]` and op(B) as `[K′][N′]` into
//! buffers of its own, or reads what an earlier product of the same graph
//! staged ([`Reuse`]). A weight gradient `dW = dYᵀ·X` stages nothing of
//! its own: its dY is the one the same layer's dX product (`dY·W`) staged,
//! read as op(A)ᵀ by the kernel's `A_KM` pipeline, and its X the one the
//! forward product (`X·Wᵀ`) staged, already op(B)'s layout. The staged
//! halves are the same, so the products are: only the staging dispatches
//! (a read of the f32 operand and a write of its f16 copy each) go.

use super::desc::MatmulDesc;
use super::kernels::{COOP_STAGE_A, COOP_STAGE_A_T, COOP_STAGE_B, COOP_STAGE_B_T};
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, shape_error};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The staged operands' padding (`coop_pad.wgsl`): M′, K′ and N′ are
/// multiples of these.
pub(super) const PAD_M: u32 = 128;
pub(super) const PAD_K: u32 = 32;
pub(super) const PAD_N: u32 = 128;

/// Elements one workgroup of the element-wise stage kernels stages
/// (`coop_stage.wgsl`'s `PER_GROUP`).
const PER_GROUP: u32 = 2048;

/// Workgroups of [`PER_GROUP`] elements for `n` elements, as a grid within
/// the 65,535 limit per dimension (the stage kernels flatten it back).
fn stage_grid(n: u32) -> [u32; 3] {
    let groups = n.div_ceil(PER_GROUP).max(1);
    let x = groups.min(65_535);
    [x, groups.div_ceil(x), 1]
}

/// The staging kernel of an operand, its grid and the binding its output
/// takes: element-wise (four halves a write, binding 7), or for a
/// transposed operand (whose element-wise reads would stride by a whole
/// row) the tiled kernel, a 32 × 16 tile (`outer` × K) per workgroup
/// (binding 5), while its grid fits the 65,535 limit. (Staging a
/// transposed operand in its storage order and loading its fragments
/// column-major from storage instead measured 8 % slower products on the
/// H200: run 24; the `A_KM` pipeline loads them column-major from
/// workgroup memory.)
fn stage(
    transposed: bool,
    (outer, kp): (u32, u32),
    plain: &'static KernelSource,
    tiled: &'static KernelSource,
) -> (&'static KernelSource, [u32; 3], u32) {
    if transposed && kp / 16 <= 65_535 {
        (tiled, [outer / 32, kp / 16, 1], 5)
    } else {
        (plain, stage_grid(outer * kp), 7)
    }
}

/// A matrix (`rows × cols`, row-major at `source`) that one product staged
/// as f16, times `scale`, rows `stride` halves apart (zero padded): op(A)
/// of a product whose A is not transposed, or op(B) of one whose B is not.
#[derive(Clone, Debug)]
pub struct StagedRows {
    buffer: wgpu::Buffer,
    source: (wgpu::Buffer, u32),
    rows: u32,
    cols: u32,
    stride: u32,
    scale: f32,
}

impl StagedRows {
    /// Whether this is `view`'s `rows × cols` staged with rows `stride`
    /// apart and times `scale`: what a product needs to read it. A copy of
    /// another operand is a caller's mistake, and an error.
    fn fits(
        &self,
        view: View<'_>,
        (rows, cols, stride, scale): (u32, u32, u32, f32),
    ) -> Result<bool, GpuError> {
        if self.source != (view.buffer.clone(), view.offset)
            || (self.rows, self.cols) != (rows, cols)
        {
            return Err(shape_error(
                "matmul_coop",
                format!(
                    "a staged {}×{} operand offered for a {rows}×{cols} one, or another buffer",
                    self.rows, self.cols
                ),
            ));
        }
        Ok(self.stride == stride && self.scale == scale)
    }
}

/// Operands staged by earlier products of the same graph, read instead of
/// staging them again. The caller vouches that nothing wrote the source
/// between the two products.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reuse<'s> {
    /// For a transposed A (op(A) = Yᵀ): Y's rows as another product staged
    /// them as its op(A), read through the `A_KM` pipeline.
    pub a: Option<&'s StagedRows>,
    /// For a B that is not transposed: its rows, staged as another
    /// product's op(A) or op(B).
    pub b: Option<&'s StagedRows>,
}

/// The staged operands of one product: the dispatches that stage them
/// (none where reused), the buffers the kernel reads, and whether op(A)
/// is op(A)ᵀ's rows (`A_KM`).
pub(super) struct Operands {
    pub kernels: Vec<BoundKernel>,
    pub a16: wgpu::Buffer,
    pub b16: wgpu::Buffer,
    pub a_km: bool,
    /// op(A)'s rows (A not transposed) and op(B)'s (B not transposed), for
    /// later products to reuse.
    pub staged: [Option<StagedRows>; 2],
}

/// Stages op(A) (times `scale`) and op(B) of `desc` (padded to `(M′, K′,
/// N′)`) with the params in `uniform`, or takes them from `reuse` where
/// they fit — op(A)ᵀ's rows only where the kernel has an `A_KM` pipeline
/// (`a_km`).
pub(super) fn bind_operands(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (desc, pads, uniform): (&MatmulDesc, (u32, u32, u32), &wgpu::Buffer),
    (a, scale, a_km): (View<'_>, f32, bool),
    b: View<'_>,
    reuse: Reuse<'_>,
) -> Result<Operands, GpuError> {
    let (mp, kp, np) = pads;
    let a_reuse = match reuse.a {
        Some(s) if desc.trans_a && a_km => s.fits(a, (desc.k, desc.m, mp, scale))?.then_some(s),
        _ => None,
    };
    let b_reuse = match reuse.b {
        Some(s) if !desc.trans_b => s.fits(b, (desc.k, desc.n, np, 1.0))?.then_some(s),
        _ => None,
    };
    let mut kernels = Vec::new();
    let mut staged = [None, None];
    let a16 = match a_reuse {
        Some(s) => s.buffer.clone(),
        None => {
            // f16 halves, in whole words.
            let a16 = ctx.zeros("coop_a16", (mp * kp).div_ceil(2) as usize)?;
            let (k, grid, out) = stage(desc.trans_a, (mp, kp), &COOP_STAGE_A, &COOP_STAGE_A_T);
            kernels.push(bind_kernel(
                ctx,
                registry,
                k,
                uniform,
                &[(1, a.buffer), (out, &a16)],
                grid,
            ));
            if !desc.trans_a {
                let at = (desc.m, desc.k, kp, scale);
                staged[0] = Some(rows_of(&a16, a, at));
            }
            a16
        }
    };
    let b16 = match b_reuse {
        Some(s) => s.buffer.clone(),
        None => {
            let b16 = ctx.zeros("coop_b16", (kp * np).div_ceil(2) as usize)?;
            let (k, grid, out) = stage(desc.trans_b, (np, kp), &COOP_STAGE_B, &COOP_STAGE_B_T);
            kernels.push(bind_kernel(
                ctx,
                registry,
                k,
                uniform,
                &[(2, b.buffer), (out, &b16)],
                grid,
            ));
            if !desc.trans_b {
                staged[1] = Some(rows_of(&b16, b, (desc.k, desc.n, np, 1.0)));
            }
            b16
        }
    };
    Ok(Operands {
        kernels,
        a16,
        b16,
        a_km: a_reuse.is_some(),
        staged,
    })
}

fn rows_of(
    buffer: &wgpu::Buffer,
    v: View<'_>,
    (rows, cols, stride, scale): (u32, u32, u32, f32),
) -> StagedRows {
    StagedRows {
        buffer: buffer.clone(),
        source: (v.buffer.clone(), v.offset),
        rows,
        cols,
        stride,
        scale,
    }
}

/// The padded shape `(M′, K′, N′)` of `desc`'s staged operands.
pub(super) fn pads(desc: &MatmulDesc) -> (u32, u32, u32) {
    (
        desc.m.next_multiple_of(PAD_M),
        desc.k.next_multiple_of(PAD_K),
        desc.n.next_multiple_of(PAD_N),
    )
}
