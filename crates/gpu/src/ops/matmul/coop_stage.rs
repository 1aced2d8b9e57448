//! The tensor-core matmul's operands as f16 (`shaders/coop_stage.wgsl`):
//! each product stages op(A) as `[M′][K′]` and op(B) as `[K′][N′]` into
//! buffers of its own, or reads what an earlier product of the same graph
//! staged ([`Reuse`]). A weight gradient `dW = dYᵀ·X` stages nothing of
//! its own: its dY is the one the same layer's dX product (`dY·W`) staged,
//! read as op(A)ᵀ by the tiled kernel's `A_KM` pipeline, and its X the one
//! the forward product (`X·Wᵀ`) staged, already op(B)'s layout. A dX
//! product may read W as the forward product staged Wᵀ (op(B)ᵀ's rows,
//! the `B_NK` pipeline; the training graph stages W again instead: run
//! 122 measured that faster). The staged halves are the same, so the
//! products are: only the staging dispatches (a read of the f32 operand
//! and a write of its f16 copy each) go.

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

/// The stage and matmul kernels' flag (`coop_pad.wgsl`): op(A) scaled.
pub(super) const SCALED: u32 = 32;

/// Refuses a scale that is not a power of two (what op(A) is multiplied by
/// as staged, and C by its inverse, exactly).
pub(super) fn check_scale(op: &'static str, scale: f32) -> Result<(), GpuError> {
    // A positive normal float with no mantissa bits: a power of two.
    if !(scale.is_normal() && scale > 0.0 && scale.to_bits() & 0x7f_ffff == 0) {
        return Err(shape_error(
            op,
            format!("the scale must be a power of two, got {scale}"),
        ));
    }
    Ok(())
}

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
/// as f16, times `scale`: its rows, or with `transposed` its transpose's
/// rows (a transposed operand's staging), `stride` halves apart and
/// `padded` of them, zero past the matrix.
#[derive(Clone, Debug)]
pub struct StagedRows {
    buffer: wgpu::Buffer,
    source: (wgpu::Buffer, u32),
    rows: u32,
    cols: u32,
    transposed: bool,
    stride: u32,
    padded: u32,
    scale: f32,
}

/// What a product needs of a staged copy: the source's shape, which rows
/// (the matrix's or its transpose's), their stride, at least how many of
/// them, and the scale.
struct Need {
    rows: u32,
    cols: u32,
    transposed: bool,
    stride: u32,
    padded: u32,
    scale: f32,
}

impl StagedRows {
    /// An f16 copy of `source` (`rows × cols`, row-major) that the kernel
    /// writing `source` writes beside it (`copy16.wgsl`), times `scale` (a
    /// power of two), in the layout a product's op(A) is staged in — so a
    /// product reading `source` as op(A) reads this instead of staging it,
    /// the same halves. Zero until written, and past the matrix always.
    pub fn for_producer(
        ctx: &GpuContext,
        source: View<'_>,
        (rows, cols): (u32, u32),
        scale: f32,
    ) -> Result<StagedRows, GpuError> {
        check_scale("f16 copy", scale)?;
        let (mp, kp) = (rows.next_multiple_of(PAD_M), cols.next_multiple_of(PAD_K));
        let halves = mp as u64 * kp as u64;
        let buffer = ctx.zeros("coop_copy16", halves.div_ceil(2) as usize)?;
        Ok(rows_of(
            &buffer,
            source,
            (rows, cols, false),
            (kp, mp, scale),
        ))
    }

    /// What a producer of `out` (`rows × cols`) binds to write this copy:
    /// its buffer, and the words `copy16.wgsl` takes (the width and the
    /// scale's bits). A copy of another buffer or shape is refused.
    pub fn producer_binding(
        &self,
        op: &'static str,
        out: View<'_>,
        (rows, cols): (u32, u32),
    ) -> Result<(&wgpu::Buffer, [u32; 2]), GpuError> {
        if self.source != (out.buffer.clone(), out.offset)
            || (self.rows, self.cols) != (rows, cols)
            || self.transposed
            || self.stride != cols.next_multiple_of(PAD_K)
        {
            return Err(shape_error(
                op,
                format!(
                    "an f16 copy of a {}×{} matrix offered for a {rows}×{cols} output, or another buffer",
                    self.rows, self.cols
                ),
            ));
        }
        Ok((&self.buffer, [cols, self.scale.to_bits()]))
    }

