//! The adapter a GPU report names, as the worker reads it.

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

impl AdapterDesc {
    /// Whether the adapter names a CPU implementation of the API
    /// (SwiftShader, lavapipe/llvmpipe, WARP), for when the API does not say
    /// so itself (on the web `GPUAdapterInfo.isFallbackAdapter` is not
    /// always set for them).
    pub fn names_cpu_implementation(&self) -> bool {
        let names = [
            &self.vendor,
            &self.architecture,
            &self.device,
            &self.description,
        ];
        names.iter().any(|s| {
            let s = s.to_ascii_lowercase();
            [
                "swiftshader",
                "llvmpipe",
                "lavapipe",
                "microsoft basic render",
            ]
            .iter()
            .any(|cpu| s.contains(cpu))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_implementations_are_recognised_by_name_and_gpus_are_not() {
        let desc = |vendor: &str, architecture: &str, device: &str| AdapterDesc {
            vendor: vendor.into(),
            architecture: architecture.into(),
            device: device.into(),
            ..Default::default()
        };
        // Chrome's SwiftShader, Mesa's lavapipe as wgpu names it, WARP.
        assert!(desc("google", "swiftshader", "").names_cpu_implementation());
        assert!(desc("mesa", "", "llvmpipe (LLVM 15.0.6, 256 bits)").names_cpu_implementation());
        assert!(desc("", "", "Microsoft Basic Render Driver").names_cpu_implementation());
        assert!(!desc("nvidia", "hopper", "NVIDIA H200").names_cpu_implementation());
        assert!(!desc("apple", "metal-3", "").names_cpu_implementation());
        assert!(!AdapterDesc::default().names_cpu_implementation());
    }
}
