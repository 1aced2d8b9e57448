//! `tinygpt bench`'s `floor` row: what a dispatch costs on this adapter with
//! nothing to do, with a barrier before it (consecutive dispatches writing
//! one buffer), and what one submission plus the wait for it costs; every
//! other figure then reads as dispatches × floor + work.

use anyhow::Result;
use serde_json::{json, Value};
use std::time::Instant;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::floor::bind_floor;
use tinygpt_gpu::{GpuContext, PipelineRegistry};

/// Dispatches per timed submission.
const DISPATCHES: usize = 2000;
/// Timed repetitions; the fastest counts.
const REPEATS: usize = 5;

/// Seconds to submit `n` copies of `k` in one pass and wait for them,
/// the fastest of [`REPEATS`].
fn timed(ctx: &GpuContext, k: &BoundKernel, n: usize) -> Result<f64> {
    let kernels: Vec<&BoundKernel> = std::iter::repeat_n(k, n).collect();
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let t0 = Instant::now();
        submit(ctx, "floor", &kernels);
        ctx.device.poll(wgpu::PollType::wait_indefinitely())?;
        best = best.min(t0.elapsed().as_secs_f64());
    }
    Ok(best)
}

pub fn bench_floor(ctx: &GpuContext, reg: &mut PipelineRegistry) -> Result<Value> {
    let x = ctx.zeros("floor_x", 1)?;
    let noop = bind_floor(ctx, reg, false, &x)?;
    let touch = bind_floor(ctx, reg, true, &x)?;
    timed(ctx, &touch, 10)?; // compile and warm up
    let one = timed(ctx, &noop, 1)?;
    let per = |k: &BoundKernel| -> Result<f64> {
        Ok((timed(ctx, k, DISPATCHES + 1)? - one) / DISPATCHES as f64)
    };
    let (empty, barrier) = (per(&noop)?, per(&touch)?);
    Ok(json!({
        "dispatches": DISPATCHES,
        "empty_dispatch_us": empty * 1e6,
        "dispatch_with_barrier_us": barrier * 1e6,
        "submit_and_wait_us": one * 1e6,
    }))
}
