//! End to end on real text: a tiny GPT trained with AdamW, the schedule and
//! clipping on the first 100k characters of the Shakespeare corpus must fall
//! well below the `ln V` of a uniform guess. Sized to run in seconds in a
//! debug build: seeds 1–3 and 1337 end at 0.65–0.67·ln V (≈ 2.8 nats, near
//! the corpus's bigram entropy), the assertion is at 0.72·ln V.

use super::*;
use crate::optim::{clip_grad_norm, lr_at, AdamW};
use tinygpt_protocol::TrainConfig;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../web/corpus/shakespeare.txt"
);

/// The first `n` characters as ids of a sorted character vocabulary.
fn encode_corpus(n: usize) -> (Vec<u32>, usize) {
    let text = std::fs::read_to_string(CORPUS).unwrap_or_else(|e| panic!("reading {CORPUS}: {e}"));
    let chars: Vec<char> = text.chars().take(n).collect();
    let mut vocab = chars.clone();
    vocab.sort_unstable();
    vocab.dedup();
    let ids = chars
        .iter()
        .map(|c| vocab.binary_search(c).unwrap() as u32)
        .collect();
    (ids, vocab.len())
}

/// `b` windows of `t + 1` ids at random offsets: inputs and shifted targets.
fn sample_batch(data: &[u32], rng: &mut Rng, b: usize, t: usize) -> (Vec<u32>, Vec<u32>) {
    let (mut x, mut y) = (Vec::with_capacity(b * t), Vec::with_capacity(b * t));
    for _ in 0..b {
        let start = rng.below(data.len() - t - 1);
        x.extend_from_slice(&data[start..start + t]);
        y.extend_from_slice(&data[start + 1..start + t + 1]);
    }
    (x, y)
}

#[test]
fn tiny_gpt_learns_shakespeare() {
    let (data, v) = encode_corpus(100_000);
    let (train, val) = data.split_at(90_000);
    let cfg = ModelConfig {
        vocab_size: v,
        block_size: 16,
        n_layer: 1,
        n_head: 2,
        d_model: 16,
    };
    let tc = TrainConfig {
        batch_size: 8,
        seq_len: 16,
        steps: 250,
        lr: 2e-2,
        min_lr: 2e-3,
        warmup_steps: 10,
        ..TrainConfig::default()
    };
    tc.validate(&cfg).unwrap();
    let (b, t) = (tc.batch_size, tc.seq_len);
    let mut gpt = Gpt::new(cfg, tc.seed).unwrap();
    let mut opt = AdamW::new(gpt.layout.total);
    let mut rng = Rng::new(tc.seed);
    let val_loss = |gpt: &Gpt| {
        let mut r = Rng::new(99);
        let n = 4;
        (0..n)
            .map(|_| {
                let (x, y) = sample_batch(val, &mut r, b, t);
                gpt.loss(&x, &y, b, t).unwrap()
            })
            .sum::<f32>()
            / n as f32
    };
    let ln_v = (v as f32).ln();
    let start = val_loss(&gpt);
    assert!(
        (start - ln_v).abs() < 0.1,
        "initial loss {start} vs ln V {ln_v}"
    );
    for step in 0..tc.steps {
        let (x, y) = sample_batch(train, &mut rng, b, t);
        let (loss, mut grads) = gpt.forward_backward(&x, &y, b, t).unwrap();
        assert!(loss.is_finite(), "step {step}: loss {loss}");
        clip_grad_norm(&mut grads, &tc);
        let lr = lr_at(step, &tc);
        opt.update(&mut gpt.params, &grads, &gpt.layout, &tc, lr)
            .unwrap();
    }
    let end = val_loss(&gpt);
    assert!(
        end < 0.72 * ln_v,
        "validation loss {end} after {} steps (ln V = {ln_v})",
        tc.steps
    );
}
