//! The device context: one adapter, one device, one queue, and what they can do.

use crate::registry::ShaderChecks;
use crate::GpuError;
use tinygpt_protocol::{AdapterDesc, DetectedFeatures, GpuLimits};

/// Optional features we use when the adapter offers them; never required.
fn wanted_features() -> wgpu::Features {
    let mut f = wgpu::Features::SHADER_F16 | wgpu::Features::TIMESTAMP_QUERY;
    if cfg!(not(target_arch = "wasm32")) {
        f |= wgpu::Features::SUBGROUP
            | wgpu::Features::SUBGROUP_BARRIER
            | wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
    }
    f
}

/// Workgroup memory of the tiled cooperative-matrix kernel
/// (`shaders/matmul_coop_tiled.wgsl`: its K block's tiles, twice in its
/// two-buffer forms, and the epilogue's scratch), in bytes: 47 KiB.
const COOP_WORKGROUP_BYTES: u32 = 2 * 9472 * 2 + 2560 * 4;

/// Storage buffers a stage the tensor-core path's pipelines may bind, past
/// WebGPU's default 8: the fused residual LayerNorm writing its output's
/// f16 copy binds 9 (`ops::layernorm::LAYERNORM_RESIDUAL_COPY16`).
pub const COOP_PATH_STORAGE_BUFFERS: u32 = 9;

/// The tensor-core attention kernels' workgroup memory at most (the
/// backward's, `shaders/attention_coop_bwd_common.wgsl`: 7,168 halves and
/// 4,224 floats; the forward's 25,600 bytes; dK/dV's `DS_TILE` pipelines,
/// bound only where the device offers more, 36,352).
const COOP_ATTENTION_BYTES: u32 = 7168 * 2 + 4224 * 4;

/// Whether the cooperative-matrix matmuls (`shaders/matmul_coop*.wgsl`) can
/// run: the adapter multiplies 16×16×16 f16 matrices into f32, its
/// subgroups are exactly 32 wide (each lane writes every 32nd element of a
/// tile; a subgroup barrier orders its epilogue) and its workgroups hold
/// the tiled kernel's 256 invocations and workgroup memory.
fn coop_matrix_usable(
    adapter: &wgpu::Adapter,
    info: &wgpu::AdapterInfo,
    features: wgpu::Features,
) -> bool {
    let needs = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SUBGROUP_BARRIER
        | wgpu::Features::SHADER_F16;
    if !features.contains(needs) || info.subgroup_min_size != 32 || info.subgroup_max_size != 32 {
        return false;
    }
    let limits = adapter.limits();
    if limits.max_compute_workgroup_storage_size < COOP_WORKGROUP_BYTES
        || limits.max_compute_invocations_per_workgroup < 256
        || limits.max_storage_buffers_per_shader_stage < COOP_PATH_STORAGE_BUFFERS
    {
        return false;
    }
    offers_16x16x16(adapter)
}

/// Whether the adapter offers 16×16×16 f16 → f32 cooperative matrices.
fn offers_16x16x16(adapter: &wgpu::Adapter) -> bool {
    use wgpu::CooperativeScalarType::{F16, F32};
    adapter.cooperative_matrix_properties().iter().any(|p| {
        (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == F16 && p.cr_type == F32
    })
}

/// Whether the tensor-core attention kernels (`ops::attention::coop`) can
/// run on a device of these facts that offers (`offered`) 16×16×16 f16 →
/// f32 cooperative matrices: subgroups of one width from 8 to 64 (a
/// workgroup is four of them) and the kernels' workgroup memory.
pub fn coop_attention_runs(
    info: &wgpu::AdapterInfo,
    features: wgpu::Features,
    limits: &wgpu::Limits,
    offered: bool,
) -> bool {
    let needs = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        | wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_F16;
    let w = info.subgroup_min_size;
    offered
        && features.contains(needs)
        && w == info.subgroup_max_size
        && w.is_power_of_two()
        && (8..=64).contains(&w)
        && limits.max_compute_invocations_per_workgroup >= 4 * w
        && limits.max_compute_workgroup_storage_size >= COOP_ATTENTION_BYTES
}

/// Whether the subgroup sums of the decoder's kernels
/// (`shaders/lanes_sg.wgsl`, `shaders/reduce_sg.wgsl`) run on subgroups of
/// `n` lanes: a power of two from 4 to 128 (levels 1 … n/2 apart are
/// shuffles, those further apart go through workgroup memory).
pub fn subgroup_size_supported(n: u32) -> bool {
    n.is_power_of_two() && (4..=128).contains(&n)
}

/// A wgpu device with its queue and the facts the engine sizes itself by.
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub features: wgpu::Features,
    pub limits: wgpu::Limits,
    /// Bytes of storage buffers created through this context so far.
    pub allocated: std::sync::atomic::AtomicU64,
    /// The adapter is a CPU implementation of the API (lavapipe, SwiftShader,
    /// WARP): there a workgroup and a barrier cost far more than on a GPU,
    /// so the decoder runs kernels without barriers or repeated work (see
    /// [`crate::model::DecoderKernels`]). wgpu's device type natively;
    /// on the web the worker sets it from `GPUAdapterInfo`.
    pub cpu_device: bool,
    /// The cooperative-matrix matmul can run here (native only: 16×16×16
    /// f16 → f32 and 32-wide subgroups; see `ops::matmul::coop`).
    pub coop_matrix: bool,
    /// The tensor-core attention can run here (native only;
    /// [`coop_attention_runs`]).
    pub coop_attention: bool,
    /// What wgpu compiles into the pipelines built from now on
    /// ([`ShaderChecks::engine_default`] when the device opens).
    pub shader_checks: ShaderChecks,
}

