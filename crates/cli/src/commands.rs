//! What each subcommand does.

use crate::args::{Backend, Cli, Command, EvalArgs, GateArgs, SampleArgs, TrainArgs};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::rc::Rc;
use std::time::Instant;
use tinygpt_core::checkpoint::{self, WeightDtype};
use tinygpt_core::data::Dataset;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::{ModelConfig, Preset};
use tinygpt_gpu::engine::run::Run;
use tinygpt_gpu::engine::{Gpu, Session};
use tinygpt_gpu::GpuContext;

pub async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Train(a) => train(*a).await,
        Command::Sample(a) => sample(a).await,
        Command::Eval(a) => eval(a).await,
        Command::Info => info().await,
        Command::Gate(a) => gate(a).await,
        Command::Bench(a) => {
            let ctx = GpuContext::new().await.context("opening the GPU")?;
            let report = if a.profile {
                crate::profile::run(&ctx, a.quick, a.shape.as_deref(), a.decode_only)?
            } else {
                crate::bench::run(&ctx, a.quick, a.shape.as_deref())?
            };
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(())
        }
    }
}

/// The GPU, unless `--cpu`; no adapter is an error that says what to do.
async fn open_gpu(backend: &Backend) -> Result<Option<Rc<Gpu>>> {
    if backend.cpu {
        return Ok(None);
    }
    let ctx = GpuContext::new()
        .await
        .context("opening the GPU (pass --cpu to use the CPU reference)")?;
    eprintln!(
        "GPU: {} ({}, {:?})",
        ctx.info.name, ctx.info.backend, ctx.info.device_type
    );
    Ok(Some(Gpu::new(ctx)))
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

fn load_session(path: &Path, gpu: Option<Rc<Gpu>>) -> Result<Session> {
    let ckpt = checkpoint::load(&read(path, "checkpoint")?)
        .with_context(|| format!("{} is not a valid checkpoint", path.display()))?;
    Ok(Session::from_checkpoint(
        ckpt,
        path.display().to_string(),
        gpu,
    )?)
}

/// Writes the file next to its destination, then renames it over: a crash
/// mid-write leaves the previous checkpoint intact.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("safetensors.tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

async fn save(session: &Session, path: &Path, f16: bool) -> Result<()> {
    let mut ckpt = session.checkpoint().await?;
    let dtype = if f16 {
        // Shipping weights: moments are f32-only and not needed to sample.
        ckpt.adam = None;
        WeightDtype::F16
    } else {
        WeightDtype::F32
    };
    write_atomic(path, &checkpoint::save(&ckpt, dtype)?)
}

async fn train(a: TrainArgs) -> Result<()> {
    let gpu = open_gpu(&a.backend).await?;
    let preset = Preset::by_name(&a.preset)?;
    let corpus = read(&a.corpus, "corpus")?;
    let mut session = match &a.resume {
        Some(path) => {
            let mut s = load_session(path, gpu)?;
            let data = Dataset::from_bytes(&corpus, a.val_fraction, s.train.seq_len)
                .with_context(|| format!("reading corpus {}", a.corpus.display()))?;
            s.attach_data(data)?;
            s
        }
        None => {
            let mut train = preset.train();
            train.seq_len = a.seq_len.or(a.block_size).unwrap_or(train.seq_len);
            let data = Dataset::from_bytes(&corpus, a.val_fraction, train.seq_len)
                .with_context(|| format!("reading corpus {}", a.corpus.display()))?;
            let mut model = preset.model(data.vocab.len());
            model.n_layer = a.n_layer.unwrap_or(model.n_layer);
            model.n_head = a.n_head.unwrap_or(model.n_head);
            model.d_model = a.d_model.unwrap_or(model.d_model);
            model.block_size = a.block_size.unwrap_or(model.block_size);
            let source = format!("{} on {}", a.preset, a.corpus.display());
            Session::new(model, override_train(train, &a), data, source, gpu)?
        }
    };
    if a.resume.is_some() {
        let t = override_train(session.train, &a);
        t.validate(&session.config)?;
        session.train = t;
    }
    let total = a.steps.unwrap_or(session.train.steps);
    if total <= session.step {
        bail!(
            "the checkpoint is already at step {}; pass --steps larger than that",
            session.step
        );
    }
    session.set_total_steps(total)?;
    let cfg: ModelConfig = session.config;
    eprintln!(
        "model: {} layers, {} heads, d_model {}, context {}, vocab {} — {} parameters, on the {} path",
        cfg.n_layer, cfg.n_head, cfg.d_model, cfg.block_size, cfg.vocab_size, cfg.num_params(), session.backend_name()
    );
    let bar = (!a.json).then(|| {
        let bar = ProgressBar::new(total as u64).with_position(session.step as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} steps · {msg} · {elapsed_precise} (eta {eta})",
            )
            .expect("valid template"),
        );
        bar
    });
    let tokens_per_step = session.train.batch_size * session.train.seq_len;
    let start = Instant::now();
    let first_step = session.step;
    // The run's policy is the worker's (`engine::run`): chunks end at each
    // report point (every eval interval, or every 100 steps without one)
    // and at each save, counted from the last save.
    let report_every = match session.train.eval_interval {
        0 => 100,
        every => every,
    };
    let mut run = Run::new(report_every, a.save_every, Some(first_step));
    let now_ms = || start.elapsed().as_secs_f64() * 1e3;
    run.begin(first_step, total - first_step, now_ms());
    let mut last = (f32::NAN, f32::NAN);
    while !run.done(session.step) {
        let n = run.next_steps(session.step, usize::MAX);
        let losses = session.train_losses(n).await?;
        let loss = losses.last().copied().unwrap_or(f32::NAN);
        let val = if run.at_eval(session.step) && session.train.eval_interval > 0 {
            Some(session.eval_loss().await?)
        } else {
            None
        };
        last = (loss, val.unwrap_or(last.1));
        let p = run
            .record(&session, session.step, losses, val, now_ms())
            .expect("a loss was recorded");
        if a.json {
            let line = serde_json::json!({
                "step": p.step, "train_loss": loss, "val_loss": val, "lr": p.lr,
                "tokens_per_s": p.tokens_per_s, "elapsed_s": p.elapsed_s,
            });
            println!("{line}");
        }
        if let Some(bar) = &bar {
            bar.set_position(session.step as u64);
            bar.set_message(format!(
                "loss {loss:.4} · val {:.4} · {:.0} tok/s",
                last.1, p.tokens_per_s
            ));
        }
        if run.autosave_due(session.step) {
            save(&session, &a.out, a.f16).await?;
            run.saved_step = Some(session.step);
        }
    }
    if let Some(bar) = bar {
        bar.finish();
    }
    save(&session, &a.out, a.f16).await?;
    let wall = start.elapsed().as_secs_f64();
    eprintln!(
        "done: step {} · train loss {:.4} · val loss {:.4} · {:.1} s · {:.0} tok/s → {}",
        session.step,
        last.0,
        last.1,
        wall,
        ((session.step - first_step) * tokens_per_step) as f64 / wall.max(1e-9),
        a.out.display()
    );
    Ok(())
}

