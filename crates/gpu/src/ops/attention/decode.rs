//! The KV-cache decode step of sampling: one query per sample at one
//! position, its keys and values appended to the layer's cache first.

use super::shape::{head_size, need, scale};
use crate::kernel::BoundKernel;
use crate::ops::ahead::Ahead;
use crate::ops::common::{bind_kernel_shaped, shape_error};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// attention_decode.wgsl with its reductions through workgroup memory
/// (and its loads ahead, `l2_ahead.wgsl`).
const DECODE_WGSL: &str = concat!(
    include_str!("../../../../../shaders/attention_decode.wgsl"),
    include_str!("../../../../../shaders/attention_decode_common.wgsl"),
    include_str!("../../../../../shaders/reduce_wg.wgsl"),
    include_str!("../../../../../shaders/l2_ahead.wgsl")
);

pub const ATTENTION_DECODE: KernelSource = KernelSource {
    key: "attention_decode",
    wgsl: DECODE_WGSL,
    entry: "main",
    constants: &[],
};

/// [`ATTENTION_DECODE`] reducing with subgroup shuffles
/// (`shaders/reduce_sg.wgsl`: the same bits; [`bind_attention_decode`]'s
/// `subgroups`).
pub const ATTENTION_DECODE_SG: KernelSource = KernelSource {
    key: "attention_decode_sg",
    wgsl: concat!(
        include_str!("../../../../../shaders/attention_decode.wgsl"),
        include_str!("../../../../../shaders/attention_decode_common.wgsl"),
        include_str!("../../../../../shaders/reduce_sg.wgsl"),
        include_str!("../../../../../shaders/l2_ahead.wgsl")
    ),
    entry: "main",
    constants: &[],
};

/// [`ATTENTION_DECODE`] with one invocation per head and no barrier: for
/// CPU implementations of WebGPU ([`bind_attention_decode`]'s `serial`).
pub const ATTENTION_DECODE_SERIAL: KernelSource = KernelSource {
    key: "attention_decode_serial",
    wgsl: DECODE_WGSL,
    entry: "main_serial",
    constants: &[],
};

/// Bytes of the decode-position uniform (`vec4<u32>`, the position in `x`)
/// that the decode attention and embedding read and the decoder fills.
pub(crate) const POSITION_BYTES: u64 = 16;

/// One layer's decode attention with a cache of `t_max` positions for each
/// of `batch` samples decoded together (one query each, at one position).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeDesc {
    pub c: u32,
    pub nh: u32,
    pub t_max: u32,
    pub batch: u32,
}

impl Default for DecodeDesc {
    fn default() -> Self {
        Self {
            c: 0,
            nh: 0,
            t_max: 0,
            batch: 1,
        }
    }
}

impl DecodeDesc {
    /// Elements of one cache (`K` or `V`): `(B, NH, T_max, HS)`, i.e.
    /// `B·T_max·C`.
    pub fn cache_len(&self) -> u64 {
        self.batch as u64 * self.t_max as u64 * self.c as u64
    }

    fn validate(&self, ctx: &GpuContext) -> Result<u32, GpuError> {
        let hs = head_size(self.c, self.nh)?;
        let max = ctx.limits.max_compute_workgroups_per_dimension;
        if self.t_max == 0 || self.nh > max || self.batch == 0 || self.batch > max {
            return Err(shape_error(
                "attention",
                format!(
                    "{self:?}: T_max and the batch must be ≥ 1, NH and the batch at most {max}"
                ),
            ));
        }
        Ok(hs)
    }

    /// The kernel's params; `sg`: the subgroup size of the subgroup
    /// form, else 0.
    pub(super) fn uniform_bytes(&self, hs: u32, sg: u32) -> [u8; 32] {
        bytemuck::cast([
            self.c,
            self.nh,
            hs,
            self.t_max,
            scale(hs).to_bits(),
            sg,
            0,
            0,
        ])
    }

    /// Checks the shape, the position uniform and the caches; returns HS.
    pub(super) fn check(
        &self,
        ctx: &GpuContext,
        position: &wgpu::Buffer,
        cache: &KvCache,
    ) -> Result<u32, GpuError> {
        let hs = self.validate(ctx)?;
        if position.size() < POSITION_BYTES {
            return Err(shape_error(
                "attention",
                format!(
                    "the position uniform holds {} bytes, needs {POSITION_BYTES}",
                    position.size()
                ),
            ));
        }
        need(&cache.k, self.cache_len(), "K cache", self)?;
        need(&cache.v, self.cache_len(), "V cache", self)?;
        Ok(hs)
    }

    /// Elements of `n` rows of `width · C` each, one per sample.
    pub(super) fn rows(&self, width: u32) -> u64 {
        width as u64 * self.c as u64 * self.batch as u64
    }
}

/// One layer's key and value caches, a block of `T_max·HS` words per head
/// (and sample) in each: V is `(NH, T_max, HS)`, head `h`'s position `p`
/// at `(h·T_max + p)·HS`; K the same for the serial kernel, and transposed
/// within each head's block for the 256-invocation one (dim `i` of position
/// `p` at `h·T_max·HS + i·T_max + p`: its scores read neighbouring words).
/// A cache is written and read by one kernel layout only (the decoder's).
pub struct KvCache {
    pub k: wgpu::Buffer,
    pub v: wgpu::Buffer,
}

