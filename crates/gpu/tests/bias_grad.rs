//! The bias gradient (column sums of dout) against the CPU reference's
//! `matmul_backward`, in one stage (≤ 64 rows) and two (more rows), in both
//! kernel layouts.

use tinygpt_core::model::layers::matmul_backward;
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::bias_grad::{bind_bias_grad, BiasGradDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::GpuContext;

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

/// The reference's `dbias += Σ_rows dout`, through the linear layer's
/// backward with a 1-wide input.
fn reference(dout: &[f32], db0: &[f32], rows: usize) -> Vec<f32> {
    let oc = db0.len();
    let (mut dinp, mut dw, mut db) = (vec![0.0; rows], vec![0.0; oc], db0.to_vec());
    let (inp, w) = (vec![0.0; rows], vec![0.0; oc]);
    matmul_backward(&mut dinp, &mut dw, Some(&mut db), dout, &inp, &w, 1, oc);
    db
}

#[test]
fn column_sums_match_reference() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    // (rows, cols): one chunk; two chunks; many chunks, cols past 64;
    // chunks of more than 64 rows (√5000 rounded up to 96).
    let shapes = [(7u32, 13u32), (37, 96), (300, 13), (1000, 70), (5000, 5)];
    for (i, &(rows, cols)) in shapes.iter().enumerate() {
        for (accumulate, layout) in [
            (true, Layout::Gpu),
            (false, Layout::Gpu),
            (true, Layout::Cpu),
            (false, Layout::Cpu),
        ] {
            let mut rng = Rng::new(800 + i as u64);
            let dout = random(&mut rng, (rows * cols) as usize);
            let db0 = if accumulate {
                random(&mut rng, cols as usize)
            } else {
                vec![0.0; cols as usize]
            };
            let want = reference(&dout, &db0, rows as usize);
            let dout_buf = ctx.upload("dout", &dout).unwrap();
            // db is a view 2 floats into the flat gradient buffer; overwrite
            // mode must ignore what was there.
            let start = if accumulate {
                db0.clone()
            } else {
                vec![5.0; cols as usize]
            };
            let grads = ctx
                .upload("grads", &[vec![0.0; 2], start].concat())
                .unwrap();
            let desc = BiasGradDesc {
                rows,
                cols,
                accumulate,
                layout,
            };
            let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
            let op = bind_bias_grad(ctx, &mut reg, desc, &dout_buf, View::at(&grads, 2)).unwrap();
            op.submit(ctx, "bias_grad");
            let got = read(ctx, &grads, 2 + cols as usize);
            // Sums of `rows` terms of magnitude ≤ 1 in another order.
            let atol = 2e-6 * (rows as f64).sqrt();
            assert_close(&format!("{desc:?}"), &got[2..], &want, atol, 1e-5);
        }
    }
}
