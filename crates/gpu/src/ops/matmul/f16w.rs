//! The f16-storage kernels: the linear forward reading packed-half weights
//! (`shaders/matmul_f16w.wgsl`) and the f32 → f16 packer
//! (`shaders/pack_f16.wgsl`), plus the CPU packer used where the GPU's
//! conversion is not round-to-nearest-even.

use super::f16w_kernels::{GEMVS, GEMVS_SG, GEMV_COLS, TILED};
pub use super::f16w_kernels::{GEMV_F16W, GEMV_F16W_ANY, MATMUL_F16W};
use super::fault::{Fault, VARIANTS};
use super::gemv::{gemv_grid, ln_column_groups};
use crate::kernel::BoundKernel;
use crate::ops::common::{bind_kernel, bind_kernel_shaped, grid, shape_error};
use crate::ops::matmul::{check_operands, MatmulDesc, RowFusion, GEMV_COLUMNS, GEMV_COLUMNS_CPU};
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The f16-storage path as the model uses it once its gate passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F16Storage {
    /// Pack on the GPU (its conversion matched RNE bit for bit), else on the CPU.
    pub pack_on_gpu: bool,
    /// Test-only fault carried into the model's kernels.
    pub fault: Option<Fault>,
    /// The training forward reads the halves too (its speed check passed,
    /// or the speed gate was off); else only decoding and evaluation do.
    pub training: bool,
}

const PACK_WGSL: &str = include_str!("../../../../../shaders/pack_f16.wgsl");

/// The f16 weight cache's freshness check (shaders/f16_fresh.wgsl).
pub const F16_FRESH: KernelSource = KernelSource {
    key: "f16_fresh_check",
    wgsl: include_str!("../../../../../shaders/f16_fresh.wgsl"),
    entry: "main",
    constants: &[],
};

/// Every f16-storage pipeline, fault variants included (see
/// [`crate::ops::all_kernels`]).
pub fn all_kernels() -> impl Iterator<Item = &'static KernelSource> {
    let tiled: &'static [KernelSource; VARIANTS] = &TILED;
    let gemvs: &'static [[[KernelSource; VARIANTS]; 2]; 2] = &GEMVS;
    let gemvs_sg: &'static [[[KernelSource; VARIANTS]; 2]; 2] = &GEMVS_SG;
    let cols: &'static [KernelSource; VARIANTS] = &GEMV_COLS;
    let packs = [
        &PACK_F16,
        #[cfg(feature = "fault-injection")]
        &PACK_F16_TRUNC,
        &F16_FRESH,
    ];
    let gemvs = gemvs.iter().chain(gemvs_sg).flatten().flatten();
    tiled.iter().chain(gemvs).chain(cols).chain(packs)
}

pub const PACK_F16: KernelSource = KernelSource {
    key: "pack_f16",
    wgsl: PACK_WGSL,
    entry: "main",
    constants: &[],
};
/// The truncating test variant of [`PACK_F16`].
#[cfg(feature = "fault-injection")]
const PACK_F16_TRUNC: KernelSource = KernelSource {
    key: "pack_f16_fault_trunc",
    constants: &[("TRUNCATE", 1.0)],
    ..PACK_F16
};

/// matmul_f16w.wgsl's own flag bit: W's rows start on whole words.
const W_ALIGNED: u32 = 16;
const PACK_THREADS: u32 = 256;

/// Words holding `n` halves.
pub fn packed_words(n: usize) -> usize {
    n.div_ceil(2)
}

/// Which kernel runs a matmul: the tiled one, or for M = 1 the GEMV for
/// aligned rows (`quads`), the one for any, or the column layout.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kernel {
    Tiled,
    TiledF16,
    TiledF16Large,
    GemvQuads,
    GemvAny,
    GemvColumns,
}

/// The kernel's pipeline; the GEMVs `[any alignment][ln]`, with subgroup
/// sums when `sg`.
fn kernel_for(fault: Option<Fault>, kernel: Kernel, ln: bool, sg: bool) -> &'static KernelSource {
    let gemvs = if sg { &GEMVS_SG } else { &GEMVS };
    match kernel {
        Kernel::Tiled => &TILED[Fault::kernel_index(fault)],
        Kernel::TiledF16 => &super::f16c::TILED_F16C[Fault::kernel_index(fault)],
        Kernel::TiledF16Large => &super::f16c::TILED_F16C_LARGE[Fault::kernel_index(fault)],
        Kernel::GemvQuads | Kernel::GemvAny => {
            &gemvs[(kernel == Kernel::GemvAny) as usize][ln as usize][Fault::kernel_index(fault)]
        }
        Kernel::GemvColumns => &GEMV_COLS[Fault::kernel_index(fault)],
    }
}

