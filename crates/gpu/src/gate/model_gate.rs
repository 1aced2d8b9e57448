//! The gates that need a loaded model: the f16-weight matmul (f16 storage,
//! f16 compute) on the model's own weight matrices with real activations
//! (004 §8), and for f16 storage, which decodes, the end-to-end sample
//! gate — 100 greedy tokens from one prompt on the f32 path and on the
//! fast path must be identical; for subgroups, the sample gate alone
//! (its kernels claim f32's bits: the tokens must agree). (f16 compute does not run in the decoder:
//! one row keeps the f16-storage GEMV, so its sample would be f32's or f16
//! storage's.)

use super::f16_storage::{
    case_line, compare_case, F16Kernel, Packer, PATH, REAL_COSINE_LIMIT, REAL_REL_L2_LIMIT,
};
use super::framework::FastPath;
use crate::engine::{EngineError, GpuTrainer};
use crate::model::FastPaths;
use crate::ops::matmul::MatmulDesc;
use std::ops::ControlFlow;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::ParamKind::{self, *};
use tinygpt_protocol::{GateCase, SampleGate};

/// Tokens the sample gate generates.
pub const SAMPLE_GATE_TOKENS: usize = 100;

/// The f16-weight matmul (`kernel`: storage or compute, weights packed as
/// `packer` packs) on all four linears of every layer (QKV, attention
/// projection, fc, fc projection), each fed the activations that really
/// reach it for `prompt` (captured from an f32 forward), compared with the
/// f32 matmul by the seed's thresholds and the limits above; lines in
/// `label`'s name.
pub async fn real_weight_cases(
    t: &mut GpuTrainer,
    (packer, kernel, label): (Packer, F16Kernel, &str),
    prompt: &[u32],
) -> Result<(Vec<GateCase>, Vec<String>), EngineError> {
    let params = t.model.read_params(&t.gpu.ctx).await?;
    let inputs = {
        let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
        let r = t.model.linear_inputs(&t.gpu.ctx, &mut reg, prompt).await;
        *t.gpu.registry.borrow_mut() = reg;
        r?
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
        let x = &input.rows;
        let r = compare_case(
            &t.gpu.ctx,
            &mut reg,
            &name,
            packer,
            kernel,
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
        let mut line = case_line(label, &case);
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

/// With a model loaded: extends an active path's report with the
/// real-weight cases and, for f16 storage and subgroups, the sample gate. Any failure
/// rejects the path on the device (and the trainer falls back to f32);
/// the report's lines say why.
pub async fn run_model_gates(
    t: &mut GpuTrainer,
    report: &mut tinygpt_protocol::GateReport,
    prompt: &[u32],
    prompt_text: &str,
    decode: &dyn Fn(&[u32]) -> String,
) -> Result<(), EngineError> {
    let fast = t.gpu.fast_paths.get();
    let compute = super::f16_compute::PATH;
    if !report.active {
        return Ok(());
    }
    let failed = match (report.path.as_str(), fast.f16_storage, fast.f16_compute) {
        (id, Some(f16), _) if id == PATH.id => {
            let packer = Packer {
                on_gpu: f16.pack_on_gpu,
                fault: f16.fault,
            };
            let kernel = F16Kernel::from(f16.fault);
            let (cases, mut lines) =
                real_weight_cases(t, (packer, kernel, PATH.label), prompt).await?;
            let only = FastPaths {
                f16_storage: Some(f16),
                ..Default::default()
            };
            let sample = sample_gate(t, only, prompt, prompt_text, decode).await?;
            lines.push(sample_line((&PATH, "f16"), &sample, prompt_text));
            let failed = failures(&cases, sample.first_divergence);
            record(report, cases, lines);
            report.sample = Some(sample);
            failed
        }
        (id, _, Some(c)) if id == compute.id => {
            let packer = Packer {
                on_gpu: c.pack_on_gpu,
                fault: c.fault,
            };
            let kernel = F16Kernel {
                fault: c.fault,
                compute: true,
            };
            let (cases, lines) =
                real_weight_cases(t, (packer, kernel, compute.label), prompt).await?;
            let failed = failures(&cases, None);
            record(report, cases, lines);
            failed
        }
        (id, _, _) if id == super::subgroups::PATH.id && fast.subgroups => {
            let only = FastPaths {
                subgroups: true,
                ..Default::default()
            };
            let sample = sample_gate(t, only, prompt, prompt_text, decode).await?;
            let line = sample_line((&super::subgroups::PATH, "subgroups"), &sample, prompt_text);
            record(report, Vec::new(), vec![line]);
            report.sample = Some(sample.clone());
            failures(&[], sample.first_divergence)
        }
        _ => return Ok(()),
    };
    let path = super::fast_path(&report.path).expect("a registered path");
    if !failed.is_empty() {
        reject(t, report, path, failed.join("; "))?;
    }
    Ok(())
}

/// The sample gate's console line (docs/precision.md's format: `… on f32
/// and f16 — identical — PASS`, `fast` naming the other side).
fn sample_line((path, fast): (&FastPath, &str), sample: &SampleGate, prompt_text: &str) -> String {
    format!(
        "[ops] {} sample gate: {} greedy tokens from {:?} on f32 and {} — {}",
        path.label,
        sample.tokens,
        prompt_text,
        fast,
        match sample.first_divergence {
            None => "identical — PASS".to_string(),
            Some(i) => format!("diverge at token {i} — FAIL"),
        }
    )
}

/// Why the model's gates failed: each failing case, and the sample.
fn failures(cases: &[GateCase], divergence: Option<usize>) -> Vec<String> {
    cases
        .iter()
        .filter(|c| !c.stats.passed)
        .map(|c| format!("{}: {}", c.name, super::f16_storage::failure_reason(c)))
        .chain(divergence.map(|i| format!("the sample diverges at token {i}")))
        .collect()
}

fn record(report: &mut tinygpt_protocol::GateReport, cases: Vec<GateCase>, lines: Vec<String>) {
    report.cases.extend(cases);
    report.lines.extend(lines);
}

/// Turns `path` off on the device after its gate failed on the loaded
/// model, and says so in its report.
fn reject(
    t: &mut GpuTrainer,
    report: &mut tinygpt_protocol::GateReport,
    path: &FastPath,
    why: String,
) -> Result<(), EngineError> {
    report.passed = false;
    report.active = false;
    report.lines.push(format!(
        "[ops] {} gate on the loaded model — FAIL ({why}) — back to f32",
        path.label
    ));
    // The headline no longer says the path is active.
    if let Some(head) = report.lines.first_mut() {
        if let Some(i) = head.find(" — PASS") {
            head.truncate(i);
            head.push_str(" — PASS on random inputs, FAIL on the loaded model — f32 path active");
        }
    }
    let mut off = t.gpu.fast_paths.get();
    (path.deactivate)(&mut off);
    t.gpu.fast_paths.set(off);
    t.apply_fast_paths()?;
    Ok(())
}
