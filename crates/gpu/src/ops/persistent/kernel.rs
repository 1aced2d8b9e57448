//! The persistent kernel on its own (`decode_persistent_main.wgsl`
//! appended): its sources, the shapes and devices it runs on, its binder.

use crate::kernel::BoundKernel;
use crate::ops::attention::{DecodeDesc, KvCache};
use crate::ops::common::{bind_kernel, check_no_alias, shape_error};
use crate::ops::matmul::{variants_with, Fault, VARIANTS};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_core::ParamKind;

/// The kernel's source at a width (its constants file `$width`), with the
/// files `$tail` (paths from this folder) appended: its entry point's.
macro_rules! persistent_source {
    ($width:literal $(, $tail:literal)*) => {
        concat!(
            include_str!("../../../../../shaders/decode_persistent.wgsl"),
            include_str!("../../../../../shaders/decode_persistent_attend.wgsl"),
            include_str!("../../../../../shaders/erf.wgsl"),
            include_str!("../../../../../shaders/f16_round.wgsl"),
            include_str!(concat!("../../../../../shaders/", $width))
            $(, include_str!($tail))*
        )
    };
}
pub(crate) use persistent_source;

/// A source's variants: f32 weights (`$key`), then packed halves
/// (`$key` with `_f16w`) — the kernel, then (with fault injection) its
/// test-only faults (`_f16acc`, `_droptail`; the shader's `FAULT`).
macro_rules! variants {
    ($key:literal, $wgsl:expr) => {
        PersistentSources {
            f32: KernelSource {
                key: $key,
                wgsl: $wgsl,
                entry: "main",
                constants: &[],
            },
            halves: variants_with(
                [
                    concat!($key, "_f16w"),
                    concat!($key, "_f16w_f16acc"),
                    concat!($key, "_f16w_droptail"),
                ],
                "main",
                $wgsl,
                HALF_W,
            ),
        }
    };
}
pub(crate) use variants;

/// One source of the kernel in its weights' variants.
pub struct PersistentSources {
    /// The linears' weights f32.
    pub f32: KernelSource,
    /// Packed halves (the f16 weight cache), by [`Fault::kernel_index`].
    pub halves: [KernelSource; VARIANTS],
}

impl PersistentSources {
    /// The variant for f32 weights (`None`), or for packed halves read
    /// under the cache's test-only `fault`.
    pub fn get(&self, halves: Option<Option<Fault>>) -> &KernelSource {
        match halves {
            None => &self.f32,
            Some(fault) => &self.halves[Fault::kernel_index(fault)],
        }
    }

    /// Every variant.
    pub fn all(&self) -> impl Iterator<Item = &KernelSource> {
        std::iter::once(&self.f32).chain(&self.halves)
    }
}

/// The packed-halves kernel's constants by [`Fault::kernel_index`].
pub(crate) const HALF_W: [&[(&str, f64)]; 3] = [
    &[("HALF_W", 1.0)],
    &[("HALF_W", 1.0), ("FAULT", 1.0)],
    &[("HALF_W", 1.0), ("FAULT", 2.0)],
];

/// The kernel's sources by width ([`PersistentWidth`] as an index), each
/// in its weights' variants.
pub const DECODE_PERSISTENT: [PersistentSources; 2] = [
    variants!(
        "decode_persistent",
        persistent_source!(
            "decode_persistent_wg256.wgsl",
            "../../../../../shaders/decode_persistent_main.wgsl"
        )
    ),
    variants!(
        "decode_persistent_wide",
        persistent_source!(
            "decode_persistent_wide.wgsl",
            "../../../../../shaders/decode_persistent_main.wgsl"
        )
    ),
];

/// The kernel's workgroup: 256 invocations (every WebGPU device's), or
/// [`PERSISTENT_WIDE_INVOCATIONS`] where the device offers them and
/// [`PERSISTENT_WIDE_BYTES`] of workgroup memory ([`persistent_wide_offered`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistentWidth {
    Narrow = 0,
    Wide = 1,
}

/// Invocations of the wide kernel's workgroup.
pub const PERSISTENT_WIDE_INVOCATIONS: u32 = 512;
/// Workgroup memory the wide kernel uses (`tests/shaders.rs` counts it).
pub const PERSISTENT_WIDE_BYTES: u32 = 16_512;

