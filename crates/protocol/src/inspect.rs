//! Inside the model for one text: what it expected at every position and
//! where each attention head looked ([`crate::WorkerInput::Inspect`]).

use serde::{Deserialize, Serialize};

/// Alternatives kept per position.
pub const INSPECT_TOP: usize = 10;
/// Characters one inspection covers at most (a longer text keeps its end).
pub const MAX_INSPECT_CHARS: usize = 2048;

/// The forward windows that give every character of a text of `len` its
/// probabilities, for a model of context `t`: `(start, first, end)` — the
/// window `start..end`, whose outputs at `first..end` are kept. Windows
/// step by half a context, so every character past the first window is
/// read with at least half a context before it; the last window ends at
/// the text's end.
pub fn windows(len: usize, t: usize) -> Vec<(usize, usize, usize)> {
    let t = t.max(1);
    let half = (t / 2).max(1);
    let mut out = Vec::new();
    let (mut start, mut done) = (0, 0);
    while done < len {
        let s = start.min(len.saturating_sub(t));
        let end = (s + t).min(len);
        out.push((s, done, end));
        done = end;
        start += half;
    }
    out
}

/// One text through the model (its last [`MAX_INSPECT_CHARS`] characters).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    /// The characters inspected.
    pub text: String,
    /// `"webgpu"` (the GPU's batched inference forward, with the fast paths
    /// sampling uses)
    /// or `"cpu"` (the reference).
    pub backend: String,
    /// Per position `i`: the [`INSPECT_TOP`] likeliest characters after
    /// `text[..=i]` (at most a context of it, see [`windows`]) with their
    /// probabilities (softmax at temperature 1), likeliest first.
    pub top: Vec<Vec<(char, f32)>>,
    /// `p(text[i+1] | text[..=i])` for `i` in `0..t-1`: the model's
    /// confidence in each character that follows.
    pub next_prob: Vec<f32>,
    pub layers: usize,
    pub heads: usize,
    /// Where the attention window starts in `text`: the attention weights
    /// are those of its last context, `text[attention_from..]`.
    pub attention_from: usize,
    /// Characters in the attention window.
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
    fn windows_cover_every_position_once_with_half_a_context() {
        assert_eq!(windows(5, 8), vec![(0, 0, 5)]);
        assert_eq!(windows(8, 8), vec![(0, 0, 8)]);
        assert_eq!(windows(10, 8), vec![(0, 0, 8), (2, 8, 10)]);
        assert_eq!(
            windows(20, 8),
            vec![(0, 0, 8), (4, 8, 12), (8, 12, 16), (12, 16, 20)]
        );
        for (len, t) in [(1, 1), (300, 128), (157, 64), (1000, 3)] {
            let w = windows(len, t);
            assert_eq!(w[0].1, 0);
            assert_eq!(w.last().unwrap().2, len);
            for (i, &(s, first, end)) in w.iter().enumerate() {
                assert!(end - s <= t && first < end);
                if i > 0 {
                    assert_eq!(first, w[i - 1].2, "contiguous");
                    assert!(first - s >= t / 2, "half a context before {first}");
                }
            }
        }
    }

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
