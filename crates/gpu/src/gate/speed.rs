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

use super::framework::{FastPath, GateOptions, Speeds};
use crate::kernel::{submit, BoundKernel};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_protocol::{GateReport, SpeedCheck};

/// The speed-up a fast path needs over f32 to activate: 5 %. Below it the
/// path's gain is within what a short measurement can tell from noise, and
/// the f32 path is the canonical one.
pub const SPEED_MARGIN: f64 = 1.05;
/// Timed rounds on each path, at most (a clear verdict stops after two).
pub const SPEED_ROUNDS: usize = 5;
/// A round lasts at least this long: the workload's unit (a token) is
/// repeated until one f32 round takes about this, so that the submission and
/// read-back (~0.1 ms on an H200) are a small part of it. At 8 tokens a
/// round took 0.76–0.93 ms on the H200 and the decision flipped between
/// runs (0.91×, 1.02×, 1.08×). A unit that alone takes longer (a CPU
/// implementation of WebGPU) is timed once a round.
pub const ROUND_MS: f64 = 25.0;
/// Fewest and most repetitions of the unit per round.
pub const UNITS: (usize, usize) = (1, 1024);
/// What a precise but slower path's headline ends with.
pub const SLOWER_NOTE: &str = "precise, slower here: not activated";

/// A check of `workload` at `shape` before any round.
pub fn unmeasured(workload: String, shape: [u32; 2]) -> SpeedCheck {
    SpeedCheck {
        workload,
        fast_ms: f64::INFINITY,
        f32_ms: f64::INFINITY,
        rounds: 0,
        margin: SPEED_MARGIN,
        shape,
    }
}

/// Adds a round's times to `check`: the fastest of each path counts.
pub fn record_round(check: &mut SpeedCheck, f32_ms: f64, fast_ms: f64) {
    check.f32_ms = check.f32_ms.min(f32_ms);
    check.fast_ms = check.fast_ms.min(fast_ms);
    check.rounds += 1;
}

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

/// One unit of a workload (a token's kernels) on the f32 and the fast path,
/// and what it is (`"decode step's linears, 4 layers at C=256"`, `"token"`).
pub struct SpeedUnit<'k> {
    pub what: String,
    pub unit: &'static str,
    pub f32_path: Vec<&'k BoundKernel>,
    pub fast_path: Vec<&'k BoundKernel>,
}

/// After two rounds, a verdict far from the margin (under 0.8 or over 1.25
/// of it) stops the timing: more rounds would not change it.
fn clear(c: &SpeedCheck) -> bool {
    let r = c.speedup() / c.margin;
    c.rounds >= 2 && !(0.8..=1.25).contains(&r)
}

/// `kernels` `n` times over.
fn repeat<'k>(kernels: &[&'k BoundKernel], n: usize) -> Vec<&'k BoundKernel> {
    (0..n).flat_map(|_| kernels.iter().copied()).collect()
}

/// Times the f32 and the fast form of `work`, alternating, each round
/// the unit repeated so that a round lasts about [`ROUND_MS`]; returns
/// the check (`sync`: a buffer both forms write last).
pub async fn time_pair(
    ctx: &GpuContext,
    now_ms: fn() -> f64,
    work: &SpeedUnit<'_>,
    sync: &wgpu::Buffer,
) -> Result<SpeedCheck, GpuError> {
    // Warm-up (pipelines, first touch), then the calibration round.
    timed(ctx, now_ms, &work.f32_path, sync).await?;
    timed(ctx, now_ms, &work.fast_path, sync).await?;
    let one = timed(ctx, now_ms, &work.f32_path, sync).await?;
    let units = ((ROUND_MS / one.max(1e-3)).ceil() as usize).clamp(UNITS.0, UNITS.1);
    let (f32_run, fast_run) = (
        repeat(&work.f32_path, units),
        repeat(&work.fast_path, units),
    );
    let workload = format!(
        "{}, {units} {}{}",
        work.what,
        work.unit,
        if units == 1 { "" } else { "s" }
    );
    let mut check = unmeasured(workload, [0, 0]);
    while check.rounds < SPEED_ROUNDS && !clear(&check) {
        let f32_ms = timed(ctx, now_ms, &f32_run, sync).await?;
        let fast_ms = timed(ctx, now_ms, &fast_run, sync).await?;
        record_round(&mut check, f32_ms, fast_ms);
    }
    Ok(check)
}

