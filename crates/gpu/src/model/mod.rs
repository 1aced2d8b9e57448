//! `GpuModel`: the GPT of `tinygpt_core` trained and sampled on the GPU.
//!
//! Parameters, gradients and AdamW moments live in flat GPU buffers laid out
//! by [`ParamLayout`]; the tied head reads `tok_emb` directly. Every kernel is
//! bound once per batch shape; a training step is one submission (zero the
//! gradients, forward, backward, gradient norm, AdamW with the schedule and
//! clipping) and never waits on the CPU. The loss is read back only when
//! asked for.

mod acts;
mod builder;
mod decode;
mod f16_cache;
mod gpu_model;
mod graph;
mod stages;
mod train;

pub use acts::Acts;
pub use decode::{Decoder, DecoderKernels};
pub use f16_cache::F16WeightCache;
pub use gpu_model::{FastPaths, GpuModel, LinearInput};
pub use train::{StepLogRead, StepStats, STEP_LOG_CAPACITY};
