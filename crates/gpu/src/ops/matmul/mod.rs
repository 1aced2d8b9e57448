//! The f32 matmul in the three layouts training needs (64×64 tiles; 32×32
//! for small outputs, 128×128 for large ones), its K-split form for a small
//! output with a long K (weight gradients summed over B·T rows), and the
//! GEMV that replaces it for one row times a linear weight (decoding).

pub mod f16w;
mod gemv;

pub use gemv::{
    bind_gemv, RowFusion, GEMV_COLUMNS, GEMV_COLUMNS_CPU, GEMV_F32, GEMV_F32_COLS, GEMV_F32_LN,
};

use crate::kernel::{BoundKernel, Layout};
use crate::ops::common::{bind_kernel, check_dim, grid, shape_error};
use crate::ops::{BoundOp, View};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// Each f32 matmul kernel with what they share appended.
macro_rules! with_common {
    ($file:literal) => {
        concat!(
            include_str!(concat!("../../../../../shaders/", $file)),
            include_str!("../../../../../shaders/matmul_common.wgsl")
        )
    };
}
const MATMUL_WGSL: &str = with_common!("matmul.wgsl");
const MATMUL_SMALL_WGSL: &str = with_common!("matmul_small.wgsl");
const MATMUL_128_WGSL: &str = with_common!("matmul_128.wgsl");

pub const MATMUL_F32: KernelSource = KernelSource {
    key: "matmul_f32_64x64_k16",
    wgsl: MATMUL_WGSL,
    entry: "main",
    constants: &[],
};

pub const MATMUL_F32_SMALL: KernelSource = KernelSource {
    key: "matmul_f32_32x32_k4x8",
    wgsl: MATMUL_SMALL_WGSL,
    entry: "main",
    constants: &[],
};

/// The cell layout of matmul_small.wgsl ([`TileKernel::Cells`]).
pub const MATMUL_F32_CELLS: KernelSource = KernelSource {
    key: "matmul_f32_cells",
    wgsl: MATMUL_SMALL_WGSL,
    entry: "main_cells",
    constants: &[],
};

pub const MATMUL_F32_128: KernelSource = KernelSource {
    key: "matmul_f32_128x128_k8",
    wgsl: MATMUL_128_WGSL,
    entry: "main",
    constants: &[],
};

pub const MATMUL_REDUCE: KernelSource = KernelSource {
    key: "matmul_split_k_reduce",
    wgsl: MATMUL_WGSL,
    entry: "reduce_slices",
    constants: &[],
};

pub use tinygpt_protocol::memory::{
    split_k_scratch_floats, SplitK, MATMUL_TILE, MATMUL_TILE_SMALL, SPLIT_MIN_K,
};

