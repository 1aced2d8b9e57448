//! What every fast path's gate is made of: the options a run is given, a
//! path's registration ([`FastPath`]) and the headline console line.

use crate::model::FastPaths;
use crate::ops::matmul::Fault;
use crate::{GpuContext, GpuError, PipelineRegistry};
use std::future::Future;
use std::pin::Pin;
use tinygpt_protocol::{GateReport, GateStats, SpeedCheck};

/// What every gate run is given.
#[derive(Clone, Copy, Debug)]
pub struct GateOptions {
    /// Test-only fault to inject into the path's kernels.
    pub fault: Option<Fault>,
    /// Vocabulary of the loaded model (the head-output shape), else 83.
    pub vocab: u32,
    /// Clock in milliseconds (performance.now on the web).
    pub now_ms: fn() -> f64,
    /// Run the speed gate after a precision PASS (`false`: precision alone
    /// decides — tests that need the path on, `?speed_gate=off`).
    pub measure_speed: bool,
    /// The model shape the speed gate times.
    pub speed_shape: SpeedShape,
}

/// The model shape a speed gate times: its width and its layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpeedShape {
    pub width: u32,
    pub layers: u32,
}

/// The bundled model's shape (`models/shakespeare`): what start-up times.
pub const BUNDLED_SHAPE: SpeedShape = SpeedShape {
    width: 256,
    layers: 4,
};

/// Input range of the gates' seeded operands: typical
/// weight-initialisation scale (seed 000).
const INPUT_RANGE: f32 = 0.2;

/// `n` seeded values uniform in [−0.2, 0.2] (the gates' operands).
pub(super) fn uniform(rng: &mut tinygpt_core::Rng, n: u32) -> Vec<f32> {
    (0..n)
        .map(|_| rng.uniform(-INPUT_RANGE, INPUT_RANGE))
        .collect()
}

/// The vocabulary of the bundled Shakespeare corpus: the K=vocab shape when
/// no model is loaded.
pub const DEFAULT_VOCAB: u32 = 83;

/// A gate's future (not `Send`: the web's GPU futures are not).
pub type GateFuture<'a> = Pin<Box<dyn Future<Output = Result<GateReport, GpuError>> + 'a>>;

/// A speed gate's future.
pub type SpeedFuture<'a> = Pin<Box<dyn Future<Output = Result<Speeds, GpuError>> + 'a>>;

/// What a speed gate measured: the workload that decides activation and,
/// for a path the training graph can use too, the training forward, which
/// decides whether training uses it.
#[derive(Clone, Debug)]
pub struct Speeds {
    pub activation: SpeedCheck,
    pub training: Option<SpeedCheck>,
}

/// One registered fast path.
pub struct FastPath {
    /// Stable id (`f16_storage`), the key in reports and `gpu_caps.active`.
    pub id: &'static str,
    /// Name in console lines (`f16-storage`).
    pub label: &'static str,
    /// Activation pill (`+f16 storage`).
    pub pill: &'static str,
    /// Appended to the status line when active.
    pub status: &'static str,
    /// What a passing headline ends with (`f16 path active`); the speed
    /// gate replaces it when the path is precise but slower here.
    pub active_note: &'static str,
    /// Why the capability the path needs is absent here (`None`: present).
    pub missing: fn(&GpuContext) -> Option<&'static str>,
    /// Runs the gate: compare the path against the f32 reference.
    pub gate: for<'a> fn(&'a GpuContext, &'a mut PipelineRegistry, GateOptions) -> GateFuture<'a>,
    /// Times the workload the path exists for, on the path and on f32
    /// (`gate::speed`): it activates only if faster by the stated margin.
    pub speed: for<'a> fn(&'a GpuContext, &'a mut PipelineRegistry, GateOptions) -> SpeedFuture<'a>,
    /// Turns a passing report into activation.
    pub activate: fn(&GateReport, Option<Fault>, &mut FastPaths),
    /// Turns the path off in an activation set.
    pub deactivate: fn(&mut FastPaths),
    /// Whether its kernels carry a test-only fault (a fault it does not
    /// carry leaves its gate running the real kernels).
    pub carries: fn(Fault) -> bool,
}

/// The headline console line, in the format docs/precision.md documents:
/// `[ops] f16-storage gate: mean|ref|=…, max_abs=… (limit …), mean_rel=…% (limit 0.500%), max_rel=…% — PASS — f16 path active`.
pub fn headline(label: &str, s: &GateStats, passed: bool, active_note: &str) -> String {
    let verdict = if passed {
        format!("PASS — {active_note}")
    } else {
        "FAIL".to_string()
    };
    format!(
        "[ops] {label} gate: mean|ref|={:.2e}, max_abs={:.2e} (limit {:.2e}), mean_rel={:.3}% (limit {:.3}%), max_rel={:.2}% — {verdict}",
        s.mean_abs_ref,
        s.max_abs_err,
        s.abs_limit,
        s.mean_rel_err * 100.0,
        s.rel_limit * 100.0,
        s.max_rel_err * 100.0,
    )
}
