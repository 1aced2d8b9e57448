//! Turning logits into text: temperature, top-k, nucleus (top-p) and greedy
//! sampling, seeded so the same seed always gives the same characters, and
//! streaming generation on the CPU [`Gpt`].
//!
//! [`Sampler`] only needs logits, so a GPU path that computes them on the
//! device can draw with it too, identically for identical logits.

use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use crate::model::{Gpt, ModelError};
use crate::rng::Rng;

/// Why sampling was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    #[error("temperature must be a finite number ≥ 0 (got {0})")]
    Temperature(f32),
    #[error("top_p must be in (0, 1] (got {0})")]
    TopP(f32),
    #[error("top_k must be at least 1 (None keeps every token)")]
    TopKZero,
    #[error("{0}")]
    Samples(String),
    #[error("cannot sample from empty logits")]
    EmptyLogits,
    #[error("logit {index} is {value}: the model has diverged")]
    NonFiniteLogit { index: usize, value: f32 },
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// How to pick each next token.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleParams {
    /// Softmax temperature: < 1 sharpens, > 1 flattens; 0 is greedy (argmax).
    pub temperature: f32,
    /// Keep only the `k` most likely tokens; `None` keeps all.
    pub top_k: Option<usize>,
    /// Keep the smallest set of most likely tokens whose probability reaches
    /// `p` (nucleus sampling); `None` keeps all.
    pub top_p: Option<f32>,
    /// Seed of the draws: same seed, same logits → same tokens.
    pub seed: u64,
}

impl Default for SampleParams {
    /// Plain sampling from the model's distribution.
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_k: None,
            top_p: None,
            seed: 0,
        }
    }
}

impl SampleParams {
    /// Always the most likely token (temperature 0).
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            ..Self::default()
        }
    }

    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// The parameters of sample `i` of several decoded together: the seed
    /// `seed + i` (wrapping), so that sample 0 is the text one sample of
    /// this seed gives, and sample `i` that of seed `seed + i`.
    pub fn for_sample(&self, i: usize) -> Self {
        Self {
            seed: self.seed.wrapping_add(i as u64),
            ..*self
        }
    }

    /// Refuses NaN or negative temperatures, `top_p` outside (0, 1] and
    /// `top_k = 0`.
    pub fn validate(&self) -> Result<(), SampleError> {
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(SampleError::Temperature(self.temperature));
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(SampleError::TopP(p));
            }
        }
        if self.top_k == Some(0) {
            return Err(SampleError::TopKZero);
        }
        Ok(())
    }
}

/// Validated parameters plus the RNG they seed: one per generated text.
#[derive(Clone, Debug)]
pub struct Sampler {
    params: SampleParams,
    rng: Rng,
}

impl Sampler {
    pub fn new(params: SampleParams) -> Result<Self, SampleError> {
        params.validate()?;
        Ok(Self {
            rng: Rng::new(params.seed),
            params,
        })
    }

    /// Draws one token id from `logits` `(V)`: one uniform of the seeded
    /// stream per token ([`Self::next_draw`]), then [`pick`].
    pub fn sample(&mut self, logits: &[f32]) -> Result<u32, SampleError> {
        if logits.is_empty() {
            return Err(SampleError::EmptyLogits);
        }
        if let Some(index) = logits.iter().position(|l| !l.is_finite()) {
            let value = logits[index];
            return Err(SampleError::NonFiniteLogit { index, value });
        }
        if self.params.is_greedy() {
            return Ok(argmax(logits));
        }
        let u = self.next_draw();
        Ok(pick(logits, &self.params, u))
    }

    /// The next uniform in `[0, 1)` of this sampler's stream (24 bits): what
    /// [`Self::sample`] draws with, handed to a GPU that picks with the
    /// same rule (`shaders/sample_pick.wgsl`).
    pub fn next_draw(&mut self) -> f32 {
        self.rng.next_f32()
    }

    pub fn params(&self) -> &SampleParams {
        &self.params
    }
}

/// The largest logit, the lowest index on a tie.
pub fn argmax(logits: &[f32]) -> u32 {
    logits
        .iter()
        .enumerate()
        .fold(0, |best, (i, &l)| if l > logits[best] { i } else { best }) as u32
}

