//! What the element-wise, row and reduction ops share: operands as views
//! into larger buffers, size checks, uniforms, dispatch grids, and ops made
//! of several dispatches.
//!
//! Parameters and their gradients live in one flat buffer each (see
//! `tinygpt_core::ParamLayout`), so an op reads `ln1_w` of layer `l` as a
//! [`View`] at that tensor's element offset; the offset travels in the op's
//! uniform because storage-binding offsets must be 256-byte aligned.
//!
//! WebGPU forbids a buffer that a dispatch writes from also being one it
//! reads; two written operands may share a buffer (both `dw` and `db` in the
//! flat gradient buffer, say).

use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry, Shape};
use crate::{GpuContext, GpuError};

/// An operand: `buffer` from element `offset` on (f32 or u32 elements).
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    pub buffer: &'a wgpu::Buffer,
    /// Offset in 4-byte elements.
    pub offset: u32,
}

impl<'a> View<'a> {
    /// The operand starting at element `offset` of `buffer`.
    pub fn at(buffer: &'a wgpu::Buffer, offset: u32) -> Self {
        Self { buffer, offset }
    }

    /// Refuses the view unless `len` elements fit after its offset.
    pub(crate) fn need(&self, op: &'static str, name: &str, len: u64) -> Result<(), GpuError> {
        let end = (self.offset as u64 + len) * 4;
        if self.buffer.size() < end {
            return Err(GpuError::Shape {
                op,
                detail: format!(
                    "{name} holds {} bytes but elements [{}, {}) need {end}",
                    self.buffer.size(),
                    self.offset,
                    self.offset as u64 + len
                ),
            });
        }
        Ok(())
    }
}

impl<'a> From<&'a wgpu::Buffer> for View<'a> {
    fn from(buffer: &'a wgpu::Buffer) -> Self {
        Self { buffer, offset: 0 }
    }
}

/// Several dispatches that must run in this order, with the scratch buffers
/// only they use (kept alive as long as the op).
pub struct BoundOp {
    pub kernels: Vec<BoundKernel>,
    pub scratch: Vec<wgpu::Buffer>,
}

impl BoundOp {
    /// Records every dispatch into an open compute pass.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        for k in &self.kernels {
            k.record(pass);
        }
    }

    /// Records the op into one pass and submits it: for tests and one-offs.
    pub fn submit(&self, ctx: &GpuContext, label: &str) -> wgpu::SubmissionIndex {
        let kernels: Vec<&BoundKernel> = self.kernels.iter().collect();
        crate::kernel::submit(ctx, label, &kernels)
    }
}

impl From<BoundKernel> for BoundOp {
    fn from(kernel: BoundKernel) -> Self {
        Self {
            kernels: vec![kernel],
            scratch: Vec::new(),
        }
    }
}

/// A shape error of `op`.
pub(crate) fn shape_error(op: &'static str, detail: String) -> GpuError {
    GpuError::Shape { op, detail }
}

/// A `u32` count from a host size, or a shape error naming it.
pub(crate) fn to_u32(op: &'static str, what: &str, n: usize) -> Result<u32, GpuError> {
    u32::try_from(n).map_err(|_| shape_error(op, format!("{what} = {n} does not fit in u32")))
}

/// A uniform of 4-byte words (`u32`, or `f32` by `to_bits`), zero-padded to
/// the 16-byte multiple a WGSL uniform struct occupies.
pub(crate) fn uniform(ctx: &GpuContext, label: &str, words: &[u32]) -> wgpu::Buffer {
    let mut padded = words.to_vec();
    padded.resize(words.len().div_ceil(4).max(1) * 4, 0);
    ctx.uniform(label, bytemuck::cast_slice(&padded))
}

/// Workgroup counts for `groups` workgroups of a 1-D problem: `x` up to the
/// device limit, then rows of `y`. Shaders recover the flat index as
/// `wg.y * num_workgroups.x + wg.x` and skip indices past the end.
pub(crate) fn grid(ctx: &GpuContext, groups: u32) -> [u32; 3] {
    let max = ctx.limits.max_compute_workgroups_per_dimension.max(1);
    if groups <= max {
        [groups, 1, 1]
    } else {
        [max, groups.div_ceil(max), 1]
    }
}

/// Refuses a dispatch dimension the device cannot launch.
pub(crate) fn check_dim(
    ctx: &GpuContext,
    op: &'static str,
    what: &str,
    groups: u32,
) -> Result<(), GpuError> {
    let max = ctx.limits.max_compute_workgroups_per_dimension;
    if groups > max {
        return Err(shape_error(
            op,
            format!("{what} needs {groups} workgroups in one dimension; this GPU allows {max}"),
        ));
    }
    Ok(())
}

/// Compiles (once) the pipeline of `src` and binds `entries` — `(binding,
/// buffer)` pairs, binding 0 being `uniform` — into one dispatch.
pub(crate) fn bind_kernel(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    src: &KernelSource,
    uniform: &wgpu::Buffer,
    entries: &[(u32, &wgpu::Buffer)],
    workgroups: [u32; 3],
) -> BoundKernel {
    bind_kernel_shaped(ctx, registry, (src, &[]), uniform, entries, workgroups)
}

/// [`bind_kernel`] on the pipeline of `src` with shape constants
/// (`registry::Shape`: a pipeline per shape).
pub(crate) fn bind_kernel_shaped(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (src, shape): (&KernelSource, Shape<'_>),
    uniform: &wgpu::Buffer,
    entries: &[(u32, &wgpu::Buffer)],
    workgroups: [u32; 3],
) -> BoundKernel {
    let pipeline = registry.get_shaped(&ctx.device, ctx.shader_checks, src, shape);
    let entries: Vec<wgpu::BindGroupEntry<'_>> = std::iter::once((0, uniform))
        .chain(entries.iter().copied())
        .map(|(binding, b)| wgpu::BindGroupEntry {
            binding,
            resource: b.as_entire_binding(),
        })
        .collect();
    let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(src.key),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    BoundKernel {
        key: src.key,
        pipeline,
        bind_group,
        workgroups,
        _uniform: Some(uniform.clone()),
    }
}

/// Refuses a dispatch that would read a buffer it also writes (a WebGPU
/// validation error that would otherwise surface as a device error).
pub(crate) fn check_no_alias(
    op: &'static str,
    written: &[(&str, &wgpu::Buffer)],
    read: &[(&str, &wgpu::Buffer)],
) -> Result<(), GpuError> {
    for (w_name, w) in written {
        if let Some((r_name, _)) = read.iter().find(|(_, r)| r == w) {
            return Err(shape_error(
                op,
                format!("{w_name} (written) and {r_name} (read) share a buffer"),
            ));
        }
    }
    Ok(())
}
