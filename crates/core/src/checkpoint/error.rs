//! Why a checkpoint could not be saved or loaded.

use tinygpt_protocol::ConfigError;

use crate::data::DataError;

/// Every way a checkpoint file can be refused; `Display` names the part of
/// the file at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CheckpointError {
    #[error("the file is {len} bytes, too short for the 8-byte safetensors header length")]
    TooShort { len: usize },
    #[error(
        "the header length {header_len} runs past the end of the {file_len}-byte file \
         (truncated, or not a safetensors file)"
    )]
    HeaderPastEnd { header_len: u64, file_len: usize },
    #[error("the header is {header_len} bytes, more than the {max} accepted")]
    HeaderTooLarge { header_len: u64, max: usize },
    #[error("the header is not UTF-8 (invalid byte at file offset {offset})")]
    HeaderNotUtf8 { offset: usize },
    #[error("the header is not valid safetensors JSON: {message}")]
    HeaderJson { message: String },
    #[error("tensor {name} appears twice in the header")]
    DuplicateTensor { name: String },
    #[error("unknown tensor {name:?} (not a parameter or AdamW moment of this format)")]
    UnknownTensor { name: String },
    #[error("tensor {name} is missing")]
    MissingTensor { name: String },
    #[error("tensor {name} has dtype {dtype}, expected {expected}")]
    BadDtype {
        name: String,
        dtype: String,
        expected: &'static str,
    },
    #[error(
        "tensor {name} has data_offsets [{start}, {end}] outside the {data_len}-byte \
         data region (truncated file?)"
    )]
    OffsetsOutOfRange {
        name: String,
        start: u64,
        end: u64,
        data_len: usize,
    },
    #[error(
        "tensor {name} spans {bytes} bytes, but {dtype} with shape {shape:?} needs \
         {expected}"
    )]
    ByteLengthMismatch {
        name: String,
        dtype: &'static str,
        shape: Vec<u64>,
        bytes: u64,
        expected: u64,
    },
    #[error("tensor {name} overlaps tensor {other} in the data region")]
    OverlappingTensors { name: String, other: String },
    #[error("bytes [{start}, {end}) of the data region belong to no tensor")]
    UncoveredData { start: u64, end: u64 },
    #[error("tensor {name} has shape {shape:?}, expected {expected:?} for this config")]
    ShapeMismatch {
        name: String,
        shape: Vec<u64>,
        expected: Vec<usize>,
    },
    #[error("tensor {name} holds {value} at flat index {index}; every value must be finite")]
    NonFinite {
        name: String,
        index: usize,
        value: f32,
    },
    #[error(
        "tensor {name} holds {value} at flat index {index}; second moments are never negative"
    )]
    NegativeMoment {
        name: String,
        index: usize,
        value: f32,
    },
    #[error("tensor {name} holds {value} at flat index {index}, beyond the f16 range (±65504)")]
    F16Overflow {
        name: String,
        index: usize,
        value: f32,
    },
    #[error(
        "not a TinyGPT checkpoint: metadata key \"format\" is {found:?}, expected \"tinygpt\""
    )]
    NotTinyGpt { found: Option<String> },
    #[error("checkpoint format_version {found:?} is not supported (this build reads {supported})")]
    UnsupportedVersion {
        found: String,
        supported: &'static str,
    },
    #[error("metadata key {key:?} is missing")]
    MissingMetadata { key: &'static str },
    #[error("unknown metadata key {key:?}")]
    UnknownMetadata { key: String },
    #[error("metadata {key:?} is invalid: {reason}")]
    BadMetadata { key: &'static str, reason: String },
    #[error("metadata \"config\" is not a valid model: {source}")]
    InvalidConfig { source: ConfigError },
    #[error("metadata \"train_config\" is not valid for this model: {source}")]
    InvalidTrainConfig { source: ConfigError },
    #[error("metadata \"vocab\" is not a valid vocabulary: {source}")]
    InvalidVocab { source: DataError },
    #[error("the vocabulary has {len} characters but config.vocab_size is {vocab_size}")]
    VocabSizeMismatch { len: usize, vocab_size: usize },
    #[error("{what} has {len} values, expected {expected} for this config")]
    WrongLength {
        what: &'static str,
        len: usize,
        expected: usize,
    },
}