/// `1 / temperature`, bounded so a tiny temperature saturates to the argmax
/// instead of multiplying 0 by infinity.
pub fn inverse_temperature(temperature: f32) -> f32 {
    (1.0 / temperature).min(1e30)
}

/// The sampling rule every backend follows, in f32 and in this order (the
/// GPU's `shaders/sample_pick.wgsl` does the same operations, one thread
/// running the one sum): weights `w_i = exp((l_i − max)·(1/T))`; candidates
/// by falling weight, ties by id; their running sum `S_r = w_0 + … + w_r`
/// in that order; keep the first `n = min(k, V)`; with top-p keep the
/// shortest prefix whose running sum reaches `p · S_{n−1}`; pick the first
/// kept candidate whose running sum exceeds `u · S_{n−1}` (the last one if
/// rounding leaves none). Only `exp` may differ between backends (WGSL
/// promises it within 3 + 2·|x| ulp), which changes a pick only when `u`
/// falls that close to a boundary. `logits` must not be empty
/// ([`Sampler::sample`] refuses that first).
pub fn pick(logits: &[f32], params: &SampleParams, u: f32) -> u32 {
    assert!(!logits.is_empty(), "pick: no logits");
    let max = logits.iter().fold(f32::MIN, |m, &l| m.max(l));
    let inv_t = inverse_temperature(params.temperature);
    let mut cands: Vec<(u32, f32)> = logits
        .iter()
        .enumerate()
        .map(|(i, &l)| (i as u32, ((l - max) * inv_t).exp()))
        .collect();
    cands.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut sum = 0.0f32;
    let running: Vec<f32> = cands
        .iter()
        .map(|c| {
            sum += c.1;
            sum
        })
        .collect();
    let mut n = params.top_k.map_or(cands.len(), |k| k.min(cands.len()));
    if let Some(p) = params.top_p {
        let reach = p * running[n - 1];
        n = running[..n]
            .iter()
            .position(|&s| s >= reach)
            .map_or(n, |r| r + 1);
    }
    let at = u * running[n - 1];
    let r = running[..n].iter().position(|&s| at < s).unwrap_or(n - 1);
    cands[r].0
}

impl Gpt {
    /// Generates up to `max_new_tokens` token ids after `prompt`, calling
    /// `on_token` with each as soon as it is drawn (return
    /// `ControlFlow::Break(())` to stop early). Returns the new ids only.
    ///
    /// The context is the last `block_size` ids. An empty prompt starts from
    /// token 0 (the first character of the sorted vocabulary, `'\n'` for
    /// usual text), which is not itself emitted. Ids outside the vocabulary
    /// are refused up front with [`ModelError::TokenOutOfRange`] naming
    /// `"prompt"`.
    pub fn generate(
        &self,
        prompt: &[u32],
        max_new_tokens: usize,
        params: &SampleParams,
        mut on_token: impl FnMut(u32) -> ControlFlow<()>,
    ) -> Result<Vec<u32>, SampleError> {
        let mut sampler = Sampler::new(*params)?;
        let vocab_size = self.cfg.vocab_size;
        if let Some(index) = prompt.iter().position(|&t| t as usize >= vocab_size) {
            return Err(ModelError::TokenOutOfRange {
                what: "prompt",
                index,
                token: prompt[index],
                vocab_size,
            }
            .into());
        }
        let block = self.cfg.block_size;
        let mut context: Vec<u32> = if prompt.is_empty() {
            vec![0]
        } else {
            prompt[prompt.len().saturating_sub(block)..].to_vec()
        };
        let mut generated = Vec::with_capacity(max_new_tokens);
        for _ in 0..max_new_tokens {
            let next = sampler.sample(&self.logits_last(&context)?)?;
            generated.push(next);
            context.push(next);
            if context.len() > block {
                context.drain(..context.len() - block);
            }
            if on_token(next).is_break() {
                break;
            }
        }
        Ok(generated)
    }
}

#[cfg(test)]
mod tests;
