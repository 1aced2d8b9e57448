//! The tensor-core gate's attention cases: the attention on tensor cores
//! (`ops::attention::coop`, the training path's attention unless
//! `--coop-attention off`) against the f32 kernels — the forward on the
//! same `qkv`, the backward from the same f32 forward on gradients of a
//! real loss's order: 2⁻²⁰, in f16's subnormals unless the backward
//! scales them as it stages them.
//!
//! Three kinds of case (docs/precision.md, "The attention on tensor cores"):
//! - **the forward's output and lse**, held to the seed's thresholds;
//! - **what the optimizer reads**: the QKV projection's weight gradient
//!   `dqkvᵀ·x` over the batch's rows, held to the seed's thresholds;
//! - **dQ, dK and dV themselves**, held to a whole-tensor bound: ‖f − r‖₂
//!   under [`REL_L2_LIMIT`] of ‖r‖₂. Their elements are heavy-tailed —
//!   the first keys collect every query's gradient — so f16 operands'
//!   2⁻¹² of each element puts the largest errors at 1–2.5 % of
//!   mean|ref|, over the seed's element-wise 1 %; the same f16 rounding
//!   of the f32 kernels' own dqkv in the next product (the tensor-core
//!   matmul's dX) measures the same (lavapipe 26, 2026-12-05).

use super::f16_storage::failure_reason;
use super::framework::uniform;
use super::stats::{error_distribution, gate_stats};
use crate::kernel::{submit, Layout};
use crate::ops::attention::{
    bind_attention_backward, bind_attention_backward_coop_scaled, bind_attention_forward,
    bind_attention_forward_coop, coop_attention_unavailable, coop_grad_scale, engine_attention,
    set_engine_attention, AttentionBackwardBuffers, AttentionDesc,
};
use crate::ops::matmul::{matmul_once, MatmulDesc};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::GateCase;

/// The gate's batch: B·T = 2,048 rows, heads of 64 (nanoGPT's).
pub const GATE_SHAPE: AttentionDesc = AttentionDesc {
    b: 8,
    t: 256,
    c: 128,
    nh: 2,
    layout: Layout::Gpu,
};

/// The loss gradients' order: a mean over B·T rows, through the model's
/// weights, reaches the attention's output at about 1/(B·T)·0.1 — 2⁻²⁰
/// for nanoGPT's 16,384 rows.
const DOUT_ORDER: f32 = 1.0 / (1u32 << 20) as f32;

/// dQ, dK and dV's bound on ‖f − r‖₂ / ‖r‖₂: four times f16's rounding of
/// each operand (2⁻¹²) summed over a product's two operands — 2⁻⁹. The
/// kernels read 4.7–5.9e-4; staged unscaled, 2⁻²⁰ gradients read percents.
pub const REL_L2_LIMIT: f64 = 1.0 / 512.0;

/// The name's mark of a case held to [`REL_L2_LIMIT`].
const L2_MARK: &str = "(held to ‖Δ‖₂/‖r‖₂)";

/// The gradients' names, in `dqkv`'s column order.
const PARTS: [&str; 3] = ["dQ", "dK", "dV"];

/// Why the attention cases do not run here, if they do not: the attention
/// is off (`--coop-attention off`) or the device lacks its kernels.
pub fn unavailable(ctx: &GpuContext) -> Option<String> {
    if !engine_attention() {
        return Some("off (`--coop-attention off`): the attention stays f32".into());
    }
    coop_attention_unavailable(ctx, &GATE_SHAPE)
}

