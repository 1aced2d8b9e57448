//! What a matmul is ([`MatmulDesc`]): its shape, layouts and flags, its
//! uniform, the tile kernel and K split it runs with, and the operand
//! checks every matmul binder shares.

use super::kernels::{
    CELL_GROUP, LARGE_MIN_TILES, MATMUL_F32, MATMUL_F32_128, MATMUL_F32_128_GELU,
    MATMUL_F32_128_GELU_GRAD, MATMUL_F32_CELLS, MATMUL_F32_CELLS_GELU, MATMUL_F32_CELLS_GELU_GRAD,
    MATMUL_F32_GELU, MATMUL_F32_GELU_GRAD, MATMUL_F32_SMALL, MATMUL_F32_SMALL_GELU,
    MATMUL_F32_SMALL_GELU_GRAD, MATMUL_TILE_LARGE,
};
use crate::ops::common::{grid, shape_error};
use crate::ops::View;
use crate::registry::KernelSource;
use crate::{GpuContext, GpuError};
use tinygpt_protocol::memory::{SplitK, MATMUL_TILE, MATMUL_TILE_SMALL};

/// The f32 tile kernels, which all take [`MatmulDesc`]'s uniform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TileKernel {
    /// 32×32 tiles, K summed by four groups of threads per workgroup:
    /// outputs too small to fill a large GPU with 64×64 tiles
    /// ([`tinygpt_protocol::memory::uses_small_tiles`]).
    Small,
    /// 64×64 tiles.
    General,
    /// 128×128 tiles: outputs that fill a GPU with them.
    Large,
    /// No tiles: one invocation per 4×4 block of C summing all of K, no
    /// workgroup memory, no barrier (the [`Layout::Cpu`] matmul).
    Cells,
}

impl TileKernel {
    /// Its pipeline (key and WGSL).
    pub fn source(self) -> &'static KernelSource {
        match self {
            Self::Small => &MATMUL_F32_SMALL,
            Self::General => &MATMUL_F32,
            Self::Large => &MATMUL_F32_128,
            Self::Cells => &MATMUL_F32_CELLS,
        }
    }

    /// Its pipeline with the GELU epilogue (epilogue_gelu.wgsl): GELU(C)
    /// written beside C.
    pub fn source_gelu(self) -> &'static KernelSource {
        match self {
            Self::Small => &MATMUL_F32_SMALL_GELU,
            Self::General => &MATMUL_F32_GELU,
            Self::Large => &MATMUL_F32_128_GELU,
            Self::Cells => &MATMUL_F32_CELLS_GELU,
        }
    }

    /// Its pipeline with the GELU-backward epilogue
    /// (epilogue_gelu_grad.wgsl): C times GELU' of the GELU's input.
    pub fn source_gelu_grad(self) -> &'static KernelSource {
        match self {
            Self::Small => &MATMUL_F32_SMALL_GELU_GRAD,
            Self::General => &MATMUL_F32_GELU_GRAD,
            Self::Large => &MATMUL_F32_128_GELU_GRAD,
            Self::Cells => &MATMUL_F32_CELLS_GELU_GRAD,
        }
    }

    /// Workgroups covering `desc`'s output.
    pub(super) fn grid(self, ctx: &GpuContext, desc: &MatmulDesc) -> [u32; 3] {
        let tile = match self {
            Self::Small => MATMUL_TILE_SMALL,
            Self::General => MATMUL_TILE,
            Self::Large => MATMUL_TILE_LARGE,
            Self::Cells => {
                let blocks = desc.m.div_ceil(4) as u64 * desc.n.div_ceil(4) as u64;
                return grid(ctx, blocks.div_ceil(CELL_GROUP as u64) as u32);
            }
        };
        [desc.n.div_ceil(tile), desc.m.div_ceil(tile), 1]
    }
}

/// The `Params` uniform every matmul kernel reads (matmul_common.wgsl for
/// the f32 tiles, gemv.wgsl, f16w_common.wgsl), shared by every binder.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct MatmulParams {
    pub m: u32,
    pub k: u32,
    pub n: u32,
    /// Bits 0 trans_a, 1 trans_b, 2 bias, 3 accumulate; a kernel's own
    /// from bit 4 (f16 W aligned, 6 GELU).
    pub flags: u32,
    /// Element offsets of the operands in their buffers (B in halves for
    /// the f16-storage kernels).
    pub a_off: u32,
    pub b_off: u32,
    pub bias_off: u32,
    pub c_off: u32,
    /// The kernel's two words: K per workgroup z and the K-slice count
    /// (tiles), or the LayerNorm weight and bias offsets (GEMVs).
    pub extra: [u32; 2],
    /// The tensor-core epilogue's GELU buffer offset, then padding; or,
    /// for the GEMVs, the LayerNorm GEMVs' column groups a workgroup
    /// (`gemv::ln_column_groups`), then the subgroup size of their
    /// subgroup-sum form (`RowFusion::subgroups`, 0 without).
    pub aux: [u32; 2],
}

impl MatmulParams {
    /// The uniform buffer of these params.
    pub(crate) fn upload(&self, ctx: &GpuContext, label: &str) -> wgpu::Buffer {
        ctx.uniform(label, bytemuck::bytes_of(self))
    }
}