/// A check's figures: `decode step, … — 1.23 ms vs f32 1.51 ms: 1.23×
/// (needs ≥ 1.05×; best of 5 rounds)`.
fn figures(check: &SpeedCheck) -> String {
    format!(
        "{} — {:.3} ms vs f32 {:.3} ms: {:.2}× (needs ≥ {:.2}×; best of {} rounds)",
        check.workload,
        check.fast_ms,
        check.f32_ms,
        check.speedup(),
        check.margin,
        check.rounds,
    )
}

/// The speed gate's console line:
/// `[ops] f16-storage speed: decode step, … — 1.23 ms vs f32 1.51 ms: 1.23× (needs ≥ 1.05×; best of 5 rounds) — faster — f16 path active`.
pub fn speed_line(label: &str, check: &SpeedCheck, active_note: &str) -> String {
    let verdict = if check.faster() {
        format!("faster — {active_note}")
    } else {
        SLOWER_NOTE.to_string()
    };
    format!("[ops] {label} speed: {} — {verdict}", figures(check))
}

/// Records a speed gate's checks in a report that passed on precision: the
/// path is active exactly when it is faster here; the speed lines (after the
/// headline, or in place of earlier ones) and the headline's ending say
/// which, and the training line says whether training uses the path.
pub fn apply(report: &mut GateReport, path: &FastPath, speeds: Speeds) {
    let check = speeds.activation;
    report.active = report.passed && check.faster();
    let note = if report.active {
        path.active_note
    } else {
        SLOWER_NOTE
    };
    if let Some(head) = report.lines.first_mut() {
        let stem = [path.active_note, SLOWER_NOTE]
            .iter()
            .find_map(|old| head.strip_suffix(old));
        if let Some(stem) = stem {
            *head = format!("{stem}{note}");
        }
    }
    let line = speed_line(path.label, &check, path.active_note);
    let at = put_line(report, &format!("[ops] {} speed:", path.label), line, 1);
    report.speed = Some(check);
    if let Some(t) = speeds.training {
        let line = training_line(path.label, &t);
        put_line(
            report,
            &format!("[ops] {} speed, training:", path.label),
            line,
            at + 1,
        );
        report.speed_training = Some(t);
    }
}

/// Replaces the line starting with `prefix`, else inserts `line` at `at`
/// (at most the end); returns its index.
fn put_line(report: &mut GateReport, prefix: &str, line: String, at: usize) -> usize {
    match report.lines.iter().position(|l| l.starts_with(prefix)) {
        Some(i) => {
            report.lines[i] = line;
            i
        }
        None => {
            let at = at.min(report.lines.len());
            report.lines.insert(at, line);
            at
        }
    }
}

