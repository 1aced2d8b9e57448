//! Model and training configuration, and the preset table.
//!
//! Shape legend used across the project: `B` batch, `T` time (context),
//! `C` channels (d_model), `V` vocabulary, `L` layers, `NH` heads.

use serde::{Deserialize, Serialize};

/// Largest vocabulary a character-level model accepts. A corpus with more
/// distinct characters than this is almost certainly not text.
pub const MAX_VOCAB: usize = 512;

/// Largest corpus the playground accepts (its tokens take four times this
/// in the worker's 32-bit wasm memory).
pub const MAX_CORPUS_BYTES: usize = 64 << 20;

/// The architecture of one GPT: everything needed to size its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// `V`: number of distinct characters (the tied head's output width).
    pub vocab_size: usize,
    /// `T_max`: longest context the learned position table covers.
    pub block_size: usize,
    /// `L`: number of transformer blocks.
    pub n_layer: usize,
    /// `NH`: attention heads per block; must divide `d_model`.
    pub n_head: usize,
    /// `C`: width of the residual stream.
    pub d_model: usize,
}

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{field} must be at least {min} (got {value})")]
    TooSmall {
        field: &'static str,
        value: usize,
        min: usize,
    },
    #[error("{field} must be at most {max} (got {value})")]
    TooLarge {
        field: &'static str,
        value: usize,
        max: usize,
    },
    #[error("n_head ({n_head}) must divide d_model ({d_model})")]
    HeadsDoNotDivide { n_head: usize, d_model: usize },
    #[error("{field} must be a finite number in {range} (got {value})")]
    OutOfRange {
        field: &'static str,
        value: f64,
        range: &'static str,
    },
    #[error("unknown preset '{0}' (known: nano, tiny, small, nanogpt, large)")]
    UnknownPreset(String),
}

fn check_range(
    field: &'static str,
    value: usize,
    min: usize,
    max: usize,
) -> Result<(), ConfigError> {
    if value < min {
        return Err(ConfigError::TooSmall { field, value, min });
    }
    if value > max {
        return Err(ConfigError::TooLarge { field, value, max });
    }
    Ok(())
}

impl ModelConfig {
    /// Refuses shapes the engine cannot run or that are surely a typo.
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_range("vocab_size", self.vocab_size, 2, MAX_VOCAB)?;
        check_range("block_size", self.block_size, 1, 4096)?;
        check_range("n_layer", self.n_layer, 1, 64)?;
        check_range("n_head", self.n_head, 1, 64)?;
        check_range("d_model", self.d_model, 1, 4096)?;
        if !self.d_model.is_multiple_of(self.n_head) {
            return Err(ConfigError::HeadsDoNotDivide {
                n_head: self.n_head,
                d_model: self.d_model,
            });
        }
        Ok(())
    }

    /// `HS`: channels per head.
    pub fn head_size(&self) -> usize {
        self.d_model / self.n_head
    }

    /// Parameters of one transformer block: two LayerNorms, QKV, the output
    /// projection and the 4·C MLP, all with biases.
    pub fn params_per_layer(&self) -> usize {
        let c = self.d_model;
        let ln = 2 * c;
        let qkv = 3 * c * c + 3 * c;
        let proj = c * c + c;
        let fc = 4 * c * c + 4 * c;
        let fc_proj = 4 * c * c + c;
        2 * ln + qkv + proj + fc + fc_proj
    }

    /// Total trainable parameters (the tied head adds none).
    pub fn num_params(&self) -> usize {
        let c = self.d_model;
        self.vocab_size * c + self.block_size * c + self.n_layer * self.params_per_layer() + 2 * c
    }
}