/// Binds `C (M, N) = A (M, K) · Wᵀ [+ bias]` with `W (N, K)` read as halves
/// from `w` (and run with its test-only fault). `desc` must be a linear layout
/// (`trans_b`, no `trans_a`, no `accumulate`). M = 1 runs a GEMV kernel,
/// in the column layout on a CPU implementation ([`GpuContext::cpu_device`]).
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_f16w<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    w: PackedW<'a>,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    if desc.accumulate {
        return Err(shape_error(
            "matmul_f16w",
            format!("only the linear forward layout is supported, got {desc:?}"),
        ));
    }
    // For one row, the layout the decoder runs on this device (the gate's
    // M = 1 case checks the kernel that will serve tokens).
    let layout = RowFusion {
        columns: desc.m == 1 && ctx.cpu_device,
        ..RowFusion::default()
    };
    bind(ctx, registry, desc, a, w, bias, layout, c, desc.m == 1)
}

/// Packed-half weights: `W (N, K)` from half `offset` of `buffer`, and the
/// test-only kernel fault to run them with.
#[derive(Clone, Copy, Debug)]
pub struct PackedW<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u32,
    pub fault: Option<Fault>,
    /// Multiply in f16 compute (`f16c.rs`) where M > 1.
    pub compute: bool,
}

impl<'a> PackedW<'a> {
    /// The real kernel's operand from half `offset` of `buffer`.
    pub fn at(buffer: &'a wgpu::Buffer, offset: u32) -> Self {
        Self {
            buffer,
            offset,
            fault: None,
            compute: false,
        }
    }

    /// The same operand for the f16-compute kernel.
    pub fn computing(self, compute: bool) -> Self {
        Self { compute, ..self }
    }
}

/// Binds the f16-storage GEMV `c (N) = a (K) · Wᵀ [+ bias] [+ c]` (`desc`:
/// a linear layout, `accumulate` allowed) with `fusion` around it: the
/// decoder's fused linears. M > 1 rows run side by side, each giving the
/// bits it gives alone (`gemv_grid`).
#[allow(clippy::too_many_arguments)]
pub fn bind_gemv_f16w<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    w: PackedW<'a>,
    bias: Option<View<'a>>,
    fusion: RowFusion<'a>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    if desc.m == 0 {
        return Err(shape_error(
            "matmul_f16w",
            format!("a GEMV needs M ≥ 1, got {desc:?}"),
        ));
    }
    bind(ctx, registry, desc, a, w, bias, fusion, c, true)
}

#[allow(clippy::too_many_arguments)]
fn bind<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    w: PackedW<'a>,
    bias: Option<View<'a>>,
    fusion: RowFusion<'a>,
    c: impl Into<View<'a>>,
    gemv: bool,
) -> Result<BoundKernel, GpuError> {
    let (a, c) = (a.into(), c.into());
    let (w_packed, w_off) = (w.buffer, w.offset);
    if desc.trans_a || !desc.trans_b {
        return Err(shape_error(
            "matmul_f16w",
            format!("only the linear forward layout is supported, got {desc:?}"),
        ));
    }
    check_operands("matmul_f16w", &desc, a, (None, w_packed), bias, c)?;
    let halves = w_off as u64 + desc.n as u64 * desc.k as u64;
    if w_packed.size() < halves.div_ceil(2) * 4 {
        return Err(shape_error(
            "matmul_f16w",
            format!(
                "packed W holds {} bytes but halves [{w_off}, {halves}) need {}",
                w_packed.size(),
                halves.div_ceil(2) * 4
            ),
        ));
    }
    fusion.check_layout(ctx, "matmul_f16w")?;
    fusion.check_slots("matmul_f16w", &desc, a)?;
    let (ln, ln_w, ln_b) = fusion.layernorm_binding("matmul_f16w", desc.k, a.buffer, c.buffer)?;
    let kernel = if !gemv && w.compute {
        super::f16c::refuse(ctx)?;
        match desc.uses_large_tiles() {
            true => Kernel::TiledF16Large,
            false => Kernel::TiledF16,
        }
    } else if !gemv {
        Kernel::Tiled
    } else if fusion.columns {
        Kernel::GemvColumns
    } else if [w_off, desc.k, a.offset]
        .iter()
        .all(|x| x.is_multiple_of(4))
    {
        Kernel::GemvQuads
    } else {
        Kernel::GemvAny
    };
    // An unused bias binding still needs a buffer: A is read-only, so reuse it.
    let bias = bias.unwrap_or(a);
    let aligned = w_off.is_multiple_of(2) && desc.k.is_multiple_of(2);
    let more_flags = if aligned { W_ALIGNED } else { 0 } | fusion.flags();
    let offsets = [a.offset, w_off, bias.offset, c.offset];
    let mut params = desc.params(offsets, [ln_w, ln_b], more_flags);
    let groups = match kernel {
        Kernel::GemvQuads | Kernel::GemvAny => ln_column_groups(&desc, fusion),
        _ => 1,
    };
    params.aux = [fusion.groups_word(groups), fusion.subgroup_word()];
    let uniform = params.upload(ctx, "matmul_f16w_params");
    // Each entry point binds exactly what it reads: the aligned GEMV reads
    // W and A as vectors, and A as f32 only for a LayerNorm.
    let ln_fused = fusion.layernorm.is_some();
    let src = kernel_for(w.fault, kernel, ln_fused, fusion.subgroups.is_some());
    let mut buffers = vec![(3, bias.buffer), (4, c.buffer)];
    match kernel {
        Kernel::Tiled
        | Kernel::TiledF16
        | Kernel::TiledF16Large
        | Kernel::GemvAny
        | Kernel::GemvColumns => buffers.extend([(1, a.buffer), (2, w_packed)]),
        Kernel::GemvQuads if ln_fused => buffers.extend([(1, a.buffer), (6, w_packed)]),
        Kernel::GemvQuads => buffers.extend([(6, w_packed), (7, a.buffer)]),
    }
    if ln_fused {
        buffers.push((5, ln));
    }
    let workgroups = match kernel {
        Kernel::Tiled | Kernel::TiledF16 => {
            let tile = crate::ops::matmul::MATMUL_TILE;
            [desc.n.div_ceil(tile), desc.m.div_ceil(tile), 1]
        }
        Kernel::TiledF16Large => {
            let tile = crate::ops::matmul::MATMUL_TILE_LARGE;
            [desc.n.div_ceil(tile), desc.m.div_ceil(tile), 1]
        }
        Kernel::GemvQuads | Kernel::GemvAny => {
            gemv_grid(ctx, "matmul_f16w", &desc, GEMV_COLUMNS * groups)?
        }
        Kernel::GemvColumns => gemv_grid(ctx, "matmul_f16w", &desc, GEMV_COLUMNS_CPU)?,
    };
    // The lane-layout GEMVs with K as a constant (`KC`, gemv_row.wgsl).
    let shape: &[(&str, u32)] = match kernel {
        Kernel::GemvQuads | Kernel::GemvAny => &[("KC", desc.k)],
        _ => &[],
    };
    Ok(bind_kernel_shaped(
        ctx,
        registry,
        (src, shape),
        &uniform,
        &buffers,
        workgroups,
    ))
}

