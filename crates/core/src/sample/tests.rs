//! The sampler's rule and the CPU generation loop.

use super::*;
use tinygpt_protocol::ModelConfig;

fn draws(params: SampleParams, logits: &[f32], n: usize) -> Vec<usize> {
    let mut s = Sampler::new(params).unwrap();
    let mut counts = vec![0; logits.len()];
    for _ in 0..n {
        counts[s.sample(logits).unwrap() as usize] += 1;
    }
    counts
}

fn probs(p: &[f64]) -> Vec<f32> {
    p.iter().map(|x| x.ln() as f32).collect()
}

#[test]
fn bad_params_are_typed_errors() {
    let with = |f: fn(&mut SampleParams)| {
        let mut p = SampleParams::default();
        f(&mut p);
        Sampler::new(p).unwrap_err()
    };
    assert!(
        matches!(with(|p| p.temperature = f32::NAN), SampleError::Temperature(t) if t.is_nan())
    );
    assert_eq!(
        with(|p| p.temperature = -0.5),
        SampleError::Temperature(-0.5)
    );
    assert_eq!(
        with(|p| p.temperature = f32::INFINITY),
        SampleError::Temperature(f32::INFINITY)
    );
    assert_eq!(with(|p| p.top_p = Some(0.0)), SampleError::TopP(0.0));
    assert_eq!(with(|p| p.top_p = Some(1.5)), SampleError::TopP(1.5));
    assert!(matches!(
        with(|p| p.top_p = Some(f32::NAN)),
        SampleError::TopP(_)
    ));
    assert_eq!(with(|p| p.top_k = Some(0)), SampleError::TopKZero);
    let mut s = Sampler::new(SampleParams::default()).unwrap();
    assert_eq!(s.sample(&[]), Err(SampleError::EmptyLogits));
    assert!(matches!(
        s.sample(&[0.0, f32::NAN]),
        Err(SampleError::NonFiniteLogit { index: 1, value }) if value.is_nan()
    ));
    assert!(matches!(
        s.sample(&[f32::NEG_INFINITY, 0.0]),
        Err(SampleError::NonFiniteLogit { index: 0, .. })
    ));
}

#[test]
fn greedy_top1_and_tiny_nucleus_all_pick_the_argmax() {
    let logits = [0.5, 2.0, -1.0, 2.0, 1.9];
    let greedy = SampleParams::greedy();
    assert!(greedy.is_greedy());
    let top1 = SampleParams {
        top_k: Some(1),
        temperature: 3.0,
        ..SampleParams::default()
    };
    let nucleus = SampleParams {
        top_p: Some(1e-6),
        ..SampleParams::default()
    };
    for params in [greedy, top1, nucleus] {
        let mut s = Sampler::new(params).unwrap();
        for _ in 0..20 {
            // Ties go to the lower id.
            assert_eq!(s.sample(&logits).unwrap(), 1, "{params:?}");
        }
    }
}

#[test]
fn frequencies_follow_the_truncated_distribution() {
    let n = 20_000;
    let logits = probs(&[0.1, 0.2, 0.7]);
    let check = |params: SampleParams, want: [f64; 3]| {
        let counts = draws(params, &logits, n);
        for (i, (&c, w)) in counts.iter().zip(want).enumerate() {
            let f = c as f64 / n as f64;
            assert!(
                (f - w).abs() < 0.015,
                "{params:?}: token {i} drawn {f}, want {w}"
            );
        }
    };
    let base = SampleParams {
        seed: 5,
        ..SampleParams::default()
    };
    check(base, [0.1, 0.2, 0.7]);
    check(
        SampleParams {
            top_k: Some(2),
            ..base
        },
        [0.0, 2.0 / 9.0, 7.0 / 9.0],
    );
    // 0.7 < 0.75 ≤ 0.7 + 0.2: the nucleus is the top two.
    check(
        SampleParams {
            top_p: Some(0.75),
            ..base
        },
        [0.0, 2.0 / 9.0, 7.0 / 9.0],
    );
    check(
        SampleParams {
            top_p: Some(0.6),
            ..base
        },
        [0.0, 0.0, 1.0],
    );
    // Temperature 2 takes the square root of the probabilities.
    let (a, b, c) = (0.1f64.sqrt(), 0.2f64.sqrt(), 0.7f64.sqrt());
    let z = a + b + c;
    check(
        SampleParams {
            temperature: 2.0,
            ..base
        },
        [a / z, b / z, c / z],
    );
}

