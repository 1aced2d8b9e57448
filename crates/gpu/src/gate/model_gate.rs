//! The gates that need a loaded model: the f16-storage matmul on the
//! model's own weight matrices with real activations (004 §8), and the
//! end-to-end sample gate — 100 greedy tokens from one prompt on the f32
//! path and on the fast path must be identical.

use super::f16_storage::{case_line, compare_case, Packer, PATH};
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

/// Layer-0 `ln1` rows of `prompt` computed on the CPU from the model's
/// weights: `LayerNorm(tok_emb[t] + pos_emb[p])`, exactly what the first
/// linear reads. Later layers are gated on the same normalised rows.
fn ln1_rows(t: &GpuTrainer, params: &[f32], prompt: &[u32]) -> Vec<f32> {
    let (cfg, layout) = (&t.model.cfg, &t.model.layout);
    let c = cfg.d_model;
    let view = |k: ParamKind| &params[layout.get(k).range()];
    let (tok, pos) = (view(TokEmb), view(PosEmb));
    let (w, b) = (&view(Ln1W)[..c], &view(Ln1B)[..c]);
    let mut out = Vec::new();
    for (p, &id) in prompt.iter().take(cfg.block_size).enumerate() {
        let x: Vec<f64> = (0..c)
            .map(|i| (tok[id as usize * c + i] + pos[p * c + i]) as f64)
            .collect();
        let mean = x.iter().sum::<f64>() / c as f64;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / c as f64;
        let rstd = 1.0 / (var + 1e-5).sqrt();
        out.extend((0..c).map(|i| ((x[i] - mean) * rstd * w[i] as f64 + b[i] as f64) as f32));
    }
    out
}

/// The f16-weight matmul on each layer's QKV and fc weights with real
/// activations, compared with the f32 matmul.
pub async fn real_weight_cases(
    t: &GpuTrainer,
    f16: F16Storage,
    prompt: &[u32],
) -> Result<(Vec<GateCase>, Vec<String>), EngineError> {
    let params = t.model.read_params(&t.gpu.ctx).await?;
    let x = ln1_rows(t, &params, prompt);
    let c = t.model.cfg.d_model;
    let m = (x.len() / c) as u32;
    let packer = Packer {
        on_gpu: f16.pack_on_gpu,
        fault: f16.fault,
    };
    let (mut cases, mut lines) = (Vec::new(), Vec::new());
    for l in 0..t.model.cfg.n_layer {
        for (name, w, b, n) in [("qkv", QkvW, QkvB, 3 * c), ("fc", FcW, FcB, 4 * c)] {
            let ws = t.model.layout.layer(&params, w, l);
            let bs = t.model.layout.layer(&params, b, l);
            let desc = MatmulDesc::linear(m, c as u32, n as u32);
            // Moved out for the awaits (a RefCell guard must not cross one).
            let mut reg = std::mem::take(&mut *t.gpu.registry.borrow_mut());
            let name = format!("layer {l} {name} (real weights)");
            let (ctx, fault) = (&t.gpu.ctx, f16.fault);
            let r = compare_case(
                ctx,
                &mut reg,
                &name,
                packer,
                fault,
                desc,
                &x,
                ws,
                Some(bs),
                true,
            )
            .await;
            *t.gpu.registry.borrow_mut() = reg;
            let r = r?;
            let mut case = r.case;
            // The verdict first, then the line that reports it.
            case.stats.passed &= r.pack_mismatches == 0;
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
    }
    Ok((cases, lines))
}

/// Greedy text on the f32 path and with `fast`; restores the trainer's
/// current fast paths afterwards.
pub async fn sample_gate(
    t: &mut GpuTrainer,
    fast: FastPaths,
    prompt: &[u32],
    prompt_text: &str,
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
    let sample = sample_gate(t, fast, prompt, prompt_text).await?;
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
