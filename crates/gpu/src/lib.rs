//! The wgpu engine of TinyGPT-rs: device context, pipeline registry,
//! kernels (WGSL in `shaders/`), and the start-up kernel check.
//!
//! The same code runs natively (Vulkan, Metal, DX12) and in the browser's
//! worker (WebGPU). Every test gets its device from [`testing`].

pub mod buffers;
pub mod context;
pub mod engine;
pub mod error;
pub mod kernel;
pub mod model;
#[cfg(not(target_arch = "wasm32"))]
pub mod pipeline_stats;
pub mod profile;
pub mod registry;
pub mod smoke;
#[cfg(not(target_arch = "wasm32"))]
pub mod testing;

pub use context::GpuContext;
pub use error::GpuError;
pub use kernel::BoundKernel;
pub use registry::{Compiled, KernelSource, PipelineRegistry, ShaderChecks};
pub mod gate;
pub mod ops;
