//! What a training step does after backward, on the flat buffers: the
//! learning-rate schedule, global-norm gradient clipping and AdamW.
//!
//! Each is one loop over the parameter layout, and each takes the
//! [`TrainConfig`] whose fields it reads.

use std::f64::consts::PI;

use serde::{Deserialize, Serialize};
use tinygpt_protocol::TrainConfig;

use crate::params::ParamLayout;

/// Why an optimiser call was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptimError {
    #[error("{what} holds {got} values but the model has {expected} parameters")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
    },
}

/// Learning rate of optimiser step `step` (0-based): linear warm-up from 0
/// to `lr` over `warmup_steps`, then a half cosine from `lr` down to `min_lr`
/// at `steps`, and `min_lr` from there on.
pub fn lr_at(step: usize, cfg: &TrainConfig) -> f32 {
    if step < cfg.warmup_steps {
        return (cfg.lr as f64 * step as f64 / cfg.warmup_steps as f64) as f32;
    }
    if step >= cfg.steps {
        return cfg.min_lr;
    }
    let progress = (step - cfg.warmup_steps) as f64 / (cfg.steps - cfg.warmup_steps) as f64;
    let cosine = 0.5 * (1.0 + (PI * progress).cos());
    (cfg.min_lr as f64 + cosine * (cfg.lr as f64 - cfg.min_lr as f64)) as f32
}

/// The global L2 norm of all gradients, accumulated in `f64`.
pub fn grad_norm(grads: &[f32]) -> f32 {
    grads
        .iter()
        .map(|&g| g as f64 * g as f64)
        .sum::<f64>()
        .sqrt() as f32
}

/// Scales `grads` so their global norm is at most `cfg.grad_clip` (0
/// disables clipping). Returns the norm before clipping. A non-finite norm
/// is returned with the gradients untouched, for the caller to report the
/// divergence rather than train on garbage.
pub fn clip_grad_norm(grads: &mut [f32], cfg: &TrainConfig) -> f32 {
    let norm = grad_norm(grads);
    if cfg.grad_clip > 0.0 && norm.is_finite() && norm > cfg.grad_clip {
        let scale = cfg.grad_clip / norm;
        grads.iter_mut().for_each(|g| *g *= scale);
    }
    norm
}

/// AdamW (Loshchilov & Hutter) with bias correction and decoupled weight
/// decay, applied only to kinds where [`crate::ParamKind::decays`]. The
/// whole state is these three fields, so it saves and restores exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdamW {
    /// First moment, same layout as the parameters.
    pub m: Vec<f32>,
    /// Second moment, same layout as the parameters.
    pub v: Vec<f32>,
    /// Updates applied so far (bias correction uses `step` after increment).
    pub step: u64,
}

impl AdamW {
    /// Zeroed state for `n_params` parameters.
    pub fn new(n_params: usize) -> Self {
        Self {
            m: vec![0.0; n_params],
            v: vec![0.0; n_params],
            step: 0,
        }
    }

    /// Rebuilds saved state, checking the moments agree in length.
    pub fn from_state(m: Vec<f32>, v: Vec<f32>, step: u64) -> Result<Self, OptimError> {
        if v.len() != m.len() {
            return Err(OptimError::LengthMismatch {
                what: "second moment",
                expected: m.len(),
                got: v.len(),
            });
        }
        Ok(Self { m, v, step })
    }