    /// The f16 buffer.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// What the matrix was multiplied by as it was copied.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Whether this copy is what `need` asks of `view`. A copy of another
    /// operand (buffer, offset or shape) is a caller's mistake, and an
    /// error; one laid out otherwise is staged again.
    fn fits(&self, view: View<'_>, need: Need) -> Result<bool, GpuError> {
        if self.source != (view.buffer.clone(), view.offset)
            || (self.rows, self.cols) != (need.rows, need.cols)
        {
            return Err(shape_error(
                "matmul_coop",
                format!(
                    "a staged {}×{} operand offered for a {}×{} one, or another buffer",
                    self.rows, self.cols, need.rows, need.cols
                ),
            ));
        }
        Ok(self.transposed == need.transposed
            && self.stride == need.stride
            && self.padded >= need.padded
            && self.scale == need.scale)
    }
}

/// Operands staged by earlier products of the same graph (or by the
/// kernels that wrote them: [`StagedRows::for_producer`]), read instead of
/// staging them again. The caller vouches that nothing wrote the source
/// since.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reuse<'s> {
    /// For A not transposed: its rows, as its producer or another product
    /// staged them. For a transposed A (op(A) = Yᵀ): Y's rows as another
    /// product staged them as its op(A), read through the `A_KM` pipeline.
    pub a: Option<&'s StagedRows>,
    /// For a B that is not transposed: its rows, staged as another
    /// product's op(A) or op(B); or its transpose's rows, staged as a
    /// product's transposed op(B), read through the `B_NK` pipeline.
    pub b: Option<&'s StagedRows>,
}

/// The pipeline a product's reused operands need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StagedLayout {
    /// Both operands in the staging's own layout.
    Staged,
    /// op(A) as op(A)ᵀ's rows (`A_KM`).
    AKm,
    /// op(B) as op(B)ᵀ's rows (`B_NK`).
    BNk,
}

/// The staged operands of one product: the dispatches that stage them
/// (none where reused), the buffers the kernel reads, and the layout its
/// pipeline must read them in.
pub(super) struct Operands {
    pub kernels: Vec<BoundKernel>,
    pub a16: wgpu::Buffer,
    pub b16: wgpu::Buffer,
    pub layout: StagedLayout,
    /// op(A)'s rows (A not transposed) and op(B)'s or its transpose's,
    /// for later products to reuse.
    pub staged: [Option<StagedRows>; 2],
}

/// The reused copy for a product's operand, and whether it is read as
/// its transpose's rows (`A_KM`/`B_NK`).
type Pick<'s> = Option<(&'s StagedRows, bool)>;

/// Which of `reuse` fits `desc` (padded to `(M′, K′, N′)`): op(A)ᵀ's rows
/// and op(B)ᵀ's only where the kernel has those pipelines (`transposes`),
/// and never both.
fn pick<'s>(
    desc: &MatmulDesc,
    (mp, kp, np): (u32, u32, u32),
    (a, scale, b): (View<'_>, f32, View<'_>),
    reuse: Reuse<'s>,
    transposes: bool,
) -> Result<(Pick<'s>, Pick<'s>), GpuError> {
    let (m, k, n) = (desc.m, desc.k, desc.n);
    let a_pick = match reuse.a {
        // op(A) = A as its producer (or another product) staged it.
        Some(s) if !desc.trans_a => {
            let need = Need {
                rows: m,
                cols: k,
                transposed: false,
                stride: kp,
                padded: mp,
                scale,
            };
            s.fits(a, need)?.then_some((s, false))
        }
        Some(s) if desc.trans_a && transposes => {
            let need = Need {
                rows: k,
                cols: m,
                transposed: false,
                stride: mp,
                padded: kp,
                scale,
            };
            s.fits(a, need)?.then_some((s, true))
        }
        _ => None,
    };
    // No pipeline reads both operands as their transposes' rows.
    let a_km = matches!(a_pick, Some((_, true)));
    let b_pick = match reuse.b {
        Some(s) if !desc.trans_b && !s.transposed => {
            let need = Need {
                rows: k,
                cols: n,
                transposed: false,
                stride: np,
                padded: kp,
                scale: 1.0,
            };
            s.fits(b, need)?.then_some((s, false))
        }
        Some(s) if !desc.trans_b && transposes && !a_km => {
            let stride = k.next_multiple_of(PAD_N);
            let need = Need {
                rows: k,
                cols: n,
                transposed: true,
                stride,
                padded: np,
                scale: 1.0,
            };
            s.fits(b, need)?.then_some((s, true))
        }
        _ => None,
    };
    Ok((a_pick, b_pick))
}

