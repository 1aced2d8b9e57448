//! The launch floor's kernels do what the bench's `floor` row assumes:
//! `touch` dispatches back to back are ordered by barriers (each sees the
//! previous one's write: 100 of them add up to exactly 100), and `noop`
//! writes nothing.

use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::floor::{bind_floor, bind_floor_grid, GridSync};
use tinygpt_gpu::testing::TestGpu;

#[test]
fn touches_are_ordered_and_noops_write_nothing() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let x = ctx.zeros("x", 1).unwrap();
    let touch = bind_floor(ctx, &mut reg, true, &x).unwrap();
    let noop = bind_floor(ctx, &mut reg, false, &x).unwrap();
    assert_eq!((touch.key, noop.key), ("floor_touch", "floor_noop"));
    let run = |k: &BoundKernel, n| {
        let kernels: Vec<&BoundKernel> = std::iter::repeat_n(k, n).collect();
        submit(ctx, "floor", &kernels);
        pollster::block_on(ctx.read_f32(&x, 1)).unwrap()[0]
    };
    assert_eq!(run(&touch, 100), 100.0);
    assert_eq!(run(&noop, 100), 100.0);
    assert_eq!(run(&touch, 1), 101.0);
}

/// `n` grid barriers across `groups` workgroups, from a clean `sync`.
fn grid(gpu: &TestGpu, groups: u32, n: u32) -> GridSync {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let x = ctx.zeros("x", 2 * groups as usize).unwrap();
    let sync = ctx.zeros("sync", GridSync::BYTES / 4).unwrap();
    let k = bind_floor_grid(ctx, &mut reg, (n, groups), &x, &sync).unwrap();
    assert_eq!(k.key, "floor_grid");
    submit(ctx, "floor_grid", &[&k]);
    submit(ctx, "floor_grid", &[&k]);
    let bytes = pollster::block_on(ctx.read_bytes(&sync, GridSync::BYTES as u64)).unwrap();
    GridSync::parse(&bytes)
}

/// Every barrier completes, leaves its count at zero (so dispatches
/// chain: two of 37 leave the generation at 74) and orders the writes
/// before it against the reads after it. One workgroup runs everywhere;
/// several only on a GPU: a CPU implementation runs a few workgroups at a
/// time (lavapipe, four of them on two threads, ended its waits early
/// without a word), which is why the persistent decode step runs as one
/// workgroup there.
#[test]
fn grid_barriers_complete_and_order_writes() {
    let gpu = gpu_or_skip!();
    let clean = GridSync {
        generation: 74,
        pending: 0,
        gave_up: false,
        stale: 0,
    };
    assert_eq!(grid(gpu, 1, 37), clean);
    if gpu.ctx.cpu_device {
        println!("DID NOT RUN: several workgroups behind grid barriers (a CPU implementation runs a few workgroups at a time)");
        return;
    }
    for groups in [4, 64] {
        assert_eq!(grid(gpu, groups, 37), clean, "{groups} workgroups");
    }
}
