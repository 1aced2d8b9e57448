//! Every layer's backward against central finite differences of its
//! forward, in `f64`. Each check projects the output on a random `r`, so the
//! scalar is `Σ out ⊙ r` and the backward is run with `dout = r`.

use super::gradcheck::{assert_grad_close, numeric_grad, project, randn, worst};
use super::layers::*;
use crate::rng::Rng;

const H: f64 = 1e-5;
const ATOL: f64 = 1e-8;
const RTOL: f64 = 1e-6;

fn check(what: &str, analytic: &[f64], numeric: &[f64]) {
    assert_grad_close(what, analytic, numeric, ATOL, RTOL);
}

#[test]
fn encoder_gradients() {
    let (v, t_max, t, c) = (5, 4, 3, 4);
    let mut rng = Rng::new(1);
    // Repeated tokens: their gradients must accumulate, not overwrite.
    let inputs = [1u32, 3, 1, 0, 1, 4];
    let tok = randn(&mut rng, v * c, 0.0, 1.0);
    let pos = randn(&mut rng, t_max * c, 0.0, 1.0);
    let r = randn(&mut rng, inputs.len() * c, 0.0, 1.0);
    let run = |tok: &[f64], pos: &[f64]| {
        let mut out = vec![0.0; inputs.len() * c];
        encoder_forward(&mut out, &inputs, tok, pos, t, c);
        project(&out, &r)
    };
    let (mut dtok, mut dpos) = (vec![0.0; v * c], vec![0.0; t_max * c]);
    encoder_backward(&mut dtok, &mut dpos, &r, &inputs, t, c);
    check("dtok_emb", &dtok, &numeric_grad(&tok, H, |x| run(x, &pos)));
    check("dpos_emb", &dpos, &numeric_grad(&pos, H, |x| run(&tok, x)));
}

#[test]
fn layernorm_gradients() {
    let (n, c) = (6, 7);
    let mut rng = Rng::new(2);
    let inp = randn(&mut rng, n * c, 0.5, 2.0);
    let w = randn(&mut rng, c, 1.0, 0.5);
    let b = randn(&mut rng, c, 0.0, 0.5);
    let r = randn(&mut rng, n * c, 0.0, 1.0);
    let run = |inp: &[f64], w: &[f64], b: &[f64]| {
        let (mut out, mut mean, mut rstd) = (vec![0.0; n * c], vec![0.0; n], vec![0.0; n]);
        layernorm_forward(&mut out, &mut mean, &mut rstd, inp, w, b);
        (out, mean, rstd)
    };
    let (out, mean, rstd) = run(&inp, &w, &b);
    // Each normalised row has mean 0 and variance 1 (before w, b).
    let (ones, zeros) = (vec![1.0; c], vec![0.0; c]);
    let (norm, _, _) = run(&inp, &ones, &zeros);
    for row in norm.chunks(c) {
        let mu = row.iter().sum::<f64>() / c as f64;
        let var = row.iter().map(|x| x * x).sum::<f64>() / c as f64;
        assert!(
            mu.abs() < 1e-12 && (var - 1.0).abs() < 1e-5,
            "mean {mu} var {var}"
        );
    }
    assert_eq!(out.len(), n * c);
    let (mut dinp, mut dw, mut db) = (vec![0.0; n * c], vec![0.0; c], vec![0.0; c]);
    layernorm_backward(&mut dinp, &mut dw, &mut db, &r, &inp, &w, &mean, &rstd);
    let f = |i: &[f64], w: &[f64], b: &[f64]| project(&run(i, w, b).0, &r);
    check(
        "layernorm dinp",
        &dinp,
        &numeric_grad(&inp, H, |x| f(x, &w, &b)),
    );
    check(
        "layernorm dw",
        &dw,
        &numeric_grad(&w, H, |x| f(&inp, x, &b)),
    );
    check(
        "layernorm db",
        &db,
        &numeric_grad(&b, H, |x| f(&inp, &w, x)),
    );
}