/// K per step of the 64×64 kernel's loop; K slices are multiples of it.
const KT: u32 = 16;
/// K per step of the small-output kernel's loop (8 per group of threads).
const KT_SMALL: u32 = 32;
/// Threads per workgroup of `reduce_slices`.
const REDUCE_THREADS: u32 = 256;
/// Output tile edge of the large-output kernel.
pub const MATMUL_TILE_LARGE: u32 = 128;
/// Fewest 128×128 tiles for which the large-output kernel is used: about
/// two per SM of a 132-SM GPU; below that the 64×64 kernel's four times as
/// many workgroups fill the GPU better.
const LARGE_MIN_TILES: u32 = 256;
/// Invocations per workgroup of the cell kernel, each a 4×4 block of C.
const CELL_GROUP: u32 = 64;

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
}

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

    /// Workgroups covering `desc`'s output.
    fn grid(self, ctx: &GpuContext, desc: &MatmulDesc) -> [u32; 3] {
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

    /// The 12-word uniform of every matmul kernel (the `Params` struct of
    /// matmul*.wgsl, gemv.wgsl and matmul_f16w.wgsl): shape, flags (with
    /// the kernel's `more_flags`), the operand offsets `[a, b, bias, c]` and
    /// two kernel words (K per workgroup z and the slice count for the
    /// tiles, the LayerNorm parameters' offsets for a GEMV).
    pub(crate) fn uniform_words(
        &self,
        offsets: [u32; 4],
        tail: [u32; 2],
        more_flags: u32,
    ) -> [u32; 12] {
        let [a, b, bias, c] = offsets;
        let (m, k, n, flags) = (self.m, self.k, self.n, self.flags() | more_flags);
        [m, k, n, flags, a, b, bias, c, tail[0], tail[1], 0, 0]
    }

    fn uniform_bytes(&self, offsets: [u32; 4], k_chunk: u32, slices: u32) -> [u8; 48] {
        bytemuck::cast(self.uniform_words(offsets, [k_chunk, slices], 0))
    }

    /// Whether [`bind_matmul`] runs the 128×128-tile kernel: an output
    /// large enough to fill a GPU with its tiles.
    pub fn uses_large_tiles(&self) -> bool {
        let (x, y) = (
            self.n.div_ceil(MATMUL_TILE_LARGE),
            self.m.div_ceil(MATMUL_TILE_LARGE),
        );
        !(self.m == 1 && self.trans_b) && x * y >= LARGE_MIN_TILES
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
        if self.m == 1 && self.trans_b {
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
    // One row times a linear weight (B stored (N, K)) is a GEMV; with
    // M = 1, A's layout does not matter.
    if desc.m == 1 && desc.trans_b {
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
    bind_with(ctx, registry, kernel.source(), groups, desc, a, b, bias, c)
}

#[allow(clippy::too_many_arguments)]
fn bind_with<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    src: &KernelSource,
    workgroups: [u32; 3],
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    b: impl Into<View<'a>>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let (a, b, c) = (a.into(), b.into(), c.into());
    check_operands("matmul", &desc, a, (Some(b), b.buffer), bias, c)?;
    // An unused bias binding still needs a buffer: A is read-only, so reuse it.
    let bias = bias.unwrap_or(a);
    let offsets = [a.offset, b.offset, bias.offset, c.offset];
    let k_chunk = desc.k.next_multiple_of(KT).max(KT);
    let bytes = desc.uniform_bytes(offsets, k_chunk, 1);
    let uniform = ctx.uniform("matmul_params", &bytes);
    let buffers = [
        (1, a.buffer),
        (2, b.buffer),
        (3, bias.buffer),
        (4, c.buffer),
    ];
    Ok(bind_kernel(
        ctx, registry, src, &uniform, &buffers, workgroups,
    ))
}

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
    let slab = desc.m as u64 * desc.n as u64;
    let fit = scratch.map_or(0, |s| s.size() / 4 / slab.max(1));
    let split = desc.split_k();
    let wanted = split.slices.min(fit.min(u32::MAX as u64) as u32);
    let Some(scratch) = scratch.filter(|_| wanted >= 2) else {
        return Ok(bind_matmul(ctx, registry, desc, a, b, bias, c)?.into());
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
    let [x, y, _] = kernel.grid(ctx, &desc);
    check_dim(ctx, "matmul", "K slices", slices)?;
    let partial = MatmulDesc {
        bias: false,
        accumulate: false,
        ..desc
    };
    let offsets = [a.offset, b.offset, a.offset, 0];
    let bytes = partial.uniform_bytes(offsets, k_chunk, slices);
    let uniform = ctx.uniform("matmul_split_k_params", &bytes);
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
    let bytes = desc.uniform_bytes(offsets, k_chunk, slices);
    let uniform = ctx.uniform("matmul_reduce_params", &bytes);
    let buffers = [(1, scratch), (3, bias.buffer), (4, c.buffer)];
    let groups = grid(ctx, (slab as u32).div_ceil(REDUCE_THREADS));
    let stage2 = bind_kernel(ctx, registry, &MATMUL_REDUCE, &uniform, &buffers, groups);
    Ok(BoundOp {
        kernels: vec![stage1, stage2],
        scratch: vec![scratch.clone()],
    })
}

/// Uploads, runs and reads back one matmul: for tests.
pub async fn matmul_once(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>, GpuError> {
    matmul_once_in(Layout::Gpu, ctx, registry, desc, a, b, bias).await
}

/// [`matmul_once`] in `layout`: the start-up kernel check runs the layout
/// the device's models will.
pub async fn matmul_once_in(
    layout: Layout,
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: &[f32],
    b: &[f32],
    bias: Option<&[f32]>,
) -> Result<Vec<f32>, GpuError> {
    let a_buf = ctx.upload("a", a)?;
    let b_buf = ctx.upload("b", b)?;
    let bias_buf = bias.map(|v| ctx.upload("bias", v)).transpose()?;
    let c_buf = ctx.zeros("c", (desc.m * desc.n) as usize)?;
    let k = layout.bind(
        ctx,
        registry,
        desc,
        &a_buf,
        &b_buf,
        bias_buf.as_ref().map(View::from),
        &c_buf,
    )?;
    crate::kernel::submit(ctx, "matmul_once", &[&k]);
    ctx.read_f32(&c_buf, (desc.m * desc.n) as usize).await
}

/// CPU reference of the same op, in f64 accumulation.
pub fn matmul_reference(desc: MatmulDesc, a: &[f32], b: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let (m, k, n) = (desc.m as usize, desc.k as usize, desc.n as usize);
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f64;
            for kk in 0..k {
                let av = if desc.trans_a {
                    a[kk * m + i]
                } else {
                    a[i * k + kk]
                };
                let bv = if desc.trans_b {
                    b[j * k + kk]
                } else {
                    b[kk * n + j]
                };
                acc += av as f64 * bv as f64;
            }
            if let Some(bias) = bias {
                acc += bias[j] as f64;
            }
            c[i * n + j] = acc as f32;
        }
    }
    c
}
