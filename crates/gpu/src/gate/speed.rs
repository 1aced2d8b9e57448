//! The speed gate: after a precision PASS, a fast path is timed against the
//! f32 path it replaces on the workload it exists for, and activates only
//! when it is faster here by [`SPEED_MARGIN`]. A path that is precise but
//! slower logs `precise, slower here: not activated` and stays off.
//!
//! Timing is wall clock around one submission and the read-back of one
//! float (both paths pay the same read), so it works the same natively and
//! in the browser. Rounds alternate f32, fast, f32, fast… after one
//! untimed warm-up of each (pipeline creation, first-touch of buffers); the
//! fastest round of each counts.

use super::framework::{FastPath, GateOptions};
use crate::kernel::{submit, BoundKernel};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_protocol::{GateReport, SpeedCheck};

/// The speed-up a fast path needs over f32 to activate: 5 %. Below it the
/// path's gain is within what a short measurement can tell from noise
/// (rounds move a few percent on a busy machine), and the f32 path is the
/// canonical one.
pub const SPEED_MARGIN: f64 = 1.05;
/// Timed rounds on each path.
pub const SPEED_ROUNDS: usize = 3;
/// What a precise but slower path's headline ends with.
pub const SLOWER_NOTE: &str = "precise, slower here: not activated";

/// Milliseconds to run `kernels` in one submission and read one float of
/// `sync` back.
async fn timed(
    ctx: &GpuContext,
    now_ms: fn() -> f64,
    kernels: &[&BoundKernel],
    sync: &wgpu::Buffer,
) -> Result<f64, GpuError> {
    let t0 = now_ms();
    submit(ctx, "speed gate", kernels);
    ctx.read_f32(sync, 1).await?;
    Ok(now_ms() - t0)
}

/// Times the f32 and the fast form of one workload, alternating, and
/// returns the check (`sync`: a buffer both forms write last).
pub async fn time_pair(
    ctx: &GpuContext,
    now_ms: fn() -> f64,
    workload: String,
    f32_path: &[&BoundKernel],
    fast_path: &[&BoundKernel],
    sync: &wgpu::Buffer,
) -> Result<SpeedCheck, GpuError> {
    timed(ctx, now_ms, f32_path, sync).await?;
    timed(ctx, now_ms, fast_path, sync).await?;
    let (mut f32_ms, mut fast_ms) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..SPEED_ROUNDS {
        f32_ms = f32_ms.min(timed(ctx, now_ms, f32_path, sync).await?);
        fast_ms = fast_ms.min(timed(ctx, now_ms, fast_path, sync).await?);
    }
    Ok(SpeedCheck {
        workload,
        fast_ms,
        f32_ms,
        rounds: SPEED_ROUNDS,
        margin: SPEED_MARGIN,
    })
}

/// The speed gate's console line:
/// `[ops] f16-storage speed: decode step, … — 1.23 ms vs f32 1.51 ms: 1.23× (needs ≥ 1.05×) — faster — f16 path active`.
pub fn speed_line(label: &str, check: &SpeedCheck, active_note: &str) -> String {
    let verdict = if check.faster() {
        format!("faster — {active_note}")
    } else {
        SLOWER_NOTE.to_string()
    };
    format!(
        "[ops] {label} speed: {} — {:.3} ms vs f32 {:.3} ms: {:.2}× (needs ≥ {:.2}×) — {verdict}",
        check.workload,
        check.fast_ms,
        check.f32_ms,
        check.speedup(),
        check.margin,
    )
}

/// Records a speed check in a report that passed on precision: the speed
/// line after the headline, and — when the path is slower here — the path
/// off and its headline saying so.
pub fn apply(report: &mut GateReport, path: &FastPath, check: SpeedCheck) {
    let line = speed_line(path.label, &check, path.active_note);
    if !check.faster() {
        report.active = false;
        if let Some(head) = report.lines.first_mut() {
            if let Some(stem) = head.strip_suffix(path.active_note) {
                *head = format!("{stem}{SLOWER_NOTE}");
            }
        }
    }
    report.lines.insert(1.min(report.lines.len()), line);
    report.speed = Some(check);
}

/// Runs `path`'s speed gate on a report that passed on precision (or notes
/// that the speed gate is off). A speed gate that cannot run leaves the
/// path off: activation needs a measured gain.
pub async fn run_speed_gate(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    path: &FastPath,
    opts: GateOptions,
    report: &mut GateReport,
) {
    let at = 1.min(report.lines.len());
    if !opts.measure_speed {
        report.speed_forced = true;
        report.lines.insert(
            at,
            format!(
                "[ops] {} speed: not measured (speed gate off) — activated on precision alone",
                path.label
            ),
        );
        return;
    }
    match (path.speed)(ctx, reg, opts).await {
        Ok(check) => apply(report, path, check),
        Err(e) => {
            report.active = false;
            report.lines.insert(
                at,
                format!(
                    "[ops] {} speed gate could not run: {e} — not activated",
                    path.label
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(f32_ms: f64, fast_ms: f64) -> SpeedCheck {
        SpeedCheck {
            workload: "decode step".into(),
            fast_ms,
            f32_ms,
            rounds: SPEED_ROUNDS,
            margin: SPEED_MARGIN,
        }
    }

    fn passing() -> GateReport {
        GateReport {
            detected: true,
            passed: true,
            active: true,
            lines: vec![
                "[ops] f16-storage gate: … — PASS — f16 path active".into(),
                "case".into(),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn a_faster_path_stays_active_and_says_by_how_much() {
        let mut r = passing();
        apply(&mut r, &super::super::f16_storage::PATH, check(1.5, 1.2));
        assert!(r.active);
        assert!(r.lines[0].ends_with("— PASS — f16 path active"));
        assert_eq!(
            r.lines[1],
            "[ops] f16-storage speed: decode step — 1.200 ms vs f32 1.500 ms: 1.25× (needs ≥ 1.05×) — faster — f16 path active"
        );
        assert_eq!(r.lines[2], "case");
    }

    #[test]
    fn a_precise_but_slower_path_is_not_activated() {
        for (f32_ms, fast_ms) in [(1.0, 1.234), (1.0, 0.97)] {
            let mut r = passing();
            apply(
                &mut r,
                &super::super::f16_storage::PATH,
                check(f32_ms, fast_ms),
            );
            assert!(!r.active, "{f32_ms} vs {fast_ms}: under the margin");
            assert!(r.passed, "precision still passed");
            assert!(r.lines[0].ends_with("— PASS — precise, slower here: not activated"));
            assert!(r.lines[1].ends_with("— precise, slower here: not activated"));
        }
    }

    #[test]
    fn speedup_is_f32_over_fast_and_a_zero_time_is_never_faster() {
        assert!((check(2.0, 1.0).speedup() - 2.0).abs() < 1e-12);
        assert!(!check(1.0, 0.0).faster());
    }
}
