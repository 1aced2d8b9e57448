//! The GPU optimiser step (grad norm → schedule → AdamW) against the CPU
//! loop `clip_grad_norm`, `lr_at`, `AdamW::update`, with every step recorded
//! back to back in one submission: no CPU work between steps.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::{clip_grad_norm, lr_at, AdamW, ModelConfig, ParamLayout, Rng, TrainConfig};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{BoundKernel, Layout};
use tinygpt_gpu::ops::adamw::{bind_adamw, decay_mask, AdamWBuffers, OptState, StepScalars};
use tinygpt_gpu::ops::grad_norm::bind_grad_norm;
use tinygpt_gpu::ops::BoundOp;
use tinygpt_gpu::testing::TestGpu;
use tinygpt_gpu::GpuContext;

/// Two layers, V = 11, C = 8: 1,896 parameters of every kind.
fn layout() -> ParamLayout {
    ParamLayout::new(&ModelConfig {
        vocab_size: 11,
        block_size: 6,
        n_layer: 2,
        n_head: 2,
        d_model: 8,
    })
}

/// Warm-up over steps 0 and 1 (lr 0, then lr/2), the cosine from step 2.
fn config(grad_clip: f32) -> TrainConfig {
    TrainConfig {
        steps: 6,
        warmup_steps: 2,
        lr: 1e-2,
        min_lr: 1e-3,
        weight_decay: 0.1,
        grad_clip,
        ..TrainConfig::default()
    }
}

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

/// The CPU training loop's optimiser half, skipping diverged steps.
fn cpu_steps(cfg: &TrainConfig, params: &mut [f32], grads: &[Vec<f32>]) -> (AdamW, f32) {
    let layout = layout();
    let mut opt = AdamW::new(layout.total);
    let mut last_norm = 0.0;
    for (step, g) in grads.iter().enumerate() {
        let mut g = g.clone();
        last_norm = clip_grad_norm(&mut g, cfg);
        if last_norm.is_finite() {
            opt.update(params, &g, &layout, cfg, lr_at(step, cfg))
                .unwrap();
        }
    }
    (opt, last_norm)
}

/// The optimiser's buffers on the GPU and one bound step per gradient set.
struct GpuOptimizer {
    params: wgpu::Buffer,
    m: wgpu::Buffer,
    v: wgpu::Buffer,
    state: wgpu::Buffer,
    scalars: wgpu::Buffer,
    /// Per step: its gradients, grad-norm op and AdamW op.
    steps: Vec<(wgpu::Buffer, BoundOp, BoundOp)>,
    _keep: Vec<wgpu::Buffer>,
}

impl GpuOptimizer {
    fn new(gpu: &TestGpu, cfg: &TrainConfig, params: &[f32], grads: &[Vec<f32>]) -> Self {
        let ctx = &gpu.ctx;
        let layout = layout();
        let n = layout.total;
        let mask = ctx
            .upload_bytes("mask", bytemuck::cast_slice(&decay_mask(&layout)))
            .unwrap();
        let norm = ctx.zeros("norm", 1).unwrap();
        let mut opt = Self {
            params: ctx.upload("params", params).unwrap(),
            m: ctx.zeros("m", n).unwrap(),
            v: ctx.zeros("v", n).unwrap(),
            state: OptState::default().upload(ctx).unwrap(),
            scalars: StepScalars::buffer(ctx).unwrap(),
            steps: Vec::new(),
            _keep: Vec::new(),
        };
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        for g in grads {
            let g_buf = ctx.upload("grads", g).unwrap();
            let norm_op =
                bind_grad_norm(ctx, &mut reg, Layout::Gpu, n as u32, &g_buf, &norm).unwrap();
            let buffers = AdamWBuffers {
                params: &opt.params,
                grads: &g_buf,
                m: &opt.m,
                v: &opt.v,
                decay_mask: &mask,
                norm: &norm,
                state: &opt.state,
                scalars: &opt.scalars,
            };
            let adamw = bind_adamw(ctx, &mut reg, cfg, n as u32, buffers).unwrap();
            opt.steps.push((g_buf, norm_op, adamw));
        }
        opt._keep = vec![mask, norm];
        opt
    }

