//! Fused softmax + cross-entropy against `crossentropy_forward` /
//! `crossentropy_backward` of the CPU reference: per-row losses, the mean
//! loss reduced to one f32 on the GPU, and dlogits.

use tinygpt_core::model::layers::{crossentropy_backward, crossentropy_forward};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::crossentropy::{bind_crossentropy, CrossEntropyDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::GpuContext;

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

struct Case {
    logits: Vec<f32>,
    targets: Vec<u32>,
}

/// Logits spread over ±6 around a large offset, so a kernel without the max
/// subtraction overflows exp.
fn case(rng: &mut Rng, n: u32, v: u32) -> Case {
    Case {
        logits: (0..n * v).map(|_| 90.0 + rng.uniform(-6.0, 6.0)).collect(),
        targets: (0..n).map(|_| rng.below(v as usize) as u32).collect(),
    }
}

struct Gpu {
    losses: Vec<f32>,
    mean: f32,
    dlogits: Option<Vec<f32>>,
}

fn run(gpu: &TestGpu, desc: CrossEntropyDesc, c: &Case, dlogits0: Option<&[f32]>) -> Gpu {
    let ctx = &gpu.ctx;
    let (n, v) = (desc.n as usize, desc.v as usize);
    let logits = ctx.upload("logits", &c.logits).unwrap();
    let targets = ctx
        .upload_bytes("targets", bytemuck::cast_slice(&c.targets))
        .unwrap();
    // Losses and the mean share one buffer: mean at 0, losses from 1.
    let out = ctx.zeros("out", 1 + n).unwrap();
    let dlogits = dlogits0.map(|d| ctx.upload("dlogits", d).unwrap());
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let op = bind_crossentropy(
        ctx,
        &mut reg,
        desc,
        &logits,
        &targets,
        View::at(&out, 1),
        dlogits.as_ref().map(View::from),
        View::at(&out, 0),
    )
    .unwrap();
    op.submit(ctx, "crossentropy");
    // The host's per-step read: 4 bytes.
    let mean = read(ctx, &out, 1)[0];
    Gpu {
        losses: read(ctx, &out, 1 + n)[1..].to_vec(),
        mean,
        dlogits: dlogits.map(|d| read(ctx, &d, n * v)),
    }
}

/// (N, V): V below, at and above the 128 threads of a row's workgroup; 600
/// rows take the mean's four-loads-per-thread path.
const SHAPES: [(u32, u32); 5] = [(7, 13), (37, 96), (150, 65), (5, 300), (600, 5)];

#[test]
fn losses_mean_and_dlogits_match_reference() {
    let gpu = gpu_or_skip!();
    for (i, &(n, v)) in SHAPES.iter().enumerate() {
        let mut rng = Rng::new(900 + i as u64);
        let c = case(&mut rng, n, v);
        let (nu, vu) = (n as usize, v as usize);
        let (mut probs, mut losses) = (vec![0.0; nu * vu], vec![0.0; nu]);
        let mean = crossentropy_forward(&mut probs, &mut losses, &c.logits, &c.targets, vu);
        let mut dlogits = vec![0.0; nu * vu];
        crossentropy_backward(&mut dlogits, &probs, &c.targets, vu);
        for layout in [Layout::Gpu, Layout::Cpu] {
            let desc = CrossEntropyDesc {
                n,
                v,
                n_total: n,
                accumulate: false,
                layout,
            };
            // Overwrite mode must ignore what the buffer held.
            let got = run(gpu, desc, &c, Some(&vec![3.0; nu * vu]));
            let what = format!("{desc:?}");
            // Losses ~ln V ≈ 2–6 from a log-sum-exp of V terms.
            assert_close(&format!("losses {what}"), &got.losses, &losses, 1e-5, 1e-5);
            assert_close(&format!("mean {what}"), &[got.mean], &[mean], 1e-6, 1e-5);
            // Probabilities / N: an absolute scale of 1/N.
            let atol = 1e-6 / n as f64;
            let d = got.dlogits.unwrap();
            assert_close(&format!("dlogits {what}"), &d, &dlogits, atol, 1e-5);
            // Forward only: the same losses, no gradient kernel.
            let fwd = run(gpu, desc, &c, None);
            assert_eq!(
                fwd.losses, got.losses,
                "{what}: forward and forward_backward agree"
            );
            assert_eq!(fwd.mean, got.mean);
        }
    }
}

#[test]
fn dlogits_accumulate_and_scale_by_n_total() {
    let gpu = gpu_or_skip!();
    let (n, v) = (37u32, 96u32);
    let mut rng = Rng::new(950);
    let c = case(&mut rng, n, v);
    let (nu, vu) = (n as usize, v as usize);
    let mut probs = vec![0.0; nu * vu];
    crossentropy_forward(&mut probs, &mut vec![0.0; nu], &c.logits, &c.targets, vu);
    // The batch is half of a mean over 2N rows: the reference's gradient
    // over N rows, halved, added to what is there.
    let start: Vec<f32> = (0..nu * vu).map(|_| rng.uniform(-1e-3, 1e-3)).collect();
    let mut grad = vec![0.0; nu * vu];
    crossentropy_backward(&mut grad, &probs, &c.targets, vu);
    let want: Vec<f32> = start.iter().zip(&grad).map(|(s, g)| s + 0.5 * g).collect();
    for layout in [Layout::Gpu, Layout::Cpu] {
        let desc = CrossEntropyDesc {
            n,
            v,
            n_total: 2 * n,
            accumulate: true,
            layout,
        };
        let got = run(gpu, desc, &c, Some(&start)).dlogits.unwrap();
        assert_close(
            &format!("accumulated dlogits {layout:?}"),
            &got,
            &want,
            1e-7,
            1e-5,
        );
    }
}

#[test]
fn a_target_outside_the_vocabulary_makes_the_loss_nan() {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(960);
    let mut c = case(&mut rng, 7, 13);
    c.targets[4] = 13;
    for layout in [Layout::Gpu, Layout::Cpu] {
        let desc = CrossEntropyDesc {
            n: 7,
            v: 13,
            n_total: 7,
            accumulate: false,
            layout,
        };
        let got = run(gpu, desc, &c, None);
        assert!(got.losses[4].is_nan(), "{layout:?} {:?}", got.losses);
        assert!(got.losses[3].is_finite());
        assert!(got.mean.is_nan(), "the mean shows it: {}", got.mean);
    }
}
