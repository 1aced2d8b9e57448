//! The tensor-core path (cooperative matrices, native only): every matmul
//! of training — the forward linears and the head, the backward's dX and
//! weight gradients — on `ops::matmul::coop` (f16 operands, f32 sums), the
//! backward's gradient operand scaled by N = B·T (a power of two) as it is
//! staged and the product divided back (`Builder::grad_scale`); the
//! attention's backward on tensor cores too (`ops::attention::coop`, its
//! gradients scaled the same way). Master weights, AdamW, the attention's
//! forward and every element-wise op stay f32.
//!
//! The gate: (1) the kernel against the f32 matmul in the three layouts
//! training runs — `x·Wᵀ` (forward), `dy·W` (dX) and `dyᵀ·x` accumulated
//! (weight gradients) — on the seed's primary shape, a long K and a
//! 16,384-row weight gradient, operands seeded U[−0.2, 0.2], the
//! gradients divided by 16,384 (the order of a real loss gradient, in
//! f16's subnormals unscaled); (2) the **training gate**
//! (`coop_training.rs`): the same model trained 200 steps from the same
//! seed on f32 and on this path, evaluated every 50 steps on held-out
//! batches, within [`super::coop_training::LOSS_TOLERANCE`] at every
//! evaluation; (3) with the attention on tensor cores (`--coop-attention`,
//! on by default), its backward against the f32 kernels on gradients of
//! order 2⁻²⁰ (`coop_attention.rs`) — run before the training gate; if it
//! fails, the attention alone falls back to f32 and the matmuls' gate goes
//! on without it. The speed gate times train steps of the model's shape.

use super::coop_attention::{gate_attention, l2_line};
use super::coop_training::{training_gate, TrainingGate};
use super::f16_storage::{case_line, failure_reason};
use super::framework::{headline, uniform, FastPath, GateFuture, GateOptions, SpeedFuture};
use super::stats::{error_distribution, gate_stats};
use crate::model::FastPaths;
use crate::ops::matmul::coop::{bind_matmul_coop_variant, coop_unavailable, CoopOptions};
use crate::ops::matmul::{matmul_once, Fault, MatmulDesc};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::{GateCase, GateReport};

pub const PATH: FastPath = FastPath {
    id: "coop_matrix",
    label: "coop-matrix",
    pill: "+coop matrix",
    status: "tensor-core training active",
    active_note: ACTIVE_NOTE,
    missing: coop_unavailable,
    gate: gate_boxed,
    speed: speed_boxed,
    activate,
    deactivate: |fast| {
        fast.coop_matrix = false;
        fast.coop_attention = false;
    },
    carries: crate::ops::matmul::coop::carries,
};

const ACTIVE_NOTE: &str = "tensor-core training active";

/// Seed of the gate's operands.
const GATE_SEED: u64 = 0xC0_0B_7E;

/// The rows of a large batch (nanoGPT's B·T): the gradients' scale.
const GRAD_ROWS: u32 = 16_384;

fn gate_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> GateFuture<'a> {
    Box::pin(gate(ctx, reg, opts))
}

fn speed_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> SpeedFuture<'a> {
    Box::pin(super::coop_training::speed(ctx, reg, opts))
}

fn activate(_: &GateReport, _: Option<Fault>, active: &mut FastPaths) {
    active.coop_matrix = true;
    active.coop_attention = crate::ops::attention::engine_attention();
}

/// One case: a name, the layout, and whether op(A) is a gradient (scaled
/// down by [`GRAD_ROWS`] in its values, scaled up as it is staged).
struct Case {
    name: &'static str,
    desc: MatmulDesc,
    gradient: bool,
}

fn cases() -> Vec<Case> {
    let linear = |m, k, n| MatmulDesc::linear(m, k, n);
    let dx = |m, k, n| MatmulDesc {
        m,
        k,
        n,
        ..Default::default()
    };
    let dw = |m, k, n| MatmulDesc {
        m,
        k,
        n,
        trans_a: true,
        accumulate: true,
        ..Default::default()
    };
    let case = |name, desc, gradient| Case {
        name,
        desc,
        gradient,
    };
    vec![
        case(
            "primary (x·Wᵀ)",
            MatmulDesc {
                bias: false,
                ..linear(64, 128, 128)
            },
            false,
        ),
        case("x·Wᵀ + bias, K=1032", linear(64, 1032, 128), false),
        case("dX = dy·W (gradient scaled)", dx(64, 128, 128), true),
        case(
            "dW += dyᵀ·x, 16384 rows (gradient scaled)",
            dw(128, GRAD_ROWS, 96),
            true,
        ),
    ]
}