/// `C (M, N) = op(A) · op(B) [+ bias] [+ C]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MatmulDesc {
    pub m: u32,
    pub k: u32,
    pub n: u32,
    /// A is stored `(K, M)`.
    pub trans_a: bool,
    /// B is stored `(N, K)`: the `(out, in)` layout of a linear weight.
    pub trans_b: bool,
    /// Add `bias (N)` to every row.
    pub bias: bool,
    /// Add into the existing contents of C (gradient accumulation).
    pub accumulate: bool,
}

impl MatmulDesc {
    /// `x (M, K) · Wᵀ` with `W (N, K)`: a linear layer's forward.
    pub fn linear(m: u32, k: u32, n: u32) -> Self {
        Self {
            m,
            k,
            n,
            trans_b: true,
            bias: true,
            ..Default::default()
        }
    }

    /// Flag bits every matmul kernel reads: 0 trans_a, 1 trans_b, 2 bias,
    /// 3 accumulate (kernels add their own from bit 4 on).
    fn flags(&self) -> u32 {
        (self.trans_a as u32)
            | (self.trans_b as u32) << 1
            | (self.bias as u32) << 2
            | (self.accumulate as u32) << 3
    }

    /// The uniform of every matmul kernel ([`MatmulParams`]): the shape,
    /// the flags with the kernel's `more_flags`, the operand offsets
    /// `[a, b, bias, c]` and the kernel's two words.
    pub(crate) fn params(
        &self,
        offsets: [u32; 4],
        extra: [u32; 2],
        more_flags: u32,
    ) -> MatmulParams {
        let [a_off, b_off, bias_off, c_off] = offsets;
        MatmulParams {
            m: self.m,
            k: self.k,
            n: self.n,
            flags: self.flags() | more_flags,
            a_off,
            b_off,
            bias_off,
            c_off,
            extra,
            aux: [0; 2],
        }
    }

    /// Whether [`bind_matmul`] runs the GEMV: one row times a linear
    /// weight (B stored `(N, K)`; with M = 1, A's layout does not matter).
    pub fn is_gemv(&self) -> bool {
        self.m == 1 && self.trans_b
    }

    /// Whether [`bind_matmul`] runs the 128×128-tile kernel: an output
    /// large enough to fill a GPU with its tiles.
    pub fn uses_large_tiles(&self) -> bool {
        let (x, y) = (
            self.n.div_ceil(MATMUL_TILE_LARGE),
            self.m.div_ceil(MATMUL_TILE_LARGE),
        );
        !self.is_gemv() && x * y >= LARGE_MIN_TILES
    }

    /// The tile kernel [`bind_matmul`] runs for this shape (one row times a
    /// linear weight runs the GEMV instead).
    pub fn tile_kernel(&self) -> TileKernel {
        if self.uses_large_tiles() {
            TileKernel::Large
        } else if tinygpt_protocol::memory::uses_small_tiles(self.m, self.n) {
            TileKernel::Small
        } else {
            TileKernel::General
        }
    }

    /// K slices this shape gains from (1: none) and the tile kernel of
    /// its partial products ([`tinygpt_protocol::memory::split_k`], the
    /// rule the memory plan sizes the scratch by). A GEMV is never split.
    pub fn split_k(&self) -> SplitK {
        if self.is_gemv() {
            return SplitK {
                small_tiles: false,
                slices: 1,
            };
        }
        tinygpt_protocol::memory::split_k(self.m, self.k, self.n)
    }

    /// [`Self::split_k`]'s slices.
    pub fn split_k_slices(&self) -> u32 {
        self.split_k().slices
    }
}

/// Refuses operands that are too small, a bias that `desc` does not expect
/// (or the reverse), and C sharing a buffer with a read operand. `b` is
/// `None` where B is not f32 elements (the f16-storage kernels' packed
/// halves): the caller checks its size and `b_buffer` stands in for it.
pub(crate) fn check_operands(
    op: &'static str,
    desc: &MatmulDesc,
    a: View<'_>,
    (b, b_buffer): (Option<View<'_>>, &wgpu::Buffer),
    bias: Option<View<'_>>,
    c: View<'_>,
) -> Result<(), GpuError> {
    if desc.bias != bias.is_some() {
        return Err(shape_error(
            op,
            format!(
                "desc.bias is {} but a bias buffer was {}given",
                desc.bias,
                if bias.is_some() { "" } else { "not " }
            ),
        ));
    }
    a.need(op, "A", desc.m as u64 * desc.k as u64)?;
    if let Some(b) = b {
        b.need(op, "B", desc.k as u64 * desc.n as u64)?;
    }
    c.need(op, "C", desc.m as u64 * desc.n as u64)?;
    if let Some(bias) = &bias {
        bias.need(op, "bias", desc.n as u64)?;
    }
    let reads = [
        ("A", Some(a.buffer)),
        ("B", Some(b_buffer)),
        ("bias", bias.map(|v| v.buffer)),
    ];
    for (name, read) in reads {
        if read == Some(c.buffer) {
            return Err(shape_error(
                op,
                format!("C (written) and {name} (read) share a buffer"),
            ));
        }
    }
    Ok(())
}
