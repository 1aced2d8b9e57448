//! Messages between the UI (main thread) and the worker that owns the GPU.
//!
//! Both directions are serde enums tagged by `type` in snake_case, so the
//! wire form of [`WorkerOutput::GpuCaps`] is `{"type": "gpu_caps", ...}`.
//! Errors travel as values ([`WorkerOutput::Error`]) and are shown by the UI.

use crate::precision::{GateReport, LocalizeReport, PrecisionRecord};
use crate::{AdapterDesc, ModelConfig, TrainConfig};
use serde::{Deserialize, Serialize};

/// Capabilities detected on the adapter. Detection is not activation: a fast
/// path also needs its gate to pass (see [`ActivePaths`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DetectedFeatures {
    /// WGSL `enable f16;` is available (wgpu `SHADER_F16`).
    pub shader_f16: bool,
    /// Timestamp queries (wgpu `TIMESTAMP_QUERY`).
    pub timestamp_query: bool,
    /// Subgroup operations. On the web wgpu cannot see them, so this is read
    /// from the JS adapter's feature set.
    pub subgroups: bool,
    /// Cooperative matrices (tensor cores) the engine's kernel can use:
    /// 16×16×16 f16 → f32 with 32-wide subgroups (native only).
    #[serde(default)]
    pub coop_matrix: bool,
    /// WebNN can run here: `navigator.ml.createContext()` gave a context.
    pub webnn: bool,
    /// `navigator.ml` exists (with or without a backend behind it).
    #[serde(default)]
    pub webnn_api: bool,
    /// Why `createContext()` failed, when the API exists.
    #[serde(default)]
    pub webnn_problem: Option<String>,
}

/// The limits that size what this GPU can train, as granted to our device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuLimits {
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
}

/// Fast paths whose gate has passed; only these get activation pills.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ActivePaths {
    /// `+f16 storage`: forward matmuls read f16-packed weights.
    pub f16_storage: bool,
    /// `+f16 compute`: the training forward's linears multiply f16
    /// operands (shader-f16) into f32 sums.
    #[serde(default)]
    pub f16_compute: bool,
    /// `+coop matrix`: every training matmul on tensor cores (native).
    #[serde(default)]
    pub coop_matrix: bool,
    /// `+subgroups`: the decoder's GEMVs sum their lanes with subgroup
    /// shuffles (native; the same bits).
    #[serde(default)]
    pub subgroups: bool,
}

/// Result of the start-up kernel check (an f32 matmul against a CPU loop).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelCheck {
    /// Pipeline label of the kernel checked.
    pub kernel: String,
    /// `[M, K, N]`.
    pub shape: [u32; 3],
    pub max_abs_err: f32,
    pub tolerance: f32,
    pub passed: bool,
    pub millis: f64,
}

/// Everything the UI shows in its capability pills.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuCaps {
    /// A WebGPU (or native wgpu) device is up.
    pub webgpu: bool,
    /// Why there is no GPU, and what the user can do about it.
    pub unavailable_reason: Option<String>,
    pub adapter: AdapterDesc,
    pub features: DetectedFeatures,
    pub limits: GpuLimits,
    pub kernel_check: Option<KernelCheck>,
    pub active: ActivePaths,
}

/// Which corpus a training run reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CorpusSource {
    /// The product corpus shipped with the app (`web/corpus/shakespeare.txt`).
    Bundled,
    /// A `.txt` file the user chose.
    Upload {
        name: String,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
}

/// A short sample from the weights of a run in progress ("watch it learn").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LiveSample {
    /// The training step whose weights wrote it.
    pub step: usize,
    pub prompt: String,
    pub text: String,
    /// What it cost.
    pub millis: f64,
    /// Time spent on live samples over time spent training, in this run
    /// segment so far.
    pub share: f64,
}

/// Parameters of one generation request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRequest {
    pub prompt: String,
    /// New characters to generate.
    pub max_tokens: usize,
    /// 0 means greedy.
    pub temperature: f32,
    pub top_k: Option<usize>,
    pub top_p: Option<f32>,
    pub seed: u64,
    /// Continuations of the prompt decoded together (1 to [`MAX_SAMPLES`]):
    /// sample `i` draws from seed `seed + i`.
    #[serde(default = "one")]
    pub num_samples: usize,
}

fn one() -> usize {
    1
}

/// Continuations one request may decode together (the page's "samples",
/// `tinygpt sample --num-samples`).
pub const MAX_SAMPLES: usize = 8;

/// Refuses a number of samples outside 1..=[`MAX_SAMPLES`], and several
/// greedy ones (temperature 0 gives each the same text).
pub fn check_num_samples(n: usize, temperature: f32) -> Result<(), String> {
    if n == 0 || n > MAX_SAMPLES {
        return Err(format!("samples must be in 1..={MAX_SAMPLES} (got {n})"));
    }
    if n > 1 && temperature == 0.0 {
        return Err(format!(
            "temperature 0 (greedy) gives all {n} samples the same text: ask for one sample, or a temperature above 0"
        ));
    }
    Ok(())
}

