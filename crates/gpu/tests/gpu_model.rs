//! GpuModel against the CPU reference: step-0 loss and every gradient (in
//! both kernel layouts), a 20-step loss trajectory from the same weights and
//! batches, evaluation, and greedy KV-cached sampling producing the CPU's
//! text.

use std::ops::ControlFlow;
use tinygpt_core::data::BatchSampler;
use tinygpt_core::model::Dropout;
use tinygpt_core::numerics::assert_close;
use tinygpt_core::optim::{clip_grad_norm, lr_at, AdamW};
use tinygpt_core::sample::SampleParams;
use tinygpt_core::{Gpt, ModelConfig, Rng, TrainConfig};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::model::GpuModel;
use tinygpt_gpu::ops::adamw::OptState;
use tinygpt_gpu::ops::matmul::MatmulDesc;
use tinygpt_gpu::testing::TestGpu;

fn config() -> ModelConfig {
    ModelConfig {
        vocab_size: 11,
        block_size: 12,
        n_layer: 2,
        n_head: 2,
        d_model: 20,
    }
}

fn train_config() -> TrainConfig {
    TrainConfig {
        batch_size: 3,
        seq_len: 9,
        steps: 20,
        warmup_steps: 4,
        lr: 3e-3,
        min_lr: 3e-4,
        grad_clip: 1.0,
        ..TrainConfig::default()
    }
}

/// A token stream with some structure, so the loss actually moves.
fn tokens(n: usize, v: u32) -> Vec<u32> {
    let mut rng = Rng::new(77);
    (0..n)
        .map(|i| {
            if rng.below(4) == 0 {
                rng.below(v as usize) as u32
            } else {
                (i as u32 * 3) % v
            }
        })
        .collect()
}

/// The loss and every gradient of one forward and backward of `cfg` on a
/// `tc`-shaped batch, GPU against CPU, the optimiser at step `step` (the
/// dropout masks' step), with the GPU's and the CPU devices' kernel layout
/// whatever the adapter is. Returns the loss.
fn check_step(gpu: &TestGpu, cfg: ModelConfig, tc: TrainConfig, seed: u64, step: u32) -> f32 {
    let mut loss = 0.0;
    for layout in [Layout::Gpu, Layout::Cpu] {
        loss = check_step_in(gpu, cfg, tc, seed, step, layout);
    }
    loss
}

fn check_step_in(
    gpu: &TestGpu,
    cfg: ModelConfig,
    tc: TrainConfig,
    seed: u64,
    step: u32,
    layout: Layout,
) -> f32 {
    let cpu = Gpt::new(cfg, seed).unwrap();
    let data = tokens(
        500.max(2 * tc.batch_size * tc.seq_len),
        cfg.vocab_size as u32,
    );
    let batch = BatchSampler::new(1).next_batch(&data, tc.batch_size, tc.seq_len);
    let (loss, grads) = cpu
        .forward_backward_train(
            &batch.inputs,
            &batch.targets,
            batch.batch_size,
            batch.seq_len,
            Dropout::at_step(tc.dropout, tc.seed, step as usize),
        )
        .unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let opt = OptState::resumed(step, step);
    let mut model = GpuModel::new(&gpu.ctx, cfg, &cpu.params, None, tc, opt).unwrap();
    model.set_kernel_layout(layout);
    model.forward_backward(&gpu.ctx, &mut reg, &batch).unwrap();
    let gpu_loss = pollster::block_on(model.read_loss(&gpu.ctx)).unwrap();
    assert!(
        (gpu_loss - loss).abs() <= 1e-5 * loss.abs(),
        "{layout:?}: loss {gpu_loss} vs {loss}"
    );
    let gpu_grads = pollster::block_on(model.read_grads(&gpu.ctx)).unwrap();
    for spec in &cpu.layout.tensors {
        let r = spec.range();
        let scale = grads[r.clone()].iter().fold(0f32, |m, g| m.max(g.abs())) as f64;
        assert_close(
            &format!("{} ({layout:?})", spec.kind.name()),
            &gpu_grads[r.clone()],
            &grads[r],
            1e-4 * scale.max(1e-6),
            1e-3,
        );
    }
    loss
}

