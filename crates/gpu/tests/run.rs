//! The run policy the worker and the CLI share (`engine::run`), driven the
//! way the worker drives it, on a CPU session (no adapter needed: this is
//! policy, not kernels): chunks end exactly at evaluations, autosaves,
//! fixed-interval live samples and the end; the clock leaves pauses out; the history and the figures that
//! reach the page; the checks a run must pass.

use tinygpt_core::data::Dataset;
use tinygpt_core::{ModelConfig, TrainConfig};
use tinygpt_gpu::engine::live::{LiveEvery, LiveSamples};
use tinygpt_gpu::engine::run::{self, Run, CPU_TRAIN_MAX_PARAMS};
use tinygpt_gpu::engine::{EngineError, Session};

fn session(eval_interval: usize) -> Session {
    let text = "to be or not to be, that is the question\n".repeat(20);
    let data = Dataset::from_bytes(text.as_bytes(), run::VAL_FRACTION, 8).unwrap();
    let config = ModelConfig {
        vocab_size: data.vocab.len(),
        block_size: 8,
        n_layer: 1,
        n_head: 2,
        d_model: 8,
    };
    let train = TrainConfig {
        batch_size: 2,
        seq_len: 8,
        steps: 100,
        eval_interval,
        eval_batches: 1,
        ..TrainConfig::default()
    };
    Session::new(config, train, data, "test".into(), None).unwrap()
}

#[test]
fn chunks_end_exactly_at_evaluations_saves_and_the_end() {
    // Evaluate every 10, autosave every 7 after the last save (at step 3).
    let mut plan = Run::new(10, 7, Some(3));
    plan.begin(3, 22, 0.0);
    assert_eq!(plan.target_step, 25);
    let (mut step, mut ends) = (3, Vec::new());
    while !plan.done(step) {
        let n = plan.next_steps(step, 8);
        assert!((1..=8).contains(&n), "chunk of {n} at step {step}");
        step += n;
        if plan.autosave_due(step) {
            plan.saved_step = Some(step);
            ends.push(format!("save {step}"));
        }
        if plan.at_eval(step) {
            ends.push(format!("eval {step}"));
        }
    }
    assert_eq!(
        ends,
        ["save 10", "eval 10", "save 17", "eval 20", "save 24", "eval 25"]
    );
    // The weight cache: checked after the run's first steps, then every
    // FRESHNESS_EVERY.
    assert!(plan.cache_check_due(10));
    plan.cache_checked = Some(10);
    assert!(!plan.cache_check_due(10 + run::FRESHNESS_EVERY - 1));
    assert!(plan.cache_check_due(10 + run::FRESHNESS_EVERY));
    // No autosave at the end: the caller saves there anyway.
    assert!(!plan.autosave_due(25));
    // Without evaluation or autosave a chunk is as long as allowed.
    let mut free = Run::new(0, 0, None);
    free.begin(0, 5, 0.0);
    assert_eq!(free.next_steps(0, 8), 5);
    assert_eq!(free.next_steps(0, 3), 3);
    assert!(!free.at_eval(3) && free.at_eval(5));
}

#[test]
fn chunks_end_exactly_at_live_samples_on_a_fixed_interval() {
    let mut plan = Run::new(0, 0, None);
    plan.live = LiveSamples::new(LiveEvery::Steps(6));
    plan.begin(0, 20, 0.0);
    let (mut step, mut samples) = (0, Vec::new());
    while !plan.done(step) {
        step += plan.next_steps(step, 8);
        if plan.live.due(step, plan.active_ms(1.0)) {
            plan.live.record(step, 1.0);
            samples.push(step);
        }
    }
    assert_eq!(samples, [6, 12, 18]);
    // A new segment keeps the setting and restarts the accounts.
    plan.begin(20, 10, 5.0);
    assert_eq!(plan.live.every, LiveEvery::Steps(6));
    assert_eq!(plan.live.share(1.0), 0.0);
    // Auto never cuts a chunk short.
    plan.live = LiveSamples::new(LiveEvery::Auto);
    assert_eq!(plan.next_steps(20, 8), 8);
}

