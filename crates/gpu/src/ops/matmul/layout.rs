//! The f32 matmul in each kernel [`Layout`].

use super::desc::{MatmulDesc, TileKernel};
use super::split_k::{bind_matmul_split_k, bind_matmul_split_k_row_sums};
use super::tiled::{
    bind_matmul, bind_matmul_tiled, bind_matmul_tiled_gelu, bind_matmul_tiled_gelu_grad,
};
use crate::kernel::{BoundKernel, Layout};
use crate::ops::{BoundOp, View};
use crate::registry::PipelineRegistry;
use crate::{GpuContext, GpuError};

/// The f32 matmul in a [`Layout`]: on a GPU the tile kernel of
/// [`MatmulDesc::tile_kernel`] (the GEMV for one row times a linear
/// weight), split along K where [`MatmulDesc::split_k`] says so; on a CPU
/// implementation [`TileKernel::Cells`] for every shape, never split
/// (splitting K only helps fill a GPU's cores).
impl Layout {
    /// [`bind_matmul`] in this layout.
    #[allow(clippy::too_many_arguments)]
    pub fn bind<'a>(
        self,
        ctx: &GpuContext,
        registry: &mut PipelineRegistry,
        desc: MatmulDesc,
        a: impl Into<View<'a>>,
        b: impl Into<View<'a>>,
        bias: Option<View<'a>>,
        c: impl Into<View<'a>>,
    ) -> Result<BoundKernel, GpuError> {
        match self {
            Self::Gpu => bind_matmul(ctx, registry, desc, a, b, bias, c),
            Self::Cpu => bind_matmul_tiled(ctx, registry, TileKernel::Cells, desc, a, b, bias, c),
        }
    }

    /// The tile kernel of this layout for `desc` with the GELU epilogue
    /// ([`bind_matmul_tiled_gelu`]): `C` and `GELU(C)` into `gelu`; `None`
    /// (nothing bound) where [`Layout::bind`] would run a GEMV (one row).
    #[allow(clippy::too_many_arguments)]
    pub fn bind_gelu<'a>(
        self,
        ctx: &GpuContext,
        registry: &mut PipelineRegistry,
        desc: MatmulDesc,
        operands: (View<'a>, View<'a>, Option<View<'a>>),
        c: View<'a>,
        gelu: View<'a>,
    ) -> Result<Option<BoundKernel>, GpuError> {
        let kernel = match self {
            Self::Gpu if desc.is_gemv() => return Ok(None),
            Self::Gpu => desc.tile_kernel(),
            Self::Cpu => TileKernel::Cells,
        };
        bind_matmul_tiled_gelu(ctx, registry, kernel, desc, operands, c, gelu).map(Some)
    }

    /// The tile kernel of this layout for `desc` with the GELU-backward
    /// epilogue ([`bind_matmul_tiled_gelu_grad`]): C times GELU' of `pre`;
    /// `None` (nothing bound) where [`Layout::bind`] would run a GEMV.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_gelu_grad<'a>(
        self,
        ctx: &GpuContext,
        registry: &mut PipelineRegistry,
        desc: MatmulDesc,
        operands: (View<'a>, View<'a>),
        pre: View<'a>,
        c: View<'a>,
    ) -> Result<Option<BoundKernel>, GpuError> {
        let kernel = match self {
            Self::Gpu if desc.is_gemv() => return Ok(None),
            Self::Gpu => desc.tile_kernel(),
            Self::Cpu => TileKernel::Cells,
        };
        bind_matmul_tiled_gelu_grad(ctx, registry, kernel, desc, operands, pre, c).map(Some)
    }

    /// [`bind_matmul_split_k`] in this layout.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_split_k<'a>(
        self,
        ctx: &GpuContext,
        registry: &mut PipelineRegistry,
        desc: MatmulDesc,
        a: impl Into<View<'a>>,
        b: impl Into<View<'a>>,
        bias: Option<View<'a>>,
        c: impl Into<View<'a>>,
        scratch: Option<&wgpu::Buffer>,
    ) -> Result<BoundOp, GpuError> {
        match self {
            Self::Gpu => bind_matmul_split_k(ctx, registry, desc, a, b, bias, c, scratch),
            Self::Cpu => Ok(self.bind(ctx, registry, desc, a, b, bias, c)?.into()),
        }
    }

    /// [`bind_matmul_split_k_row_sums`] in this layout: `None` (nothing
    /// bound) on a CPU implementation, which never splits.
    #[allow(clippy::too_many_arguments)]
    pub fn bind_split_k_row_sums<'a>(
        self,
        ctx: &GpuContext,
        registry: &mut PipelineRegistry,
        desc: MatmulDesc,
        a: impl Into<View<'a>>,
        b: impl Into<View<'a>>,
        c: impl Into<View<'a>>,
        row_sums: View<'a>,
        scratch: Option<&wgpu::Buffer>,
    ) -> Result<Option<BoundOp>, GpuError> {
        match self {
            Self::Gpu => {
                bind_matmul_split_k_row_sums(ctx, registry, desc, a, b, c, row_sums, scratch)
            }
            Self::Cpu => Ok(None),
        }
    }
}