#[test]
fn step_zero_loss_and_every_gradient_match_the_reference() {
    let gpu = gpu_or_skip!();
    check_step(gpu, config(), train_config(), 5, 0);
}

/// Dropout 0.2: the GPU drops the elements the reference drops (same
/// masks from seed, step and site), in the forward and in the backward, and
/// the masks follow the optimiser's step counter.
#[test]
fn dropout_masks_and_gradients_match_the_reference() {
    let tc = TrainConfig {
        dropout: 0.2,
        ..train_config()
    };
    let gpu = gpu_or_skip!();
    let plain = check_step(gpu, config(), train_config(), 5, 3);
    let at3 = check_step(gpu, config(), tc, 5, 3);
    let at4 = check_step(gpu, config(), tc, 5, 4);
    assert!(at3 != plain && at4 != at3, "{plain} {at3} {at4}");
}

/// 512 rows: every weight gradient sums over K = 512 and runs K-split
/// through the backward's shared scratch, each bias gradient as its split's
/// row sums (on the GPU layout).
#[test]
fn every_gradient_matches_with_k_split_weight_gradients() {
    let cfg = ModelConfig {
        block_size: 64,
        n_layer: 1,
        ..config()
    };
    let tc = TrainConfig {
        batch_size: 8,
        seq_len: 64,
        ..train_config()
    };
    let rows = (tc.batch_size * tc.seq_len) as u32;
    let qkv_grad = MatmulDesc {
        m: 3 * cfg.d_model as u32,
        k: rows,
        n: cfg.d_model as u32,
        trans_a: true,
        ..Default::default()
    };
    assert_eq!(qkv_grad.split_k_slices(), 4);
    // On the small-output kernel: the biases' gradients are the splits' row sums.
    assert!(qkv_grad.split_k().small_tiles);
    let gpu = gpu_or_skip!();
    check_step(gpu, cfg, tc, 8, 0);
}

#[test]
fn twenty_step_loss_trajectory_matches_within_1e3_relative() {
    check_trajectory(train_config());
}

/// With dropout every step draws new masks (the GPU's step counter, the
/// reference's step index) and the two still agree step by step.
#[test]
fn twenty_step_trajectory_with_dropout_matches() {
    check_trajectory(TrainConfig {
        dropout: 0.1,
        ..train_config()
    });
}

fn check_trajectory(tc: TrainConfig) {
    let gpu = gpu_or_skip!();
    let cfg = config();
    let mut cpu = Gpt::new(cfg, 6).unwrap();
    let mut opt = AdamW::new(cpu.params.len());
    let data = tokens(2000, cfg.vocab_size as u32);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut model =
        GpuModel::new(&gpu.ctx, cfg, &cpu.params, None, tc, OptState::default()).unwrap();
    let mut sampler = BatchSampler::new(2);
    let (mut cpu_losses, mut gpu_losses) = (Vec::new(), Vec::new());
    for step in 0..tc.steps {
        let batch = sampler.next_batch(&data, tc.batch_size, tc.seq_len);
        let dropout = Dropout::at_step(tc.dropout, tc.seed, step);
        let (loss, mut grads) = cpu
            .forward_backward_train(
                &batch.inputs,
                &batch.targets,
                tc.batch_size,
                tc.seq_len,
                dropout,
            )
            .unwrap();
        clip_grad_norm(&mut grads, &tc);
        let layout = cpu.layout.clone();
        opt.update(&mut cpu.params, &grads, &layout, &tc, lr_at(step, &tc))
            .unwrap();
        cpu_losses.push(loss);
        model.train_step(&gpu.ctx, &mut reg, &batch).unwrap();
        gpu_losses.push(pollster::block_on(model.read_loss(&gpu.ctx)).unwrap());
    }
    for (i, (g, c)) in gpu_losses.iter().zip(&cpu_losses).enumerate() {
        assert!(
            (g - c).abs() <= 1e-3 * c.abs(),
            "step {i}: gpu {g} vs cpu {c}\ngpu {gpu_losses:?}\ncpu {cpu_losses:?}"
        );
    }
    assert!(
        cpu_losses[19] < cpu_losses[0] - 0.1,
        "the run learns: {cpu_losses:?}"
    );
    let params = pollster::block_on(model.read_params(&gpu.ctx)).unwrap();
    assert_close("params after 20 steps", &params, &cpu.params, 1e-4, 1e-3);
    let (_, _, state) = pollster::block_on(model.read_optimizer(&gpu.ctx)).unwrap();
    assert_eq!((state.step, state.updates), (20, 20));
}

