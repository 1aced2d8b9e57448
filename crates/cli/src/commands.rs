//! What each subcommand does.

use crate::args::{Backend, Cli, Command, EvalArgs, GateArgs, SampleArgs};
use crate::clock::now_ms;
use crate::files::{load_session, open_gpu, read};
use anyhow::{Context, Result};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;
use tinygpt_core::data::Dataset;
use tinygpt_core::sample::SampleParams;
use tinygpt_gpu::model::DecoderKernels;
use tinygpt_gpu::ops::matmul::coop::{self, CoopKernel};
use tinygpt_gpu::{GpuContext, ShaderChecks};

pub async fn run(cli: Cli) -> Result<()> {
    let checks = ShaderChecks::parse(&cli.shader_checks).map_err(anyhow::Error::msg)?;
    tinygpt_gpu::registry::set_engine_default(checks);
    tinygpt_gpu::ops::attention::set_engine_attention(cli.coop_attention == "on");
    match cli.command {
        Command::Train(a) => crate::train::train(*a).await,
        Command::Sample(a) => sample(a).await,
        Command::Eval(a) => eval(a).await,
        Command::Info => info().await,
        Command::Gate(a) => gate(a).await,
        Command::Bench(a) => {
            if a.attention_only && a.shape.as_deref() == Some("matmuls") {
                anyhow::bail!("`--attention-only` times the attention of a model shape; `--shape matmuls` has none");
            }
            if a.profile && a.shape.as_deref() == Some("matmuls") {
                anyhow::bail!("`--profile` profiles a model shape; `--shape matmuls` is for the matmul rows of `bench` without it");
            }
            let ctx = GpuContext::new().await.context("opening the GPU")?;
            if let Some(name) = a.coop_kernel.as_deref() {
                let kernel = CoopKernel::from_name(name).context("a listed kernel")?;
                coop::set_engine_kernel(kernel);
            }
            // clap admits only the layouts' names.
            let decoder = crate::bench::DecoderChoice {
                kernels: a.decoder.as_deref().and_then(DecoderKernels::from_name),
                pick_apart: a.pick_apart,
            };
            let mut report = if a.profile {
                let decode = (a.decode_only, decoder);
                let only = (a.shape.as_deref(), a.pipeline_stats);
                crate::profile::run(&ctx, a.quick, only, decode)?
            } else {
                let only = (a.shape.as_deref(), decoder);
                let mut report = match a.attention_only {
                    true => serde_json::json!({ "adapter": ctx.adapter_desc() }),
                    false => crate::bench::run(&ctx, a.quick, only)?,
                };
                let shape = a.shape.as_deref();
                report["attention"] =
                    crate::bench_attention::bench_attention(&ctx, a.quick, shape)?.into();
                report
            };
            report["coop_kernel"] = coop::engine_kernel().name().into();
            report["shader_checks"] = format!("{:?}", ctx.shader_checks).into();
            report["coop_attention"] = tinygpt_gpu::ops::attention::engine_attention().into();
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(())
        }
    }
}

async fn sample(a: SampleArgs) -> Result<()> {
    tinygpt_protocol::check_num_samples(a.num_samples, a.temperature)
        .map_err(anyhow::Error::msg)?;
    let gpu = open_gpu(&a.backend).await?;
    let mut session = load_session(&a.checkpoint, gpu)?;
    let params = SampleParams {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        seed: a.seed,
    };
    let several = a.num_samples > 1;
    let mut out = std::io::stdout().lock();
    if !several {
        write!(out, "{}", a.prompt)?;
    }
    let start = Instant::now();
    let mut first = None;
    let mut count = 0usize;
    let texts = session
        .generate_samples(
            &a.prompt,
            a.length,
            &params,
            a.num_samples,
            |_, text| {
                first.get_or_insert_with(|| start.elapsed());
                count += 1;
                // One sample streams; several are printed whole at the end.
                if !several {
                    let _ = write!(out, "{text}");
                    let _ = out.flush();
                }
                ControlFlow::Continue(())
            },
            || std::future::ready(()),
        )
        .await?;
    let secs = start.elapsed().as_secs_f64();
    if several {
        for (i, text) in texts.iter().enumerate() {
            let seed = params.for_sample(i).seed;
            writeln!(
                out,
                "── sample {} of {} (seed {seed}) ──",
                i + 1,
                texts.len()
            )?;
            writeln!(out, "{}{text}", a.prompt)?;
        }
    } else {
        writeln!(out)?;
    }
    eprintln!(
        "{count} tokens{} in {secs:.2} s · {:.1} tok/s · first token after {:.1} ms",
        if several {
            format!(" ({} samples)", a.num_samples)
        } else {
            String::new()
        },
        count as f64 / secs.max(1e-9),
        first.unwrap_or_default().as_secs_f64() * 1e3
    );
    Ok(())
}