#[test]
fn matmul_gradients_with_and_without_bias() {
    let (n, ic, oc) = (5, 11, 7); // ic > 8 exercises dot's SIMD body and tail
    let mut rng = Rng::new(3);
    let inp = randn(&mut rng, n * ic, 0.0, 1.0);
    let w = randn(&mut rng, oc * ic, 0.0, 1.0);
    let bias = randn(&mut rng, oc, 0.0, 1.0);
    let r = randn(&mut rng, n * oc, 0.0, 1.0);
    let f = |inp: &[f64], w: &[f64], bias: Option<&[f64]>| {
        let mut out = vec![0.0; n * oc];
        matmul_forward(&mut out, inp, w, bias, ic, oc);
        project(&out, &r)
    };
    // Forward against the textbook triple loop.
    let mut out = vec![0.0; n * oc];
    matmul_forward(&mut out, &inp, &w, Some(&bias), ic, oc);
    for i in 0..n {
        for j in 0..oc {
            let want = bias[j]
                + (0..ic)
                    .map(|k| inp[i * ic + k] * w[j * ic + k])
                    .sum::<f64>();
            assert!((out[i * oc + j] - want).abs() < 1e-12, "out[{i},{j}]");
        }
    }
    let (mut dinp, mut dw, mut db) = (vec![0.0; n * ic], vec![0.0; oc * ic], vec![0.0; oc]);
    matmul_backward(&mut dinp, &mut dw, Some(&mut db), &r, &inp, &w, ic, oc);
    let b = Some(&bias[..]);
    check(
        "matmul dinp",
        &dinp,
        &numeric_grad(&inp, H, |x| f(x, &w, b)),
    );
    check("matmul dw", &dw, &numeric_grad(&w, H, |x| f(&inp, x, b)));
    check(
        "matmul dbias",
        &db,
        &numeric_grad(&bias, H, |x| f(&inp, &w, Some(x))),
    );
    let (mut dinp2, mut dw2) = (vec![0.0; n * ic], vec![0.0; oc * ic]);
    matmul_backward(&mut dinp2, &mut dw2, None, &r, &inp, &w, ic, oc);
    check(
        "matmul dw (no bias)",
        &dw2,
        &numeric_grad(&w, H, |x| f(&inp, x, None)),
    );
}

#[test]
fn attention_gradients_and_causality() {
    let (b, t, c, nh) = (2, 4, 6, 2);
    let mut rng = Rng::new(4);
    let qkv = randn(&mut rng, b * t * 3 * c, 0.0, 1.0);
    let r = randn(&mut rng, b * t * c, 0.0, 1.0);
    let run = |qkv: &[f64]| {
        let (mut out, mut att) = (vec![0.0; b * t * c], vec![0.0; b * nh * t * t]);
        attention_forward(&mut out, &mut att, qkv, b, t, c, nh);
        (out, att)
    };
    let (out, att) = run(&qkv);
    for (row, p) in att.chunks(t).enumerate() {
        let ti = row % t;
        let sum: f64 = p.iter().sum();
        assert!((sum - 1.0).abs() < 1e-12, "att row {row} sums to {sum}");
        assert!(
            p[ti + 1..].iter().all(|&x| x == 0.0),
            "att row {row} looks ahead"
        );
    }
    // Changing the last position's q, k, v leaves every earlier output alone.
    let mut later = qkv.clone();
    for x in &mut later[(t - 1) * 3 * c..t * 3 * c] {
        *x += 1.0;
    }
    let (out2, _) = run(&later);
    assert_eq!(out[..(t - 1) * c], out2[..(t - 1) * c]);
    assert_ne!(out[(t - 1) * c..t * c], out2[(t - 1) * c..t * c]);
    let mut dqkv = vec![0.0; qkv.len()];
    attention_backward(&mut dqkv, &r, &qkv, &att, b, t, c, nh);
    check(
        "attention dqkv",
        &dqkv,
        &numeric_grad(&qkv, H, |x| project(&run(x).0, &r)),
    );
}

