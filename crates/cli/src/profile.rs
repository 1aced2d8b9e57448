//! `tinygpt bench --profile`: the GPU time of every dispatch of one training
//! step per benchmark shape and of one greedy decoding step (the token's
//! blocks, the head and the pick on the GPU), summed per kernel key
//! (timestamp queries; see `tinygpt_gpu::profile`); where the device has
//! cooperative matrices, one training step on tensor cores too; and a
//! window of greedy tokens decoded back to back, split into the GPU's time,
//! the host's recording and the wall clock (`decode_chain`); the decoded
//! token and the window again for the most samples decoded together
//! (`decode_token_samples`, `decode_chain_samples`).

use crate::bench::{config, wanted, SHAPES, VOCAB};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::time::Instant;
use tinygpt_core::data::{Batch, BatchSampler};
use tinygpt_core::{init_params, Rng, TrainConfig};
use tinygpt_gpu::model::{Decoder, FastPaths, GpuModel};
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::profile::{check_timestamps, totals_by_key, DispatchTime};
use tinygpt_gpu::{Compiled, GpuContext, PipelineRegistry};
use tinygpt_protocol::MAX_SAMPLES;

/// Training steps run (and waited for) before the profiled one: pipelines
/// compiled, graph bound, caches warm.
const WARMUP_STEPS: usize = 3;

/// The per-key table of one profiled submission; for a training step
/// also every dispatch in order (`sequence`: key, grid, µs), which tells
/// the calls of one pipeline apart by their grids.
fn report(config: &str, what: &str, extra: Value, times: &[DispatchTime]) -> Value {
    let total: f64 = times.iter().map(|t| t.micros).sum();
    let kernels: Vec<Value> = totals_by_key(times)
        .iter()
        .map(|k| {
            json!({
                "key": k.key, "calls": k.calls,
                "total_us": k.total_us, "mean_us": k.mean_us,
                "share": if total > 0.0 { k.total_us / total } else { 0.0 },
            })
        })
        .collect();
    let mut row = json!({
        "config": config, "what": what, "detail": extra,
        "dispatches": times.len(), "gpu_total_us": total,
        "kernels": kernels,
    });
    if what.starts_with("train_step") {
        let calls = times.iter().map(|t| json!([t.key, t.workgroups, t.micros]));
        row["sequence"] = calls.collect::<Vec<_>>().into();
    }
    row
}

/// Profiles one training step and one decoded token (at the middle of the
/// context) of each shape (`tiny` only with `quick`; `only` alone if given;
/// no training step with `decode_only`); with `stats`, the driver's
/// statistics of every pipeline compiled.
pub fn run(
    ctx: &GpuContext,
    quick: bool,
    (only, stats): (Option<&str>, bool),
    (decode_only, decoder): (bool, crate::bench::DecoderChoice),
) -> Result<Value> {
    check_timestamps(ctx).context("`bench --profile` times dispatches with timestamp queries")?;
    let mut reg = PipelineRegistry::default();
    let mut runs = Vec::new();
    for (name, l, h, c, t, b) in SHAPES {
        if !wanted(name, quick, only) {
            continue;
        }
        eprintln!("profile: {name}");
        let cfg = config(l, h, c, t);
        let tc = TrainConfig {
            batch_size: b,
            seq_len: t,
            warmup_steps: 0,
            ..TrainConfig::default()
        };
        let params = init_params(&cfg, 0);
        let mut model = GpuModel::new(ctx, cfg, &params, None, tc, OptState::default())?;
        let mut rng = Rng::new(1);
        let tokens: Vec<u32> = (0..100_000).map(|_| rng.below(VOCAB) as u32).collect();
        let mut sampler = BatchSampler::new(0);
        if !decode_only {
            for _ in 0..WARMUP_STEPS {
                model.train_step(ctx, &mut reg, &sampler.next_batch(&tokens, b, t))?;
            }
            let shape = json!({"params": cfg.num_params(), "batch": b, "block": t});
            let batch = sampler.next_batch(&tokens, b, t);
            let times = pollster::block_on(model.profile_train_step(ctx, &mut reg, &batch))?;
            runs.push(report(name, "train_step", shape.clone(), &times));
            if ctx.coop_matrix {
                let times = coop_step(ctx, &mut reg, &mut model, &batch)?;
                runs.push(report(name, "train_step_coop", shape, &times));
            }
        }

        // The decoder on f32, and with subgroup sums where the adapter has
        // them (rows `…_subgroups`: which kernels the shuffles change).
        let mut decoders = vec![(FastPaths::default(), "")];
        if ctx.subgroup_size().is_ok() {
            let sg = FastPaths {
                subgroups: true,
                ..FastPaths::default()
            };
            decoders.push((sg, "_subgroups"));
        }
        for (fast, suffix) in decoders {
            model.set_fast_paths(ctx, &mut reg, fast)?;
            for samples in [1, MAX_SAMPLES] {
                eprintln!("profile: decode token {name}{suffix}, {samples} sample(s)");
                let dec = decoder.open(ctx, &mut reg, &mut model, samples)?;
                let position = dec.capacity() / 2;
                for &token in &tokens[..position] {
                    dec.feed(ctx, token)?;
                }
                let times = pollster::block_on(dec.profile_step(ctx, tokens[position]))?;
                let (what, chain) = match samples {
                    1 => ("decode_token", "decode_chain"),
                    _ => ("decode_token_samples", "decode_chain_samples"),
                };
                let detail = json!({"position": position, "samples": samples});
                runs.push(report(name, &format!("{what}{suffix}"), detail, &times));
                let chain = format!("{chain}{suffix}");
                runs.push(decode_chain(ctx, (name, &chain), dec, tokens[0])?);
            }
        }
    }
    let mut report = json!({ "adapter": ctx.adapter_desc(), "profile": runs });
    if stats {
        // A driver without the statistics costs the profile nothing.
        report["pipeline_stats"] = pipeline_stats(ctx, &reg).unwrap_or_else(|e| {
            eprintln!("pipeline statistics not read: {e:#}");
            json!({ "error": format!("{e:#}") })
        });
    }
    Ok(report)
}