/// Optimiser, schedule and batching: everything a training run needs beyond
/// the architecture.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// `B`: sequences per step.
    pub batch_size: usize,
    /// `T`: tokens per sequence (≤ the model's `block_size`).
    pub seq_len: usize,
    /// Total optimiser steps of the run.
    pub steps: usize,
    /// Peak learning rate, reached at the end of warm-up.
    pub lr: f32,
    /// Floor of the cosine decay, as a learning rate.
    pub min_lr: f32,
    /// Linear warm-up steps from 0 to `lr`.
    pub warmup_steps: usize,
    /// AdamW β1.
    pub beta1: f32,
    /// AdamW β2 (0.99 as nanoGPT uses for small character models).
    pub beta2: f32,
    /// AdamW ε.
    pub eps: f32,
    /// Decoupled weight decay, applied to matrices and embeddings only.
    pub weight_decay: f32,
    /// Global gradient-norm clip; 0 disables clipping.
    pub grad_clip: f32,
    /// Evaluate validation loss every this many steps (0: never).
    pub eval_interval: usize,
    /// Batches averaged per validation estimate.
    pub eval_batches: usize,
    /// Seed of the parameter init, the batch sampler and the dropout masks.
    pub seed: u64,
    /// Dropout rate on the embedding output and on each residual branch
    /// (attention and MLP projections) while training; 0 turns it off.
    /// Evaluation and sampling never drop. Absent in older checkpoints and
    /// messages: 0.
    #[serde(default)]
    pub dropout: f32,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            batch_size: 16,
            seq_len: 64,
            steps: 2000,
            lr: 1e-3,
            min_lr: 1e-4,
            warmup_steps: 100,
            beta1: 0.9,
            beta2: 0.99,
            eps: 1e-8,
            weight_decay: 0.1,
            grad_clip: 1.0,
            eval_interval: 100,
            eval_batches: 8,
            seed: 1337,
            dropout: 0.0,
        }
    }
}

fn check_f32(
    field: &'static str,
    value: f32,
    lo: f32,
    hi: f32,
    range: &'static str,
) -> Result<(), ConfigError> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            field,
            value: value as f64,
            range,
        })
    }
}

impl TrainConfig {
    /// Refuses NaN, negative and absurd hyper-parameters with a message that
    /// names the field.
    pub fn validate(&self, model: &ModelConfig) -> Result<(), ConfigError> {
        check_range("batch_size", self.batch_size, 1, 1024)?;
        check_range("seq_len", self.seq_len, 1, model.block_size)?;
        check_range("steps", self.steps, 1, 10_000_000)?;
        check_range("warmup_steps", self.warmup_steps, 0, self.steps)?;
        check_range("eval_batches", self.eval_batches, 1, 10_000)?;
        check_f32("lr", self.lr, 0.0, 1.0, "[0, 1]")?;
        check_f32("min_lr", self.min_lr, 0.0, self.lr.max(0.0), "[0, lr]")?;
        check_f32("beta1", self.beta1, 0.0, 0.999_999, "[0, 1)")?;
        check_f32("beta2", self.beta2, 0.0, 0.999_999_9, "[0, 1)")?;
        check_f32("eps", self.eps, 1e-12, 1e-2, "[1e-12, 1e-2]")?;
        check_f32("weight_decay", self.weight_decay, 0.0, 10.0, "[0, 10]")?;
        check_f32("grad_clip", self.grad_clip, 0.0, 1e6, "[0, 1e6]")?;
        check_f32("dropout", self.dropout, 0.0, 0.9, "[0, 0.9]")?;
        Ok(())
    }
}

/// A named model shape with the batch it trains well at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preset {
    /// Stable identifier used by the CLI, the UI and checkpoints.
    pub name: &'static str,
    /// `L`.
    pub n_layer: usize,
    /// `NH`.
    pub n_head: usize,
    /// `C`.
    pub d_model: usize,
    /// `T_max`, also the training sequence length.
    pub block_size: usize,
    /// `B` used for training by default.
    pub batch_size: usize,
}