#[test]
fn gelu_values_and_gradient() {
    // x·Φ(x) at ±1, ±3 (Φ from CPython's math.erf).
    let xs: [f64; 5] = [1.0, -1.0, 3.0, -3.0, 0.0];
    let want = [
        0.8413447460685429,
        -0.15865525393145707,
        2.99595030590511,
        -0.00404969409489031,
        0.0,
    ];
    let mut out = vec![0.0; xs.len()];
    gelu_forward(&mut out, &xs);
    for ((x, got), w) in xs.iter().zip(&out).zip(want) {
        assert!((got - w).abs() < 1e-15, "gelu({x}) = {got}, want {w}");
    }
    let mut rng = Rng::new(5);
    let inp = randn(&mut rng, 64, 0.0, 2.0);
    let r = randn(&mut rng, 64, 0.0, 1.0);
    let mut dinp = vec![0.0; 64];
    gelu_backward(&mut dinp, &inp, &r);
    let f = |x: &[f64]| {
        let mut out = vec![0.0; x.len()];
        gelu_forward(&mut out, x);
        project(&out, &r)
    };
    check("gelu dinp", &dinp, &numeric_grad(&inp, H, f));
}

/// The check can fail: the tanh approximation's derivative is ~1e-3 off the
/// exact GELU's, and the tolerance catches it.
#[test]
fn gradient_check_rejects_the_tanh_gelu_derivative() {
    let inp: Vec<f64> = (0..40).map(|i| i as f64 * 0.2 - 4.0).collect();
    let tanh_grad: Vec<f64> = inp
        .iter()
        .map(|&x| {
            let k = (2.0 / std::f64::consts::PI).sqrt();
            let u = k * (x + 0.044715 * x * x * x);
            let th = u.tanh();
            0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * x * x)
        })
        .collect();
    let numeric = numeric_grad(&inp, H, |x| {
        let mut out = vec![0.0; x.len()];
        gelu_forward(&mut out, x);
        out.iter().sum()
    });
    let (i, ratio) = worst(&tanh_grad, &numeric, ATOL, RTOL);
    assert!(
        ratio > 10.0,
        "tanh derivative passed (worst [{i}] at {ratio:.2}×)"
    );
}

#[test]
fn crossentropy_values_and_gradient() {
    let (n, v) = (4, 6);
    let mut rng = Rng::new(6);
    let logits = randn(&mut rng, n * v, 0.0, 2.0);
    let targets = [0u32, 5, 2, 2];
    let run = |logits: &[f64]| {
        let (mut probs, mut losses) = (vec![0.0; n * v], vec![0.0; n]);
        let loss = crossentropy_forward(&mut probs, &mut losses, logits, &targets, v);
        (loss, probs)
    };
    // Equal logits: loss is exactly ln V.
    let (uniform, _) = run(&vec![3.0; n * v]);
    assert!((uniform - (v as f64).ln()).abs() < 1e-12, "{uniform}");
    // Against the definition −ln softmax[target], averaged.
    let (loss, probs) = run(&logits);
    let mut want = 0.0;
    for (row, &tgt) in logits.chunks(v).zip(&targets) {
        let z: f64 = row.iter().map(|x| x.exp()).sum();
        want -= (row[tgt as usize].exp() / z).ln() / n as f64;
    }
    assert!((loss - want).abs() < 1e-12, "{loss} vs {want}");
    let mut dlogits = vec![0.0; n * v];
    crossentropy_backward(&mut dlogits, &probs, &targets, v);
    check(
        "crossentropy dlogits",
        &dlogits,
        &numeric_grad(&logits, H, |x| run(x).0),
    );
}

#[test]
fn residual_adds() {
    let mut out = vec![0.0; 3];
    residual_forward(&mut out, &[1.0, 2.0, 3.0], &[0.5, -2.0, 1e-3]);
    assert_eq!(out, [1.5, 0.0, 3.001]);
}
