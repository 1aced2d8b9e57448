//! Compute pipelines, created once and looked up by a readable key that is
//! also the wgpu label (`matmul_f32`), so a GPU trace names what it runs.

use std::collections::HashMap;

/// A WGSL source, the entry point of one pipeline and the values of its
/// pipeline-overridable constants: a variant of a kernel is the same
/// entry point with other constants (and a key of its own).
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// Registry key and wgpu label.
    pub key: &'static str,
    pub wgsl: &'static str,
    pub entry: &'static str,
    /// `override` constants by name; unnamed ones keep their defaults.
    pub constants: &'static [(&'static str, f64)],
}

/// Every pipeline the engine has compiled, by key.
#[derive(Default)]
pub struct PipelineRegistry {
    pipelines: HashMap<&'static str, wgpu::ComputePipeline>,
}

impl PipelineRegistry {
    /// The pipeline for `src`, compiled on first use and reused after.
    pub fn get(&mut self, device: &wgpu::Device, src: &KernelSource) -> wgpu::ComputePipeline {
        self.pipelines
            .entry(src.key)
            .or_insert_with(|| {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(src.key),
                    source: wgpu::ShaderSource::Wgsl(src.wgsl.into()),
                });
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(src.key),
                    layout: None,
                    module: &module,
                    entry_point: Some(src.entry),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: src.constants,
                        ..Default::default()
                    },
                    cache: None,
                })
            })
            .clone()
    }

    /// Number of distinct pipelines compiled so far.
    pub fn len(&self) -> usize {
        self.pipelines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pipelines.is_empty()
    }
}