/// Whether a device of `limits` runs the wide kernel.
pub fn persistent_wide_offered(limits: &wgpu::Limits) -> bool {
    limits.max_compute_invocations_per_workgroup >= PERSISTENT_WIDE_INVOCATIONS
        && limits.max_compute_workgroup_size_x >= PERSISTENT_WIDE_INVOCATIONS
        && limits.max_compute_workgroup_storage_size >= PERSISTENT_WIDE_BYTES
}

/// The widest row the kernel's workgroup holds (`CMAX`).
pub const PERSISTENT_MAX_C: u32 = 256;
/// Heads the kernel's attention runs at once (32 lanes each).
pub const PERSISTENT_MAX_HEADS: u32 = 8;
/// Scores the kernel holds: heads × positions.
pub const PERSISTENT_MAX_SCORES: u32 = 1024;

/// Whether a model of `desc`'s shape fits the kernel's workgroup: C at
/// most [`PERSISTENT_MAX_C`], C and the head size multiples of 4, at most
/// [`PERSISTENT_MAX_HEADS`] heads and [`PERSISTENT_MAX_SCORES`] heads ×
/// positions.
pub fn persistent_fits(desc: &DecodeDesc) -> bool {
    let (c, nh) = (desc.c, desc.nh);
    nh > 0
        && c.is_multiple_of(nh)
        && c <= PERSISTENT_MAX_C
        && c.is_multiple_of(4)
        && (c / nh).is_multiple_of(4)
        && nh <= PERSISTENT_MAX_HEADS
        && nh as u64 * desc.t_max as u64 <= PERSISTENT_MAX_SCORES as u64
}

/// The kernel's caches: one buffer each (K, V) for every layer and sample,
/// head `h` of sample `b` in layer `l` at `((l·B + b)·NH + h)·T_max·HS`.
pub fn persistent_cache(
    ctx: &GpuContext,
    desc: DecodeDesc,
    n_layer: u32,
) -> Result<KvCache, GpuError> {
    KvCache::new(
        ctx,
        DecodeDesc {
            batch: desc.batch * n_layer,
            ..desc
        },
    )
}

/// What the kernel reads of the model: the flat f32 parameters (`offset`
/// gives layer 0's element offset of a parameter), and the linears'
/// weights as packed halves of the same layout when f16 storage is on.
pub struct PersistentWeights<'a> {
    pub flat: &'a wgpu::Buffer,
    pub offset: &'a dyn Fn(ParamKind) -> u32,
    pub halves: Option<&'a wgpu::Buffer>,
    /// The halves' test-only kernel fault (the f16 weight cache's).
    pub fault: Option<Fault>,
    pub n_layer: u32,
    pub vocab: u32,
}

impl PersistentWeights<'_> {
    /// Which of a source's variants reads these weights
    /// ([`PersistentSources::get`]).
    pub(crate) fn variant(&self) -> Option<Option<Fault>> {
        self.halves.map(|_| self.fault)
    }

    /// The params' words: the shape, then each parameter's offset.
    fn words(&self, desc: &DecodeDesc) -> Result<[u32; 24], GpuError> {
        use ParamKind::*;
        let hs = desc.c / desc.nh;
        let kinds = [
            Ln1W, Ln1B, QkvW, QkvB, AttnProjW, AttnProjB, Ln2W, Ln2B, FcW, FcB, FcProjW, FcProjB,
            LnfW, LnfB, TokEmb,
        ];
        let mut w = [0u32; 24];
        w[..8].copy_from_slice(&[
            desc.c,
            desc.nh,
            hs,
            desc.t_max,
            self.vocab,
            self.n_layer,
            (1.0 / (hs as f32).sqrt()).to_bits(),
            0,
        ]);
        for (i, k) in kinds.into_iter().enumerate() {
            let at = (self.offset)(k);
            if !at.is_multiple_of(4) {
                return Err(shape_error(
                    "decode_persistent",
                    format!("{k:?} at element {at}: the kernel reads weights as vec4s"),
                ));
            }
            w[8 + i] = at;
        }
        Ok(w)
    }
}

