//! The whole model: gradient check of every parameter in `f64`, `f32`
//! against `f64`, init, determinism, input validation and `logits_last`.

use super::gradcheck::{assert_grad_close, numeric_grad};
use super::*;
use crate::params::PARAM_KINDS;
use crate::Preset;

/// V=11, T=5, L=2, NH=2, C=8: every code path, 1,888 parameters.
fn tiny_cfg() -> ModelConfig {
    ModelConfig {
        vocab_size: 11,
        block_size: 5,
        n_layer: 2,
        n_head: 2,
        d_model: 8,
    }
}

/// `(inputs, targets)` of a `b×t` batch drawn from `rng`.
fn batch(rng: &mut Rng, v: usize, b: usize, t: usize) -> (Vec<u32>, Vec<u32>) {
    let mut draw = || (0..b * t).map(|_| rng.below(v) as u32).collect::<Vec<_>>();
    (draw(), draw())
}

/// The init plus noise, so biases and LayerNorm parameters are not at their
/// special values 0 and 1 and attention is far from uniform.
fn perturbed_f64(cfg: ModelConfig, seed: u64) -> Gpt<f64> {
    let mut gpt = Gpt::new(cfg, seed).unwrap().cast::<f64>();
    let mut rng = Rng::new(seed + 100);
    gpt.params
        .iter_mut()
        .for_each(|p| *p += 0.3 * rng.normal() as f64);
    gpt
}

#[test]
fn whole_model_gradient_matches_finite_differences() {
    let cfg = tiny_cfg();
    let (b, t) = (2, 5);
    let gpt = perturbed_f64(cfg, 7);
    let (inputs, targets) = batch(&mut Rng::new(8), cfg.vocab_size, b, t);
    let (_, grads) = gpt.forward_backward(&inputs, &targets, b, t).unwrap();
    let numeric = numeric_grad(&gpt.params, 1e-5, |p| {
        let g = Gpt::from_params(cfg, p.to_vec()).unwrap();
        g.loss(&inputs, &targets, b, t).unwrap()
    });
    for spec in &gpt.layout.tensors {
        let r = spec.range();
        let what = format!("d{} {:?}", spec.kind.name(), spec.shape);
        assert_grad_close(&what, &grads[r.clone()], &numeric[r], 1e-8, 1e-6);
    }
}

/// With dropout the masks are fixed by (seed, step, site), so the loss is a
/// smooth function of the parameters and its gradient can be checked the
/// same way: the backward must apply the forward's masks.
#[test]
fn gradient_with_dropout_matches_finite_differences() {
    let cfg = tiny_cfg();
    let (b, t) = (2, 5);
    let gpt = perturbed_f64(cfg, 7);
    let (inputs, targets) = batch(&mut Rng::new(8), cfg.vocab_size, b, t);
    let dropout = Dropout::at_step(0.3, 99, 4);
    let (loss, grads) = gpt
        .forward_backward_train(&inputs, &targets, b, t, dropout)
        .unwrap();
    let (plain, _) = gpt.forward_backward(&inputs, &targets, b, t).unwrap();
    assert!(
        (loss - plain).abs() > 1e-3,
        "dropout changed nothing: {loss} vs {plain}"
    );
    let numeric = numeric_grad(&gpt.params, 1e-5, |p| {
        let g = Gpt::from_params(cfg, p.to_vec()).unwrap();
        let acts = g
            .forward_train(&inputs, Some(&targets), b, t, dropout)
            .unwrap();
        acts.loss.unwrap()
    });
    for spec in &gpt.layout.tensors {
        let r = spec.range();
        let what = format!("d{} {:?} with dropout", spec.kind.name(), spec.shape);
        assert_grad_close(&what, &grads[r.clone()], &numeric[r], 1e-8, 1e-6);
    }
}

/// A shorter sequence than `block_size` uses only the first `t` rows of
/// `pos_emb`; the rest must get exactly zero gradient.
#[test]
fn short_sequences_touch_only_their_positions() {
    let cfg = tiny_cfg();
    let (b, t) = (3, 2);
    let gpt = perturbed_f64(cfg, 9);
    let (inputs, targets) = batch(&mut Rng::new(10), cfg.vocab_size, b, t);
    let (_, grads) = gpt.forward_backward(&inputs, &targets, b, t).unwrap();
    let numeric = numeric_grad(&gpt.params, 1e-5, |p| {
        Gpt::from_params(cfg, p.to_vec())
            .unwrap()
            .loss(&inputs, &targets, b, t)
            .unwrap()
    });
    assert_grad_close("all params, T=2", &grads, &numeric, 1e-8, 1e-6);
    let dpos = &grads[gpt.layout.get(PosEmb).range()];
    assert!(dpos[t * cfg.d_model..].iter().all(|&g| g == 0.0));
}

#[test]
fn f32_agrees_with_f64() {
    let cfg = tiny_cfg();
    let (b, t) = (2, 5);
    let g64 = perturbed_f64(cfg, 11);
    let g32 = g64.cast::<f32>();
    let (inputs, targets) = batch(&mut Rng::new(12), cfg.vocab_size, b, t);
    let a64 = g64.forward(&inputs, Some(&targets), b, t).unwrap();
    let a32 = g32.forward(&inputs, Some(&targets), b, t).unwrap();
    let to32 = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
    crate::numerics::assert_close("logits", &a32.logits, &to32(&a64.logits), 1e-5, 1e-5);
    let (l32, l64) = (a32.loss.unwrap(), a64.loss.unwrap());
    assert!((l32 as f64 - l64).abs() < 1e-5, "loss {l32} vs {l64}");
    let d64 = g64.backward(&a64).unwrap();
    let d32 = g32.backward(&a32).unwrap();
    crate::numerics::assert_close("grads", &d32, &to32(&d64), 1e-5, 1e-3);
}

