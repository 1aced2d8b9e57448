//! The checkpoint's types and the rules every checkpoint obeys: the
//! metadata keys, the tensor-name prefixes, [`Checkpoint`] and its
//! in-memory validation, shared by the reader and the writer.

use std::collections::BTreeMap;

use tinygpt_protocol::{ModelConfig, TrainConfig};

use super::error::CheckpointError;
use crate::data::Vocab;
use crate::params::ParamLayout;

/// Value of the `format` metadata key.
pub const FORMAT: &str = "tinygpt";
/// Value of the `format_version` metadata key this build writes and reads.
pub const FORMAT_VERSION: &str = "1";
/// Largest header accepted (and written): bounds the JSON parsed from an
/// untrusted file. Keep `extra` well below it.
pub const MAX_HEADER_LEN: usize = 4 << 20;
/// Name prefix of the AdamW first-moment tensors.
pub const ADAM_M_PREFIX: &str = "adam_m.";
/// Name prefix of the AdamW second-moment tensors.
pub const ADAM_V_PREFIX: &str = "adam_v.";
/// Metadata key prefix of [`Checkpoint::extra`] entries.
pub const EXTRA_PREFIX: &str = "extra.";

pub(super) const REQUIRED_KEYS: [&str; 5] = ["format", "format_version", "config", "vocab", "step"];
pub(super) const OPTIONAL_KEYS: [&str; 2] = ["train_config", "adam_step"];

/// Element type of the parameter tensors (AdamW moments are always F32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightDtype {
    F32,
    /// IEEE half precision, rounded to nearest even: half the size, for
    /// sharing trained weights.
    F16,
}

/// AdamW state for exact resume; `m` and `v` follow the [`ParamLayout`].
#[derive(Clone, Debug, PartialEq)]
pub struct AdamMoments {
    /// First moments, one per parameter.
    pub m: Vec<f32>,
    /// Second moments, one per parameter, never negative.
    pub v: Vec<f32>,
    /// Optimiser steps taken (the bias-correction exponent).
    pub step: u64,
}

/// Everything a checkpoint file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub config: ModelConfig,
    /// Sorted unique characters; `vocab.len() == config.vocab_size`.
    pub vocab: Vec<char>,
    /// Training steps completed.
    pub step: u64,
    /// Flat parameters in [`ParamLayout`] order.
    pub params: Vec<f32>,
    pub adam: Option<AdamMoments>,
    pub train_config: Option<TrainConfig>,
    /// Free-form strings (e.g. JSON loss history, sampler RNG state), stored
    /// as metadata `extra.<key>`.
    pub extra: BTreeMap<String, String>,
}

impl Checkpoint {
    /// The parameter table of this checkpoint's config.
    pub fn layout(&self) -> ParamLayout {
        ParamLayout::new(&self.config)
    }

    /// The rules [`load`](super::load) enforces, checked on a checkpoint in memory:
    /// valid config, train config and vocabulary, lengths matching the
    /// layout, finite values and non-negative second moments.
    pub fn validate(&self) -> Result<(), CheckpointError> {
        let cfg = &self.config;
        cfg.validate()
            .map_err(|source| CheckpointError::InvalidConfig { source })?;
        check_vocab(cfg, self.vocab.clone())?;
        if let Some(train) = &self.train_config {
            train
                .validate(cfg)
                .map_err(|source| CheckpointError::InvalidTrainConfig { source })?;
        }
        let layout = self.layout();
        let check_len = |what, values: &[f32]| {
            if values.len() == layout.total {
                Ok(())
            } else {
                Err(CheckpointError::WrongLength {
                    what,
                    len: values.len(),
                    expected: layout.total,
                })
            }
        };
        check_len("params", &self.params)?;
        if let Some(adam) = &self.adam {
            check_len("adam.m", &adam.m)?;
            check_len("adam.v", &adam.v)?;
        }
        for spec in &layout.tensors {
            let name = spec.kind.name();
            check_finite(name, "", &self.params[spec.range()])?;
            if let Some(adam) = &self.adam {
                check_finite(name, ADAM_M_PREFIX, &adam.m[spec.range()])?;
                check_finite(name, ADAM_V_PREFIX, &adam.v[spec.range()])?;
                check_non_negative(name, &adam.v[spec.range()])?;
            }
        }
        Ok(())
    }
}

pub(super) fn check_vocab(cfg: &ModelConfig, chars: Vec<char>) -> Result<(), CheckpointError> {
    let vocab =
        Vocab::from_chars(chars).map_err(|source| CheckpointError::InvalidVocab { source })?;
    if vocab.len() != cfg.vocab_size {
        return Err(CheckpointError::VocabSizeMismatch {
            len: vocab.len(),
            vocab_size: cfg.vocab_size,
        });
    }
    Ok(())
}

pub(super) fn check_finite(
    name: &str,
    prefix: &str,
    values: &[f32],
) -> Result<(), CheckpointError> {
    match values.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(index) => Err(CheckpointError::NonFinite {
            name: format!("{prefix}{name}"),
            index,
            value: values[index],
        }),
    }
}

pub(super) fn check_non_negative(name: &str, v: &[f32]) -> Result<(), CheckpointError> {
    match v.iter().position(|&x| x < 0.0) {
        None => Ok(()),
        Some(index) => Err(CheckpointError::NegativeMoment {
            name: format!("{ADAM_V_PREFIX}{name}"),
            index,
            value: v[index],
        }),
    }
}

/// The element types this format stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dtype {
    F32,
    F16,
}

impl Dtype {
    pub(super) fn parse(s: &str) -> Option<Dtype> {
        match s {
            "F32" => Some(Dtype::F32),
            "F16" => Some(Dtype::F16),
            _ => None,
        }
    }

    /// The crate's dtype, if this format stores it.
    pub(super) fn from_crate(dtype: safetensors::Dtype) -> Option<Dtype> {
        match dtype {
            safetensors::Dtype::F32 => Some(Dtype::F32),
            safetensors::Dtype::F16 => Some(Dtype::F16),
            _ => None,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "F32",
            Dtype::F16 => "F16",
        }
    }

    pub(super) fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 => 2,
        }
    }
}
