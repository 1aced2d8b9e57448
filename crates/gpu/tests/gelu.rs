//! Exact GELU against `gelu_forward` / `gelu_backward` of the CPU reference
//! (whose erf is accurate to f64): a dense sweep of [−8, 8] that crosses the
//! erf polynomial's branch point at |x/√2| = 0.9277, plus random values.

use tinygpt_core::model::layers::{gelu_backward, gelu_forward};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::ops::gelu::{bind_gelu_backward_per, bind_gelu_forward_per};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::GpuContext;

/// erf is faithfully rounded; x·Φ(x) and Φ + x·φ add a few f32 roundings:
/// about 2 ulp of the result, and 2e-7 absolute where it is near zero.
const ATOL: f64 = 2e-7;
const RTOL: f64 = 2.5e-7;

/// Elements an invocation: every variant of the kernels.
const PER: [u32; 2] = [1, 8];

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

/// 4001 points of [−8, 8] (step 0.004), then 999 random ones in [−4, 4].
fn inputs() -> Vec<f32> {
    let mut rng = Rng::new(500);
    let sweep = (0..4001).map(|i| -8.0 + i as f32 * 0.004);
    sweep
        .chain((0..999).map(|_| rng.uniform(-4.0, 4.0)))
        .collect()
}

#[test]
fn forward_matches_reference() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let x = inputs();
    let mut want = vec![0.0; x.len()];
    gelu_forward(&mut want, &x);
    let x_buf = ctx.upload("x", &x).unwrap();
    for per in PER {
        // The output is a view 3 floats into its buffer, 5 floats before its
        // end (the last workgroup's invocations past N write nothing).
        let y = ctx.zeros("y", x.len() + 8).unwrap();
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let n = (x.len() as u32, per);
        let k = bind_gelu_forward_per(ctx, &mut reg, n, &x_buf, View::at(&y, 3)).unwrap();
        tinygpt_gpu::kernel::submit(ctx, "gelu", &[&k]);
        let got = read(ctx, &y, x.len() + 8);
        let what = format!("gelu forward, {per} an invocation");
        assert_close(&what, &got[3..x.len() + 3], &want, ATOL, RTOL);
        assert_eq!(&got[..3], &[0.0; 3]);
        assert_eq!(&got[x.len() + 3..], &[0.0; 5]);
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let y = ctx.zeros("y", x.len()).unwrap();
    let e = bind_gelu_forward_per(ctx, &mut reg, (x.len() as u32, 4), &x_buf, &y);
    assert!(e.is_err(), "4 an invocation has no pipeline");
}

#[test]
fn backward_matches_reference_accumulating_and_overwriting() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let x = inputs();
    let mut rng = Rng::new(501);
    let dy: Vec<f32> = (0..x.len()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let dx0: Vec<f32> = (0..x.len()).map(|_| rng.uniform(-1.0, 1.0)).collect();
    for (accumulate, per) in [true, false].into_iter().flat_map(|a| PER.map(|p| (a, p))) {
        let start = if accumulate {
            dx0.clone()
        } else {
            vec![0.0; x.len()]
        };
        let mut want = start.clone();
        gelu_backward(&mut want, &x, &dy);
        let (x_buf, dy_buf) = (ctx.upload("x", &x).unwrap(), ctx.upload("dy", &dy).unwrap());
        // Four floats past dx: the last workgroup's invocations past N
        // write nothing.
        let start_dx = if accumulate { &dx0 } else { &dy };
        let dx = ctx
            .upload("dx", &[&start_dx[..], &[7.0; 4]].concat())
            .unwrap();
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let n = (x.len() as u32, per);
        let k = bind_gelu_backward_per(ctx, &mut reg, n, accumulate, (&x_buf, &dy_buf), &dx);
        let k = k.unwrap();
        tinygpt_gpu::kernel::submit(ctx, "gelu_backward", &[&k]);
        let got = read(ctx, &dx, x.len() + 4);
        assert_close(
            &format!("gelu backward, accumulate {accumulate}, {per} an invocation"),
            &got[..x.len()],
            &want,
            ATOL,
            RTOL,
        );
        assert_eq!(&got[x.len()..], &[7.0; 4]);
    }
}

