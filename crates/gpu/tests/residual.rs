//! Residual add and its in-place accumulate against the CPU reference.

use tinygpt_core::model::layers::residual_forward;
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::ops::residual::{bind_residual_accumulate, bind_residual_forward};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::GpuContext;

/// Any difference fails (a positive atol keeps 0/0 out of the ratio).
const EXACT: f64 = 1e-30;

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

/// N·C for (7, 13), (37, 96), and two sizes over several workgroups with
/// a partial last one (the residual takes one element an invocation, 256 a
/// workgroup).
const LENS: [usize; 4] = [7 * 13, 37 * 96, 2049, 3 * 2048 + 5];

#[test]
fn forward_matches_reference() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    for (i, &n) in LENS.iter().enumerate() {
        let mut rng = Rng::new(600 + i as u64);
        let (a, b) = (random(&mut rng, n), random(&mut rng, n));
        let mut want = vec![0.0; n];
        residual_forward(&mut want, &a, &b);
        // a and b as two views of one buffer; y in another.
        let ab = ctx.upload("ab", &[a, b].concat()).unwrap();
        // Four floats past y: the last workgroup's invocations past N write nothing.
        let y = ctx.zeros("y", n + 4).unwrap();
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let k = bind_residual_forward(
            ctx,
            &mut reg,
            n as u32,
            View::at(&ab, 0),
            View::at(&ab, n as u32),
            &y,
        )
        .unwrap();
        tinygpt_gpu::kernel::submit(ctx, "residual", &[&k]);
        let got = read(ctx, &y, n + 4);
        assert_close(&format!("residual n={n}"), &got[..n], &want, EXACT, 0.0);
        assert_eq!(&got[n..], &[0.0; 4], "n={n}");
    }
}

#[test]
fn accumulate_adds_in_place() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    for (i, &n) in LENS.iter().enumerate() {
        let mut rng = Rng::new(700 + i as u64);
        let (acc, b) = (random(&mut rng, n), random(&mut rng, n));
        let mut want = vec![0.0; n];
        residual_forward(&mut want, &acc, &b);
        let (acc_buf, b_buf) = (
            ctx.upload("acc", &acc).unwrap(),
            ctx.upload("b", &b).unwrap(),
        );
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let k = bind_residual_accumulate(ctx, &mut reg, n as u32, &acc_buf, &b_buf).unwrap();
        tinygpt_gpu::kernel::submit(ctx, "residual_accumulate", &[&k]);
        assert_close(
            &format!("acc n={n}"),
            &read(ctx, &acc_buf, n),
            &want,
            EXACT,
            0.0,
        );
    }
}

#[test]
fn accumulate_refuses_reading_the_buffer_it_writes() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let buf = ctx.zeros("buf", 16).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let err = bind_residual_accumulate(ctx, &mut reg, 8, View::at(&buf, 0), View::at(&buf, 8));
    assert!(err.is_err());
}
