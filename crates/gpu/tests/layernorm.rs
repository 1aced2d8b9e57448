//! LayerNorm against `layernorm_forward` / `layernorm_backward` of the CPU
//! reference: odd row and channel counts, more rows than one partial-sum
//! chunk, both accumulate modes, parameters read through views, both
//! kernel layouts (a workgroup per row, a row per invocation) and both forms
//! of the backward (dx and the dw/db partials in one dispatch or two, the
//! same bits).

use tinygpt_core::model::layers::{layernorm_backward, layernorm_forward};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::layernorm::{
    bind_layernorm_backward_as, bind_layernorm_forward, LayerNormBackwardForm, LayerNormDesc,
    LayerNormGrads,
};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{random_in, TestGpu};
use tinygpt_gpu::{GpuContext, GpuError};

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

/// A backward's inputs and the gradients already there.
struct Grads {
    dout: Vec<f32>,
    x: Vec<f32>,
    w: Vec<f32>,
    mean: Vec<f32>,
    rstd: Vec<f32>,
    /// dx, then dw and db.
    dx0: Vec<f32>,
    dwdb0: Vec<f32>,
    accumulate: bool,
}

impl Grads {
    /// Random inputs for `n` rows of `c`; with `accumulate`, random
    /// gradients to add to (else garbage the kernels must overwrite).
    fn new(rng: &mut Rng, n: u32, c: u32, accumulate: bool) -> Self {
        let Case { x, w, b } = case(rng, n, c);
        let (nu, cu) = (n as usize, c as usize);
        let (mut y, mut mean, mut rstd) = (vec![0.0; nu * cu], vec![0.0; nu], vec![0.0; nu]);
        layernorm_forward(&mut y, &mut mean, &mut rstd, &x, &w, &b);
        let dout = random_in(rng, nu * cu, -1.0, 1.0);
        let start = |rng: &mut Rng, len| match accumulate {
            true => random_in(rng, len, -1.0, 1.0),
            false => vec![7.0; len],
        };
        let dx0 = start(rng, nu * cu);
        let dwdb0 = start(rng, 2 * cu);
        Grads {
            dout,
            x,
            w,
            mean,
            rstd,
            dx0,
            dwdb0,
            accumulate,
        }
    }

    /// The CPU reference's dx and (dw, db).
    fn reference(&self) -> (Vec<f32>, Vec<f32>) {
        let zero = |v: &[f32]| {
            if self.accumulate {
                v.to_vec()
            } else {
                vec![0.0; v.len()]
            }
        };
        let (mut dx, dwdb) = (zero(&self.dx0), zero(&self.dwdb0));
        let (mut dw, mut db) = (dwdb[..self.w.len()].to_vec(), dwdb[self.w.len()..].to_vec());
        let (dout, x, w) = (&self.dout, &self.x, &self.w);
        layernorm_backward(
            &mut dx, &mut dw, &mut db, dout, x, w, &self.mean, &self.rstd,
        );
        (dx, [dw, db].concat())
    }

    /// The GPU's dx and (dw, db) in `form`; dw and db are views into one
    /// flat gradient buffer, as in the model.
    fn run(
        &self,
        gpu: &TestGpu,
        desc: LayerNormDesc,
        form: LayerNormBackwardForm,
    ) -> (Vec<f32>, Vec<f32>) {
        self.try_run(gpu, desc, form).unwrap()
    }

    /// [`Grads::run`], or the binder's refusal.
    fn try_run(
        &self,
        gpu: &TestGpu,
        desc: LayerNormDesc,
        form: LayerNormBackwardForm,
    ) -> Result<(Vec<f32>, Vec<f32>), GpuError> {
        assert_eq!(desc.accumulate, self.accumulate);
        let ctx = &gpu.ctx;
        let up = |name: &str, v: &[f32]| ctx.upload(name, v).unwrap();
        let (dout, x, w) = (up("dout", &self.dout), up("x", &self.x), up("w", &self.w));
        let (mean, rstd) = (up("mean", &self.mean), up("rstd", &self.rstd));
        let (dx, grads) = (up("dx", &self.dx0), up("grads", &self.dwdb0));
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let g = LayerNormGrads {
            dout: (&dout).into(),
            x: (&x).into(),
            w: (&w).into(),
            mean: (&mean).into(),
            rstd: (&rstd).into(),
            dx: (&dx).into(),
            dw: View::at(&grads, 0),
            db: View::at(&grads, desc.c),
        };
        let op = bind_layernorm_backward_as(ctx, &mut reg, desc, form, g)?;
        op.submit(ctx, "layernorm_backward");
        Ok((
            read(ctx, &dx, self.dx0.len()),
            read(ctx, &grads, self.dwdb0.len()),
        ))
    }
}

