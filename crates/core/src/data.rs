//! The character-level data pipeline: vocabulary, train/validation split and
//! a seeded batch sampler.
//!
//! The protocol matches nanoGPT's `shakespeare_char`: the vocabulary is the
//! sorted unique characters of the whole corpus, the first
//! `⌊n · (1 − val_fraction)⌋` characters train and the rest validate.

use std::collections::BTreeSet;
use std::fmt;

use tinygpt_protocol::config::MAX_VOCAB;

use crate::rng::Rng;

/// Share of the corpus (its tail) held out for validation by default.
pub const DEFAULT_VAL_FRACTION: f64 = 0.1;

/// Largest accepted `val_fraction`: more would starve training.
pub const MAX_VAL_FRACTION: f64 = 0.5;

/// Fewest distinct characters a model can be built on (see
/// `ModelConfig::validate`).
pub const MIN_VOCAB: usize = 2;

/// One of the two halves of a [`Dataset`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    Train,
    Val,
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Split::Train => "training",
            Split::Val => "validation",
        })
    }
}

/// Why a corpus, vocabulary or batch request was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataError {
    #[error("the corpus is empty")]
    EmptyCorpus,
    #[error("the corpus is not valid UTF-8 text (invalid byte at offset {offset})")]
    InvalidUtf8 { offset: usize },
    #[error(
        "the corpus has {count} distinct characters, more than the {max} a character \
         model accepts (is it a binary file?)"
    )]
    TooManyChars { count: usize, max: usize },
    #[error("a vocabulary needs at least {min} distinct characters (got {count})")]
    TooFewChars { count: usize, min: usize },
    #[error(
        "vocabulary characters must be sorted and unique: {prev:?} is followed by \
         {next:?} at index {index}"
    )]
    VocabNotSorted {
        index: usize,
        prev: char,
        next: char,
    },
    #[error("character {ch:?} at position {position} is not in the vocabulary")]
    UnknownChar { ch: char, position: usize },
    #[error("token id {id} at position {position} is outside the vocabulary of {vocab_size}")]
    UnknownToken {
        id: u32,
        position: usize,
        vocab_size: usize,
    },
    #[error("val_fraction must be a number in [0, {max}] (got {value})")]
    BadValFraction { value: f64, max: f64 },
    #[error("block_size must be at least 1")]
    ZeroBlockSize,
    #[error(
        "the {split} split has {len} characters, fewer than one context window + 1 \
         ({needed} for block_size {block_size}); use a longer corpus or a smaller \
         block_size{hint}"
    )]
    SplitTooShort {
        split: Split,
        len: usize,
        needed: usize,
        block_size: usize,
        hint: &'static str,
    },
    #[error("a batch needs batch_size ≥ 1 and seq_len ≥ 1 (got {batch_size} × {seq_len})")]
    EmptyBatch { batch_size: usize, seq_len: usize },
    #[error("{len} tokens cannot fill a sequence of {seq_len} plus its shifted target")]
    TooShortForBatch { len: usize, seq_len: usize },
}

/// The character vocabulary: sorted unique `char`s, token id = index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vocab {
    chars: Vec<char>,
    /// Token id of each ASCII character, `u32::MAX` if absent: the fast path
    /// of `encode` (the default corpus is pure ASCII).
    ascii: [u32; 128],
}

impl Vocab {
    /// The sorted unique characters of `text`.
    pub fn from_text(text: &str) -> Result<Vocab, DataError> {
        if text.is_empty() {
            return Err(DataError::EmptyCorpus);
        }
        let mut ascii_seen = [false; 128];
        let mut others = BTreeSet::new();
        for ch in text.chars() {
            if ch.is_ascii() {
                ascii_seen[ch as usize] = true;
            } else {
                others.insert(ch);
            }
        }
        let chars: Vec<char> = (0u8..128)
            .filter(|&b| ascii_seen[usize::from(b)])
            .map(char::from)
            .chain(others)
            .collect();
        Self::from_chars(chars)
    }

