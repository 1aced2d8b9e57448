//! The platform-free heart of TinyGPT-rs: the model definition, its CPU
//! reference forward/backward, data, sampling, the optimiser and checkpoints.
//! Everything here also builds for wasm32 (the worker's CPU fallback).

pub mod params;
pub mod rng;

pub use params::{ParamKind, ParamLayout, TensorSpec, PARAM_KINDS};
pub use rng::Rng;
pub use tinygpt_protocol::{ModelConfig, Preset, TrainConfig, PRESETS};
