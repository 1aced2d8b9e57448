//! The memory the UI shows and the worker checks before allocating is the
//! memory the engine really allocates: every storage buffer a training run
//! creates, counted by the context, is `training_memory` plus the ops' small
//! reduction scratch (under 2 %). (Its own test binary: the count is per
//! device, and other tests share theirs.)

use std::rc::Rc;
use std::sync::atomic::Ordering;
use tinygpt_core::data::Dataset;
use tinygpt_core::{ModelConfig, TrainConfig};
use tinygpt_gpu::engine::{EngineError, Gpu, Session};
use tinygpt_protocol::training_memory;

#[test]
fn the_estimate_is_the_real_allocation_and_too_big_is_refused_before_allocating() {
    if tinygpt_gpu::testing::test_gpu().is_none() {
        return;
    }
    let gpu: Rc<Gpu> = Gpu::new(tinygpt_gpu::testing::open_context());
    let text = "a small corpus for a memory test, with enough characters.\n".repeat(40);
    for (layers, heads, width, b, t) in [(2, 4, 32, 3, 16), (1, 2, 48, 4, 16)] {
        let data = Dataset::from_bytes(text.as_bytes(), 0.1, t).unwrap();
        let cfg = ModelConfig {
            vocab_size: data.vocab.len(),
            block_size: 16,
            n_layer: layers,
            n_head: heads,
            d_model: width,
        };
        let train = TrainConfig {
            batch_size: b,
            seq_len: t,
            steps: 2,
            warmup_steps: 1,
            eval_interval: 0,
            ..TrainConfig::default()
        };
        let before = gpu.ctx.allocated.load(Ordering::Relaxed);
        let mut s = Session::new(cfg, train, data, "memory".into(), Some(gpu.clone())).unwrap();
        pollster::block_on(s.train_steps(1)).unwrap();
        let allocated = gpu.ctx.allocated.load(Ordering::Relaxed) - before;
        let plan = training_memory(&cfg, b, t);
        let scratch = allocated as f64 / plan.total() as f64 - 1.0;
        assert!(
            (0.0..0.02).contains(&scratch),
            "{cfg:?} B={b} T={t}: allocated {allocated}, estimated {}",
            plan.total()
        );
        assert_eq!(s.memory_bytes(), plan.total());
    }

    // Far above the budget: refused with the numbers, nothing allocated.
    let data = Dataset::from_bytes(text.as_bytes(), 0.1, 8).unwrap();
    let cfg = ModelConfig {
        vocab_size: data.vocab.len(),
        block_size: 1024,
        n_layer: 2,
        n_head: 4,
        d_model: 256,
    };
    let train = TrainConfig {
        batch_size: 512,
        seq_len: 1024,
        ..TrainConfig::default()
    };
    let before = gpu.ctx.allocated.load(Ordering::Relaxed);
    let err = Session::new(cfg, train, data, "too big".into(), Some(gpu.clone()))
        .err()
        .expect("refused");
    assert!(matches!(err, EngineError::TooBig(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("GiB")
            && (msg.contains("budget") || msg.contains("maxStorageBufferBindingSize")),
        "{msg}"
    );
    assert_eq!(gpu.ctx.allocated.load(Ordering::Relaxed), before);
}
