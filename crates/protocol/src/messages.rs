//! Messages between the UI (main thread) and the worker that owns the GPU.
//!
//! Both directions are serde enums tagged by `type` in snake_case, so the
//! wire form of [`WorkerOutput::GpuCaps`] is `{"type": "gpu_caps", ...}`.
//! Errors travel as values ([`WorkerOutput::Error`]) and are shown by the UI.

use serde::{Deserialize, Serialize};

/// What the adapter reports about itself. On the web wgpu leaves vendor and
/// architecture empty, so the worker reads `GPUAdapterInfo` from JS.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdapterDesc {
    pub vendor: String,
    pub architecture: String,
    pub device: String,
    pub description: String,
    /// wgpu backend name (`vulkan`, `metal`, `dx12`, `browser_webgpu`).
    pub backend: String,
}

/// Capabilities detected on the adapter. Detection is not activation: a fast
/// path also needs its gate to pass (see [`ActivePaths`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DetectedFeatures {
    /// WGSL `enable f16;` is available (wgpu `SHADER_F16`).
    pub shader_f16: bool,
    /// Timestamp queries (wgpu `TIMESTAMP_QUERY`).
    pub timestamp_query: bool,
    /// Subgroup operations. On the web wgpu cannot see them, so this is read
    /// from the JS adapter's feature set.
    pub subgroups: bool,
    /// `navigator.ml` exists (WebNN).
    pub webnn: bool,
}

/// The limits that size what this GPU can train, as granted to our device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
}

/// Fast paths whose gate has passed; only these get activation pills.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActivePaths {
    /// `+f16 storage`: forward matmuls read f16-packed weights.
    pub f16_storage: bool,
}

/// Result of the start-up kernel check (an f32 matmul against a CPU loop).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelCheck {
    /// Pipeline label of the kernel checked.
    pub kernel: String,
    /// `[M, K, N]`.
    pub shape: [u32; 3],
    pub max_abs_err: f32,
    pub tolerance: f32,
    pub passed: bool,
    pub millis: f64,
}

/// Everything the UI shows in its capability pills.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuCaps {
    /// A WebGPU (or native wgpu) device is up.
    pub webgpu: bool,
    /// Why there is no GPU, and what the user can do about it.
    pub unavailable_reason: Option<String>,
    pub adapter: AdapterDesc,
    pub features: DetectedFeatures,
    pub limits: GpuLimits,
    pub kernel_check: Option<KernelCheck>,
    pub active: ActivePaths,
}

/// Messages the UI sends to the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerInput {
    /// Ask the worker to (re)send its `gpu_caps`.
    QueryCaps,
}

/// Severity of a log line forwarded to the UI and the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

/// Messages the worker sends to the UI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerOutput {
    /// The worker's wasm is running and listening.
    Ready,
    /// Detected capabilities, active fast paths and the start-up check.
    GpuCaps(GpuCaps),
    /// One line for the status bar.
    Status { text: String },
    /// A line for the console and the UI log.
    Log { level: LogLevel, text: String },
    /// A failure, sent as a value; `context` says what was being done.
    Error { context: String, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_snake_case_tags() {
        let caps = WorkerOutput::GpuCaps(GpuCaps::default());
        let json = serde_json::to_string(&caps).unwrap();
        assert!(json.starts_with(r#"{"type":"gpu_caps""#), "{json}");
        let back: WorkerOutput = serde_json::from_str(&json).unwrap();
        assert_eq!(back, caps);
        let q = serde_json::to_string(&WorkerInput::QueryCaps).unwrap();
        assert_eq!(q, r#"{"type":"query_caps"}"#);
    }
}
