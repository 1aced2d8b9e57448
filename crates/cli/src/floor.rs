//! `tinygpt bench`'s `floor` row: what a dispatch costs on this adapter with
//! nothing to do, with a barrier before it (consecutive dispatches writing
//! one buffer), and what one submission plus the wait for it costs; every
//! other figure then reads as dispatches × floor + work. On a GPU it also
//! times a barrier across the workgroups of one persistent dispatch
//! (`grid_sync.wgsl`) at several grid sizes.

use anyhow::Result;
use serde_json::{json, Value};
use std::time::Instant;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::floor::{bind_floor, bind_floor_grid, GridSync};
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
    let grid = if ctx.cpu_device {
        json!("not run: a CPU implementation runs a few workgroups at a time")
    } else {
        grid_rows(ctx, reg)?
    };
    Ok(json!({
        "dispatches": DISPATCHES,
        "empty_dispatch_us": empty * 1e6,
        "dispatch_with_barrier_us": barrier * 1e6,
        "submit_and_wait_us": one * 1e6,
        "grid_barrier": grid,
    }))
}

/// Workgroup counts of the grid-barrier rows.
const GRID_GROUPS: [u32; 6] = [1, 8, 32, 66, 132, 264];

/// Per grid size: one dispatch crossing [`DISPATCHES`] grid barriers,
/// less one crossing none, per barrier; and whether every barrier held.
fn grid_rows(ctx: &GpuContext, reg: &mut PipelineRegistry) -> Result<Value> {
    let mut rows = Vec::new();
    for groups in GRID_GROUPS {
        let x = ctx.zeros("floor_grid_x", 2 * groups as usize)?;
        let sync = ctx.zeros("floor_grid_sync", GridSync::BYTES / 4)?;
        let none = bind_floor_grid(ctx, reg, (0, groups), &x, &sync)?;
        let many = bind_floor_grid(ctx, reg, (DISPATCHES as u32, groups), &x, &sync)?;
        timed(ctx, &many, 1)?; // compile and warm up
        let us = (timed(ctx, &many, 1)? - timed(ctx, &none, 1)?) / DISPATCHES as f64 * 1e6;
        let words = pollster::block_on(ctx.read_bytes(&sync, GridSync::BYTES as u64))?;
        let state = GridSync::parse(&words);
        rows.push(json!({
            "workgroups": groups,
            "barrier_us": us,
            "held": !state.gave_up && state.stale == 0 && state.pending == 0,
            "stale_reads": state.stale,
        }));
    }
    Ok(Value::Array(rows))
}