    /// Records steps `range` into one pass and submits them.
    fn run(&self, ctx: &GpuContext, range: std::ops::Range<usize>) {
        let kernels: Vec<&BoundKernel> = self.steps[range]
            .iter()
            .flat_map(|(_, norm, adamw)| norm.kernels.iter().chain(&adamw.kernels))
            .collect();
        tinygpt_gpu::kernel::submit(ctx, "optimizer_steps", &kernels);
    }

    fn read(&self, ctx: &GpuContext, n: usize) -> [Vec<f32>; 3] {
        [
            read(ctx, &self.params, n),
            read(ctx, &self.m, n),
            read(ctx, &self.v, n),
        ]
    }
}

/// Step k's gradients: uniform in ±(k+1), so each step clips differently.
fn gradients(rng: &mut Rng, n: usize, steps: usize) -> Vec<Vec<f32>> {
    (0..steps)
        .map(|k| {
            let s = (k + 1) as f32;
            (0..n).map(|_| rng.uniform(-s, s)).collect()
        })
        .collect()
}

#[track_caller]
fn assert_matches_cpu(what: &str, got: &[Vec<f32>; 3], params: &[f32], opt: &AdamW) {
    // Parameters move by ~lr per step; the moments are O(g) and O(g²).
    assert_close(&format!("{what}: params"), &got[0], params, 1e-6, 1e-5);
    assert_close(&format!("{what}: m"), &got[1], &opt.m, 1e-9, 1e-5);
    assert_close(&format!("{what}: v"), &got[2], &opt.v, 1e-12, 1e-5);
}

#[test]
fn four_steps_match_the_cpu_loop_with_clipping_on_off_and_unreached() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let n = layout().total;
    // The norms are ~18·(k+1): a clip of 1 always scales, 1e3 never does.
    for clip in [1.0, 0.0, 1e3] {
        let cfg = config(clip);
        let mut rng = Rng::new(1100);
        let params0: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let grads = gradients(&mut rng, n, 4);
        let gpu_opt = GpuOptimizer::new(gpu, &cfg, &params0, &grads);
        gpu_opt.run(ctx, 0..4);
        let mut params = params0.clone();
        let (opt, norm) = cpu_steps(&cfg, &mut params, &grads);
        let what = format!("grad_clip {clip}");
        assert_matches_cpu(&what, &gpu_opt.read(ctx, n), &params, &opt);
        let state = pollster::block_on(OptState::read(ctx, &gpu_opt.state)).unwrap();
        assert_eq!(state, OptState::resumed(4, 4), "{what}");
        let s = pollster::block_on(StepScalars::read(ctx, &gpu_opt.scalars)).unwrap();
        assert_close(&format!("{what}: norm"), &[s.norm], &[norm], 0.0, 2e-6);
        assert_close(
            &format!("{what}: lr"),
            &[s.lr],
            &[lr_at(3, &cfg)],
            0.0,
            1e-6,
        );
        let scale = if clip > 0.0 && norm > clip {
            clip / norm
        } else {
            1.0
        };
        assert_close(
            &format!("{what}: scale"),
            &[s.clip_scale],
            &[scale],
            0.0,
            2e-6,
        );
        assert!(s.applied);
    }
}

