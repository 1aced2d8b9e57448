//! The global gradient norm against `optim::grad_norm` (f64 accumulation),
//! in both kernel layouts.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::{grad_norm, Rng};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::grad_norm::{bind_grad_norm, partials_len, MAX_PARTIALS};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::TestGpu;

/// The norm of `grads[offset..]` as the GPU computes it in each layout.
fn gpu_norms(gpu: &TestGpu, grads: &[f32], offset: u32) -> [(Layout, f32); 2] {
    [Layout::Gpu, Layout::Cpu].map(|l| (l, gpu_norm_in(gpu, l, grads, offset)))
}

fn gpu_norm_in(gpu: &TestGpu, layout: Layout, grads: &[f32], offset: u32) -> f32 {
    let ctx = &gpu.ctx;
    let buf = ctx.upload("grads", grads).unwrap();
    let norm = ctx.zeros("norm", 1).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let n = grads.len() as u32 - offset;
    let op = bind_grad_norm(ctx, &mut reg, layout, n, View::at(&buf, offset), &norm).unwrap();
    op.submit(ctx, "grad_norm");
    pollster::block_on(ctx.read_f32(&norm, 1)).unwrap()[0]
}

#[test]
fn matches_reference_on_odd_lengths() {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(1000);
    // 100_003 floats use 391 partials; 1_000_003 hit the cap and loop.
    for n in [1usize, 7, 257, 100_003, 1_000_003] {
        let grads: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
        for (layout, got) in gpu_norms(gpu, &grads, 0) {
            // f32 sums of ~n/(256·partials) squares per thread (n/partials
            // per invocation serially), then trees.
            let what = format!("n = {n} ({layout:?})");
            assert_close(&what, &[got], &[grad_norm(&grads)], 0.0, 2e-6);
        }
    }
    assert_eq!(partials_len(100_003), 391);
    assert_eq!(partials_len(1_000_003), MAX_PARTIALS);
}

#[test]
fn reads_a_view_and_ignores_what_precedes_it() {
    let gpu = gpu_or_skip!();
    let mut grads = vec![1e3f32; 5];
    grads.extend([3.0, 4.0, 12.0]);
    for (layout, got) in gpu_norms(gpu, &grads, 5) {
        assert_eq!(got, 13.0, "{layout:?}");
    }
}

#[test]
fn nan_or_infinity_anywhere_makes_the_norm_non_finite() {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(1001);
    let base: Vec<f32> = (0..10_007).map(|_| rng.uniform(-1.0, 1.0)).collect();
    for (at, bad) in [
        (0, f32::NAN),
        (5_003, f32::INFINITY),
        (10_006, f32::NEG_INFINITY),
    ] {
        let mut grads = base.clone();
        grads[at] = bad;
        for (layout, got) in gpu_norms(gpu, &grads, 0) {
            assert!(!got.is_finite(), "{bad} at {at}: norm {got} ({layout:?})");
        }
    }
}