/// From a ~70 K-parameter toy that trains on a CPU in seconds up to ~25 M.
/// `tiny`, `small` and `nanogpt` match `../shared/bench/pytorch_baseline.py`.
pub const PRESETS: &[Preset] = &[
    // ~66 K params: trains on the wasm CPU path in the browser.
    Preset {
        name: "nano",
        n_layer: 2,
        n_head: 2,
        d_model: 48,
        block_size: 128,
        batch_size: 16,
    },
    // ~0.8 M params: the launch-bound benchmark shape.
    Preset {
        name: "tiny",
        n_layer: 4,
        n_head: 4,
        d_model: 128,
        block_size: 64,
        batch_size: 32,
    },
    // ~3.2 M params.
    Preset {
        name: "small",
        n_layer: 4,
        n_head: 4,
        d_model: 256,
        block_size: 128,
        batch_size: 32,
    },
    // ~10.8 M params: nanoGPT's shakespeare_char shape.
    Preset {
        name: "nanogpt",
        n_layer: 6,
        n_head: 6,
        d_model: 384,
        block_size: 256,
        batch_size: 64,
    },
    // ~25 M params: the largest the playground offers.
    Preset {
        name: "large",
        n_layer: 8,
        n_head: 8,
        d_model: 512,
        block_size: 256,
        batch_size: 32,
    },
];

impl Preset {
    /// Looks a preset up by name.
    pub fn by_name(name: &str) -> Result<&'static Preset, ConfigError> {
        PRESETS
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| ConfigError::UnknownPreset(name.to_string()))
    }

    /// The model config of this preset for a given vocabulary.
    pub fn model(&self, vocab_size: usize) -> ModelConfig {
        ModelConfig {
            vocab_size,
            block_size: self.block_size,
            n_layer: self.n_layer,
            n_head: self.n_head,
            d_model: self.d_model,
        }
    }

    /// The default training config of this preset.
    pub fn train(&self) -> TrainConfig {
        TrainConfig {
            batch_size: self.batch_size,
            seq_len: self.block_size,
            ..TrainConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parameter counts written out by hand, V = 65 (tiny Shakespeare).
    #[test]
    fn preset_parameter_counts() {
        let expect = [
            ("nano", 65_904),
            ("tiny", 809_856),
            ("small", 3_208_960),
            ("nanogpt", 10_770_816),
            ("large", 25_384_448),
        ];
        for (name, n) in expect {
            let cfg = Preset::by_name(name).unwrap().model(65);
            assert_eq!(cfg.num_params(), n, "{name}");
            cfg.validate().unwrap();
        }
    }

    #[test]
    fn nanogpt_matches_the_pytorch_module_count() {
        // PyTorch's GPT in ../shared/bench counts 10,770,816 for V=65, 6/6/384/256:
        // tok 65·384 + pos 256·384 + 6·(12·384² + 13·384) + 2·384.
        let c = 384;
        let manual = 65 * c + 256 * c + 6 * (12 * c * c + 13 * c) + 2 * c;
        assert_eq!(
            Preset::by_name("nanogpt").unwrap().model(65).num_params(),
            manual
        );
    }

    #[test]
    fn bad_configs_name_the_field() {
        let mut m = Preset::by_name("tiny").unwrap().model(65);
        m.n_head = 3;
        assert!(matches!(
            m.validate(),
            Err(ConfigError::HeadsDoNotDivide { .. })
        ));
        let m = Preset::by_name("tiny").unwrap().model(65);
        let mut t = TrainConfig {
            lr: f32::NAN,
            ..TrainConfig::default()
        };
        let err = t.validate(&m).unwrap_err().to_string();
        assert!(err.contains("lr"), "{err}");
        t.lr = 1e-3;
        t.seq_len = 1000;
        assert!(matches!(
            t.validate(&m),
            Err(ConfigError::TooLarge {
                field: "seq_len",
                ..
            })
        ));
        assert!(Preset::by_name("huge").is_err());
    }
}
