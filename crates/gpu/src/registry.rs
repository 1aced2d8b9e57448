//! Compute pipelines, created once and looked up by a readable key that is
//! also the wgpu label (`matmul_f32`), so a GPU trace names what it runs.

use std::collections::HashMap;

/// The checks wgpu compiles into every shader (its `ShaderRuntimeChecks`)
/// and the workgroup memory it zeroes before each workgroup runs: all on by
/// default. Natively a pipeline can be built without them (`tinygpt bench
/// --shader-checks`); every kernel here writes its workgroup memory before
/// reading it and indexes within its arrays (the tests hold each to its
/// reference on the checked build). On the web the browser checks anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaderChecks {
    /// Indices into workgroup and private arrays clamped to their length.
    pub bounds: bool,
    /// A counter in every loop that ends it after 2⁶⁴ trips.
    pub loop_bounding: bool,
    /// Integer division and remainder guarded against a zero divisor.
    pub int_div: bool,
    /// Workgroup memory zeroed before the workgroup starts.
    pub zero_workgroup_memory: bool,
}

impl ShaderChecks {
    /// wgpu's defaults.
    pub const FULL: ShaderChecks = ShaderChecks {
        bounds: true,
        loop_bounding: true,
        int_div: true,
        zero_workgroup_memory: true,
    };
    /// None of them.
    pub const NONE: ShaderChecks = ShaderChecks {
        bounds: false,
        loop_bounding: false,
        int_div: false,
        zero_workgroup_memory: false,
    };

    /// `full`, `none`, or a comma list of the checks to leave out of
    /// `full`: `bounds`, `loops`, `div`, `zero`.
    pub fn parse(s: &str) -> Result<ShaderChecks, String> {
        match s {
            "full" => return Ok(ShaderChecks::FULL),
            "none" => return Ok(ShaderChecks::NONE),
            _ => {}
        }
        let mut c = ShaderChecks::FULL;
        for part in s.split(',') {
            match part.trim() {
                "bounds" => c.bounds = false,
                "loops" => c.loop_bounding = false,
                "div" => c.int_div = false,
                "zero" => c.zero_workgroup_memory = false,
                other => {
                    return Err(format!(
                        "unknown shader check `{other}`: `full`, `none`, or checks to leave out (bounds, loops, div, zero)"
                    ))
                }
            }
        }
        Ok(c)
    }

    fn runtime(self) -> wgpu::ShaderRuntimeChecks {
        let mut r = wgpu::ShaderRuntimeChecks::checked();
        r.bounds_checks = self.bounds;
        r.force_loop_bounding = self.loop_bounding;
        r.int_div_checks = self.int_div;
        r
    }
}

impl Default for ShaderChecks {
    fn default() -> Self {
        ShaderChecks::FULL
    }
}

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
    /// `checks`: what wgpu compiles into it (the first call's stay).
    pub fn get(
        &mut self,
        device: &wgpu::Device,
        checks: ShaderChecks,
        src: &KernelSource,
    ) -> wgpu::ComputePipeline {
        self.pipelines
            .entry(src.key)
            .or_insert_with(|| {
                let desc = wgpu::ShaderModuleDescriptor {
                    label: Some(src.key),
                    source: wgpu::ShaderSource::Wgsl(src.wgsl.into()),
                };
                let module = if checks == ShaderChecks::FULL {
                    device.create_shader_module(desc)
                } else {
                    // SAFETY: the engine's own kernels, which index within
                    // their arrays and end every loop (ShaderChecks); their
                    // tests hold each to its reference.
                    unsafe { device.create_shader_module_trusted(desc, checks.runtime()) }
                };
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(src.key),
                    layout: None,
                    module: &module,
                    entry_point: Some(src.entry),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: src.constants,
                        zero_initialize_workgroup_memory: checks.zero_workgroup_memory,
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