/// On tensor cores the backward writes dx's f16 copy too, scaled as the
/// gradients are staged (a `(rows, cols)` matrix: rows past 128's
/// multiples, columns past 32's): the copy is the staging's, and dx keeps
/// its bits. Both variants, both accumulate modes.
#[test]
fn backward_writes_the_staged_f16_copy_of_dx_and_changes_no_bit() {
    use tinygpt_gpu::ops::gelu::bind_gelu_backward_copy;
    use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
    let gpu = gpu_or_skip!();
    if !tinygpt_gpu::testing::has_shader_f16(gpu, "GELU backward f16 copy") {
        return;
    }
    let ctx = &gpu.ctx;
    let (rows, cols) = (131u32, 40u32);
    let len = (rows * cols) as usize;
    let mut rng = Rng::new(503);
    let mut v = || {
        (0..len)
            .map(|_| rng.uniform(-3.0, 3.0))
            .collect::<Vec<f32>>()
    };
    let (x, dy, dx0) = (v(), v(), v());
    let (x_buf, dy_buf) = (ctx.upload("x", &x).unwrap(), ctx.upload("dy", &dy).unwrap());
    for (accumulate, per) in [true, false].into_iter().flat_map(|a| PER.map(|p| (a, p))) {
        let what = format!("gelu backward, accumulate {accumulate}, {per} an invocation");
        let dx = ctx.upload("dx", &dx0).unwrap();
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let k = bind_gelu_backward_per(
            ctx,
            &mut reg,
            (len as u32, per),
            accumulate,
            (&x_buf, &dy_buf),
            &dx,
        );
        drop(reg);
        tinygpt_gpu::kernel::submit(ctx, "gelu_backward", &[&k.unwrap()]);
        let want = read(ctx, &dx, len);
        let dx = ctx.upload("dx", &dx0).unwrap();
        let copy = StagedRows::for_producer(ctx, (&dx).into(), (rows, cols), 1024.0).unwrap();
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let ops = ((&x_buf).into(), (&dy_buf).into());
        let shape = (rows, cols, Some(per));
        let k = bind_gelu_backward_copy(ctx, &mut reg, shape, accumulate, ops, (&dx).into(), &copy);
        drop(reg);
        tinygpt_gpu::kernel::submit(ctx, "gelu_backward_copy16", &[&k.unwrap()]);
        let got = read(ctx, &dx, len);
        let differ = got
            .iter()
            .zip(&want)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(differ, 0, "{what}: {differ} of dx differ with the copy");
        let copied = format!("{what}: dx's f16 copy");
        tinygpt_gpu::testing::assert_copy_is_staged(
            gpu,
            &copy,
            (&dx).into(),
            (rows, cols),
            &copied,
        );
    }
}

/// The column form (the tensor-core training graph's: dx, its f16 copy
/// and the first stage of the bias gradient in one dispatch) against the
/// element-wise backward then the column sum's first stage: dx, the
/// partials and the copy (where the adapter has shader-f16) the same bits,
/// on rows of five chunks and columns past 32's.
#[test]
fn the_column_form_gives_dx_and_the_bias_partials_bits() {
    use tinygpt_gpu::kernel::{submit, Layout};
    use tinygpt_gpu::ops::bias_grad::{bias_grad_partials, bind_bias_grad_deferred, BiasGradDesc};
    use tinygpt_gpu::ops::gelu::bind_gelu_backward_columns;
    use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (rows, cols) = (300u32, 40u32);
    let len = (rows * cols) as usize;
    let mut rng = Rng::new(504);
    let mut v = || {
        (0..len)
            .map(|_| rng.uniform(-3.0, 3.0))
            .collect::<Vec<f32>>()
    };
    let (x, dy) = (v(), v());
    let (x_buf, dy_buf) = (ctx.upload("x", &x).unwrap(), ctx.upload("dy", &dy).unwrap());
    let desc = BiasGradDesc {
        rows,
        cols,
        accumulate: true,
        layout: Layout::Gpu,
    };
    let floats = bias_grad_partials(desc) as usize;
    assert_eq!(floats, 5 * cols as usize, "five chunks of 64 rows");
    let (dx, partials) = (
        ctx.zeros("dx", len).unwrap(),
        ctx.zeros("partials", floats).unwrap(),
    );
    let db = ctx.zeros("db", cols as usize).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let k = bind_gelu_backward_per(
        ctx,
        &mut reg,
        (len as u32, 1),
        false,
        (&x_buf, &dy_buf),
        &dx,
    );
    let (dxv, dbv, pv) = ((&dx).into(), (&db).into(), (&partials).into());
    let (stage1, _) = bind_bias_grad_deferred(ctx, &mut reg, desc, dxv, dbv, pv).unwrap();
    drop(reg);
    submit(ctx, "gelu_then_column_sum", &[&k.unwrap(), &stage1]);
    let (want_dx, want_sums) = (read(ctx, &dx, len), read(ctx, &partials, floats));
    let f16 = gpu.ctx.features.contains(wgpu::Features::SHADER_F16);
    for copied in [false, true] {
        if copied && !tinygpt_gpu::testing::has_shader_f16(gpu, "GELU column form's f16 copy") {
            continue;
        }
        let (dx, partials) = (
            ctx.zeros("dx", len).unwrap(),
            ctx.zeros("partials", floats).unwrap(),
        );
        let copy = copied
            .then(|| StagedRows::for_producer(ctx, (&dx).into(), (rows, cols), 1024.0).unwrap());
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let ops = ((&x_buf).into(), (&dy_buf).into());
        let outs = ((&dx).into(), copy.as_ref());
        let k =
            bind_gelu_backward_columns(ctx, &mut reg, (rows, cols), ops, outs, (&partials).into());
        drop(reg);
        submit(ctx, "gelu_backward_columns", &[&k.unwrap()]);
        let bits = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count()
        };
        let what = format!("column form (f16 copy: {copied})");
        assert_eq!(
            bits(&read(ctx, &dx, len), &want_dx),
            0,
            "{what}: dx differs"
        );
        assert_eq!(
            bits(&read(ctx, &partials, floats), &want_sums),
            0,
            "{what}: partials differ"
        );
        if let Some(c) = &copy {
            let name = format!("{what}: dx's f16 copy");
            tinygpt_gpu::testing::assert_copy_is_staged(gpu, c, (&dx).into(), (rows, cols), &name);
        }
        eprintln!("{what}: dx and the bias gradient's partials the element-wise form's bits (shader-f16: {f16})");
    }
}