    /// A vocabulary from an explicit list, as stored in checkpoints; the
    /// list must be sorted, unique and between [`MIN_VOCAB`] and
    /// `MAX_VOCAB` long.
    pub fn from_chars(chars: Vec<char>) -> Result<Vocab, DataError> {
        if chars.len() > MAX_VOCAB {
            return Err(DataError::TooManyChars {
                count: chars.len(),
                max: MAX_VOCAB,
            });
        }
        if chars.len() < MIN_VOCAB {
            return Err(DataError::TooFewChars {
                count: chars.len(),
                min: MIN_VOCAB,
            });
        }
        if let Some(i) = chars.windows(2).position(|w| w[0] >= w[1]) {
            return Err(DataError::VocabNotSorted {
                index: i + 1,
                prev: chars[i],
                next: chars[i + 1],
            });
        }
        let mut ascii = [u32::MAX; 128];
        for (id, &ch) in chars.iter().enumerate() {
            if ch.is_ascii() {
                // id < MAX_VOCAB, so the cast is lossless.
                ascii[ch as usize] = id as u32;
            }
        }
        Ok(Vocab { chars, ascii })
    }

    /// `V`: the number of tokens.
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Always false: a vocabulary holds at least [`MIN_VOCAB`] characters.
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// The characters in token-id order.
    pub fn chars(&self) -> &[char] {
        &self.chars
    }

    /// The token id of one character.
    pub fn id(&self, ch: char) -> Option<u32> {
        if ch.is_ascii() {
            let id = self.ascii[ch as usize];
            (id != u32::MAX).then_some(id)
        } else {
            self.chars.binary_search(&ch).ok().map(|i| i as u32)
        }
    }

    /// Token ids of `text`; `position` in an error counts characters.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, DataError> {
        text.chars()
            .enumerate()
            .map(|(position, ch)| self.id(ch).ok_or(DataError::UnknownChar { ch, position }))
            .collect()
    }

    /// The text of token ids; ids outside the vocabulary become U+FFFD.
    pub fn decode(&self, ids: &[u32]) -> String {
        ids.iter()
            .map(|&id| {
                self.chars
                    .get(id as usize)
                    .copied()
                    .unwrap_or(char::REPLACEMENT_CHARACTER)
            })
            .collect()
    }

    /// Like [`Vocab::decode`] but refuses ids outside the vocabulary.
    pub fn try_decode(&self, ids: &[u32]) -> Result<String, DataError> {
        ids.iter()
            .enumerate()
            .map(|(position, &id)| {
                self.chars
                    .get(id as usize)
                    .copied()
                    .ok_or(DataError::UnknownToken {
                        id,
                        position,
                        vocab_size: self.len(),
                    })
            })
            .collect()
    }
}

/// A tokenised corpus split into training and validation tokens.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Built from the whole corpus, so validation has no unknown characters.
    pub vocab: Vocab,
    /// The first `⌊n · (1 − val_fraction)⌋` tokens.
    pub train: Vec<u32>,
    /// The remaining tail; empty when `val_fraction` is 0.
    pub val: Vec<u32>,
}

impl Dataset {
    /// Tokenises `text` and splits it. Each split must hold at least
    /// `block_size + 1` tokens (one input window plus its shifted target);
    /// an empty validation split is accepted only for `val_fraction == 0`.
    pub fn from_text(
        text: &str,
        val_fraction: f64,
        block_size: usize,
    ) -> Result<Dataset, DataError> {
        if !(0.0..=MAX_VAL_FRACTION).contains(&val_fraction) {
            return Err(DataError::BadValFraction {
                value: val_fraction,
                max: MAX_VAL_FRACTION,
            });
        }
        if block_size == 0 {
            return Err(DataError::ZeroBlockSize);
        }
        let vocab = Vocab::from_text(text)?;
        let mut train = vocab.encode(text)?;
        let n = train.len();
        // Same rounding as nanoGPT's `int(n * 0.9)` for the default.
        let n_train = ((n as f64) * (1.0 - val_fraction)).floor() as usize;
        let val = train.split_off(n_train.min(n));
        let needed = block_size + 1;
        let check = |split, len: usize, hint| {
            if len < needed {
                Err(DataError::SplitTooShort {
                    split,
                    len,
                    needed,
                    block_size,
                    hint,
                })
            } else {
                Ok(())
            }
        };
        check(Split::Train, train.len(), "")?;
        if val_fraction > 0.0 {
            check(Split::Val, val.len(), ", or a larger val_fraction")?;
        }
        Ok(Dataset { vocab, train, val })
    }

