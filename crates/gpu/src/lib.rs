//! wgpu engine.