#[test]
fn init_loss_is_ln_vocab() {
    let cfg = ModelConfig {
        vocab_size: 65,
        block_size: 16,
        n_layer: 2,
        n_head: 2,
        d_model: 32,
    };
    let gpt = Gpt::new(cfg, 1337).unwrap();
    let (inputs, targets) = batch(&mut Rng::new(1), cfg.vocab_size, 4, 16);
    let loss = gpt.loss(&inputs, &targets, 4, 16).unwrap();
    let ln_v = (cfg.vocab_size as f32).ln();
    assert!(
        (loss - ln_v).abs() < 0.1,
        "step-0 loss {loss} vs ln V {ln_v}"
    );
}

#[test]
fn init_has_the_documented_statistics() {
    let cfg = Preset::by_name("nano").unwrap().model(65);
    let gpt = Gpt::new(cfg, 5).unwrap();
    let residual_std = 0.02 / (2.0 * cfg.n_layer as f64).sqrt();
    for &kind in &PARAM_KINDS {
        let x = gpt.layout.view(&gpt.params, kind);
        let n = x.len() as f64;
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / n;
        let std = (x.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        let (want_mean, want_std) = match kind {
            Ln1W | Ln2W | LnfW => (1.0, 0.0),
            AttnProjW | FcProjW => (0.0, residual_std),
            TokEmb | PosEmb | QkvW | FcW => (0.0, 0.02),
            _ => (0.0, 0.0),
        };
        let name = kind.name();
        assert!(
            (mean - want_mean).abs() < 0.1 * want_std + 1e-12,
            "{name} mean {mean}"
        );
        assert!(
            (std - want_std).abs() <= 0.05 * want_std,
            "{name} std {std} vs {want_std}"
        );
    }
}

#[test]
fn same_seed_same_params_and_loss() {
    let cfg = tiny_cfg();
    let (a, b) = (Gpt::new(cfg, 42).unwrap(), Gpt::new(cfg, 42).unwrap());
    assert_eq!(a.params, b.params);
    assert_eq!(a.params, init_params(&cfg, 42));
    assert_ne!(a.params, Gpt::new(cfg, 43).unwrap().params);
    let (inputs, targets) = batch(&mut Rng::new(3), cfg.vocab_size, 2, 5);
    let (la, ga) = a.forward_backward(&inputs, &targets, 2, 5).unwrap();
    let (lb, gb) = b.forward_backward(&inputs, &targets, 2, 5).unwrap();
    assert_eq!(la.to_bits(), lb.to_bits());
    assert_eq!(ga, gb);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let cfg = tiny_cfg();
    let gpt = Gpt::new(cfg, 1).unwrap();
    let ok = vec![1u32; 10];
    let err = |r: Result<Activations<f32>, ModelError>| r.unwrap_err();
    assert_eq!(
        err(gpt.forward(&ok, None, 2, 6)),
        ModelError::SequenceTooLong {
            t: 6,
            block_size: 5
        }
    );
    assert_eq!(
        err(gpt.forward(&[], None, 0, 5)),
        ModelError::EmptyBatch { b: 0, t: 5 }
    );
    assert!(matches!(
        err(gpt.forward(&ok[..9], None, 2, 5)),
        ModelError::TokenCount {
            what: "inputs",
            got: 9,
            ..
        }
    ));
    assert!(matches!(
        err(gpt.forward(&ok, Some(&ok[..3]), 2, 5)),
        ModelError::TokenCount {
            what: "targets",
            got: 3,
            ..
        }
    ));
    let mut bad = ok.clone();
    bad[7] = 11;
    let e = err(gpt.forward(&ok, Some(&bad), 2, 5));
    assert_eq!(
        e,
        ModelError::TokenOutOfRange {
            what: "targets",
            index: 7,
            token: 11,
            vocab_size: 11
        }
    );
    assert!(e.to_string().contains("targets[7] = 11"), "{e}");
    let no_targets = gpt.forward(&ok, None, 2, 5).unwrap();
    assert!(no_targets.loss.is_none() && no_targets.probs.is_empty());
    assert_eq!(gpt.backward(&no_targets), Err(ModelError::NoTargets));
    assert_eq!(
        Gpt::from_params(cfg, vec![0.0f32; 3]),
        Err(ModelError::ParamCount {
            expected: gpt.layout.total,
            got: 3
        })
    );
    let mut bad_cfg = cfg;
    bad_cfg.n_head = 3;
    assert!(matches!(Gpt::new(bad_cfg, 1), Err(ModelError::Config(_))));
    assert!(gpt.logits_last(&[]).is_err());
}

#[test]
fn logits_last_is_the_last_row_of_forward_and_crops_to_block_size() {
    let cfg = tiny_cfg();
    let gpt = perturbed_f64(cfg, 13).cast::<f32>();
    let v = cfg.vocab_size;
    let tokens = [3u32, 1, 4, 1, 5];
    let acts = gpt.forward(&tokens, None, 1, 5).unwrap();
    assert_eq!(gpt.logits_last(&tokens).unwrap(), acts.logits[4 * v..]);
    let longer = [9u32, 2, 6, 3, 1, 4, 1, 5];
    assert_eq!(
        gpt.logits_last(&longer).unwrap(),
        gpt.logits_last(&tokens).unwrap()
    );
    // Causality end to end: later tokens never change earlier logits.
    let mut changed = tokens;
    changed[4] = 0;
    let other = gpt.forward(&changed, None, 1, 5).unwrap();
    assert_eq!(acts.logits[..4 * v], other.logits[..4 * v]);
    assert_eq!(
        gpt.logits_last(&tokens[..2]).unwrap(),
        acts.logits[v..2 * v]
    );
}