    /// Like [`Dataset::from_text`] for raw file contents, refusing bytes
    /// that are not UTF-8 with the offset of the first bad byte.
    pub fn from_bytes(
        bytes: &[u8],
        val_fraction: f64,
        block_size: usize,
    ) -> Result<Dataset, DataError> {
        let text = std::str::from_utf8(bytes).map_err(|e| DataError::InvalidUtf8 {
            offset: e.valid_up_to(),
        })?;
        Self::from_text(text, val_fraction, block_size)
    }

    /// The tokens of one split.
    pub fn split(&self, split: Split) -> &[u32] {
        match split {
            Split::Train => &self.train,
            Split::Val => &self.val,
        }
    }
}

/// `B` windows of `T` tokens and their next-token targets, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    /// `(B, T)` input token ids.
    pub inputs: Vec<u32>,
    /// `(B, T)`: `targets[b, t] = inputs[b, t + 1]`, the last one read past
    /// the window.
    pub targets: Vec<u32>,
    /// `B`.
    pub batch_size: usize,
    /// `T`.
    pub seq_len: usize,
}

/// Draws random training windows; the stream is fixed by the seed, and
/// [`BatchSampler::state`] / [`BatchSampler::from_state`] resume it exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchSampler {
    rng: Rng,
}

impl BatchSampler {
    pub fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
        }
    }

    /// The generator state, for checkpoints.
    pub fn state(&self) -> [u64; 4] {
        self.rng.state()
    }

    /// Resumes from [`BatchSampler::state`].
    pub fn from_state(state: [u64; 4]) -> Self {
        Self {
            rng: Rng::from_state(state),
        }
    }

    /// `batch_size` windows whose starts are uniform over all
    /// `tokens.len() − seq_len` valid starts, one `Rng::below` draw each.
    ///
    /// # Panics
    /// If the request is impossible (see [`BatchSampler::try_next_batch`]);
    /// a [`Dataset`] built with `block_size ≥ seq_len` never is.
    #[track_caller]
    pub fn next_batch(&mut self, tokens: &[u32], batch_size: usize, seq_len: usize) -> Batch {
        match self.try_next_batch(tokens, batch_size, seq_len) {
            Ok(batch) => batch,
            Err(e) => panic!("BatchSampler::next_batch: {e}"),
        }
    }

    /// [`BatchSampler::next_batch`] that refuses an empty batch or a token
    /// slice shorter than `seq_len + 1` instead of panicking; a refused call
    /// leaves the stream untouched.
    pub fn try_next_batch(
        &mut self,
        tokens: &[u32],
        batch_size: usize,
        seq_len: usize,
    ) -> Result<Batch, DataError> {
        if batch_size == 0 || seq_len == 0 {
            return Err(DataError::EmptyBatch {
                batch_size,
                seq_len,
            });
        }
        if tokens.len() <= seq_len {
            return Err(DataError::TooShortForBatch {
                len: tokens.len(),
                seq_len,
            });
        }
        let starts = tokens.len() - seq_len;
        let mut inputs = Vec::with_capacity(batch_size * seq_len);
        let mut targets = Vec::with_capacity(batch_size * seq_len);
        for _ in 0..batch_size {
            let s = self.rng.below(starts);
            inputs.extend_from_slice(&tokens[s..s + seq_len]);
            targets.extend_from_slice(&tokens[s + 1..s + seq_len + 1]);
        }
        Ok(Batch {
            inputs,
            targets,
            batch_size,
            seq_len,
        })
    }
}

#[cfg(test)]
mod tests;
