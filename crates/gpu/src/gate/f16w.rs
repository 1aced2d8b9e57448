//! The f16-storage kernels: the linear forward reading packed-half weights
//! (`shaders/matmul_f16w.wgsl`) and the f32 → f16 packer
//! (`shaders/pack_f16.wgsl`), plus the CPU packer used where the GPU's
//! conversion is not round-to-nearest-even.

use super::Fault;
use crate::kernel::{bind_group, BoundKernel};
use crate::matmul::MatmulDesc;
use crate::ops::View;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

const MATMUL_WGSL: &str = include_str!("../../../../shaders/matmul_f16w.wgsl");
const PACK_WGSL: &str = include_str!("../../../../shaders/pack_f16.wgsl");

const fn matmul(key: &'static str, entry: &'static str) -> KernelSource {
    KernelSource {
        key,
        wgsl: MATMUL_WGSL,
        entry,
    }
}

pub const MATMUL_F16W: KernelSource = matmul("matmul_f16w_64x64_k16", "main");
pub const GEMV_F16W: KernelSource = matmul("gemv_f16w_64", "gemv");
const MATMUL_F16W_F16ACC: KernelSource = matmul("matmul_f16w_fault_f16acc", "main_fault_f16acc");
const MATMUL_F16W_DROPTAIL: KernelSource =
    matmul("matmul_f16w_fault_droptail", "main_fault_droptail");
const GEMV_F16W_F16ACC: KernelSource = matmul("gemv_f16w_fault_f16acc", "gemv_fault_f16acc");
const GEMV_F16W_DROPTAIL: KernelSource = matmul("gemv_f16w_fault_droptail", "gemv_fault_droptail");

pub const PACK_F16: KernelSource = KernelSource {
    key: "pack_f16",
    wgsl: PACK_WGSL,
    entry: "main",
};
const PACK_F16_TRUNC: KernelSource = KernelSource {
    key: "pack_f16_fault_trunc",
    wgsl: PACK_WGSL,
    entry: "pack_trunc",
};

const HAS_BIAS: u32 = 4;
const W_ALIGNED: u32 = 16;
const PACK_THREADS: u32 = 256;

/// Words holding `n` halves.
pub fn packed_words(n: usize) -> usize {
    n.div_ceil(2)
}

fn kernel_for(fault: Option<Fault>, gemv: bool) -> &'static KernelSource {
    match (fault, gemv) {
        (Some(Fault::F16Accumulate), false) => &MATMUL_F16W_F16ACC,
        (Some(Fault::F16Accumulate), true) => &GEMV_F16W_F16ACC,
        (Some(Fault::DropKTail), false) => &MATMUL_F16W_DROPTAIL,
        (Some(Fault::DropKTail), true) => &GEMV_F16W_DROPTAIL,
        (_, false) => &MATMUL_F16W,
        (_, true) => &GEMV_F16W,
    }
}

/// Binds `C (M, N) = A (M, K) · Wᵀ [+ bias]` with `W (N, K)` read as halves
/// from `w_packed` starting at half `w_off`. `desc` must be a linear layout
/// (`trans_b`, no `trans_a`, no `accumulate`). M = 1 runs the GEMV kernel.
#[allow(clippy::too_many_arguments)]
pub fn bind_matmul_f16w<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    fault: Option<Fault>,
    desc: MatmulDesc,
    a: impl Into<View<'a>>,
    w_packed: &'a wgpu::Buffer,
    w_off: u32,
    bias: Option<View<'a>>,
    c: impl Into<View<'a>>,
) -> Result<BoundKernel, GpuError> {
    let (a, c) = (a.into(), c.into());
    let shape = |detail: String| GpuError::Shape {
        op: "matmul_f16w",
        detail,
    };
    if desc.trans_a || !desc.trans_b || desc.accumulate || desc.bias != bias.is_some() {
        return Err(shape(format!(
            "only the linear forward layout is supported, got {desc:?} with bias {}",
            bias.is_some()
        )));
    }
    a.need("matmul_f16w", "A", desc.m as u64 * desc.k as u64)?;
    c.need("matmul_f16w", "C", desc.m as u64 * desc.n as u64)?;
    let halves = w_off as u64 + desc.n as u64 * desc.k as u64;
    if w_packed.size() < halves.div_ceil(2) * 4 {
        return Err(shape(format!(
            "packed W holds {} bytes but halves [{w_off}, {halves}) need {}",
            w_packed.size(),
            halves.div_ceil(2) * 4
        )));
    }
    if let Some(bias) = &bias {
        bias.need("matmul_f16w", "bias", desc.n as u64)?;
    }
    if [Some(a), bias]
        .iter()
        .flatten()
        .any(|r| r.buffer == c.buffer)
        || w_packed == c.buffer
    {
        return Err(shape("C (written) shares a buffer with an operand".into()));
    }
    let gemv = desc.m == 1;
    let src = kernel_for(fault, gemv);
    let pipeline = registry.get(&ctx.device, src);
    let bias = bias.unwrap_or(a);
    let aligned = w_off.is_multiple_of(2) && desc.k.is_multiple_of(2);
    let flags = if desc.bias { HAS_BIAS } else { 0 } | if aligned { W_ALIGNED } else { 0 };
    let words = [
        desc.m,
        desc.k,
        desc.n,
        flags,
        a.offset,
        w_off,
        bias.offset,
        c.offset,
    ];
    let uniform = ctx.uniform("matmul_f16w_params", bytemuck::cast_slice(&words));
    let buffers = [&uniform, a.buffer, w_packed, bias.buffer, c.buffer];
    let bind_group = bind_group(&ctx.device, &pipeline, src.key, &buffers);
    let workgroups = if gemv {
        crate::ops::common::grid(ctx, desc.n)
    } else {
        let tile = crate::matmul::MATMUL_TILE;
        [desc.n.div_ceil(tile), desc.m.div_ceil(tile), 1]
    };
    Ok(BoundKernel {
        key: src.key,
        pipeline,
        bind_group,
        workgroups,
        _uniform: Some(uniform),
    })
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
    let kernel = if fault == Some(Fault::TruncatePack) {
        &PACK_F16_TRUNC
    } else {
        &PACK_F16
    };
    let pipeline = registry.get(&ctx.device, kernel);
    let uniform = ctx.uniform(
        "pack_f16_params",
        bytemuck::cast_slice(&[n, src.offset, words, 0u32]),
    );
    let bind_group = bind_group(
        &ctx.device,
        &pipeline,
        kernel.key,
        &[&uniform, src.buffer, dst],
    );
    Ok(BoundKernel {
        key: kernel.key,
        pipeline,
        bind_group,
        workgroups: crate::ops::common::grid(ctx, words.div_ceil(PACK_THREADS)),
        _uniform: Some(uniform),
    })
}

/// One half by round-to-nearest-even (`half`), or toward zero for the
/// truncation fault.
pub fn half_bits(x: f32, fault: Option<Fault>) -> u16 {
    let h = half::f16::from_f32(x);
    if fault == Some(Fault::TruncatePack) && !x.is_nan() && h.to_f32().abs() > x.abs() {
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