#[test]
fn backward_matches_reference_accumulating_and_overwriting() {
    let gpu = gpu_or_skip!();
    for (i, &(n, c)) in SHAPES.iter().enumerate() {
        for (accumulate, layout) in [
            (true, Layout::Gpu),
            (false, Layout::Gpu),
            (true, Layout::Cpu),
            (false, Layout::Cpu),
        ] {
            let desc = LayerNormDesc {
                n,
                c,
                accumulate,
                layout,
            };
            let forms = match layout {
                Layout::Gpu => vec![
                    LayerNormBackwardForm::Fused,
                    LayerNormBackwardForm::Separate,
                ],
                Layout::Cpu => vec![LayerNormBackwardForm::Separate],
            };
            assert_eq!(LayerNormBackwardForm::of(&desc), forms[0]);
            let case = Grads::new(&mut Rng::new(400 + i as u64), n, c, accumulate);
            let (dx, dwdb) = case.reference();
            for form in forms {
                let (got_dx, got) = case.run(gpu, desc, form);
                let what = format!("{desc:?} {form:?}");
                assert_close(&format!("dx {what}"), &got_dx, &dx, 1e-5, 1e-4);
                // Column sums over N rows of O(1) terms: error grows with √N.
                let (atol, cu) = (2e-6 * (n as f64).sqrt(), c as usize);
                assert_close(&format!("dw {what}"), &got[..cu], &dwdb[..cu], atol, 1e-5);
                assert_close(&format!("db {what}"), &got[cu..], &dwdb[cu..], atol, 1e-5);
            }
        }
    }
}

/// The fused backward (dx and the dw/db partials in one dispatch) gives
/// the separate kernels' bits: rows under one warp round, chunks of 48 rows
/// (2,048 rows, as `tiny` trains) and a short last chunk, C from 4 to the
/// fused kernel's 512 (one to sixteen columns a lane, 128-column rounds
/// whole and cut short).
#[test]
fn the_fused_backward_gives_the_separate_kernels_bits() {
    let gpu = gpu_or_skip!();
    let shapes = [
        (1, 4),
        (5, 33),
        (150, 65),
        (2048, 128),
        (61, 300),
        (200, 384),
        (23, 512),
    ];
    for (i, (n, c)) in shapes.into_iter().enumerate() {
        for accumulate in [false, true] {
            let desc = LayerNormDesc {
                n,
                c,
                accumulate,
                layout: Layout::Gpu,
            };
            let case = Grads::new(&mut Rng::new(900 + i as u64), n, c, accumulate);
            let fused = case.run(gpu, desc, LayerNormBackwardForm::Fused);
            let separate = case.run(gpu, desc, LayerNormBackwardForm::Separate);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fused.0), bits(&separate.0), "dx {desc:?}");
            assert_eq!(bits(&fused.1), bits(&separate.1), "dw, db {desc:?}");
        }
    }
}

/// The fused form is refused where its kernel does not reach: rows wider
/// than 512 channels, and the one-row-per-invocation layout.
#[test]
fn the_fused_backward_refuses_what_it_does_not_take() {
    let gpu = gpu_or_skip!();
    for (c, layout) in [(513, Layout::Gpu), (64, Layout::Cpu)] {
        let desc = LayerNormDesc {
            n: 3,
            c,
            accumulate: false,
            layout,
        };
        assert_eq!(
            LayerNormBackwardForm::of(&desc),
            LayerNormBackwardForm::Separate
        );
        let case = Grads::new(&mut Rng::new(7), 3, c, false);
        let err = case.try_run(gpu, desc, LayerNormBackwardForm::Fused);
        let msg = format!("{}", err.expect_err("the fused form was bound"));
        assert!(msg.contains("fused form"), "{msg}");
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
    );
    assert!(err.is_err());
}
