//! Checkpoints: a model (and optionally its AdamW state) as one
//! [safetensors](https://github.com/huggingface/safetensors) file.
//!
//! One tensor per [`ParamKind`](crate::params::ParamKind), named and shaped as in `params.rs` (stacked
//! over layers, linear weights `(out, in)`), so PyTorch or numpy read it
//! directly. The string metadata carries the config and the vocabulary, so a
//! checkpoint of any shape loads as the model it was saved from. The full
//! format is specified in `docs/checkpoint.md`.
//!
//! Saving is deterministic: the same checkpoint gives the same bytes (the
//! header is written here in a fixed order; the `safetensors` crate's writer
//! orders metadata by a randomly seeded hash map). Loading trusts nothing:
//! see [`load`].

mod container;
mod error;
mod format;
mod read;
mod write;

pub use error::CheckpointError;
pub use format::{
    AdamMoments, Checkpoint, WeightDtype, ADAM_M_PREFIX, ADAM_V_PREFIX, EXTRA_PREFIX, FORMAT,
    FORMAT_VERSION, MAX_HEADER_LEN,
};
pub use read::load;
pub use write::save;

#[cfg(test)]
mod tests;
