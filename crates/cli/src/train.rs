//! `tinygpt train`: a new run from a preset (or a resumed checkpoint) on a
//! corpus, driven by the engine's run policy (`engine::run`) as the worker
//! drives it, with a progress bar or JSON lines and atomic checkpoints.

use crate::args::TrainArgs;
use crate::files::{load_session, open_gpu, read, save};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::Instant;
use tinygpt_core::data::Dataset;
use tinygpt_core::{Preset, TrainConfig};
use tinygpt_gpu::engine::run::Run;
use tinygpt_gpu::engine::Session;

/// The session to train: the checkpoint of `--resume` with the corpus
/// attached and the flags applied, or a new model of the preset.
async fn session(a: &TrainArgs) -> Result<Session> {
    let gpu = open_gpu(&a.backend).await?;
    let preset = Preset::by_name(&a.preset)?;
    let corpus = read(&a.corpus, "corpus")?;
    let reading = || format!("reading corpus {}", a.corpus.display());
    if let Some(path) = &a.resume {
        let mut s = load_session(path, gpu)?;
        let data =
            Dataset::from_bytes(&corpus, a.val_fraction, s.train.seq_len).with_context(reading)?;
        s.attach_data(data)?;
        let t = override_train(s.train, a);
        t.validate(&s.config)?;
        s.train = t;
        return Ok(s);
    }
    let mut train = preset.train();
    train.seq_len = a.seq_len.or(a.block_size).unwrap_or(train.seq_len);
    let data = Dataset::from_bytes(&corpus, a.val_fraction, train.seq_len).with_context(reading)?;
    let mut model = preset.model(data.vocab.len());
    model.n_layer = a.n_layer.unwrap_or(model.n_layer);
    model.n_head = a.n_head.unwrap_or(model.n_head);
    model.d_model = a.d_model.unwrap_or(model.d_model);
    model.block_size = a.block_size.unwrap_or(model.block_size);
    let source = format!("{} on {}", a.preset, a.corpus.display());
    Ok(Session::new(
        model,
        override_train(train, a),
        data,
        source,
        gpu,
    )?)
}

/// `--fast-paths`: every fast path gated at this model's shape (its
/// console lines on stderr), the session bound to those that pass.
async fn gate_fast_paths(session: &mut Session) -> Result<()> {
    use tinygpt_gpu::gate::{run_gates, GateOptions, SpeedShape};
    let Some(t) = session.gpu_trainer() else {
        bail!("--fast-paths needs the GPU");
    };
    let gpu = t.gpu.clone();
    let cfg = t.model.cfg;
    let opts = GateOptions {
        fault: None,
        vocab: cfg.vocab_size as u32,
        now_ms: crate::clock::now_ms,
        measure_speed: true,
        speed_shape: SpeedShape {
            width: cfg.d_model as u32,
            layers: cfg.n_layer as u32,
        },
    };
    let mut reg = std::mem::take(&mut *gpu.registry.borrow_mut());
    let (reports, active) = run_gates(&gpu.ctx, &mut reg, opts).await;
    *gpu.registry.borrow_mut() = reg;
    for r in &reports {
        r.lines.iter().take(2).for_each(|l| eprintln!("{l}"));
        if r.path == "coop_matrix" {
            let training = r.lines.iter().filter(|l| l.contains("training gate"));
            training.for_each(|l| eprintln!("{l}"));
        }
    }
    gpu.fast_paths.set(active);
    session.apply_fast_paths()?;
    eprintln!("fast paths:{}", tinygpt_gpu::gate::status_suffix(&reports));
    Ok(())
}

fn override_train(mut t: TrainConfig, a: &TrainArgs) -> TrainConfig {
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

fn progress_bar(total: usize, step: usize) -> ProgressBar {
    let bar = ProgressBar::new(total as u64).with_position(step as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} steps · {msg} · {elapsed_precise} (eta {eta})",
        )
        .expect("valid template"),
    );
    bar
}

pub async fn train(a: TrainArgs) -> Result<()> {
    let mut session = session(&a).await?;
    let total = a.steps.unwrap_or(session.train.steps);
    if total <= session.step {
        bail!(
            "the checkpoint is already at step {}; pass --steps larger than that",
            session.step
        );
    }
    session.set_total_steps(total)?;
    if a.fast_paths {
        gate_fast_paths(&mut session).await?;
    }
    let cfg = session.config;
    eprintln!(
        "model: {} layers, {} heads, d_model {}, context {}, vocab {} — {} parameters, on the {} path",
        cfg.n_layer, cfg.n_head, cfg.d_model, cfg.block_size, cfg.vocab_size, cfg.num_params(), session.backend_name()
    );
    let bar = (!a.json).then(|| progress_bar(total, session.step));
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
    let tokens = (session.step - first_step) * session.train.batch_size * session.train.seq_len;
    eprintln!(
        "done: step {} · train loss {:.4} · val loss {:.4} · {:.1} s · {:.0} tok/s → {}",
        session.step,
        last.0,
        last.1,
        wall,
        tokens as f64 / wall.max(1e-9),
        a.out.display()
    );
    Ok(())
}