/// The training check's line: `[ops] f16-storage speed, training: … —
/// 0.93× (needs ≥ 1.05×; best of 5 rounds) — training stays on f32`.
pub fn training_line(label: &str, check: &SpeedCheck) -> String {
    let verdict = if check.faster() {
        "training reads it too"
    } else {
        "training stays on f32"
    };
    format!(
        "[ops] {label} speed, training: {} — {verdict}",
        figures(check)
    )
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

    /// A path with the f16-storage path's names (its gates never run here).
    const PATH: FastPath = FastPath {
        id: "f16_storage",
        label: "f16-storage",
        pill: "+f16 storage",
        status: "f16-storage matmul active",
        active_note: "f16 path active",
        missing: |_| None,
        gate: |_, _, _| unreachable!(),
        speed: |_, _, _| unreachable!(),
        activate: |_, _, _| {},
        deactivate: |_| {},
        carries: |_| true,
    };

    fn check(f32_ms: f64, fast_ms: f64) -> SpeedCheck {
        SpeedCheck {
            workload: "decode step".into(),
            fast_ms,
            f32_ms,
            rounds: SPEED_ROUNDS,
            margin: SPEED_MARGIN,
            shape: [256, 4],
        }
    }

    fn speeds(f32_ms: f64, fast_ms: f64) -> Speeds {
        Speeds {
            activation: check(f32_ms, fast_ms),
            training: None,
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
        apply(&mut r, &PATH, speeds(1.5, 1.2));
        assert!(r.active);
        assert!(r.lines[0].ends_with("— PASS — f16 path active"));
        assert_eq!(
            r.lines[1],
            "[ops] f16-storage speed: decode step — 1.200 ms vs f32 1.500 ms: 1.25× (needs ≥ 1.05×; best of 5 rounds) — faster — f16 path active"
        );
        assert_eq!(r.lines[2], "case");
    }

    #[test]
    fn a_new_check_replaces_the_old_line_both_ways() {
        let mut r = passing();
        let path = &PATH;
        apply(&mut r, path, speeds(1.0, 1.5));
        apply(&mut r, path, speeds(1.5, 1.0));
        assert!(r.active && r.lines[0].ends_with("— PASS — f16 path active"));
        assert_eq!(r.lines.iter().filter(|l| l.contains(" speed: ")).count(), 1);
        apply(&mut r, path, speeds(1.0, 1.5));
        assert!(!r.active && r.lines[0].ends_with("— PASS — precise, slower here: not activated"));
        assert!(r.lines[1].ends_with("— precise, slower here: not activated"));
        assert_eq!(r.lines.len(), 3);
    }

    #[test]
    fn the_training_check_has_its_own_line_after_the_speed_line() {
        let mut r = passing();
        let mut s = speeds(1.5, 1.2);
        s.training = Some(check(1.0, 1.1));
        apply(&mut r, &PATH, s.clone());
        assert!(r.active);
        assert!(r.lines[2].starts_with(
            "[ops] f16-storage speed, training: decode step — 1.100 ms vs f32 1.000 ms: 0.91×"
        ));
        assert!(
            r.lines[2].ends_with("— training stays on f32"),
            "{}",
            r.lines[2]
        );
        s.training = Some(check(1.2, 1.0));
        apply(&mut r, &PATH, s);
        assert!(
            r.lines[2].ends_with("— training reads it too"),
            "{}",
            r.lines[2]
        );
        assert_eq!(r.lines.len(), 4, "replaced, not added");
    }

    #[test]
    fn a_precise_but_slower_path_is_not_activated() {
        for (f32_ms, fast_ms) in [(1.0, 1.234), (1.0, 0.97)] {
            let mut r = passing();
            apply(&mut r, &PATH, speeds(f32_ms, fast_ms));
            assert!(!r.active, "{f32_ms} vs {fast_ms}: under the margin");
            assert!(r.passed, "precision still passed");
            assert!(r.lines[0].ends_with("— PASS — precise, slower here: not activated"));
            assert!(r.lines[1].ends_with("— precise, slower here: not activated"));
        }
    }

    #[test]
    fn only_a_verdict_far_from_the_margin_stops_the_timing_early() {
        let at = |f32_ms, fast_ms, rounds| SpeedCheck {
            rounds,
            ..check(f32_ms, fast_ms)
        };
        assert!(!clear(&at(1.0, 2.0, 1)), "one round never decides");
        assert!(clear(&at(1.0, 2.0, 2)), "0.5×");
        assert!(clear(&at(2.0, 1.0, 2)), "2×");
        assert!(!clear(&at(1.0, 1.0, 4)), "1.0× is near 1.05×");
        assert!(!clear(&at(1.3, 1.0, 2)), "1.3× is within 1.25 of 1.05×");
    }

    #[test]
    fn speedup_is_f32_over_fast_and_a_zero_time_is_never_faster() {
        assert!((check(2.0, 1.0).speedup() - 2.0).abs() < 1e-12);
        assert!(!check(1.0, 0.0).faster());
    }
}
