//! A kernel bound to its buffers once, recorded many times.
//!
//! Bind groups and uniforms are created when an op is bound, never in the
//! training loop; a step only records already-bound kernels into one pass.

use crate::GpuContext;

/// How a model's kernels lay out their work. A GPU runs many lanes that
/// share workgroup memory behind barriers fastest; a CPU implementation of
/// WebGPU (SwiftShader, lavapipe, WARP) runs a workgroup a few SIMD lanes
/// at a time and switches between them at every barrier, so it wants one
/// invocation per output cell or row with no workgroup memory and no
/// barrier. Each layout sums in its own fixed order: results differ in the
/// last bits, never run to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    #[default]
    Gpu,
    Cpu,
}

impl Layout {
    /// `Cpu` on a CPU implementation ([`GpuContext::cpu_device`]), `Gpu`
    /// on a GPU.
    pub fn for_device(ctx: &GpuContext) -> Self {
        if ctx.cpu_device {
            Self::Cpu
        } else {
            Self::Gpu
        }
    }
}

/// One dispatch, ready to record.
pub struct BoundKernel {
    /// Registry key of the pipeline, for traces and errors.
    pub key: &'static str,
    pub pipeline: wgpu::ComputePipeline,
    pub bind_group: wgpu::BindGroup,
    pub workgroups: [u32; 3],
    /// Keeps the op's uniform buffer alive as long as the bind group.
    pub _uniform: Option<wgpu::Buffer>,
}

impl BoundKernel {
    /// Records this dispatch into an open compute pass.
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        let [x, y, z] = self.workgroups;
        pass.dispatch_workgroups(x, y, z);
    }
}

/// Records `kernels` in order into one compute pass of `enc`.
pub fn record_pass(enc: &mut wgpu::CommandEncoder, label: &str, kernels: &[&BoundKernel]) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some(label),
        timestamp_writes: None,
    });
    for k in kernels {
        k.record(&mut pass);
    }
}

/// Records `kernels` into one compute pass of one command buffer and submits it.
pub fn submit(
    ctx: &crate::GpuContext,
    label: &str,
    kernels: &[&BoundKernel],
) -> wgpu::SubmissionIndex {
    let mut enc = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
    record_pass(&mut enc, label, kernels);
    ctx.queue.submit([enc.finish()])
}
