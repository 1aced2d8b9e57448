//! What a session can refuse or fail at.

use crate::GpuError;
use tinygpt_core::checkpoint::CheckpointError;
use tinygpt_core::data::DataError;
use tinygpt_core::model::ModelError;
use tinygpt_core::optim::OptimError;
use tinygpt_core::sample::SampleError;
use tinygpt_protocol::ConfigError;

/// Everything a session can refuse or fail at, as values.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Sample(#[from] SampleError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Optim(#[from] OptimError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("this run does not fit on this GPU: {0}")]
    TooBig(String),
    #[error("nothing to inspect: the text is empty")]
    EmptyText,
    #[error("this model has no training data: load a corpus to continue training it")]
    NoData,
    #[error("the corpus's characters ({corpus}) differ from the model's vocabulary ({model}); continue training on the corpus it was trained on")]
    VocabMismatch { corpus: usize, model: usize },
    #[error("training diverged at step {step} (loss {loss}, gradient norm {grad_norm}); that update was not applied")]
    NonFinite {
        step: usize,
        loss: f32,
        grad_norm: f32,
    },
}