/// Messages the UI sends to the worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerInput {
    /// Ask the worker to (re)send its `gpu_caps`.
    QueryCaps,
    /// Start a new run from scratch (replaces the current model).
    Train {
        model: ModelShape,
        train: TrainConfig,
        corpus: CorpusSource,
        /// The saved run's name (a default is made from the shape and time).
        #[serde(default)]
        name: Option<String>,
    },
    Pause,
    Resume,
    /// Stop the run; the model stays and can be sampled or continued.
    Stop,
    /// Train the current model (trained, loaded or restored) `steps` more.
    Continue {
        steps: usize,
    },
    Sample(SampleRequest),
    /// Stop a generation in progress.
    StopSampling,
    /// Load a safetensors checkpoint; the current model stays if it is bad.
    LoadCheckpoint {
        name: String,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// Serialize the current model (f32 weights and AdamW moments).
    SaveCheckpoint,
    /// Load the bundled Shakespeare model (`models/shakespeare.safetensors`).
    LoadBundledModel,
    /// Send the model gallery's cards ([`WorkerOutput::Gallery`]).
    ListGallery,
    /// Load the gallery's model `id` with its card's curve.
    LoadGalleryModel {
        id: String,
    },
    /// Autosave the run every `every_steps` steps (0: only on pause, stop
    /// and the end of the run).
    SetAutosave {
        every_steps: usize,
    },
    /// Restore a saved run exactly (weights, moments, step, data stream,
    /// loss history); "continue" then trains it on.
    LoadSavedRun {
        id: String,
    },
    DeleteSavedRun {
        id: String,
    },
    /// How often to show a live sample while training: `None` within the
    /// time budget (`auto`), `Some(0)` never, `Some(n)` every n steps.
    SetLiveSamples {
        every_steps: Option<usize>,
    },
    /// Re-send the saved-run list and storage usage.
    ListSavedRuns,
    /// Send one saved run's loss curve ([`WorkerOutput::RunCurve`]), to
    /// overlay it on the chart; the model held is not touched.
    RunCurve {
        id: String,
    },
    /// Compare every stage of `prompt`'s forward on the f32 path and on
    /// each detected fast path (its gate passed or not) with the model held
    /// now; answered by [`WorkerOutput::Localization`].
    Localize {
        prompt: String,
    },
    /// Run `text` (its last `block_size` characters) through the model held
    /// and send what it expected at every position and every head's
    /// attention weights ([`WorkerOutput::Inspection`]).
    Inspect {
        text: String,
    },
    /// Send the device's precision log ([`WorkerOutput::PrecisionLog`]).
    ListPrecisionLog,
    /// Empty the precision log.
    ClearPrecisionLog,
    /// Test-only faults; the worker ignores them unless its URL has
    /// `test_hooks=1`.
    TestHook {
        hook: TestHook,
    },
}

/// Points a loss series keeps (the chart's and a saved run's history).
pub const LOSS_HISTORY_POINTS: usize = 2000;

/// Keeps a `(step, loss)` series within [`LOSS_HISTORY_POINTS`]: past it,
/// neighbouring points merge into their mean at the later step, so a long
/// run's history stays light and still ends at its last step.
pub fn bound_loss_series(series: &mut Vec<(usize, f32)>) {
    if series.len() > LOSS_HISTORY_POINTS {
        *series = series
            .chunks(2)
            .map(|c| {
                let n = c.len() as f32;
                (c[c.len() - 1].0, c.iter().map(|x| x.1).sum::<f32>() / n)
            })
            .collect();
    }
}

/// Autosave interval of a run until the UI sets another.
pub const DEFAULT_AUTOSAVE_STEPS: usize = 100;

/// Faults the browser tests provoke (honoured only with `?test_hooks=1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestHook {
    /// Panic inside the worker (a crash).
    Panic,
    /// `GPUDevice.destroy()`: the device is lost.
    DestroyDevice,
    /// Write a NaN into the weights: the next step's loss is non-finite.
    PoisonWeights,
    /// Crash halfway through writing the next autosave.
    CrashDuringSave,
    /// Zero layer 1's fc weights in the fast path's f16 cache during the
    /// next localisation only (fault-injection builds): the report must
    /// name that stage.
    CorruptLocalization,
    /// Take one training step with every dispatch timed (timestamp
    /// queries) and log the GPU time per kernel: the in-browser profile.
    ProfileStep,
}

/// One saved run in the browser's private storage.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SavedRunInfo {
    pub id: String,
    pub name: String,
    pub config: ModelConfig,
    pub step: usize,
    /// The step the run was asked to reach.
    pub target_step: usize,
    pub train_loss: Option<f32>,
    pub val_loss: Option<f32>,
    /// When it was last saved (ms since the epoch).
    pub saved_ms: f64,
    /// Bytes on disk (checkpoint slots, manifest, corpus).
    pub bytes: u64,
}

