//! Compute pipelines, created once and looked up by a readable key that is
//! also the wgpu label (`matmul_f32`), so a GPU trace names what it runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};

/// The checks wgpu compiles into every shader (its `ShaderRuntimeChecks`)
/// and the workgroup memory it zeroes before each workgroup runs. The
/// engine's kernels are its own: each writes its workgroup memory before
/// reading it, indexes within its arrays and ends its loops, and the tests
/// hold each to its reference. So natively pipelines are built without
/// them ([`ShaderChecks::engine_default`]; run 91 in BENCHMARKS.md: the
/// loop counters alone cost `tiny` a tenth of its decoding speed); `tinygpt
/// --shader-checks full` (or `TINYGPT_SHADER_CHECKS=full` for the tests)
/// builds them with all. On the web the browser compiles its own checks in
/// whatever wgpu asks, so there they stay on.
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

    /// What pipelines are built with unless [`set_engine_default`] said
    /// otherwise: [`ShaderChecks::NONE`] natively, [`ShaderChecks::FULL`]
    /// on the web.
    pub fn engine_default() -> ShaderChecks {
        match ENGINE_CHECKS.load(Ordering::Relaxed) {
            UNSET if cfg!(target_arch = "wasm32") => ShaderChecks::FULL,
            UNSET => ShaderChecks::NONE,
            bits => ShaderChecks::from_bits(bits),
        }
    }

    fn bits(self) -> u8 {
        u8::from(self.bounds)
            | u8::from(self.loop_bounding) << 1
            | u8::from(self.int_div) << 2
            | u8::from(self.zero_workgroup_memory) << 3
    }

    fn from_bits(b: u8) -> ShaderChecks {
        ShaderChecks {
            bounds: b & 1 != 0,
            loop_bounding: b & 2 != 0,
            int_div: b & 4 != 0,
            zero_workgroup_memory: b & 8 != 0,
        }
    }

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

const UNSET: u8 = 0xff;
static ENGINE_CHECKS: AtomicU8 = AtomicU8::new(UNSET);

/// Makes every context opened from now on build its pipelines with
/// `checks` (the CLI's `--shader-checks`).
pub fn set_engine_default(checks: ShaderChecks) {
    ENGINE_CHECKS.store(checks.bits(), Ordering::Relaxed);
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

/// Shape constants of one pipeline: `override`s that a kernel reads instead
/// of its uniform's fields where they are set (a dimension known when the
/// pipeline is compiled lets the driver unroll the loops over it and issue
/// their loads at once), by name; each distinct set is a pipeline of its own.
pub type Shape<'a> = &'a [(&'static str, u32)];

/// A pipeline's key in the registry: the source's key and its shape.
type PipelineKey = (&'static str, Vec<(&'static str, u32)>);

/// Every pipeline the engine has compiled, by key and shape constants.
#[derive(Default)]
pub struct PipelineRegistry {
    pipelines: HashMap<PipelineKey, (wgpu::ComputePipeline, Compiled)>,
}

/// What one pipeline was compiled from: its source, entry point, every
/// constant it was given (the source's and its shape's) and the checks
/// (`PipelineRegistry::compiled`; `tinygpt bench --profile
/// --pipeline-stats` compiles them again to read the driver's statistics).
#[derive(Clone, Debug)]
pub struct Compiled {
    pub key: &'static str,
    pub wgsl: &'static str,
    pub entry: &'static str,
    pub constants: Vec<(&'static str, f64)>,
    pub checks: ShaderChecks,
}

impl Compiled {
    /// `src` with its own constants alone (no shape), built with `checks`.
    pub fn of(src: &KernelSource, checks: ShaderChecks) -> Compiled {
        let (key, wgsl, entry) = (src.key, src.wgsl, src.entry);
        let constants = src.constants.to_vec();
        Compiled {
            key,
            wgsl,
            entry,
            constants,
            checks,
        }
    }
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
        self.get_shaped(device, checks, src, &[])
    }

    /// The pipeline for `src` with the shape constants `shape` (on top of
    /// `src.constants`), compiled on first use and reused after.
    pub fn get_shaped(
        &mut self,
        device: &wgpu::Device,
        checks: ShaderChecks,
        src: &KernelSource,
        shape: Shape<'_>,
    ) -> wgpu::ComputePipeline {
        self.pipelines
            .entry((src.key, shape.to_vec()))
            .or_insert_with(|| {
                let mut compiled = Compiled::of(src, checks);
                let shape = shape.iter().map(|&(name, v)| (name, f64::from(v)));
                compiled.constants.extend(shape);
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
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(src.key),
                    layout: None,
                    module: &module,
                    entry_point: Some(src.entry),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants: &compiled.constants,
                        zero_initialize_workgroup_memory: checks.zero_workgroup_memory,
                    },
                    cache: None,
                });
                (pipeline, compiled)
            })
            .0
            .clone()
    }

    /// What every pipeline compiled so far was compiled from, by key.
    pub fn compiled(&self) -> Vec<Compiled> {
        let mut all: Vec<Compiled> = self.pipelines.values().map(|(_, c)| c.clone()).collect();
        let order = |c: &Compiled| {
            (
                c.key,
                c.constants
                    .iter()
                    .map(|&(n, v)| (n, v.to_bits()))
                    .collect::<Vec<_>>(),
            )
        };
        all.sort_by_key(order);
        all
    }

    /// Number of distinct pipelines compiled so far.
    pub fn len(&self) -> usize {
        self.pipelines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pipelines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::ShaderChecks;

    #[test]
    fn checks_parse_by_name_and_refuse_unknown_words() {
        assert_eq!(ShaderChecks::parse("full"), Ok(ShaderChecks::FULL));
        assert_eq!(ShaderChecks::parse("none"), Ok(ShaderChecks::NONE));
        let c = ShaderChecks::parse("loops, zero").unwrap();
        assert!(c.bounds && c.int_div && !c.loop_bounding && !c.zero_workgroup_memory);
        assert_eq!(
            ShaderChecks::parse("bounds,loops,div,zero"),
            Ok(ShaderChecks::NONE)
        );
        assert!(ShaderChecks::parse("loop").unwrap_err().contains("`loop`"));
        for c in [ShaderChecks::FULL, ShaderChecks::NONE, c] {
            assert_eq!(ShaderChecks::from_bits(c.bits()), c);
        }
    }
}
