//! LayerNorm against `layernorm_forward` / `layernorm_backward` of the CPU
//! reference: odd row and channel counts, more rows than one partial-sum
//! chunk, both accumulate modes, parameters read through views, and both
//! kernel layouts (a workgroup per row, a row per invocation).

use tinygpt_core::model::layers::{layernorm_backward, layernorm_forward};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::layernorm::{
    bind_layernorm_backward, bind_layernorm_forward, LayerNormDesc, LayerNormGrads,
};
use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{assert_copy_is_staged, random_in};
use tinygpt_gpu::GpuContext;

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

/// (N, C): 150 rows span three 64-row chunks of the dw/db reduction; 300
/// channels exceed the 128 threads of a row's workgroup.
const SHAPES: [(u32, u32); 4] = [(7, 13), (37, 96), (150, 65), (5, 300)];

struct Case {
    x: Vec<f32>,
    w: Vec<f32>,
    b: Vec<f32>,
}

fn case(rng: &mut Rng, n: u32, c: u32) -> Case {
    // An offset mean and a spread so centring and scaling both matter.
    Case {
        x: random_in(rng, (n * c) as usize, -1.5, 2.5),
        w: random_in(rng, c as usize, 0.5, 1.5),
        b: random_in(rng, c as usize, -0.5, 0.5),
    }
}

#[test]
fn forward_matches_reference() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    for (i, &(n, c)) in SHAPES.iter().enumerate() {
        for layout in [Layout::Gpu, Layout::Cpu] {
            let mut rng = Rng::new(300 + i as u64);
            let Case { x, w, b } = case(&mut rng, n, c);
            let (nu, cu) = (n as usize, c as usize);
            let (mut y, mut mean, mut rstd) = (vec![0.0; nu * cu], vec![0.0; nu], vec![0.0; nu]);
            layernorm_forward(&mut y, &mut mean, &mut rstd, &x, &w, &b);
            // w and b as views into one "parameter" buffer, as in the model.
            let params = ctx
                .upload("params", &[vec![0.0; 5], w, b].concat())
                .unwrap();
            let x_buf = ctx.upload("x", &x).unwrap();
            let y_buf = ctx.zeros("y", nu * cu).unwrap();
            let stats = ctx.zeros("stats", 2 * nu).unwrap();
            let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
            let desc = LayerNormDesc {
                n,
                c,
                accumulate: false,
                layout,
            };
            let k = bind_layernorm_forward(
                ctx,
                &mut reg,
                desc,
                &x_buf,
                View::at(&params, 5),
                View::at(&params, 5 + c),
                &y_buf,
                View::at(&stats, 0),
                View::at(&stats, n),
                None,
            )
            .unwrap();
            tinygpt_gpu::kernel::submit(ctx, "layernorm", &[&k]);
            let what = format!("{desc:?}");
            // Outputs are O(1); f32 sums of C terms in a different order.
            assert_close(
                &format!("y {what}"),
                &read(ctx, &y_buf, nu * cu),
                &y,
                1e-5,
                1e-5,
            );
            let got = read(ctx, &stats, 2 * nu);
            assert_close(&format!("mean {what}"), &got[..nu], &mean, 1e-6, 1e-5);
            assert_close(&format!("rstd {what}"), &got[nu..], &rstd, 1e-6, 1e-5);
        }
    }
}

#[test]
fn backward_matches_reference_accumulating_and_overwriting() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    for (i, &(n, c)) in SHAPES.iter().enumerate() {
        for (accumulate, layout) in [
            (true, Layout::Gpu),
            (false, Layout::Gpu),
            (true, Layout::Cpu),
            (false, Layout::Cpu),
        ] {
            let mut rng = Rng::new(400 + i as u64);
            let Case { x, w, b } = case(&mut rng, n, c);
            let (nu, cu) = (n as usize, c as usize);
            let (mut y, mut mean, mut rstd) = (vec![0.0; nu * cu], vec![0.0; nu], vec![0.0; nu]);
            layernorm_forward(&mut y, &mut mean, &mut rstd, &x, &w, &b);
            let dout = random_in(&mut rng, nu * cu, -1.0, 1.0);
            // Starting gradients: what other branches already added.
            let (dx0, dw0, db0) = if accumulate {
                let dx0 = random_in(&mut rng, nu * cu, -1.0, 1.0);
                let dw0 = random_in(&mut rng, cu, -1.0, 1.0);
                (dx0, dw0, random_in(&mut rng, cu, -1.0, 1.0))
            } else {
                (vec![0.0; nu * cu], vec![0.0; cu], vec![0.0; cu])
            };
            let (mut dx, mut dw, mut db) = (dx0.clone(), dw0.clone(), db0.clone());
            layernorm_backward(&mut dx, &mut dw, &mut db, &dout, &x, &w, &mean, &rstd);
            let up = |name: &str, v: &[f32]| ctx.upload(name, v).unwrap();
            // Garbage in the outputs must not leak through when overwriting.
            let fill = |v: &[f32]| -> Vec<f32> {
                if accumulate {
                    v.to_vec()
                } else {
                    vec![7.0; v.len()]
                }
            };
            let (dout_buf, x_buf, w_buf) = (up("dout", &dout), up("x", &x), up("w", &w));
            let (mean_buf, rstd_buf) = (up("mean", &mean), up("rstd", &rstd));
            let dx_buf = up("dx", &fill(&dx0));
            // dw and db as views into one flat gradient buffer.
            let grads = up("grads", &[fill(&dw0), fill(&db0)].concat());
            let desc = LayerNormDesc {
                n,
                c,
                accumulate,
                layout,
            };
            let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
            let op = bind_layernorm_backward(
                ctx,
                &mut reg,
                desc,
                LayerNormGrads {
                    dout: (&dout_buf).into(),
                    x: (&x_buf).into(),
                    w: (&w_buf).into(),
                    mean: (&mean_buf).into(),
                    rstd: (&rstd_buf).into(),
                    dx: (&dx_buf).into(),
                    dw: View::at(&grads, 0),
                    db: View::at(&grads, c),
                    dx_copy: None,
                },
            )
            .unwrap();
            op.submit(ctx, "layernorm_backward");
            let what = format!("{desc:?}");
            assert_close(
                &format!("dx {what}"),
                &read(ctx, &dx_buf, nu * cu),
                &dx,
                1e-5,
                1e-4,
            );
            let got = read(ctx, &grads, 2 * cu);
            // Column sums over N rows of O(1) terms: error grows with √N.
            let atol = 2e-6 * (n as f64).sqrt();
            assert_close(&format!("dw {what}"), &got[..cu], &dw, atol, 1e-5);
            assert_close(&format!("db {what}"), &got[cu..], &db, atol, 1e-5);
        }
    }
}

