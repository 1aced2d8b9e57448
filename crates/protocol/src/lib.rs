//! Plain data shared by every layer of TinyGPT-rs.
//!
//! This crate has no model code and no platform code, so the Leptos UI can
//! depend on it alone: model and training configs, the preset table, and the
//! typed messages exchanged between the UI (main thread) and the worker,
//! and what the precision gates report.

pub mod adapter;
pub mod card;
pub mod config;
pub mod inspect;
pub mod memory;
pub mod messages;
pub mod precision;

pub use adapter::AdapterDesc;
pub use card::{suggested, CardCurve, GalleryIndex, ModelCard, CARD_VERSION};
pub use config::{ConfigError, ModelConfig, Preset, TrainConfig, MAX_CORPUS_BYTES, PRESETS};
pub use inspect::{Inspection, INSPECT_TOP, MAX_INSPECT_CHARS};
pub use memory::{check_fits, training_memory, MemoryPlan, MEMORY_BUDGET_BYTES};
pub use messages::*;
pub use precision::*;