async fn eval(a: EvalArgs) -> Result<()> {
    let gpu = open_gpu(&a.backend).await?;
    let mut session = load_session(&a.checkpoint, gpu)?;
    let data = Dataset::from_bytes(
        &read(&a.corpus, "corpus")?,
        a.val_fraction,
        session.train.seq_len,
    )
    .with_context(|| format!("reading corpus {}", a.corpus.display()))?;
    session.attach_data(data)?;
    session.train.eval_batches = a.batches;
    let loss = session.eval_loss().await?;
    if a.json {
        println!(
            "{}",
            serde_json::json!({ "checkpoint": a.checkpoint, "val_loss": loss, "batches": a.batches })
        );
    } else {
        println!(
            "validation loss: {loss:.4} nats/char ({} batches of {}×{})",
            a.batches, session.train.batch_size, session.train.seq_len
        );
    }
    Ok(())
}

async fn info() -> Result<()> {
    let ctx = GpuContext::new().await?;
    let caps = serde_json::json!({
        "adapter": ctx.adapter_desc(), "features": ctx.detected_features(), "limits": ctx.gpu_limits(),
        "shader_checks": format!("{:?}", ctx.shader_checks),
        "coop_attention": ctx.coop_attention,
    });
    println!("{}", serde_json::to_string_pretty(&caps)?);
    Ok(())
}

/// The error-distribution lines of one case (a measurement, never a verdict).
fn distribution_lines(c: &tinygpt_protocol::GateCase) -> Vec<String> {
    let d = &c.distribution;
    let pct = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2e}"))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    vec![
        format!(
            "    {}: rel_l2={:.3e} cosine={:.8} frac>thd {}",
            c.name,
            d.rel_l2,
            d.cosine,
            d.thresholds
                .iter()
                .zip(&d.frac_over)
                .map(|(t, f)| format!("{t:.0e}:{:.2}%", f * 100.0))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        format!("      p50/p90/p99/max  rel_diff {}", pct(&d.rel_diff)),
        format!("      p50/p90/p99/max  abs_diff {}", pct(&d.abs_diff)),
        format!("      p50/p90/p99/max  |ref|    {}", pct(&d.ref_abs)),
    ]
}