impl KvCache {
    pub fn new(ctx: &GpuContext, desc: DecodeDesc) -> Result<Self, GpuError> {
        let len = desc.cache_len() as usize;
        Ok(Self {
            k: ctx.zeros("attention_k_cache", len)?,
            v: ctx.zeros("attention_v_cache", len)?,
        })
    }
}

/// The decode position: a 16-byte uniform (`vec4<u32>`, position in `x`)
/// that every layer's append and decode kernels share. Set it with
/// [`set_decode_position`] before each token: one 4-byte write, no
/// rebinding. It is also a storage buffer, so that a step's pick can write
/// the next step's position (`ops::argmax`).
pub fn decode_position_buffer(ctx: &GpuContext) -> wgpu::Buffer {
    use wgpu::BufferUsages as U;
    ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("attention_decode_position"),
        size: POSITION_BYTES,
        usage: U::UNIFORM | U::STORAGE | U::COPY_DST | U::COPY_SRC,
        mapped_at_creation: false,
    })
}

/// Queues the write of position `p` (the index of the token being decoded).
pub fn set_decode_position(
    ctx: &GpuContext,
    position: &wgpu::Buffer,
    desc: DecodeDesc,
    p: u32,
) -> Result<(), GpuError> {
    if p >= desc.t_max {
        return Err(shape_error(
            "attention",
            format!("decode position {p} is past the cache ({desc:?})"),
        ));
    }
    ctx.queue.write_buffer(position, 0, &p.to_le_bytes());
    Ok(())
}

/// Binds the attention of the query in `qkv` (one `(3C)` row per sample)
/// over cache positions `0..=p`, writing the `(C)` output rows to `out`;
/// the kernel first appends each row's keys and values to its sample's
/// `cache` at position `p`.
/// `serial` runs one invocation per head without barriers (CPU
/// implementations), else 256 per head, reducing with subgroup shuffles of
/// the given size when `subgroups` is set (the same bits).
#[allow(clippy::too_many_arguments)]
pub fn bind_attention_decode(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    kind: (bool, Option<u32>),
    desc: DecodeDesc,
    position: &wgpu::Buffer,
    qkv: &wgpu::Buffer,
    cache: &KvCache,
    out: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let io = (position, qkv, cache, out);
    bind_attention_decode_ahead(ctx, registry, kind, desc, io, None)
}

/// [`bind_attention_decode`], and where `ahead` is given (and the kernel
/// is not the serial one), workgroups past the heads that load its ranges
/// into L2 for the kernels after it (`ops::ahead`): the same results.
pub fn bind_attention_decode_ahead(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (serial, subgroups): (bool, Option<u32>),
    desc: DecodeDesc,
    (position, qkv, cache, out): (&wgpu::Buffer, &wgpu::Buffer, &KvCache, &wgpu::Buffer),
    ahead: Option<Ahead<'_>>,
) -> Result<BoundKernel, GpuError> {
    let hs = desc.check(ctx, position, cache)?;
    need(qkv, desc.rows(3), "qkv rows", &desc)?;
    need(out, desc.rows(1), "out rows", &desc)?;
    let src = match (serial, subgroups) {
        (true, Some(_)) => {
            return Err(shape_error(
                "attention",
                "the serial decode attention has no reductions to run on subgroups".into(),
            ))
        }
        (true, None) => &ATTENTION_DECODE_SERIAL,
        (false, Some(n)) => {
            check_subgroups(ctx, n)?;
            &ATTENTION_DECODE_SG
        }
        (false, None) => &ATTENTION_DECODE,
    };
    let sg = subgroups.unwrap_or(0);
    let uniform = ctx.uniform("attention_decode_params", &desc.uniform_bytes(hs, sg));
    let mut buffers = vec![
        (1, position),
        (2, qkv),
        (3, &cache.k),
        (4, &cache.v),
        (5, out),
    ];
    let mut groups = 0;
    let ahead_uniform;
    if !serial {
        // No loads ahead: no workgroups for them, `qkv` bound in their place.
        let ahead = ahead.unwrap_or(Ahead {
            buffer: qkv,
            ranges: [(0, 0); 4],
        });
        ahead.check("attention")?;
        groups = ahead.groups();
        let max = ctx.limits.max_compute_workgroups_per_dimension;
        if desc.nh as u64 + groups as u64 > max as u64 {
            groups = max - desc.nh;
        }
        ahead_uniform = ctx.uniform("attention_decode_ahead", &ahead.uniform_bytes(groups));
        buffers.extend([(6, &ahead_uniform), (7, ahead.buffer)]);
    }
    // The 256-invocation kernels with the head size as a constant (a
    // pipeline per head size: `HS_C` in attention_decode_common.wgsl).
    let shape: &[(&str, u32)] = if serial { &[] } else { &[("HS_C", hs)] };
    Ok(bind_kernel_shaped(
        ctx,
        registry,
        (src, shape),
        &uniform,
        &buffers,
        [desc.nh + groups, desc.batch, 1],
    ))
}

/// Refuses subgroup reductions on a device without subgroups, or of a size
/// the shuffles do not run.
pub(super) fn check_subgroups(ctx: &GpuContext, n: u32) -> Result<(), GpuError> {
    if !ctx.features.contains(wgpu::Features::SUBGROUP) {
        return Err(shape_error(
            "attention",
            "subgroup reductions on a device without subgroup operations".into(),
        ));
    }
    if !crate::context::subgroup_size_supported(n) {
        return Err(shape_error(
            "attention",
            format!("subgroups of {n} lanes: the shuffles need a power of two from 4 to 128"),
        ));
    }
    Ok(())
}