/// The tensor-core gate's attention part: its cases, and a console line
/// where they did not run or failed. A failure turns the engine's
/// attention off ([`set_engine_attention`]) — the training and speed gates
/// after it, and the path it activates, keep the f32 attention — without
/// failing the matmuls' gate.
pub async fn gate_attention(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    rng: &mut Rng,
) -> Result<(Vec<GateCase>, Option<String>), GpuError> {
    let head = "[ops] coop-matrix attention on tensor cores:";
    if let Some(why) = unavailable(ctx) {
        return Ok((Vec::new(), Some(format!("{head} {why}"))));
    }
    let cases = attention_cases(ctx, reg, rng, None).await?;
    let failed: Vec<String> = cases
        .iter()
        .filter(|c| !c.stats.passed)
        .map(|c| {
            let why = l2_failure(c).unwrap_or_else(|| failure_reason(c));
            format!("{}: {why}", c.name)
        })
        .collect();
    if failed.is_empty() {
        return Ok((cases, None));
    }
    set_engine_attention(false);
    let note = format!(
        "{head} FAIL ({}) — the attention stays f32 (as `--coop-attention off`)",
        failed.join("; ")
    );
    Ok((cases, Some(note)))
}

/// Columns `part·C .. (part+1)·C` of each `(B,T,3C)` row.
fn columns(dqkv: &[f32], c: usize, part: usize) -> Vec<f32> {
    dqkv.chunks(3 * c)
        .flat_map(|row| &row[part * c..(part + 1) * c])
        .copied()
        .collect()
}

/// The cases: qkv uniform in [−2, 2] (scores of a few units, softmax rows
/// far from uniform), dout uniform in ±[`DOUT_ORDER`]. `grad_scale`
/// replaces the engine's scale ([`coop_grad_scale`]): `Some(1.0)` is the
/// fault the gate must catch, the gradients staged unscaled.
pub async fn attention_cases(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    rng: &mut Rng,
    grad_scale: Option<f32>,
) -> Result<Vec<GateCase>, GpuError> {
    let d = GATE_SHAPE;
    let (want, got, forward) = run_both(ctx, reg, rng, grad_scale).await?;
    let x = uniform(rng, d.b * d.t * d.c);
    let dw = MatmulDesc {
        m: 3 * d.c,
        k: d.b * d.t,
        n: d.c,
        trans_a: true,
        ..Default::default()
    };
    let r = matmul_once(ctx, reg, dw, &want, &x, None).await?;
    let f = matmul_once(ctx, reg, dw, &got, &x, None).await?;
    let mut cases = vec![GateCase {
        name: "attention → QKV weight gradient dqkvᵀ·x".into(),
        shape: [dw.m, dw.k, dw.n],
        real_weights: false,
        stats: gate_stats(&f, &r),
        distribution: error_distribution(&f, &r),
    }];
    // The forward the training graph binds with them: its output and lse
    // against the f32 kernel's, held to the seed's thresholds.
    let rows = d.b * d.t;
    let shapes = [[rows, d.c / d.nh, d.t], [rows * d.nh, 1, d.t]];
    for ((name, (f, r)), shape) in ["out", "lse"].iter().zip(forward).zip(shapes) {
        cases.push(GateCase {
            name: format!("attention forward {name}"),
            shape,
            real_weights: false,
            stats: gate_stats(&f, &r),
            distribution: error_distribution(&f, &r),
        });
    }
    let c = d.c as usize;
    for (part, name) in PARTS.iter().enumerate() {
        let (f, r) = (columns(&got, c, part), columns(&want, c, part));
        let mut stats = gate_stats(&f, &r);
        let distribution = error_distribution(&f, &r);
        stats.passed = stats.non_finite == 0 && distribution.rel_l2 < REL_L2_LIMIT;
        cases.push(GateCase {
            name: format!("attention {name} {L2_MARK}"),
            shape: [d.b * d.t, d.c / d.nh, d.t],
            real_weights: false,
            stats,
            distribution,
        });
    }
    Ok(cases)
}

/// `dqkv` of the f32 backward and of the tensor-core one, then the
/// forward's `out` and `lse`, each as (tensor-core, f32).
type Both = (Vec<f32>, Vec<f32>, [(Vec<f32>, Vec<f32>); 2]);