/// The origin's storage, from `navigator.storage`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageInfo {
    /// Private storage is usable in this browser.
    pub available: bool,
    pub usage: u64,
    pub quota: u64,
    /// `navigator.storage.persist()` was granted: the browser will not
    /// evict the saves under storage pressure.
    pub persisted: bool,
    /// Why storage is unavailable, when it is.
    pub problem: Option<String>,
}

/// The architecture of a new run without the vocabulary, which comes from
/// the corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelShape {
    pub block_size: usize,
    pub n_layer: usize,
    pub n_head: usize,
    pub d_model: usize,
}

/// The model the worker holds now.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub config: ModelConfig,
    pub params: usize,
    /// Where it came from: a preset run, a file name, the bundled model.
    pub source: String,
    pub step: usize,
    /// `"webgpu"` or `"cpu"`.
    pub backend: String,
    /// Bytes of GPU (or CPU) memory the model and its training state take.
    pub memory_bytes: u64,
    /// The saved run this model autosaves into, once it has one.
    #[serde(default)]
    pub run_id: Option<String>,
    /// The step the current (or last) run was asked to reach.
    #[serde(default)]
    pub target_step: usize,
}

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    Idle,
    Running,
    Paused,
    Stopped,
    Finished,
}

/// One progress report of a training run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainProgress {
    pub step: usize,
    pub total_steps: usize,
    /// Mean training loss (nats/char) of the last reported step.
    pub train_loss: f32,
    /// Training loss of every step since the previous report, the last one
    /// being `step` (all of them, read back without stalling the GPU).
    #[serde(default)]
    pub losses: Vec<f32>,
    /// Validation loss, when this step evaluated it.
    pub val_loss: Option<f32>,
    pub lr: f32,
    /// Training tokens per second over the time actually spent training
    /// (pauses excluded).
    pub tokens_per_s: f64,
    pub elapsed_s: f64,
    pub eta_s: f64,
}

/// Severity of a log line forwarded to the UI and the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Info,
    Warn,
    Error,
}

/// Messages the worker sends to the UI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerOutput {
    /// The worker's wasm is running and listening.
    Ready,
    /// Detected capabilities, active fast paths and the start-up check.
    GpuCaps(GpuCaps),
    /// One line for the status bar.
    Status {
        text: String,
    },
    /// A line for the console and the UI log.
    Log {
        level: LogLevel,
        text: String,
    },
    /// A failure, sent as a value; `context` says what was being done.
    Error {
        context: String,
        message: String,
    },
    /// The model now held (after training starts, a load, a restore).
    ModelInfo(ModelInfo),
    RunState {
        state: RunState,
    },
    Progress(TrainProgress),
    /// Newly generated text; `tokens` counts all tokens so far.
    SampleChunk {
        /// Which sample the text continues (0 when there is one).
        #[serde(default)]
        sample: usize,
        text: String,
        /// Tokens so far, every sample's together.
        tokens: usize,
        tokens_per_s: f64,
        first_token_ms: f64,
    },
    SampleDone {
        tokens: usize,
        tokens_per_s: f64,
        first_token_ms: f64,
    },
    /// A serialized checkpoint for the user to download.
    Checkpoint {
        name: String,
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// The GPU (or CPU) is working on a request.
    Busy {
        busy: bool,
    },
    /// One fast path's gate result (every number, verdict and shape).
    GateReport(Box<GateReport>),
    /// The saved runs, newest first, and the storage they use.
    SavedRuns {
        runs: Vec<SavedRunInfo>,
        storage: StorageInfo,
    },
    /// The run was saved (autosave, pause, stop, end).
    RunSaved {
        id: String,
        step: usize,
    },
    /// One fast path's per-stage comparison with the f32 path.
    Localization(LocalizeReport),
    /// Every gate report this device kept (oldest first), or why the log
    /// cannot be read.
    PrecisionLog {
        records: Vec<PrecisionRecord>,
        problem: Option<String>,
    },
    /// The loss history of a restored run, or of a loaded model's card,
    /// for the chart.
    History {
        train: Vec<(usize, f32)>,
        val: Vec<(usize, f32)>,
    },
    /// The gallery's cards (`models/gallery.json`), or why it cannot be read.
    Gallery {
        cards: Vec<crate::ModelCard>,
        problem: Option<String>,
    },
    /// The answer to [`WorkerInput::Inspect`].
    Inspection(crate::Inspection),
    /// A sample from the weights of the run in progress.
    LiveSample(LiveSample),
    /// A saved run's loss curve, asked for by [`WorkerInput::RunCurve`].
    RunCurve {
        id: String,
        name: String,
        train: Vec<(usize, f32)>,
        val: Vec<(usize, f32)>,
    },
}

#[cfg(test)]
mod tests;
