//! What the precision gates measure, as plain data: the gate's verdicts
//! and error distributions, the per-stage localisation report and the
//! device's precision log (docs/precision.md explains every number).
//!
//! Fields added after a message first shipped carry `#[serde(default)]`, so
//! a report stored by an older build (the precision log) still reads.

use crate::AdapterDesc;
use serde::{Deserialize, Serialize};

/// Counts of values in log-spaced bins: `counts[0]` holds values below
/// `edges[0]` (zeros included), `counts[i]` those in `[edges[i-1],
/// edges[i])`, the last those at or above the last edge (infinities
/// included). `counts.len() == edges.len() + 1` unless both are empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
}

impl Histogram {
    /// An empty histogram over `edges` (ascending).
    pub fn new(edges: Vec<f64>) -> Self {
        let counts = vec![0; edges.len() + 1];
        Self { edges, counts }
    }

    /// Counts `x` (NaN counts as the top bin, like infinity).
    pub fn add(&mut self, x: f64) {
        let i = if x.is_nan() {
            self.edges.len()
        } else {
            self.edges.partition_point(|&e| e <= x)
        };
        self.counts[i] += 1;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// The two gating numbers of one fast-path comparison and their verdict
/// (docs/precision.md): PASS iff `max_abs_err < abs_limit` and
/// `mean_rel_err < rel_limit`, with `rel = |f − r| / max(|r|, 1 % of
/// mean|ref|)`. `max_rel_err` is reported, never gating.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GateStats {
    pub mean_abs_ref: f64,
    pub max_abs_err: f64,
    /// 1 % of `mean_abs_ref`.
    pub abs_limit: f64,
    pub mean_rel_err: f64,
    /// 0.005 (0.5 %).
    pub rel_limit: f64,
    pub max_rel_err: f64,
    /// Elements of the fast path that are NaN or infinite where the
    /// reference is finite (any fails the gate).
    pub non_finite: usize,
    pub passed: bool,
}

/// The shape of the error (a measurement that never fails): whole-tensor
/// rel-L2 and cosine, the share of elements whose relative diff exceeds each
/// threshold, and quantiles of relative diff, absolute diff and |ref|.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDistribution {
    /// `‖f − r‖₂ / ‖r‖₂`.
    pub rel_l2: f64,
    pub cosine: f64,
    /// Relative-diff thresholds (1e-4, 1e-3, 1e-2, 1e-1).
    pub thresholds: Vec<f64>,
    /// Share of elements over each of `thresholds`.
    pub frac_over: Vec<f64>,
    /// Quantile levels (0.5, 0.9, 0.99, 1.0).
    pub quantiles: Vec<f64>,
    /// The floored relative diff at each quantile level.
    pub rel_diff: Vec<f64>,
    pub abs_diff: Vec<f64>,
    pub ref_abs: Vec<f64>,
    /// Histogram of the floored relative diff of every element.
    #[serde(default)]
    pub rel_hist: Histogram,
    /// Histogram of the absolute diff of every element, its edges in
    /// multiples of `mean|ref|` (so the abs limit, 1 %, is an edge).
    #[serde(default)]
    pub abs_hist: Histogram,
}

/// One shape a gate compared on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GateCase {
    /// What the case stands for (`"primary"`, `"K=vocab"`, `"layer 0 qkv"`).
    pub name: String,
    /// `[M, K, N]`.
    pub shape: [u32; 3],
    /// Random seeded inputs, or a loaded model's weights and activations.
    pub real_weights: bool,
    pub stats: GateStats,
    pub distribution: ErrorDistribution,
}

/// The bit-exact check of a platform's f32 → f16 conversion against
/// round-to-nearest-even, which decides where weights are packed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PackCheck {
    /// Values compared (ties, subnormals, overflow, NaN, a random sweep).
    pub checked: usize,
    /// Values whose GPU half differs from `half::f16::from_f32`.
    pub mismatches: usize,
    /// The first few mismatches as `"x: gpu 0x.... want 0x...."`.
    pub examples: Vec<String>,
    /// Packing runs on the GPU (every value matched), else on the CPU.
    pub pack_on_gpu: bool,
    pub reason: String,
}

/// The end-to-end sample comparison: greedy text on the f32 and fast paths.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleGate {
    pub prompt: String,
    pub tokens: usize,
    /// First generated token where the two texts differ.
    pub first_divergence: Option<usize>,
    pub passed: bool,
    /// The generated text on the f32 path (the prompt not included).
    #[serde(default)]
    pub f32_text: String,
    /// The generated text on the fast path.
    #[serde(default)]
    pub fast_text: String,
}

/// The speed gate: a short measurement of the workload a fast path exists
/// for, on the fast path and on the f32 path it replaces, interleaved; the
/// path activates only when it is faster by [`SpeedCheck::margin`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeedCheck {
    /// What was timed (`"decode step's linears, 4 layers at C=256, 131 tokens"`).
    pub workload: String,
    /// The model shape timed, `[width, layers]`.
    #[serde(default)]
    pub shape: [u32; 2],
    /// Fastest of the rounds on the fast path, milliseconds.
    pub fast_ms: f64,
    /// Fastest of the rounds on the f32 path, milliseconds.
    pub f32_ms: f64,
    /// Rounds timed on each path (after one untimed warm-up each).
    pub rounds: usize,
    /// The speed-up a path needs to activate (`1.05`: 5 % faster).
    pub margin: f64,
}