fn override_train(mut t: tinygpt_core::TrainConfig, a: &TrainArgs) -> tinygpt_core::TrainConfig {
    t.steps = a.steps.unwrap_or(t.steps);
    t.batch_size = a.batch_size.unwrap_or(t.batch_size);
    t.seq_len = a.seq_len.unwrap_or(t.seq_len);
    t.lr = a.lr.unwrap_or(t.lr);
    t.min_lr = a.min_lr.unwrap_or(t.min_lr);
    // Unless given, warm-up is the preset's or a tenth of a short run.
    t.warmup_steps = a.warmup_steps.unwrap_or(t.warmup_steps.min(t.steps / 10));
    t.weight_decay = a.weight_decay.unwrap_or(t.weight_decay);
    t.grad_clip = a.grad_clip.unwrap_or(t.grad_clip);
    t.dropout = a.dropout.unwrap_or(t.dropout);
    t.eval_interval = a.eval_interval.unwrap_or(t.eval_interval);
    t.eval_batches = a.eval_batches.unwrap_or(t.eval_batches);
    t.seed = a.seed.unwrap_or(t.seed);
    t
}

async fn sample(a: SampleArgs) -> Result<()> {
    let gpu = open_gpu(&a.backend).await?;
    let mut session = load_session(&a.checkpoint, gpu)?;
    let params = SampleParams {
        temperature: a.temperature,
        top_k: a.top_k,
        top_p: a.top_p,
        seed: a.seed,
    };
    let mut out = std::io::stdout().lock();
    write!(out, "{}", a.prompt)?;
    let start = Instant::now();
    let mut first = None;
    let mut count = 0usize;
    session
        .generate(
            &a.prompt,
            a.length,
            &params,
            |text| {
                first.get_or_insert_with(|| start.elapsed());
                count += 1;
                let _ = write!(out, "{text}");
                let _ = out.flush();
                ControlFlow::Continue(())
            },
            || std::future::ready(()),
        )
        .await?;
    writeln!(out)?;
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{count} tokens in {secs:.2} s · {:.1} tok/s · first token after {:.1} ms",
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
    });
    println!("{}", serde_json::to_string_pretty(&caps)?);
    Ok(())
}

fn now_ms() -> f64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
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
    use tinygpt_gpu::gate::{model_gate, run_gates, Fault, GateOptions, DEFAULT_VOCAB};
    let fault = match &a.fault {
        Some(name) => Some(
            Fault::parse(name)
                .with_context(|| format!("unknown fault {name:?} (f16acc, droptail, trunc)"))?,
        ),
        None => None,
    };
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
    };
    let mut reg = std::mem::take(&mut *gpu.registry.borrow_mut());
    let (mut reports, active) = run_gates(&gpu.ctx, &mut reg, opts).await;
    *gpu.registry.borrow_mut() = reg;
    gpu.fast_paths.set(active);
    if let Some(s) = &mut session {
        s.apply_fast_paths()?;
        let ids = s.vocab.encode(&a.prompt).unwrap_or_else(|_| vec![0]);
        let trainer = s.gpu_trainer().expect("the session runs on the GPU");
        for r in &mut reports {
            model_gate::run_model_gates(trainer, r, &ids, &a.prompt).await?;
        }
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    for r in &reports {
        for line in &r.lines {
            println!("{line}");
        }
        if !r.cases.is_empty() {
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