#[test]
fn schedule_matches_lr_at_and_bias_corrections() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let cfg = TrainConfig {
        steps: 10,
        warmup_steps: 3,
        lr: 1e-3,
        min_lr: 1e-4,
        ..TrainConfig::default()
    };
    let n = layout().total;
    let gpu_opt = GpuOptimizer::new(gpu, &cfg, &vec![0.0; n], &[vec![0.0; n]]);
    let schedule = &gpu_opt.steps[0].2.kernels[0];
    let norm = &gpu_opt._keep[1];
    // Past the end (steps 10..13) the rate stays at min_lr.
    for step in 0..13u32 {
        // A norm above the clip from step 2 on.
        let norm_value = 0.25 * (step + 1) as f32;
        ctx.queue
            .write_buffer(norm, 0, bytemuck::bytes_of(&norm_value));
        tinygpt_gpu::kernel::submit(ctx, "schedule", &[schedule]);
        let s = pollster::block_on(StepScalars::read(ctx, &gpu_opt.scalars)).unwrap();
        let t = (step + 1) as f64;
        let want_lr = lr_at(step as usize, &cfg);
        let bc1 = (1.0 - (cfg.beta1 as f64).powf(t)) as f32;
        let bc2 = (1.0 - (cfg.beta2 as f64).powf(t)) as f32;
        let scale = if norm_value > cfg.grad_clip {
            cfg.grad_clip / norm_value
        } else {
            1.0
        };
        let what = format!("step {step}");
        let got = [s.lr, s.bc1, s.bc2, s.clip_scale, s.norm];
        let want = [want_lr, bc1, bc2, scale, norm_value];
        assert_close(&what, &got, &want, 1e-12, 1e-6);
    }
    let state = pollster::block_on(OptState::read(ctx, &gpu_opt.state)).unwrap();
    assert_eq!(state, OptState::resumed(13, 13));
    // Resumed from a checkpoint late in a run: t = 5000, where β2ᵗ ≈ 4e-5.
    ctx.queue
        .write_buffer(&gpu_opt.state, 0, &OptState::resumed(4999, 4999).to_bytes());
    tinygpt_gpu::kernel::submit(ctx, "schedule", &[schedule]);
    let s = pollster::block_on(StepScalars::read(ctx, &gpu_opt.scalars)).unwrap();
    let bc = |beta: f32| (1.0 - (beta as f64).powf(5000.0)) as f32;
    let want = [cfg.min_lr, bc(cfg.beta1), bc(cfg.beta2)];
    assert_close("t = 5000", &[s.lr, s.bc1, s.bc2], &want, 1e-12, 1e-6);
}

#[test]
fn a_non_finite_norm_skips_the_update_and_is_recorded() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let n = layout().total;
    let cfg = config(1.0);
    let mut rng = Rng::new(1200);
    let params0: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let mut grads = gradients(&mut rng, n, 4);
    grads[1][17] = f32::NAN;
    grads[2][n - 1] = f32::INFINITY;
    let gpu_opt = GpuOptimizer::new(gpu, &cfg, &params0, &grads);
    gpu_opt.run(ctx, 0..1);
    let after_first = gpu_opt.read(ctx, n);
    gpu_opt.run(ctx, 1..3);
    assert_eq!(
        gpu_opt.read(ctx, n),
        after_first,
        "params, m and v untouched by the diverged steps"
    );
    let s = pollster::block_on(StepScalars::read(ctx, &gpu_opt.scalars)).unwrap();
    assert!(!s.applied && s.norm.is_infinite(), "{s:?}");
    let state = pollster::block_on(OptState::read(ctx, &gpu_opt.state)).unwrap();
    assert_eq!(
        state,
        OptState {
            step: 3,
            updates: 1,
            nonfinite_steps: 2,
            last_nonfinite_step: Some(2),
        }
    );
    // Step 3 runs at lr_at(3) with the bias correction of update 2.
    gpu_opt.run(ctx, 3..4);
    let mut params = params0.clone();
    let (opt, _) = cpu_steps(&cfg, &mut params, &grads);
    assert_eq!(opt.step, 2);
    assert_matches_cpu("after skips", &gpu_opt.read(ctx, n), &params, &opt);
}

#[test]
fn decay_mask_sets_exactly_the_decaying_kinds() {
    let layout = layout();
    let mask = decay_mask(&layout);
    assert_eq!(mask.len(), layout.total.div_ceil(32));
    for spec in &layout.tensors {
        for i in spec.range() {
            let bit = mask[i / 32] >> (i % 32) & 1 == 1;
            assert_eq!(bit, spec.kind.decays(), "{} element {i}", spec.kind.name());
        }
    }
    let tail = layout.total % 32;
    if tail != 0 {
        assert_eq!(mask[mask.len() - 1] >> tail, 0, "no bits past the end");
    }
}

#[test]
fn state_round_trips_through_bytes() {
    let s = OptState {
        step: 7,
        updates: 5,
        nonfinite_steps: 2,
        last_nonfinite_step: Some(0),
    };
    assert_eq!(OptState::from_bytes(&s.to_bytes()), s);
    assert_eq!(OptState::from_bytes(&[0; 16]), OptState::default());
}