#[test]
fn evaluation_matches_the_reference_loss() {
    let gpu = gpu_or_skip!();
    let (cfg, tc) = (config(), train_config());
    let cpu = Gpt::new(cfg, 8).unwrap();
    let data = tokens(800, cfg.vocab_size as u32);
    let mut sampler = BatchSampler::new(3);
    let batches: Vec<_> = (0..3)
        .map(|_| sampler.next_batch(&data, tc.batch_size, tc.seq_len))
        .collect();
    let want = batches
        .iter()
        .map(|b| {
            cpu.loss(&b.inputs, &b.targets, b.batch_size, b.seq_len)
                .unwrap()
        })
        .sum::<f32>()
        / 3.0;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut model =
        GpuModel::new(&gpu.ctx, cfg, &cpu.params, None, tc, OptState::default()).unwrap();
    let got = pollster::block_on(model.eval_loss(&gpu.ctx, &mut reg, &batches)).unwrap();
    assert!((got - want).abs() < 1e-5 * want, "{got} vs {want}");
}

#[test]
fn kv_cached_greedy_sampling_matches_the_cpu_text() {
    let gpu = gpu_or_skip!();
    let cfg = config();
    // Larger weights than the init, so the logits are decisive.
    let mut cpu = Gpt::new(cfg, 9).unwrap();
    cpu.params.iter_mut().for_each(|p| *p *= 8.0);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut model = GpuModel::new(
        &gpu.ctx,
        cfg,
        &cpu.params,
        None,
        train_config(),
        OptState::default(),
    )
    .unwrap();
    let prompt = [1u32, 4, 2];
    let n = cfg.block_size - prompt.len();
    let want = cpu
        .generate(&prompt, n, &SampleParams::greedy(), |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let dec = model.decoder(&gpu.ctx, &mut reg).unwrap();
    let mut got = Vec::new();
    let mut logits = Vec::new();
    for (i, &t) in prompt.iter().enumerate() {
        if i + 1 < prompt.len() {
            dec.feed(&gpu.ctx, t).unwrap();
        } else {
            logits = pollster::block_on(dec.push(&gpu.ctx, t)).unwrap();
        }
    }
    for i in 0..n {
        // Each position's logits against the CPU's full recompute.
        let mut ctx_tokens = prompt.to_vec();
        ctx_tokens.extend(&got);
        let cpu_logits = cpu.logits_last(&ctx_tokens).unwrap();
        assert_close(
            &format!("logits at {}", ctx_tokens.len()),
            &logits,
            &cpu_logits,
            1e-4,
            1e-4,
        );
        let next = logits
            .iter()
            .enumerate()
            .fold(0, |best, (j, &x)| if x > logits[best] { j } else { best })
            as u32;
        got.push(next);
        if i + 1 < n {
            logits = pollster::block_on(dec.push(&gpu.ctx, next)).unwrap();
        }
    }
    assert_eq!(got, want, "greedy text differs");
}