#[test]
fn forward_output_may_not_alias_its_input() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let buf = ctx.zeros("buf", 64).unwrap();
    let other = ctx.zeros("other", 64).unwrap();
    let desc = LayerNormDesc {
        n: 2,
        c: 4,
        accumulate: false,
        layout: Layout::Gpu,
    };
    let err = bind_layernorm_forward(
        ctx,
        &mut reg,
        desc,
        View::at(&buf, 0),
        &other,
        &other,
        View::at(&buf, 8),
        View::at(&buf, 16),
        View::at(&buf, 18),
        None,
    );
    assert!(err.is_err());
}

/// On tensor cores the backward writes `dx`'s f16 copy too, scaled as the
/// gradients are staged: the copy is the staging's (padding included:
/// rows past 128's multiples, channels past 32's), and `dx`, `dw` and `db`
/// keep their bits. Both layouts, both accumulate modes.
#[test]
fn backward_writes_the_staged_f16_copy_of_dx_and_changes_no_bit() {
    let gpu = gpu_or_skip!();
    if !tinygpt_gpu::testing::has_shader_f16(gpu, "LayerNorm backward f16 copy") {
        return;
    }
    let ctx = &gpu.ctx;
    for (i, (n, c)) in [(130u32, 48u32), (5, 300)].into_iter().enumerate() {
        for (accumulate, layout) in [(true, Layout::Gpu), (false, Layout::Cpu)] {
            let mut rng = Rng::new(480 + i as u64);
            let len = (n * c) as usize;
            let mut v = |len: usize, lo, hi| ctx.upload("v", &random_in(&mut rng, len, lo, hi));
            let ops = [
                v(len, -1.0, 1.0).unwrap(),
                v(len, -2.0, 2.0).unwrap(),
                v(c as usize, 0.5, 1.5).unwrap(),
                v(n as usize, -0.5, 0.5).unwrap(),
                v(n as usize, 0.5, 2.0).unwrap(),
            ];
            let dx0 = v(len, -1.0, 1.0).unwrap();
            let desc = LayerNormDesc {
                n,
                c,
                accumulate,
                layout,
            };
            let run = |copy: bool| {
                let dx = ctx.zeros("dx", len).unwrap();
                let grads = ctx.zeros("grads", 2 * c as usize).unwrap();
                let mut enc = ctx.device.create_command_encoder(&Default::default());
                enc.copy_buffer_to_buffer(&dx0, 0, &dx, 0, None);
                ctx.queue.submit([enc.finish()]);
                let scale = 4096.0;
                let copy = copy.then(|| StagedRows::for_producer(ctx, (&dx).into(), (n, c), scale));
                let copy = copy.map(Result::unwrap);
                let grads_of = LayerNormGrads {
                    dout: (&ops[0]).into(),
                    x: (&ops[1]).into(),
                    w: (&ops[2]).into(),
                    mean: (&ops[3]).into(),
                    rstd: (&ops[4]).into(),
                    dx: (&dx).into(),
                    dw: View::at(&grads, 0),
                    db: View::at(&grads, c),
                    dx_copy: copy.as_ref(),
                };
                let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
                let op = bind_layernorm_backward(ctx, &mut reg, desc, grads_of).unwrap();
                drop(reg);
                op.submit(ctx, "layernorm_backward");
                if let Some(copy) = &copy {
                    let what = format!("{desc:?}: dx's f16 copy");
                    assert_copy_is_staged(gpu, copy, (&dx).into(), (n, c), &what);
                }
                [read(ctx, &dx, len), read(ctx, &grads, 2 * c as usize)]
            };
            let (want, got) = (run(false), run(true));
            for (name, (g, w)) in ["dx", "dw and db"].iter().zip(got.iter().zip(&want)) {
                let differ = g
                    .iter()
                    .zip(w)
                    .filter(|(a, b)| a.to_bits() != b.to_bits())
                    .count();
                assert_eq!(
                    differ, 0,
                    "{desc:?}: {differ} of {name} differ with the copy"
                );
            }
        }
    }
}