#[test]
fn a_cpu_session_steps_one_at_a_time_and_records_what_reaches_the_page() {
    let mut s = session(4);
    assert_eq!(s.steps_per_call(), 1);
    let mut plan = Run::new(s.train.eval_interval, 0, None);
    plan.begin(s.step, 6, 1_000.0);
    let mut now = 1_000.0;
    let mut reported = Vec::new();
    while !plan.done(s.step) {
        let n = plan.next_steps(s.step, s.steps_per_call());
        let losses = pollster::block_on(s.train_losses(n)).unwrap();
        let val = plan
            .at_eval(s.step)
            .then(|| pollster::block_on(s.eval_loss()).unwrap());
        now += 500.0;
        if s.step == 2 {
            // A pause of 10 s does not count as training time.
            plan.pause(now);
            now += 10_000.0;
            plan.resume(now);
        }
        let p = plan.record(&s, s.step, losses, val, now).unwrap();
        reported.push((p.step, p.val_loss.is_some()));
        assert_eq!(p.total_steps, 6);
        assert!((p.elapsed_s - (p.step as f64 * 0.5)).abs() < 1e-9);
        let tokens = (p.step * 16) as f64;
        assert!((p.tokens_per_s - tokens / p.elapsed_s).abs() < 1e-6);
        assert!((p.eta_s - (6 - p.step) as f64 * 0.5).abs() < 1e-6);
    }
    let evals: Vec<_> = reported.iter().filter(|r| r.1).map(|r| r.0).collect();
    assert_eq!(evals, [4, 6]);
    let steps: Vec<usize> = plan.history_train.iter().map(|h| h.0).collect();
    assert_eq!(steps, [1, 2, 3, 4, 5, 6]);
    assert_eq!(plan.history_val.len(), 2);
    // Nothing new: nothing to report.
    assert!(plan.record(&s, 6, Vec::new(), None, now).is_none());
}

#[test]
fn a_restored_run_keeps_its_history_and_a_later_loss_never_goes_back() {
    let s = session(0);
    let mut plan = Run::restored(50, vec![(10, 2.0), (20, 1.5)], vec![(20, 1.7)]);
    assert_eq!(plan.target_step, 50);
    // A loss for a step the history already has, and a NaN, are not drawn.
    plan.begin(20, 30, 0.0);
    plan.record(&s, 20, vec![9.0], None, 1.0).unwrap();
    plan.record(&s, 21, vec![f32::NAN], None, 2.0).unwrap();
    plan.record(&s, 22, vec![1.4], None, 3.0).unwrap();
    assert_eq!(plan.history_train, [(10, 2.0), (20, 1.5), (22, 1.4)]);
}

#[test]
fn only_a_divergence_with_a_save_restores() {
    let diverged = EngineError::NonFinite {
        step: 3,
        loss: f32::NAN,
        grad_norm: 1.0,
    };
    assert!(!Run::new(0, 0, None).restores_after(&diverged));
    assert!(Run::new(0, 0, Some(2)).restores_after(&diverged));
    assert!(!Run::new(0, 0, Some(2)).restores_after(&EngineError::NoData));
}

#[test]
fn a_run_refuses_what_it_cannot_do_with_one_clear_reason() {
    let small = session(0).config;
    assert!(run::check_cpu_trainable(&small, "no adapter").is_ok());
    let big = ModelConfig {
        d_model: 256,
        n_layer: 4,
        ..small
    };
    assert!(big.num_params() > CPU_TRAIN_MAX_PARAMS);
    let e = run::check_cpu_trainable(&big, "no adapter").unwrap_err();
    assert!(e.contains("no adapter") && e.contains("nano"), "{e}");
    assert!(run::check_sample_tokens(1).is_ok());
    for bad in [0, run::MAX_SAMPLE_TOKENS + 1] {
        let e = run::check_sample_tokens(bad).unwrap_err();
        assert!(e.contains(&bad.to_string()), "{e}");
    }
    assert!(run::check_continue_steps(1).is_ok());
    for bad in [0, run::MAX_CONTINUE_STEPS + 1] {
        let e = run::check_continue_steps(bad).unwrap_err();
        assert!(e.contains(&bad.to_string()), "{e}");
    }
}