impl GpuContext {
    /// Picks the best adapter and opens a device with the adapter's own limits
    /// (wgpu's defaults cap storage bindings at 128 MiB) and the optional
    /// features it offers.
    pub async fn new() -> Result<Self, GpuError> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = if cfg!(target_arch = "wasm32") {
            wgpu::Backends::BROWSER_WEBGPU
        } else {
            wgpu::Backends::PRIMARY
        };
        let instance = wgpu::Instance::new(desc);
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        Self::from_adapter(adapter).await
    }

    /// Opens a device on a given adapter (the injection seam for tests and
    /// for the CLI's adapter choice).
    pub async fn from_adapter(adapter: wgpu::Adapter) -> Result<Self, GpuError> {
        let info = adapter.get_info();
        let features = adapter.features() & wanted_features();
        let limits = adapter.limits();
        let coop_matrix = coop_matrix_usable(&adapter, &info, features);
        let coop_attention =
            coop_attention_runs(&info, features, &limits, offers_16x16x16(&adapter));
        let experimental = if features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX) {
            // SAFETY: only the cooperative-matrix feature is experimental
            // here; its one kernel is validated by naga in CI
            // (tests/shaders.rs) and checked against the f32 matmul before
            // use (tests/matmul_coop.rs, the lever's gate).
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        };
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("tinygpt"),
                required_features: features,
                required_limits: limits.clone(),
                experimental_features: experimental,
                memory_hints: wgpu::MemoryHints::Performance,
                trace: wgpu::Trace::Off,
            })
            .await
            .map_err(|e| GpuError::RequestDevice(e.to_string()))?;
        Ok(Self {
            cpu_device: info.device_type == wgpu::DeviceType::Cpu,
            coop_matrix,
            coop_attention,
            shader_checks: ShaderChecks::engine_default(),
            device,
            queue,
            info,
            features,
            limits,
            allocated: Default::default(),
        })
    }

    /// Adapter facts as wgpu reports them (empty vendor strings on the web:
    /// the worker fills those from `GPUAdapterInfo`).
    pub fn adapter_desc(&self) -> AdapterDesc {
        AdapterDesc {
            vendor: match self.info.vendor {
                0 => String::new(),
                0x10de => "nvidia".into(),
                0x1002 => "amd".into(),
                0x8086 => "intel".into(),
                0x106b => "apple".into(),
                0x10005 => "mesa".into(),
                v => format!("0x{v:04x}"),
            },
            architecture: String::new(),
            device: self.info.name.clone(),
            description: self.info.driver_info.clone(),
            backend: self.info.backend.to_string(),
        }
    }

    /// The adapter's one subgroup size, where it offers subgroups of one
    /// size that the GEMVs' subgroup sums run on
    /// ([`subgroup_size_supported`]); else why not.
    pub fn subgroup_size(&self) -> Result<u32, &'static str> {
        let (min, max) = (self.info.subgroup_min_size, self.info.subgroup_max_size);
        if !self.features.contains(wgpu::Features::SUBGROUP) {
            Err(if cfg!(target_arch = "wasm32") {
                "subgroups are native only: wgpu 30's WebGPU backend does not offer them"
            } else {
                "the adapter offers no subgroup operations"
            })
        } else if min != max {
            Err("the adapter's subgroup size varies (the shuffles need one size)")
        } else if !subgroup_size_supported(min) {
            Err("the adapter's subgroup size is not a power of two from 4 to 128")
        } else {
            Ok(min)
        }
    }

    /// Features as the capability pills show them. `subgroups` and `webnn`
    /// cannot be seen through wgpu on the web; the worker overrides them.
    pub fn detected_features(&self) -> DetectedFeatures {
        DetectedFeatures {
            shader_f16: self.features.contains(wgpu::Features::SHADER_F16),
            timestamp_query: self.features.contains(wgpu::Features::TIMESTAMP_QUERY),
            subgroups: self.features.contains(wgpu::Features::SUBGROUP),
            coop_matrix: self.coop_matrix,
            ..Default::default()
        }
    }

    pub fn gpu_limits(&self) -> GpuLimits {
        GpuLimits {
            max_storage_buffer_binding_size: self.limits.max_storage_buffer_binding_size,
            max_buffer_size: self.limits.max_buffer_size,
            max_compute_workgroup_storage_size: self.limits.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: self
                .limits
                .max_compute_invocations_per_workgroup,
        }
    }
}
