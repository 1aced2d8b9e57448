//! The gates that need a loaded model: the f16-storage matmul on the
//! model's own weight matrices with real activations (004 §8), and the
//! end-to-end sample gate — 100 greedy tokens from one prompt on the f32
//! path and on the fast path must be identical.

use super::f16_storage::{
    case_line, compare_case, Packer, PATH, REAL_COSINE_LIMIT, REAL_REL_L2_LIMIT,
};
use crate::engine::{EngineError, GpuTrainer};
use crate::model::FastPaths;
use crate::ops::matmul::f16w::F16Storage;
use crate::ops::matmul::MatmulDesc;
use std::ops::ControlFlow;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::ParamKind::{self, *};
use tinygpt_protocol::{GateCase, SampleGate};

/// Tokens the sample gate generates.
pub const SAMPLE_GATE_TOKENS: usize = 100;

/// The f16-weight matmul on all four linears of every layer (QKV,
/// attention projection, fc, fc projection), each fed the activations that
/// really reach it for `prompt` (captured from an f32 forward), compared
/// with the f32 matmul by the seed's thresholds and the limits above.
pub async fn real_weight_cases(
    t: &mut GpuTrainer,
    f16: F16Storage,
    prompt: &[u32],
) -> Result<(Vec<GateCase>, Vec<String>), EngineError> {
    let params = t.model.read_params(&t.gpu.ctx).await?;
    let inputs = {
        let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
        let r = t.model.linear_inputs(&t.gpu.ctx, &mut reg, prompt).await;
        *t.gpu.registry.borrow_mut() = reg;
        r?
    };
    let packer = Packer {
        on_gpu: f16.pack_on_gpu,
        fault: f16.fault,
    };
    let (mut cases, mut lines) = (Vec::new(), Vec::new());
    for input in &inputs {
        let (l, d_in) = (input.layer, input.d_in);
        let ws = t.model.layout.layer(&params, input.w, l);
        let bs = t.model.layout.layer(&params, input.b, l);
        let m = (input.rows.len() / d_in) as u32;
        let desc = MatmulDesc::linear(m, d_in as u32, (ws.len() / d_in) as u32);
        let name = format!("layer {l} {} (real weights)", linear_name(input.w));
        let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
        let (ctx, fault) = (&t.gpu.ctx, f16.fault);
        let x = &input.rows;
        let r = compare_case(
            ctx,
            &mut reg,
            &name,
            packer,
            fault,
            desc,
            x,
            ws,
            Some(bs),
            true,
        )
        .await;
        *t.gpu.registry.borrow_mut() = reg;
        let r = r?;
        let mut case = r.case;
        // The verdict first, then the line that reports it.
        let d = &case.distribution;
        case.stats.passed &=
            r.pack_mismatches == 0 && d.rel_l2 < REAL_REL_L2_LIMIT && d.cosine > REAL_COSINE_LIMIT;
        let mut line = case_line(PATH.label, &case);
        if r.pack_mismatches > 0 {
            line.push_str(&format!(
                " — {} packed halves differ from round-to-nearest-even",
                r.pack_mismatches
            ));
        }
        lines.push(line);
        cases.push(case);
    }
    Ok((cases, lines))
}

/// The name of the linear whose weight is `w`.
fn linear_name(w: ParamKind) -> &'static str {
    match w {
        QkvW => "qkv",
        AttnProjW => "attn_proj",
        FcW => "fc",
        _ => "fc_proj",
    }
}

/// Greedy text on the f32 path and with `fast`; restores the trainer's
/// current fast paths afterwards.
pub async fn sample_gate(
    t: &mut GpuTrainer,
    fast: FastPaths,
    prompt: &[u32],
    prompt_text: &str,
    decode: &dyn Fn(&[u32]) -> String,
) -> Result<SampleGate, EngineError> {
    let saved = t.model.fast_paths();
    let mut texts = Vec::new();
    for paths in [FastPaths::default(), fast] {
        {
            let mut reg = t.gpu.registry.borrow_mut();
            t.model.set_fast_paths(&t.gpu.ctx, &mut reg, paths)?;
        }
        let ids = t
            .generate(prompt, SAMPLE_GATE_TOKENS, &SampleParams::greedy(), |_| {
                ControlFlow::Continue(())
            })
            .await?;
        texts.push(ids);
    }
    {
        let mut reg = t.gpu.registry.borrow_mut();
        t.model.set_fast_paths(&t.gpu.ctx, &mut reg, saved)?;
    }
    let first_divergence = texts[0]
        .iter()
        .zip(&texts[1])
        .position(|(a, b)| a != b)
        .or((texts[0].len() != texts[1].len()).then_some(texts[0].len().min(texts[1].len())));
    Ok(SampleGate {
        prompt: prompt_text.into(),
        tokens: texts[0].len(),
        first_divergence,
        passed: first_divergence.is_none(),
        f32_text: decode(&texts[0]),
        fast_text: decode(&texts[1]),
    })
}

/// With a model loaded: extends the active f16-storage report with the
/// real-weight cases and the sample gate. Any failure rejects the path on
/// the device (and the trainer falls back to f32); the report's lines say
/// why.
pub async fn run_model_gates(
    t: &mut GpuTrainer,
    report: &mut tinygpt_protocol::GateReport,
    prompt: &[u32],
    prompt_text: &str,
    decode: &dyn Fn(&[u32]) -> String,
) -> Result<(), EngineError> {
    let Some(f16) = t.gpu.fast_paths.get().f16_storage else {
        return Ok(());
    };
    if report.path != PATH.id || !report.active {
        return Ok(());
    }
    let (cases, mut lines) = real_weight_cases(t, f16, prompt).await?;
    let fast = FastPaths {
        f16_storage: Some(f16),
    };
    let sample = sample_gate(t, fast, prompt, prompt_text, decode).await?;
    lines.push(format!(
        "[ops] {} sample gate: {} greedy tokens from {:?} on f32 and f16 — {}",
        PATH.label,
        sample.tokens,
        prompt_text,
        match sample.first_divergence {
            None => "identical — PASS".to_string(),
            Some(i) => format!("diverge at token {i} — FAIL"),
        }
    ));
    let failed: Vec<String> = cases
        .iter()
        .filter(|c| !c.stats.passed)
        .map(|c| format!("{}: {}", c.name, super::f16_storage::failure_reason(c)))
        .chain(
            sample
                .first_divergence
                .map(|i| format!("the sample diverges at token {i}")),
        )
        .collect();
    report.cases.extend(cases);
    report.sample = Some(sample);
    report.lines.extend(lines);
    if !failed.is_empty() {
        report.passed = false;
        report.active = false;
        let why = failed.join("; ");
        report.lines.push(format!(
            "[ops] {} gate on the loaded model — FAIL ({why}) — back to f32",
            PATH.label
        ));
        // The headline no longer says the path is active.
        if let Some(head) = report.lines.first_mut() {
            if let Some(i) = head.find(" — PASS") {
                head.truncate(i);
                head.push_str(
                    " — PASS on random inputs, FAIL on the loaded model — f32 path active",
                );
            }
        }
        let mut off = t.gpu.fast_paths.get();
        off.f16_storage = None;
        t.gpu.fast_paths.set(off);
        t.apply_fast_paths()?;
    }
    Ok(())
}