impl SpeedCheck {
    /// f32 time ÷ fast time: above 1 the fast path is faster.
    pub fn speedup(&self) -> f64 {
        if self.fast_ms > 0.0 {
            self.f32_ms / self.fast_ms
        } else {
            0.0
        }
    }

    /// Faster than the f32 path by the margin.
    pub fn faster(&self) -> bool {
        self.speedup() >= self.margin
    }
}

/// Everything one fast path's gate measured, and what it decided.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// Stable id (`"f16_storage"`).
    pub path: String,
    /// Console name (`"f16-storage"`).
    pub label: String,
    /// Activation pill text (`"+f16 storage"`).
    pub pill: String,
    /// The capability the path needs was detected.
    pub detected: bool,
    /// Why not, when it was not (`"the adapter offers no shader-f16"`).
    #[serde(default)]
    pub missing: Option<String>,
    /// Every case, the pack check and (when run) the sample gate passed.
    pub passed: bool,
    /// The path is in use now.
    pub active: bool,
    /// A test-only fault was injected (`"f16acc"`, `"droptail"`, `"trunc"`).
    pub fault: Option<String>,
    pub cases: Vec<GateCase>,
    pub pack: Option<PackCheck>,
    pub sample: Option<SampleGate>,
    /// The speed gate, when it ran (`None`: precision failed, or the speed
    /// gate was switched off and precision alone decided).
    #[serde(default)]
    pub speed: Option<SpeedCheck>,
    /// The speed gate's timing of the training forward (paths the training
    /// graph can use): the training graph uses the path only when faster.
    #[serde(default)]
    pub speed_training: Option<SpeedCheck>,
    /// The speed gate was switched off (`?speed_gate=off`, `--speed-gate off`).
    #[serde(default)]
    pub speed_forced: bool,
    /// The console lines logged for this gate, headline first.
    pub lines: Vec<String>,
    /// Wall time of the gate.
    pub millis: f64,
}

/// One stage of the forward, compared between the f32 path and a fast path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// `"embedding"`, `"layer 0 ln1"`, … `"logits"`.
    pub name: String,
    pub distribution: ErrorDistribution,
}

/// Per-stage localisation (seed 004 §7): every stage of one prompt's
/// forward on the f32 path and on a fast path, in dependency order, and the
/// first stage whose error jumps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LocalizeReport {
    /// The fast path compared (`"f16_storage"`).
    pub path: String,
    pub prompt: String,
    /// The fast path's kernels carried a test-only fault.
    pub fault: Option<String>,
    pub stages: Vec<StageReport>,
    pub first_jump: Option<usize>,
    /// A stage jumps when its rel-L2 exceeds this many times every stage
    /// before it …
    pub jump_factor: f64,
    /// … and this floor.
    pub jump_floor: f64,
    /// The console lines, one per stage, then the verdict.
    pub lines: Vec<String>,
    pub millis: f64,
}

/// One gate report as the device's precision log keeps it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PrecisionRecord {
    /// When the gate ran (ms since the epoch).
    pub at_ms: f64,
    /// The adapter and driver it ran on.
    pub adapter: AdapterDesc,
    /// The browser's user agent (the driver's version lives there on the web).
    pub user_agent: String,
    /// The app's version (`CARGO_PKG_VERSION` of the worker).
    pub build: String,
    /// `"start-up"`, `"loaded model"`, `"freshness"`.
    pub occasion: String,
    pub report: GateReport,
}

/// Records the precision log keeps (the oldest go first).
pub const PRECISION_LOG_RECORDS: usize = 200;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_bins_by_edges_with_open_ends() {
        let mut h = Histogram::new(vec![1e-3, 1e-2, 1e-1]);
        for x in [
            0.0,
            5e-4,
            1e-3,
            5e-3,
            0.05,
            0.1,
            7.0,
            f64::INFINITY,
            f64::NAN,
        ] {
            h.add(x);
        }
        assert_eq!(h.counts, vec![2, 2, 1, 4]);
        assert_eq!(h.total(), 9);
    }

    #[test]
    fn reports_from_before_the_histograms_still_read() {
        let old = r#"{"rel_l2":0.1,"cosine":0.9,"thresholds":[],"frac_over":[],"quantiles":[],"rel_diff":[],"abs_diff":[],"ref_abs":[]}"#;
        let d: ErrorDistribution = serde_json::from_str(old).unwrap();
        assert!(d.rel_hist.counts.is_empty());
        let old = r#"{"prompt":"a","tokens":3,"first_divergence":null,"passed":true}"#;
        let s: SampleGate = serde_json::from_str(old).unwrap();
        assert_eq!(s.f32_text, "");
    }
}
