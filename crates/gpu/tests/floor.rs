//! The launch floor's kernels do what the bench's `floor` row assumes:
//! `touch` dispatches back to back are ordered by barriers (each sees the
//! previous one's write: 100 of them add up to exactly 100), and `noop`
//! writes nothing.

use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::floor::bind_floor;

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