/// Binds the packing of `n` f32 elements of `src` (from its view offset)
/// into `dst` as `ceil(n / 2)` words; `fault` = truncation selects the
/// round-toward-zero test variant.
pub fn bind_pack_f16<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    fault: Option<Fault>,
    src: impl Into<View<'a>>,
    n: u32,
    dst: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let src = src.into();
    src.need("pack_f16", "src", n as u64)?;
    let words = packed_words(n as usize) as u32;
    if dst.size() < words as u64 * 4 {
        return Err(GpuError::Shape {
            op: "pack_f16",
            detail: format!("dst holds {} bytes, {} needed", dst.size(), words * 4),
        });
    }
    #[cfg(feature = "fault-injection")]
    let kernel = if Fault::truncates(fault) {
        &PACK_F16_TRUNC
    } else {
        &PACK_F16
    };
    #[cfg(not(feature = "fault-injection"))]
    let kernel = {
        let _ = fault;
        &PACK_F16
    };
    let uniform = ctx.uniform(
        "pack_f16_params",
        bytemuck::cast_slice(&[n, src.offset, words, 0u32]),
    );
    let buffers = [(1, src.buffer), (2, dst)];
    let workgroups = grid(ctx, words.div_ceil(PACK_THREADS));
    Ok(bind_kernel(
        ctx, registry, kernel, &uniform, &buffers, workgroups,
    ))
}

/// Binds the count of the halves of `cache` (words packed from the first
/// `n` elements of `src`) that differ from `src` packed now, added into
/// `mismatches[0]` (a u32 the caller zeroes first).
pub fn bind_f16_fresh_check(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    src: &wgpu::Buffer,
    n: u32,
    cache: &wgpu::Buffer,
    mismatches: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    View::from(src).need("f16_fresh_check", "src", n as u64)?;
    let words = packed_words(n as usize) as u32;
    if cache.size() < words as u64 * 4 || mismatches.size() < 4 {
        return Err(shape_error(
            "f16_fresh_check",
            format!("cache holds {} bytes, {} needed", cache.size(), words * 4),
        ));
    }
    let uniform = ctx.uniform(
        "f16_fresh_params",
        bytemuck::cast_slice(&[n, words, 0u32, 0]),
    );
    let buffers = [(1, src), (2, cache), (3, mismatches)];
    let groups = grid(ctx, words.div_ceil(PACK_THREADS));
    Ok(bind_kernel(
        ctx, registry, &F16_FRESH, &uniform, &buffers, groups,
    ))
}

/// One half by round-to-nearest-even (`half`), or toward zero for the
/// truncation fault.
pub fn half_bits(x: f32, fault: Option<Fault>) -> u16 {
    let h = half::f16::from_f32(x);
    if Fault::truncates(fault) && !x.is_nan() && h.to_f32().abs() > x.abs() {
        return h.to_bits() - 1;
    }
    h.to_bits()
}

/// Packs on the CPU exactly as the shader lays words out.
pub fn pack_cpu(src: &[f32], fault: Option<Fault>) -> Vec<u32> {
    src.chunks(2)
        .map(|p| {
            let lo = half_bits(p[0], fault) as u32;
            let hi = p.get(1).map_or(0, |&x| half_bits(x, fault)) as u32;
            lo | hi << 16
        })
        .collect()
}