/// The f32 and tensor-core kernels on seeded `qkv` and `dout`: both
/// backwards from one f32 forward, and both forwards.
async fn run_both(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    rng: &mut Rng,
    grad_scale: Option<f32>,
) -> Result<Both, GpuError> {
    let d = GATE_SHAPE;
    let qkv: Vec<f32> = uniform(rng, d.qkv_len() as u32)
        .iter()
        .map(|v| v * 10.0)
        .collect();
    let dout: Vec<f32> = uniform(rng, d.out_len() as u32)
        .iter()
        .map(|v| v * 5.0 * DOUT_ORDER)
        .collect();
    let qkv = ctx.upload("coop_gate_qkv", &qkv)?;
    let dout = ctx.upload("coop_gate_dout", &dout)?;
    let out = ctx.zeros("coop_gate_out", d.out_len() as usize)?;
    let lse = ctx.zeros("coop_gate_lse", d.lse_len() as usize)?;
    let want = ctx.zeros("coop_gate_dqkv_f32", d.qkv_len() as usize)?;
    let got = ctx.zeros("coop_gate_dqkv_coop", d.qkv_len() as usize)?;
    let fwd = bind_attention_forward(ctx, reg, d, &qkv, &out, &lse, None)?;
    let out2 = ctx.zeros("coop_gate_out_coop", d.out_len() as usize)?;
    let lse2 = ctx.zeros("coop_gate_lse_coop", d.lse_len() as usize)?;
    let coop_fwd = bind_attention_forward_coop(ctx, reg, d, (&qkv, &out2, &lse2), (None, None))?;
    let bufs = |dqkv| AttentionBackwardBuffers {
        qkv: &qkv,
        out: &out,
        dout: &dout,
        lse: &lse,
        dqkv,
    };
    let f32_bwd = bind_attention_backward(ctx, reg, d, bufs(&want), None)?;
    let scale = grad_scale.unwrap_or_else(|| coop_grad_scale(&d));
    let coop_bwd = bind_attention_backward_coop_scaled(ctx, reg, d, bufs(&got), None, scale)?;
    let all: Vec<_> = [&fwd, &coop_fwd]
        .into_iter()
        .chain(&f32_bwd)
        .chain(&coop_bwd)
        .collect();
    submit(ctx, "coop_gate_attention", &all);
    let want = ctx.read_f32(&want, d.qkv_len() as usize).await?;
    let got = ctx.read_f32(&got, d.qkv_len() as usize).await?;
    let (n, m) = (d.out_len() as usize, d.lse_len() as usize);
    let outs = (ctx.read_f32(&out2, n).await?, ctx.read_f32(&out, n).await?);
    let lses = (ctx.read_f32(&lse2, m).await?, ctx.read_f32(&lse, m).await?);
    Ok((want, got, [outs, lses]))
}

/// Why a case held to [`REL_L2_LIMIT`] failed (`None` for the others).
pub fn l2_failure(c: &GateCase) -> Option<String> {
    c.name.ends_with(L2_MARK).then(|| {
        if c.stats.non_finite > 0 {
            format!("{} non-finite", c.stats.non_finite)
        } else {
            format!(
                "rel_l2 {:.2e} ≥ limit {REL_L2_LIMIT:.2e}",
                c.distribution.rel_l2
            )
        }
    })
}

/// The console line of a case held to [`REL_L2_LIMIT`] (`None` for the
/// others: `f16_storage::case_line`).
pub fn l2_line(label: &str, c: &GateCase) -> Option<String> {
    let [m, k, n] = c.shape;
    let s = &c.stats;
    c.name.ends_with(L2_MARK).then(|| {
        format!(
            "[ops] {label} gate {} {m}×{k}×{n}: rel_l2={:.2e} (limit {REL_L2_LIMIT:.2e}), cos={:.6}, mean|ref|={:.2e}, max_abs={:.2e} = {:.2}% of mean|ref| (element-wise, not gated), mean_rel={:.3}% — {}",
            c.name,
            c.distribution.rel_l2,
            c.distribution.cosine,
            s.mean_abs_ref,
            s.max_abs_err,
            100.0 * s.max_abs_err / s.mean_abs_ref.max(f64::MIN_POSITIVE),
            s.mean_rel_err * 100.0,
            match (s.passed, l2_failure(c)) {
                (true, _) => "PASS".to_string(),
                (false, why) => format!("FAIL ({})", why.unwrap_or_default()),
            }
        )
    })
}
