//! The precision gate framework: every fast path is feature-detected, then
//! verified against the canonical f32 path, and only activated when its gate
//! passes (docs/precision.md). Detection alone never activates anything.
//!
//! A fast path is one [`FastPath`] entry in [`FAST_PATHS`]: its names, its
//! detection, its gate and how a passing report turns into [`FastPaths`],
//! the activation set the model binds its kernels from. Adding a path is a
//! new entry plus its kernels; the model only consults [`FastPaths`] in its
//! one linear-binding function.

pub mod coop_attention;
pub mod coop_matrix;
pub mod coop_training;
mod decoder_cases;
pub mod f16_compute;
mod f16_speed;
pub mod f16_storage;
mod framework;
pub mod freshness;
pub mod localize;
pub mod model_gate;
pub mod model_speed;
mod packing;
pub mod speed;
pub mod stats;
pub mod subgroups;

pub use crate::model::FastPaths;
pub use crate::ops::matmul::f16w::F16Storage;
pub use crate::ops::matmul::Fault;
pub use framework::{
    headline, FastPath, GateFuture, GateOptions, SpeedFuture, SpeedShape, BUNDLED_SHAPE,
    DEFAULT_VOCAB,
};

use crate::{GpuContext, PipelineRegistry};
use tinygpt_protocol::GateReport;

/// Every fast path, in the order their gates run.
pub const FAST_PATHS: &[FastPath] = &[
    f16_storage::PATH,
    f16_compute::PATH,
    coop_matrix::PATH,
    subgroups::PATH,
];

/// The path with this id.
pub fn fast_path(id: &str) -> Option<&'static FastPath> {
    FAST_PATHS.iter().find(|p| p.id == id)
}

/// Runs every detected path's gate; a gate that errors counts as FAIL. A
/// path that passes is then timed against f32 (`speed`, unless
/// `opts.measure_speed` is off) and activates only if faster here.
/// Returns each report (with its console lines) and the activation set.
pub async fn run_gates(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> (Vec<GateReport>, FastPaths) {
    let mut active = FastPaths::default();
    let mut reports = Vec::new();
    for path in FAST_PATHS {
        let mut report = if let Some(why) = (path.missing)(ctx) {
            GateReport {
                missing: Some(why.into()),
                lines: vec![format!(
                    "[ops] {} gate: not detected — {why} — off",
                    path.label
                )],
                ..Default::default()
            }
        } else {
            match (path.gate)(ctx, reg, opts).await {
                Ok(r) => r,
                Err(e) => GateReport {
                    detected: true,
                    lines: vec![format!(
                        "[ops] {} gate could not run: {e} — FAIL",
                        path.label
                    )],
                    ..Default::default()
                },
            }
        };
        report.path = path.id.into();
        report.label = path.label.into();
        report.pill = path.pill.into();
        report.fault = opts.fault.map(|f| f.name().to_string());
        report.active = report.passed;
        if report.passed {
            speed::run_speed_gate(ctx, reg, path, opts, &mut report).await;
        }
        if report.active {
            (path.activate)(&report, opts.fault, &mut active);
        }
        reports.push(report);
    }
    (reports, active)
}

/// The status-bar suffix of the active paths (`· f16-storage matmul
/// active`) and of the precise but slower ones (`· f16-storage precise,
/// 0.81× f32 here: not activated`).
pub fn status_suffix(reports: &[GateReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let Some(p) = fast_path(&r.path) else {
            continue;
        };
        match &r.speed {
            _ if r.active => {
                out.push_str(&format!(" · {}", p.status));
                if r.speed_training.as_ref().is_some_and(|t| !t.faster()) {
                    out.push_str(" (decoding; training on f32, faster here)");
                }
            }
            Some(s) if r.passed && !s.faster() => out.push_str(&format!(
                " · {} precise, {:.2}× f32 here: not activated",
                p.label,
                s.speedup()
            )),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinygpt_protocol::GateStats;

    #[test]
    fn headline_has_the_documented_format() {
        let s = GateStats {
            mean_abs_ref: 0.122,
            max_abs_err: 1.33e-4,
            abs_limit: 1.22e-3,
            mean_rel_err: 0.00075,
            rel_limit: 0.005,
            max_rel_err: 0.054,
            non_finite: 0,
            passed: true,
        };
        assert_eq!(
            headline("f16-storage", &s, true, "f16 path active"),
            "[ops] f16-storage gate: mean|ref|=1.22e-1, max_abs=1.33e-4 (limit 1.22e-3), mean_rel=0.075% (limit 0.500%), max_rel=5.40% — PASS — f16 path active"
        );
        assert!(headline("f16-storage", &s, false, "x").ends_with("max_rel=5.40% — FAIL"));
    }

    #[test]
    fn faults_round_trip_by_name() {
        for f in [
            Fault::F16Accumulate,
            Fault::DropKTail,
            Fault::TruncatePack,
            Fault::StaleCache,
        ] {
            assert_eq!(Fault::parse(f.name()), Some(f));
        }
        assert_eq!(Fault::parse("none"), None);
    }
}