    /// One update at learning rate `lr` (from [`lr_at`]), per element:
    /// `p ← p − lr·wd·p` (decaying kinds only), `m ← β1 m + (1−β1) g`,
    /// `v ← β2 v + (1−β2) g²`, `p ← p − lr · m̂ / (√v̂ + ε)` with
    /// `m̂ = m/(1−β1ᵗ)`, `v̂ = v/(1−β2ᵗ)`.
    pub fn update(
        &mut self,
        params: &mut [f32],
        grads: &[f32],
        layout: &ParamLayout,
        cfg: &TrainConfig,
        lr: f32,
    ) -> Result<(), OptimError> {
        let expected = layout.total;
        let lengths = [
            ("parameters", params.len()),
            ("gradients", grads.len()),
            ("first moment", self.m.len()),
            ("second moment", self.v.len()),
        ];
        if let Some(&(what, got)) = lengths.iter().find(|(_, n)| *n != expected) {
            return Err(OptimError::LengthMismatch {
                what,
                expected,
                got,
            });
        }
        self.step += 1;
        let t = self.step as f64;
        let bc1 = (1.0 - (cfg.beta1 as f64).powf(t)) as f32;
        let bc2 = (1.0 - (cfg.beta2 as f64).powf(t)) as f32;
        let (b1, b2, eps) = (cfg.beta1, cfg.beta2, cfg.eps);
        for spec in &layout.tensors {
            let decay = if spec.kind.decays() {
                1.0 - lr * cfg.weight_decay
            } else {
                1.0
            };
            let r = spec.range();
            let moments = self.m[r.clone()].iter_mut().zip(&mut self.v[r.clone()]);
            for ((p, &g), (m, v)) in params[r.clone()].iter_mut().zip(&grads[r]).zip(moments) {
                *m = b1 * *m + (1.0 - b1) * g;
                *v = b2 * *v + (1.0 - b2) * g * g;
                let m_hat = *m / bc1;
                let v_hat = *v / bc2;
                *p = *p * decay - lr * m_hat / (v_hat.sqrt() + eps);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamKind;
    use tinygpt_protocol::ModelConfig;

    fn schedule(warmup_steps: usize, steps: usize) -> TrainConfig {
        TrainConfig {
            lr: 1e-3,
            min_lr: 1e-4,
            warmup_steps,
            steps,
            ..TrainConfig::default()
        }
    }

    fn close(a: f32, b: f64) -> bool {
        (a as f64 - b).abs() <= 1e-9 + 1e-6 * b.abs()
    }

    #[test]
    fn schedule_warms_up_then_decays_to_min_lr() {
        let cfg = schedule(10, 110);
        let expect = [
            (0, 0.0),
            (5, 5e-4),
            (10, 1e-3),   // end of warm-up: the peak
            (60, 5.5e-4), // half-way down the cosine: (lr + min_lr)/2
            (110, 1e-4),  // the end: min_lr
            (500, 1e-4),  // past the end
        ];
        for (step, want) in expect {
            assert!(
                close(lr_at(step, &cfg), want),
                "lr_at({step}) = {}",
                lr_at(step, &cfg)
            );
        }
        for s in 10..110 {
            assert!(
                lr_at(s + 1, &cfg) <= lr_at(s, &cfg),
                "not decreasing at {s}"
            );
        }
        // No warm-up starts at the peak; all warm-up ends at min_lr.
        assert!(close(lr_at(0, &schedule(0, 100)), 1e-3));
        assert!(close(lr_at(99, &schedule(100, 100)), 9.9e-4));
        assert!(close(lr_at(100, &schedule(100, 100)), 1e-4));
    }

    #[test]
    fn clipping_scales_to_exactly_the_max_norm() {
        let mut cfg = TrainConfig {
            grad_clip: 1.0,
            ..TrainConfig::default()
        };
        let mut g = vec![3.0, 4.0, 0.0];
        assert_eq!(clip_grad_norm(&mut g, &cfg), 5.0);
        assert!(
            close(grad_norm(&g), 1.0),
            "norm after clip {}",
            grad_norm(&g)
        );
        assert!(close(g[0], 0.6) && close(g[1], 0.8) && g[2] == 0.0, "{g:?}");
        // Under the limit, or with clipping off: untouched.
        cfg.grad_clip = 10.0;
        let mut g = vec![3.0, 4.0];
        assert_eq!(clip_grad_norm(&mut g, &cfg), 5.0);
        assert_eq!(g, [3.0, 4.0]);
        cfg.grad_clip = 0.0;
        let mut g = vec![300.0, 400.0];
        assert_eq!(clip_grad_norm(&mut g, &cfg), 500.0);
        assert_eq!(g, [300.0, 400.0]);
        // A diverged gradient is reported, not scaled to zeros.
        cfg.grad_clip = 1.0;
        let mut g = vec![f32::INFINITY, 1.0];
        assert!(!clip_grad_norm(&mut g, &cfg).is_finite());
        assert_eq!(g[1], 1.0);
    }

    fn tiny_layout() -> ParamLayout {
        ParamLayout::new(&ModelConfig {
            vocab_size: 5,
            block_size: 4,
            n_layer: 1,
            n_head: 1,
            d_model: 2,
        })
    }

    /// Hand-computed with lr 0.1, wd 0.1, β1 0.9, β2 0.99, p 1, g 0.5:
    /// m = 0.05, v = 0.0025, m̂ = 0.5, v̂ = 0.25, step = 0.1·0.5/0.5 = 0.1;
    /// decaying kinds also lose lr·wd·p = 0.01 first.
    #[test]
    fn adamw_steps_match_hand_computation_and_skip_decay_on_biases_and_ln() {
        let layout = tiny_layout();
        let cfg = TrainConfig {
            lr: 0.1,
            weight_decay: 0.1,
            ..TrainConfig::default()
        };
        let mut params = vec![1.0f32; layout.total];
        let mut opt = AdamW::new(layout.total);
        opt.update(&mut params, &vec![0.5; layout.total], &layout, &cfg, 0.1)
            .unwrap();
        for spec in &layout.tensors {
            let want = if spec.kind.decays() { 0.89 } else { 0.9 };
            for &p in &params[spec.range()] {
                assert!(close(p, want), "{}: {p} vs {want}", spec.kind.name());
            }
        }
        // Step two, g = −0.25: m = 0.02, v = 0.0031, m̂ = 0.02/0.19,
        // v̂ = 0.0031/0.0199.
        opt.update(&mut params, &vec![-0.25; layout.total], &layout, &cfg, 0.1)
            .unwrap();
        let adam = 0.1 * (0.02 / 0.19) / (0.0031f64 / 0.0199).sqrt();
        let bias = layout.view(&params, ParamKind::QkvB)[0];
        let weight = layout.view(&params, ParamKind::QkvW)[0];
        assert!(close(bias, 0.9 - adam), "bias {bias}");
        assert!(close(weight, 0.89 * 0.99 - adam), "weight {weight}");
        assert_eq!(opt.step, 2);
    }

    #[test]
    fn adamw_state_round_trips_and_resumes_identically() {
        let layout = tiny_layout();
        let cfg = TrainConfig::default();
        let grads = |k: usize| -> Vec<f32> {
            (0..layout.total)
                .map(|i| ((i * 7 + k * 3) % 11) as f32 * 0.1 - 0.5)
                .collect()
        };
        let mut straight = vec![0.3f32; layout.total];
        let mut opt = AdamW::new(layout.total);
        for k in 0..4 {
            opt.update(&mut straight, &grads(k), &layout, &cfg, 1e-2)
                .unwrap();
        }
        let mut resumed = vec![0.3f32; layout.total];
        let mut first = AdamW::new(layout.total);
        for k in 0..2 {
            first
                .update(&mut resumed, &grads(k), &layout, &cfg, 1e-2)
                .unwrap();
        }
        let json = serde_json::to_string(&first).unwrap();
        let back: AdamW = serde_json::from_str(&json).unwrap();
        let mut second = AdamW::from_state(back.m, back.v, back.step).unwrap();
        for k in 2..4 {
            second
                .update(&mut resumed, &grads(k), &layout, &cfg, 1e-2)
                .unwrap();
        }
        assert_eq!(straight, resumed);
        assert_eq!(opt, second);
    }

    #[test]
    fn length_mismatches_are_typed_errors() {
        let layout = tiny_layout();
        let cfg = TrainConfig::default();
        let mut opt = AdamW::new(layout.total);
        let mut params = vec![0.0; layout.total];
        let err = opt
            .update(&mut params, &[0.0; 3], &layout, &cfg, 1e-3)
            .unwrap_err();
        assert_eq!(
            err,
            OptimError::LengthMismatch {
                what: "gradients",
                expected: layout.total,
                got: 3
            }
        );
        assert_eq!(opt.step, 0, "a refused update must not count");
        assert!(AdamW::from_state(vec![0.0; 2], vec![0.0; 3], 1).is_err());
    }
}
