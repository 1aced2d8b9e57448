//! Inside the model for one text: what it expected at every position and
//! where each attention head looked ([`crate::WorkerInput::Inspect`]).

use serde::{Deserialize, Serialize};

/// Alternatives kept per position.
pub const INSPECT_TOP: usize = 10;

/// One text through the model (the last `block_size` characters of it).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    /// The characters inspected.
    pub text: String,
    /// `"webgpu"` (the forward the model samples with, fast paths included)
    /// or `"cpu"` (the reference).
    pub backend: String,
    /// Per position `i`: the [`INSPECT_TOP`] likeliest characters after
    /// `text[..=i]` with their probabilities (softmax at temperature 1),
    /// likeliest first.
    pub top: Vec<Vec<(char, f32)>>,
    /// `p(text[i+1] | text[..=i])` for `i` in `0..t-1`: the model's
    /// confidence in each character that follows.
    pub next_prob: Vec<f32>,
    pub layers: usize,
    pub heads: usize,
    /// Characters inspected (`text`'s length).
    pub t: usize,
    /// Attention weights `[layer][head][query][key]`, each rounded to
    /// 1/255 (255 = the whole weight on one key); zero above the diagonal.
    #[serde(with = "serde_bytes")]
    pub attention: Vec<u8>,
}

impl Inspection {
    /// Head `h` of layer `l`: its `t × t` weights, query-major.
    pub fn head(&self, l: usize, h: usize) -> &[u8] {
        let n = self.t * self.t;
        let at = (l * self.heads + h) * n;
        &self.attention[at..at + n]
    }
}

/// Quantises weights in `[0, 1]` to bytes (round to nearest).
pub fn quantise(weights: &[f32]) -> Vec<u8> {
    weights
        .iter()
        .map(|w| (w.clamp(0.0, 1.0) * 255.0).round() as u8)
        .collect()
}

/// The `k` largest probabilities of `probs` (index = character id) with
/// their characters, largest first; ties keep the smaller id first.
pub fn top_k(probs: &[f32], chars: &[char], k: usize) -> Vec<(char, f32)> {
    let mut order: Vec<usize> = (0..probs.len().min(chars.len())).collect();
    order.sort_by(|&a, &b| probs[b].total_cmp(&probs[a]).then(a.cmp(&b)));
    order
        .into_iter()
        .take(k)
        .map(|i| (chars[i], probs[i]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_is_ordered_and_quantise_rounds() {
        let top = top_k(&[0.1, 0.5, 0.1, 0.3], &['a', 'b', 'c', 'd'], 3);
        assert_eq!(top, vec![('b', 0.5), ('d', 0.3), ('a', 0.1)]);
        assert_eq!(
            quantise(&[0.0, 1.0, 0.5, 1.2, -0.1]),
            vec![0, 255, 128, 255, 0]
        );
        let i = Inspection {
            t: 2,
            layers: 1,
            heads: 2,
            attention: vec![1, 2, 3, 4, 5, 6, 7, 8],
            ..Inspection::default()
        };
        assert_eq!(i.head(0, 1), &[5, 6, 7, 8]);
    }
}