#[test]
fn same_seed_same_draws_other_seed_other_draws() {
    let logits: Vec<f32> = (0..20).map(|i| (i % 7) as f32 * 0.3).collect();
    let run = |seed| {
        let mut s = Sampler::new(SampleParams {
            seed,
            ..SampleParams::default()
        })
        .unwrap();
        (0..64)
            .map(|_| s.sample(&logits).unwrap())
            .collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

fn tiny_gpt() -> Gpt {
    let cfg = ModelConfig {
        vocab_size: 7,
        block_size: 6,
        n_layer: 1,
        n_head: 2,
        d_model: 8,
    };
    let mut gpt = Gpt::new(cfg, 3).unwrap();
    // Sharpen the random init so sampling is not near-uniform.
    gpt.params.iter_mut().for_each(|p| *p *= 20.0);
    gpt
}

#[test]
fn generate_streams_each_token_and_is_reproducible() {
    let gpt = tiny_gpt();
    let params = SampleParams {
        seed: 11,
        top_k: Some(4),
        ..SampleParams::default()
    };
    let mut streamed = Vec::new();
    let out = gpt
        .generate(&[1, 2, 3], 20, &params, |t| {
            streamed.push(t);
            ControlFlow::Continue(())
        })
        .unwrap();
    assert_eq!(out.len(), 20);
    assert_eq!(out, streamed);
    assert!(out.iter().all(|&t| t < 7));
    let again = gpt
        .generate(&[1, 2, 3], 20, &params, |_| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(out, again);
    // A prompt longer than the context is cropped, not refused.
    let long: Vec<u32> = (0..30).map(|i| i % 7).collect();
    assert_eq!(
        gpt.generate(&long, 5, &params, |_| ControlFlow::Continue(()))
            .unwrap()
            .len(),
        5
    );
    assert!(gpt
        .generate(&[1], 0, &params, |_| panic!("no tokens asked"))
        .unwrap()
        .is_empty());
}

#[test]
fn greedy_generation_matches_argmax_of_logits_last() {
    let gpt = tiny_gpt();
    let out = gpt
        .generate(&[4, 0], 8, &SampleParams::greedy(), |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
    let mut ctx = vec![4, 0];
    for &tok in &out {
        let logits = gpt.logits_last(&ctx).unwrap();
        let best = (0..logits.len()).fold(0, |b, i| if logits[i] > logits[b] { i } else { b });
        assert_eq!(tok as usize, best);
        ctx.push(tok);
    }
}

#[test]
fn break_stops_generation_early() {
    let gpt = tiny_gpt();
    let mut calls = 0;
    let out = gpt
        .generate(&[1], 50, &SampleParams::default(), |_| {
            calls += 1;
            if calls == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!((out.len(), calls), (3, 3));
}

#[test]
fn empty_prompt_starts_from_token_zero() {
    let gpt = tiny_gpt();
    let params = SampleParams {
        seed: 9,
        ..SampleParams::default()
    };
    let go = |prompt: &[u32]| {
        gpt.generate(prompt, 10, &params, |_| ControlFlow::Continue(()))
            .unwrap()
    };
    assert_eq!(go(&[]), go(&[0]));
}

#[test]
fn prompt_outside_the_vocabulary_is_a_typed_error() {
    let gpt = tiny_gpt();
    let err = gpt
        .generate(&[1, 9, 2], 5, &SampleParams::default(), |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
    assert_eq!(
        err,
        SampleError::Model(ModelError::TokenOutOfRange {
            what: "prompt",
            index: 1,
            token: 9,
            vocab_size: 7
        })
    );
    assert!(err.to_string().contains("prompt[1] = 9"), "{err}");
    let bad = SampleParams {
        top_k: Some(0),
        ..SampleParams::default()
    };
    assert_eq!(
        gpt.generate(&[1], 5, &bad, |_| ControlFlow::Continue(())),
        Err(SampleError::TopKZero)
    );
}
