//! The worker's errors, as values.
//!
//! Each layer has its own type: [`StorageError`] for the Origin Private File
//! System (`opfs.rs`), [`SaveError`] for the saved-run layout (`saves.rs`),
//! [`FetchError`] for `fetch` (`js.rs`), and [`WorkerError`], which gathers
//! them with the core and engine errors for what the runner does. The page
//! receives each as `WorkerOutput::Error { context, message }`, `message`
//! being the `Display` text.

use std::fmt;
use tinygpt_core::checkpoint::CheckpointError;
use tinygpt_core::data::DataError;
use tinygpt_gpu::engine::EngineError;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::DomException;

/// A JS exception or promise rejection, as the browser named it.
#[derive(Debug, Clone, PartialEq)]
pub struct JsException {
    /// `DOMException.name` or `Error.name` (`NotFoundError`, `TypeError`…);
    /// `None` when the value thrown was neither.
    pub name: Option<String>,
    pub message: String,
}

impl JsException {
    /// Reads a thrown or rejected JS value.
    pub fn from_js(e: JsValue) -> Self {
        if let Some(d) = e.dyn_ref::<DomException>() {
            return Self {
                name: Some(d.name()),
                message: d.message(),
            };
        }
        if let Some(err) = e.dyn_ref::<js_sys::Error>() {
            if let (Some(n), Some(m)) = (err.name().as_string(), err.message().as_string()) {
                return Self {
                    name: Some(n),
                    message: m,
                };
            }
        }
        Self {
            name: None,
            message: e.as_string().unwrap_or_else(|| format!("{e:?}")),
        }
    }
}

/// One line: `NotFoundError: …`, or the bare message when it had no name.
impl fmt::Display for JsException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{name}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The Origin Private File System failed or is missing.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("navigator.storage is missing (private storage needs a secure context)")]
    NoStorage,
    /// A method this browser lacks (checked before calling it).
    #[error("{method} is not available in this browser")]
    Unsupported { method: &'static str },
    /// The entry does not exist (`NotFoundError`); callers that look up
    /// something optional turn this into `None`.
    #[error("{0}")]
    NotFound(JsException),
    /// Any other exception or rejection from the storage API.
    #[error("{0}")]
    Js(JsException),
}

impl StorageError {
    /// A thrown or rejected value from the storage API.
    pub fn from_js(e: JsValue) -> Self {
        let e = JsException::from_js(e);
        if e.name.as_deref() == Some("NotFoundError") {
            Self::NotFound(e)
        } else {
            Self::Js(e)
        }
    }
}

/// A saved run's manifest (`run.json`) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("no manifest (a save that never completed)")]
    Missing,
    #[error("bad manifest: {0}")]
    Unparsable(#[source] serde_json::Error),
    #[error("manifest version {found} (expected {expected})")]
    Version { found: u32, expected: u32 },
    #[error("{0}")]
    Encode(#[source] serde_json::Error),
}

/// Saving, listing, loading or deleting a saved run failed.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("there are no saved runs")]
    NoSavedRuns,
    #[error("no saved run {id:?}")]
    NoSuchRun { id: String },
    #[error("the checkpoint slot {slot} is missing")]
    MissingSlot { slot: String },
    #[error("the run's corpus file is missing")]
    MissingCorpus,
    /// The test hook that stops a save halfway through the checkpoint.
    #[error("test hook: crashed halfway through the checkpoint")]
    CrashedHalfway,
}

/// `fetch(url)` of a bundled file failed.
#[derive(Debug)]
pub struct FetchError {
    pub url: String,
    pub failure: FetchFailure,
}

/// What went wrong in [`FetchError`].
#[derive(Debug)]
pub enum FetchFailure {
    /// This browser's `fetch` API is missing or misbehaves: what is wrong.
    Api(&'static str),
    /// `fetch` or `arrayBuffer` threw when called (the JS value).
    Threw(String),
    /// The request was rejected (the JS value).
    Rejected(String),
    /// The server answered with this HTTP status.
    Status(f64),
    /// Reading the body failed (the JS value).
    Read(String),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = &self.url;
        match &self.failure {
            FetchFailure::Api(what) => f.write_str(what),
            FetchFailure::Threw(detail) => f.write_str(detail),
            FetchFailure::Rejected(detail) => write!(f, "fetching {url}: {detail}"),
            FetchFailure::Status(status) => write!(f, "fetching {url}: HTTP {status}"),
            FetchFailure::Read(detail) => write!(f, "reading {url}: {detail}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// Everything the runner's fallible steps can fail at (restoring a saved
/// run: its files, the bundled corpus, the checkpoint, the session, the
/// data).
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Save(#[from] SaveError),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Data(#[from] DataError),
}