async fn gate(a: GateArgs) -> Result<()> {
    use tinygpt_gpu::gate::{model_gate, model_speed, run_gates, Fault, GateOptions};
    use tinygpt_gpu::gate::{BUNDLED_SHAPE, DEFAULT_VOCAB};
    let fault = match &a.fault {
        Some(name) => Some(
            Fault::parse(name)
                .with_context(|| format!("unknown fault {name:?} (f16acc, droptail, trunc)"))?,
        ),
        None => None,
    };
    if a.localize && a.checkpoint.is_none() {
        anyhow::bail!("--localize needs --checkpoint: the stages compared are that model's");
    }
    let gpu = open_gpu(&Backend { cpu: false })
        .await?
        .expect("the GPU was asked for");
    let mut session = a
        .checkpoint
        .as_deref()
        .map(|p| load_session(p, Some(gpu.clone())))
        .transpose()?;
    let opts = GateOptions {
        fault,
        vocab: session
            .as_ref()
            .map_or(DEFAULT_VOCAB, |s| s.config.vocab_size as u32),
        now_ms,
        measure_speed: a.speed_gate == "on",
        speed_shape: BUNDLED_SHAPE,
    };
    let mut reg = std::mem::take(&mut *gpu.registry.borrow_mut());
    let (mut reports, active) = run_gates(&gpu.ctx, &mut reg, opts).await;
    *gpu.registry.borrow_mut() = reg;
    gpu.fast_paths.set(active);
    if let Some(s) = &mut session {
        s.apply_fast_paths()?;
        let ids = s.vocab.encode(&a.prompt).unwrap_or_else(|_| vec![0]);
        let vocab = s.vocab.clone();
        let decode = |ids: &[u32]| vocab.decode(ids);
        let trainer = s.gpu_trainer().expect("the session runs on the GPU");
        for r in &mut reports {
            model_speed::retime_for_model(trainer, r, now_ms).await?;
            model_gate::run_model_gates(trainer, r, &ids, &a.prompt, &decode).await?;
        }
    }
    if a.localize {
        let s = session.as_mut().expect("checked above");
        return localize(s, &reports, &a.prompt, a.text.as_deref()).await;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for r in &reports {
        for line in &r.lines {
            println!("{line}");
        }
        // Paths that claim f32's bits (subgroups) have no distribution.
        if r.cases.iter().any(|c| c.stats.max_abs_err != 0.0) {
            println!(
                "[ops] {} error distribution (measured, never gating):",
                r.label
            );
            for c in &r.cases {
                for line in distribution_lines(c) {
                    println!("{line}");
                }
            }
        }
        println!(
            "[ops] {}: {} in {:.0} ms",
            r.label,
            if r.active { "ACTIVE" } else { "off (f32)" },
            r.millis
        );
    }
    Ok(())
}

/// `gate --localize`: the f16-storage path (as its gate configured it,
/// passed or not) against f32 on `prompt`, stage by stage.
async fn localize(
    s: &mut tinygpt_gpu::engine::Session,
    reports: &[tinygpt_protocol::GateReport],
    prompt: &str,
    text: Option<&Path>,
) -> Result<()> {
    use tinygpt_gpu::gate::localize::{candidate, drift, localize};
    let ids = s.vocab.encode(prompt).with_context(|| {
        format!("the prompt {prompt:?} has characters outside the model's vocabulary")
    })?;
    // The report carries the fault the gates ran with (`--fault`).
    let Some(fast) = reports.iter().find_map(candidate) else {
        anyhow::bail!("no fast path was detected on this adapter: nothing to localise");
    };
    let trainer = s.gpu_trainer().expect("the session runs on the GPU");
    let report = localize(trainer, fast, &ids, async |_| Ok(())).await?;
    println!(
        "[localize] f16-storage vs f32 on {prompt:?} ({} tokens)",
        ids.len()
    );
    for line in report.lines() {
        println!("{line}");
    }
    let Some(path) = text else {
        println!("[drift] not measured: pass --text FILE to teacher-force 1,000 characters");
        return Ok(());
    };
    let text = String::from_utf8_lossy(&read(path, "text")?).into_owned();
    let known: String = text
        .chars()
        .filter(|c| s.vocab.encode(&c.to_string()).is_ok())
        .take(1000)
        .collect();
    let ids = s.vocab.encode(&known)?;
    if ids.len() < 2 {
        anyhow::bail!(
            "{} has no characters of the model's vocabulary",
            path.display()
        );
    }
    let trainer = s.gpu_trainer().expect("the session runs on the GPU");
    let d = drift(trainer, fast, &ids, 8).await?;
    println!(
        "[drift] f16-storage vs f32 over {} characters of {}, teacher-forced through the KV cache",
        ids.len(),
        path.display()
    );
    for line in d.lines() {
        println!("{line}");
    }
    Ok(())
}
