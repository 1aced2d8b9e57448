//! The engine session on the GPU: steps submitted in groups with their loss
//! read-backs overlapped (each group's losses awaited while the next group is
//! already on the GPU) give exactly the losses of one-step-at-a-time reads;
//! a Stop during
//! generation ends it; exact resume from a checkpoint plus sampler state.

use std::ops::ControlFlow;
use std::rc::Rc;
use tinygpt_core::data::Dataset;
use tinygpt_core::sample::SampleParams;
use tinygpt_core::{checkpoint, ModelConfig, TrainConfig};
use tinygpt_gpu::engine::{Gpu, Session};

fn config(vocab_size: usize) -> ModelConfig {
    ModelConfig {
        vocab_size,
        block_size: 16,
        n_layer: 1,
        n_head: 2,
        d_model: 16,
    }
}

fn train_config() -> TrainConfig {
    TrainConfig {
        batch_size: 2,
        seq_len: 8,
        steps: 40,
        warmup_steps: 2,
        lr: 3e-3,
        min_lr: 3e-4,
        eval_interval: 0,
        ..TrainConfig::default()
    }
}

fn corpus() -> Vec<u8> {
    "to be or not to be, that is the question; whether 'tis nobler in the mind\n"
        .repeat(20)
        .into_bytes()
}

fn engine_gpu() -> Option<Rc<Gpu>> {
    tinygpt_gpu::testing::test_gpu()?;
    Some(Gpu::new(tinygpt_gpu::testing::open_context()))
}

fn session(gpu: &Rc<Gpu>) -> Session {
    let data = Dataset::from_bytes(&corpus(), 0.1, 8).unwrap();
    let cfg = config(data.vocab.len());
    Session::new(cfg, train_config(), data, "test".into(), Some(gpu.clone())).unwrap()
}

#[test]
fn overlapped_read_backs_return_every_step_loss_of_sequential_reads() {
    let Some(gpu) = engine_gpu() else { return };
    let mut sequential = session(&gpu);
    let mut expected = Vec::new();
    for _ in 0..12 {
        expected.push(pollster::block_on(sequential.train_steps(1)).unwrap());
    }

    let mut overlapped = session(&gpu);
    let mut got = Vec::new();
    let mut in_flight = None;
    for _ in 0..3 {
        let next = overlapped.submit_steps(4).unwrap();
        if let Some(prev) = in_flight.replace(next) {
            let stats = pollster::block_on(overlapped.finish_steps(prev)).unwrap();
            got.extend(stats.iter().map(|s| s.loss));
        }
    }
    let last = in_flight.take().unwrap();
    assert_eq!(last.first_step(), 8);
    let stats = pollster::block_on(overlapped.finish_steps(last)).unwrap();
    assert!(stats
        .iter()
        .all(|s| s.grad_norm.is_finite() && s.grad_norm > 0.0));
    got.extend(stats.iter().map(|s| s.loss));
    assert_eq!(overlapped.step, 12);
    assert_eq!(got, expected, "same device, same batches: bit-identical");
    assert!(got[11] < got[0], "the loss falls: {got:?}");
}

#[test]
fn a_stop_during_generation_ends_it_at_once() {
    let Some(gpu) = engine_gpu() else { return };
    let mut s = session(&gpu);
    let mut n = 0;
    let text = pollster::block_on(s.generate(
        "to be",
        50,
        &SampleParams::greedy(),
        |_| {
            n += 1;
            if n == 7 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        },
        || std::future::ready(()),
    ))
    .unwrap();
    assert_eq!(text.chars().count(), 7);
}

#[test]
fn a_checkpoint_with_sampler_state_resumes_exactly() {
    let Some(gpu) = engine_gpu() else { return };
    let mut straight = session(&gpu);
    pollster::block_on(straight.train_steps(10)).unwrap();
    let expected: Vec<f32> = (0..5)
        .map(|_| pollster::block_on(straight.train_steps(1)).unwrap())
        .collect();

    let mut first = session(&gpu);
    pollster::block_on(first.train_steps(10)).unwrap();
    let bytes = pollster::block_on(first.save(checkpoint::WeightDtype::F32)).unwrap();
    let sampler = first.sampler_state();
    drop(first);

    let ckpt = checkpoint::load(&bytes).unwrap();
    let mut resumed = Session::from_checkpoint(ckpt, "resumed".into(), Some(gpu.clone())).unwrap();
    resumed
        .attach_data(Dataset::from_bytes(&corpus(), 0.1, 8).unwrap())
        .unwrap();
    resumed.set_sampler_state(sampler);
    assert_eq!(resumed.step, 10);
    let got: Vec<f32> = (0..5)
        .map(|_| pollster::block_on(resumed.train_steps(1)).unwrap())
        .collect();
    assert_eq!(got, expected, "resumed run continues bit-identically");
}

/// More steps in one submission than the GPU's loss log keeps are refused
/// before anything runs or a batch is drawn: no loss is ever lost or
/// attributed to the wrong step.
#[test]
fn more_steps_than_the_loss_log_keeps_are_refused_and_change_nothing() {
    let Some(gpu) = engine_gpu() else { return };
    let mut s = session(&gpu);
    let sampler = s.sampler_state();
    let n = tinygpt_gpu::model::STEP_LOG_CAPACITY as usize + 1;
    let err = s.submit_steps(n).err().expect("refused");
    assert!(err.to_string().contains("at most 4096"), "{err}");
    assert_eq!(s.step, 0);
    assert_eq!(s.sampler_state(), sampler, "no batch was drawn");
    // The session still trains.
    let steps = s.submit_steps(2).unwrap();
    let stats = pollster::block_on(s.finish_steps(steps)).unwrap();
    assert_eq!(stats.len(), 2);
}

/// The in-browser profile's engine call: one step, every dispatch timed,
/// the step counted. Needs timestamp queries; without them it says so.
#[test]
fn a_profiled_step_times_every_dispatch_and_counts_as_a_step() {
    let Some(gpu) = engine_gpu() else { return };
    let mut s = session(&gpu);
    if !gpu.ctx.features.contains(wgpu::Features::TIMESTAMP_QUERY) {
        let err = pollster::block_on(s.profile_step()).expect_err("refused");
        assert!(err.to_string().contains("TIMESTAMP_QUERY"), "{err}");
        println!(
            "did not run the timing: this adapter has no TIMESTAMP_QUERY (the refusal was checked)"
        );
        return;
    }
    let times = pollster::block_on(s.profile_step()).unwrap();
    assert_eq!(s.step, 1);
    assert!(times.len() > 20, "{} dispatches", times.len());
    assert!(times
        .iter()
        .all(|t| t.micros.is_finite() && t.micros >= 0.0));
    assert!(times.iter().any(|t| t.key.starts_with("matmul")));
}