/// The driver's statistics of every pipeline in `reg`, and of each
/// tensor-core kernel the profile did not compile (the attention's forward,
/// the other matmul forms) with its own constants alone (`"profiled":
/// false`); see `tinygpt_gpu::pipeline_stats`. A row each.
fn pipeline_stats(ctx: &GpuContext, reg: &PipelineRegistry) -> Result<Value> {
    let mut list: Vec<(Compiled, bool)> = reg.compiled().into_iter().map(|c| (c, true)).collect();
    for src in tinygpt_gpu::ops::all_kernels() {
        if src.key.contains("coop") && !list.iter().any(|(c, _)| c.key == src.key) {
            list.push((Compiled::of(src, ctx.shader_checks), false));
        }
    }
    let compiled: Vec<Compiled> = list.iter().map(|(c, _)| c.clone()).collect();
    let (device, all) = tinygpt_gpu::pipeline_stats::pipeline_stats(&compiled, &ctx.info.name)
        .map_err(|e| anyhow::anyhow!("pipeline statistics: {e}"))?;
    eprintln!("pipeline statistics: {} pipelines on {device}", all.len());
    let rows = list.iter().zip(&all).map(|((c, profiled), stats)| {
        let mut row = json!({"key": c.key, "entry": c.entry, "profiled": profiled});
        let constants = c.constants.iter().map(|&(n, v)| (n.to_string(), json!(v)));
        row["constants"] = constants.collect::<serde_json::Map<_, _>>().into();
        match stats {
            Ok(exes) => row["executables"] = exes.iter().map(executable).collect(),
            Err(e) => row["error"] = e.as_str().into(),
        }
        row
    });
    Ok(json!({"device": device, "pipelines": rows.collect::<Vec<_>>()}))
}

fn executable(e: &tinygpt_gpu::pipeline_stats::Executable) -> Value {
    json!({"name": e.name, "subgroup_size": e.subgroup_size, "stats": e.stats})
}

/// Times the host's recording of a decode chain this many times.
const RECORDS: usize = 5;

/// A whole context window of greedy tokens as `tinygpt sample` decodes
/// them (one submission, the picked steps in one pass), the pass timed:
/// what a token costs back to back on the GPU, against the wall clock of
/// the submission and its wait (the second of two runs), and what
/// recording the steps alone costs the host (recorded and finished, not
/// submitted: the mean of five).
fn decode_chain(
    ctx: &GpuContext,
    (name, what): (&str, &str),
    dec: &mut Decoder,
    token: u32,
) -> Result<Value> {
    let chained = dec.capacity() - 2;
    let mut run = || -> Result<(f64, f64)> {
        dec.reset();
        let t0 = Instant::now();
        let gpu_us = pollster::block_on(dec.profile_chain(ctx, token, chained))?;
        Ok((gpu_us, t0.elapsed().as_secs_f64() * 1e6))
    };
    run()?;
    let (gpu_us, wall_us) = run()?;
    // The host alone: the same steps recorded and finished, not submitted.
    let t0 = Instant::now();
    for _ in 0..RECORDS {
        dec.record_only(ctx, chained);
    }
    let record_us = t0.elapsed().as_secs_f64() * 1e6 / RECORDS as f64;
    Ok(json!({
        "config": name, "what": what, "samples": dec.batch(), "chained_tokens": chained,
        "gpu_us": gpu_us, "gpu_us_per_token": gpu_us / chained as f64,
        "wall_us": wall_us, "dispatches_per_token": dec.dispatches_per_token(),
        "record_us": record_us, "record_us_per_token": record_us / (1 + chained) as f64,
    }))
}

/// One profiled training step on the tensor-core path (after warm-up
/// steps on it), the model set back to f32 after.
fn coop_step(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    model: &mut GpuModel,
    batch: &Batch,
) -> Result<Vec<DispatchTime>> {
    let coop = FastPaths {
        coop_matrix: true,
        coop_attention: tinygpt_gpu::ops::attention::engine_attention(),
        ..FastPaths::default()
    };
    model.set_fast_paths(ctx, reg, coop)?;
    for _ in 0..WARMUP_STEPS {
        model.train_step(ctx, reg, batch)?;
    }
    let times = pollster::block_on(model.profile_train_step(ctx, reg, batch))?;
    model.set_fast_paths(ctx, reg, FastPaths::default())?;
    Ok(times)
}
