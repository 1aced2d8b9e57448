//! The platform-free heart of TinyGPT-rs: the model definition, its CPU
//! reference forward/backward, data, sampling, the optimiser and checkpoints.
//! Everything here also builds for wasm32 (the worker's CPU fallback).

pub mod checkpoint;
pub mod data;
pub mod model;
pub mod numerics;
pub mod optim;
pub mod params;
pub mod rng;
pub mod sample;

pub use checkpoint::{AdamMoments, Checkpoint, CheckpointError, WeightDtype};
pub use data::{Batch, BatchSampler, DataError, Dataset, Vocab};
pub use model::{init_params, Activations, Gpt, ModelError};
pub use optim::{clip_grad_norm, grad_norm, lr_at, AdamW, OptimError};
pub use params::{ParamKind, ParamLayout, TensorSpec, PARAM_KINDS};
pub use rng::Rng;
pub use sample::{SampleError, SampleParams, Sampler};
pub use tinygpt_protocol::{ModelConfig, Preset, TrainConfig, PRESETS};
