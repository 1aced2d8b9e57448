//! Errors of the GPU engine, as values with the facts needed to act on them.

/// Everything that can go wrong between asking for a GPU and reading a result.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found ({0}); on the web enable WebGPU (Chrome 113+, or chrome://flags/#enable-unsafe-webgpu), natively install a Vulkan/Metal/DX12 driver")]
    NoAdapter(String),
    #[error("the GPU refused to create a device: {0}")]
    RequestDevice(String),
    #[error("reading a GPU buffer back failed: {0}")]
    Readback(String),
    #[error("buffer '{label}' needs {bytes} bytes but this GPU allows at most {limit} per {what}")]
    TooLarge {
        label: String,
        bytes: u64,
        limit: u64,
        what: &'static str,
    },
    #[error("this GPU lacks the {feature} feature, needed for {needed_for}")]
    MissingFeature {
        feature: &'static str,
        needed_for: &'static str,
    },
    #[error("shape mismatch in {op}: {detail}")]
    Shape { op: &'static str, detail: String },
}