/// Runs one case on the kernel and on the f32 matmul.
async fn run_case(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    case: &Case,
    rng: &mut Rng,
    fault: Option<Fault>,
) -> Result<GateCase, GpuError> {
    let d = case.desc;
    let mut a = uniform(rng, d.m * d.k);
    let b = uniform(rng, d.k * d.n);
    let bias = d.bias.then(|| uniform(rng, d.n));
    let c0 = d.accumulate.then(|| uniform(rng, d.m * d.n));
    if case.gradient {
        a.iter_mut().for_each(|x| *x /= GRAD_ROWS as f32);
    }
    let mut want = matmul_once(
        ctx,
        reg,
        MatmulDesc {
            accumulate: false,
            ..d
        },
        &a,
        &b,
        bias.as_deref(),
    )
    .await?;
    let c_init = c0
        .clone()
        .unwrap_or_else(|| vec![0.0; (d.m * d.n) as usize]);
    if let Some(c0) = &c0 {
        want.iter_mut().zip(c0).for_each(|(w, c)| *w += c);
    }
    let (a_buf, b_buf) = (
        ctx.upload("coop_gate_a", &a)?,
        ctx.upload("coop_gate_b", &b)?,
    );
    let bias_buf = bias.map(|v| ctx.upload("coop_gate_bias", &v)).transpose()?;
    let c = ctx.upload("coop_gate_c", &c_init)?;
    let scale = if case.gradient { GRAD_ROWS as f32 } else { 1.0 };
    let bias_view = bias_buf.as_ref().map(View::from);
    let opts = CoopOptions {
        scale,
        fault,
        ..Default::default()
    };
    let a = (&a_buf, opts);
    let ks = bind_matmul_coop_variant(ctx, reg, d, a, &b_buf, bias_view, &c)?;
    crate::kernel::submit(ctx, "coop_gate", &ks.iter().collect::<Vec<_>>());
    let mut got = ctx.read_f32(&c, (d.m * d.n) as usize).await?;
    // The accumulated case compares the product, not the values it was
    // added to (their size would hide its error).
    if let Some(c0) = &c0 {
        got.iter_mut().zip(c0).for_each(|(g, c)| *g -= c);
        want.iter_mut().zip(c0).for_each(|(w, c)| *w -= c);
    }
    Ok(GateCase {
        name: case.name.into(),
        shape: [d.m, d.k, d.n],
        real_weights: false,
        stats: gate_stats(&got, &want),
        distribution: error_distribution(&got, &want),
    })
}

/// The whole tensor-core gate: the layouts, then the training gate.
pub async fn gate(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<GateReport, GpuError> {
    let t0 = (opts.now_ms)();
    let mut rng = Rng::new(GATE_SEED);
    let mut cases_run = Vec::new();
    for case in cases() {
        cases_run.push(run_case(ctx, reg, &case, &mut rng, opts.fault).await?);
    }
    let layouts = cases_run.len();
    // Before the training gate: a failed attention turns it off for it.
    let (attention, attention_note) = gate_attention(ctx, reg, &mut rng).await?;
    cases_run.extend(attention);
    let training = training_gate(ctx, reg, opts.speed_shape).await?;
    let passed = cases_run[..layouts].iter().all(|c| c.stats.passed) && training.passed;
    let mut head = headline(PATH.label, &cases_run[0].stats, passed, ACTIVE_NOTE);
    if !passed {
        let mut why: Vec<String> = cases_run[..layouts]
            .iter()
            .filter(|c| !c.stats.passed)
            .map(|c| format!("{}: {}", c.name, failure_reason(c)))
            .collect();
        if !training.passed {
            why.push(training.why());
        }
        head.push_str(&format!(" ({})", why.join("; ")));
    }
    let mut lines = vec![head];
    let line = |c| l2_line(PATH.label, c).unwrap_or_else(|| case_line(PATH.label, c));
    lines.extend(cases_run.iter().map(line));
    lines.extend(attention_note);
    lines.extend(training_lines(&training));
    Ok(GateReport {
        detected: true,
        passed,
        cases: cases_run,
        lines,
        millis: (opts.now_ms)() - t0,
        ..Default::default()
    })
}

/// The training gate's console lines: one per evaluation, then the verdict.
fn training_lines(t: &TrainingGate) -> Vec<String> {
    let mut out: Vec<String> = t
        .evals
        .iter()
        .map(|e| {
            format!(
                "[ops] {} training gate step {}: val loss f32 {:.4}, coop {:.4}, |Δ| {:.4} (limit {:.4})",
                PATH.label,
                e.step,
                e.f32_loss,
                e.fast_loss,
                (e.fast_loss - e.f32_loss).abs(),
                e.limit()
            )
        })
        .collect();
    out.push(format!(
        "[ops] {} training gate: {} — {}",
        PATH.label,
        t.what,
        if t.passed { "PASS" } else { "FAIL" }
    ));
    out
}