/// Binds a token step of `desc.batch` samples at `width`: from each
/// sample's input row `x` (C) through every block (the token's keys and
/// values appended to `cache`, a [`persistent_cache`], at the position) to
/// its logits (V) in `logits`. Refuses a shape that does not
/// [`persistent_fits`], and the wide kernel where the device does not
/// offer it.
pub fn bind_decode_persistent(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (desc, width): (DecodeDesc, PersistentWidth),
    position: &wgpu::Buffer,
    weights: &PersistentWeights<'_>,
    cache: &KvCache,
    (x, logits): (&wgpu::Buffer, &wgpu::Buffer),
) -> Result<BoundKernel, GpuError> {
    let io = (x, logits);
    let (uniform, mut buffers) = checked(ctx, (desc, width), weights, cache, io, &[])?;
    buffers.extend([(1, position), (8, logits)]);
    let src = DECODE_PERSISTENT[width as usize].get(weights.variant());
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &uniform,
        &buffers,
        [1, desc.batch, 1],
    ))
}

/// A kernel's storage bindings: (binding, buffer).
type Bindings<'a> = Vec<(u32, &'a wgpu::Buffer)>;

/// Checks a step's shape, width and buffers (none of `written` aliasing
/// what the kernel reads), and returns its uniform and the bindings both
/// entry points share (2–7: the weights, the caches, the input rows).
pub(super) fn checked<'a>(
    ctx: &GpuContext,
    (desc, width): (DecodeDesc, PersistentWidth),
    weights: &PersistentWeights<'a>,
    cache: &'a KvCache,
    (x, logits): (&'a wgpu::Buffer, &'a wgpu::Buffer),
    written: &[(&'static str, &wgpu::Buffer)],
) -> Result<(wgpu::Buffer, Bindings<'a>), GpuError> {
    if !persistent_fits(&desc) || desc.batch == 0 {
        return Err(shape_error(
            "decode_persistent",
            format!("{desc:?} does not fit one workgroup (C ≤ {PERSISTENT_MAX_C}, C and HS multiples of 4, NH ≤ {PERSISTENT_MAX_HEADS}, NH·T_max ≤ {PERSISTENT_MAX_SCORES})"),
        ));
    }
    if width == PersistentWidth::Wide && !persistent_wide_offered(&ctx.limits) {
        return Err(shape_error(
            "decode_persistent",
            format!("the wide kernel needs {PERSISTENT_WIDE_INVOCATIONS} invocations and {PERSISTENT_WIDE_BYTES} bytes of workgroup memory; this device offers {} and {}", ctx.limits.max_compute_invocations_per_workgroup, ctx.limits.max_compute_workgroup_storage_size),
        ));
    }
    let words = weights.words(&desc)?;
    let (rows, c) = (desc.batch as u64, desc.c as u64);
    let cache_len = weights.n_layer as u64 * desc.cache_len() * 4;
    let sizes = [
        (x, rows * c * 4, "input rows"),
        (logits, rows * weights.vocab as u64 * 4, "logits"),
        (&cache.k, cache_len, "K cache"),
        (&cache.v, cache_len, "V cache"),
    ];
    if let Some((_, need, what)) = sizes.iter().find(|(b, need, _)| b.size() < *need) {
        return Err(shape_error(
            "decode_persistent",
            format!("the {what} need {need} bytes"),
        ));
    }
    let halves = weights.halves.unwrap_or(weights.flat);
    let mut all_written = vec![
        ("K cache", &cache.k),
        ("V cache", &cache.v),
        ("logits", logits),
    ];
    all_written.extend(written.iter().copied());
    let read = [
        ("input rows", x),
        ("weights", weights.flat),
        ("halves", halves),
    ];
    check_no_alias("decode_persistent", &all_written, &read)?;
    let uniform = ctx.uniform("decode_persistent", bytemuck::cast_slice(&words));
    let buffers = vec![
        (2, weights.flat),
        (3, weights.flat),
        (4, halves),
        (5, &cache.k),
        (6, &cache.v),
        (7, x),
    ];
    Ok((uniform, buffers))
}