/// Stages op(A) (times `scale`) and op(B) of `desc` (padded to `(M′, K′,
/// N′)`) with the params in `uniform`, or takes them from `reuse` where
/// they fit — as their transposes' rows only where the kernel has the
/// `A_KM` and `B_NK` pipelines (`transposes`).
pub(super) fn bind_operands(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (desc, pads, uniform): (&MatmulDesc, (u32, u32, u32), &wgpu::Buffer),
    (a, scale, transposes): (View<'_>, f32, bool),
    b: View<'_>,
    reuse: Reuse<'_>,
) -> Result<Operands, GpuError> {
    let (mp, kp, np) = pads;
    let (a_pick, b_pick) = pick(desc, pads, (a, scale, b), reuse, transposes)?;
    let mut kernels = Vec::new();
    let mut staged = [None, None];
    let a16 = match a_pick {
        Some((s, transposed)) => {
            if !transposed {
                staged[0] = Some(s.clone());
            }
            s.buffer.clone()
        }
        None => {
            let kinds = (&COOP_STAGE_A, &COOP_STAGE_A_T);
            let at = (1, a, desc.trans_a);
            let (a16, k) = stage_operand(ctx, registry, uniform, at, (mp, kp), kinds)?;
            kernels.push(k);
            if !desc.trans_a {
                let (rows, cols) = (desc.m, desc.k);
                staged[0] = Some(rows_of(&a16, a, (rows, cols, false), (kp, mp, scale)));
            }
            a16
        }
    };
    let b16 = match b_pick {
        Some((s, _)) => s.buffer.clone(),
        None => {
            let kinds = (&COOP_STAGE_B, &COOP_STAGE_B_T);
            let at = (2, b, desc.trans_b);
            let (b16, k) = stage_operand(ctx, registry, uniform, at, (np, kp), kinds)?;
            kernels.push(k);
            // B is (K, N), or (N, K) when transposed; either way the copy
            // holds op(B)'s rows.
            let shape = match desc.trans_b {
                false => (desc.k, desc.n, false),
                true => (desc.n, desc.k, true),
            };
            staged[1] = Some(rows_of(&b16, b, shape, (np, kp, 1.0)));
            b16
        }
    };
    let layout = match (a_pick, b_pick) {
        (Some((_, true)), _) => StagedLayout::AKm,
        (_, Some((_, true))) => StagedLayout::BNk,
        _ => StagedLayout::Staged,
    };
    Ok(Operands {
        kernels,
        a16,
        b16,
        layout,
        staged,
    })
}

/// A zeroed f16 buffer of `outer × kp` halves and the dispatch staging
/// the operand bound at `binding` (`transposed` or not) into it.
fn stage_operand(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    uniform: &wgpu::Buffer,
    (binding, v, transposed): (u32, View<'_>, bool),
    (outer, kp): (u32, u32),
    (plain, tiled): (&'static KernelSource, &'static KernelSource),
) -> Result<(wgpu::Buffer, BoundKernel), GpuError> {
    // f16 halves, in whole words.
    let buf = ctx.zeros("coop_staged", (outer * kp).div_ceil(2) as usize)?;
    let (k, grid, out) = stage(transposed, (outer, kp), plain, tiled);
    let buffers = [(binding, v.buffer), (out, &buf)];
    let kernel = bind_kernel(ctx, registry, k, uniform, &buffers, grid);
    Ok((buf, kernel))
}

fn rows_of(
    buffer: &wgpu::Buffer,
    v: View<'_>,
    (rows, cols, transposed): (u32, u32, bool),
    (stride, padded, scale): (u32, u32, f32),
) -> StagedRows {
    StagedRows {
        buffer: buffer.clone(),
        source: (v.buffer.clone(), v.offset),
        rows,
        cols,
        transposed,
        stride,
        padded,
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

/// Stages `a` (`rows × cols`, row-major) times `scale` as a product's op(A)
/// on its own: the copy and the dispatch writing it — what a producer's
/// f16 copy ([`StagedRows::for_producer`]) must equal, bit for bit (its
/// tests). Needs `SHADER_F16`, not cooperative matrices.
pub fn bind_stage_rows(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    a: View<'_>,
    (rows, cols): (u32, u32),
    scale: f32,
) -> Result<(StagedRows, BoundKernel), GpuError> {
    let desc = MatmulDesc {
        m: rows,
        k: cols,
        n: 1,
        ..Default::default()
    };
    let (mp, kp, _) = pads(&desc);
    let params = desc.params([a.offset, 0, 0, 0], [scale.to_bits(), 0], SCALED);
    let uniform = params.upload(ctx, "coop_stage_params");
    let kinds = (&COOP_STAGE_A, &COOP_STAGE_A_T);
    let (a16, k) = stage_operand(ctx, registry, &uniform, (1, a, false), (mp, kp), kinds)?;
    Ok((rows_of(&a16, a, (rows, cols, false), (kp, mp, scale)), k))
}
