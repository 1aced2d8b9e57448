//! Tests of the vocabulary, the split and the batch sampler.

use super::*;

#[test]
fn vocab_is_the_sorted_unique_chars() {
    let v = Vocab::from_text("hello, wörld\n").unwrap();
    assert_eq!(
        v.chars(),
        &['\n', ' ', ',', 'd', 'e', 'h', 'l', 'o', 'r', 'w', 'ö']
    );
    assert_eq!(v.len(), 11);
    assert!(!v.is_empty());
}

#[test]
fn encode_decode_round_trip() {
    let text = "To be, or not to be — ñ?\n";
    let v = Vocab::from_text(text).unwrap();
    let ids = v.encode(text).unwrap();
    assert_eq!(ids.len(), text.chars().count());
    assert!(ids.iter().all(|&id| (id as usize) < v.len()));
    assert_eq!(v.decode(&ids), text);
    assert_eq!(v.try_decode(&ids).unwrap(), text);
    assert_eq!(
        v.id('T'),
        Some(v.chars().binary_search(&'T').unwrap() as u32)
    );
    assert_eq!(
        v.id('—'),
        Some(v.chars().binary_search(&'—').unwrap() as u32)
    );
}

#[test]
fn unknown_char_names_char_and_position() {
    let v = Vocab::from_text("abc").unwrap();
    assert_eq!(
        v.encode("abXc"),
        Err(DataError::UnknownChar {
            ch: 'X',
            position: 2
        })
    );
    assert_eq!(
        v.encode("aé"),
        Err(DataError::UnknownChar {
            ch: 'é',
            position: 1
        })
    );
    let msg = v.encode("abXc").unwrap_err().to_string();
    assert!(msg.contains("'X'") && msg.contains("position 2"), "{msg}");
}

#[test]
fn decode_of_bad_ids() {
    let v = Vocab::from_text("ab").unwrap();
    assert_eq!(v.decode(&[0, 7, 1]), "a\u{FFFD}b");
    assert_eq!(
        v.try_decode(&[0, 7]),
        Err(DataError::UnknownToken {
            id: 7,
            position: 1,
            vocab_size: 2
        })
    );
}

#[test]
fn from_chars_validates() {
    assert!(Vocab::from_chars(vec!['a', 'b', 'é']).is_ok());
    assert_eq!(
        Vocab::from_chars(vec!['a', 'c', 'b']),
        Err(DataError::VocabNotSorted {
            index: 2,
            prev: 'c',
            next: 'b'
        })
    );
    assert!(matches!(
        Vocab::from_chars(vec!['a', 'a']),
        Err(DataError::VocabNotSorted { index: 1, .. })
    ));
    assert_eq!(
        Vocab::from_chars(vec!['a']),
        Err(DataError::TooFewChars { count: 1, min: 2 })
    );
    let many: Vec<char> = (0..=MAX_VOCAB as u32).filter_map(char::from_u32).collect();
    assert_eq!(
        Vocab::from_chars(many),
        Err(DataError::TooManyChars {
            count: MAX_VOCAB + 1,
            max: MAX_VOCAB
        })
    );
}

#[test]
fn empty_corpus_is_refused() {
    assert_eq!(Vocab::from_text(""), Err(DataError::EmptyCorpus));
    assert_eq!(Dataset::from_text("", 0.1, 8), Err(DataError::EmptyCorpus));
    assert_eq!(
        Dataset::from_bytes(b"", 0.1, 8),
        Err(DataError::EmptyCorpus)
    );
}

#[test]
fn invalid_utf8_reports_the_byte_offset() {
    let err = Dataset::from_bytes(b"hello\xff world", 0.1, 2).unwrap_err();
    assert_eq!(err, DataError::InvalidUtf8 { offset: 5 });
    assert!(err.to_string().contains("offset 5"), "{err}");
}

#[test]
fn binary_like_corpus_has_too_many_chars() {
    let text: String = (0x100..0x100 + 600u32).filter_map(char::from_u32).collect();
    let err = Dataset::from_text(&text, 0.1, 4).unwrap_err();
    assert_eq!(
        err,
        DataError::TooManyChars {
            count: 600,
            max: MAX_VOCAB
        }
    );
    assert!(err.to_string().contains("binary"), "{err}");
}

#[test]
fn one_distinct_char_is_too_few() {
    assert_eq!(
        Dataset::from_text("aaaaaaaa", 0.0, 2),
        Err(DataError::TooFewChars { count: 1, min: 2 })
    );
}

#[test]
fn val_fraction_out_of_range_or_nan() {
    let text = "abcdefghij".repeat(10);
    for bad in [-0.1, 0.51, 1.0, f64::NAN, f64::INFINITY] {
        let err = Dataset::from_text(&text, bad, 4).unwrap_err();
        assert!(
            matches!(err, DataError::BadValFraction { .. }),
            "{bad}: {err:?}"
        );
        assert!(err.to_string().contains("val_fraction"), "{err}");
    }
    assert!(Dataset::from_text(&text, 0.5, 4).is_ok());
    assert_eq!(
        Dataset::from_text(&text, 0.1, 0),
        Err(DataError::ZeroBlockSize)
    );
}

#[test]
fn split_is_head_train_tail_val() {
    let text: String = "abcdefghij".repeat(10);
    let ds = Dataset::from_text(&text, 0.1, 4).unwrap();
    assert_eq!((ds.train.len(), ds.val.len()), (90, 10));
    let all = ds.vocab.encode(&text).unwrap();
    assert_eq!(ds.train, all[..90]);
    assert_eq!(ds.val, all[90..]);
    assert_eq!(ds.split(Split::Train), &all[..90]);
    assert_eq!(ds.split(Split::Val), &all[90..]);
    // The default fraction gives nanoGPT's split of tiny Shakespeare
    // (1,115,394 characters → 1,003,854 train, 111,540 validation).
    let long: String = "ab".repeat(1_115_394 / 2);
    let ds = Dataset::from_text(&long, DEFAULT_VAL_FRACTION, 256).unwrap();
    assert_eq!((ds.train.len(), ds.val.len()), (1_003_854, 111_540));
}

#[test]
fn zero_val_fraction_keeps_everything_for_training() {
    let ds = Dataset::from_text("abcdefgh", 0.0, 7).unwrap();
    assert_eq!(ds.train.len(), 8);
    assert!(ds.val.is_empty());
}

#[test]
fn short_splits_name_their_sizes() {
    // 100 chars at 10 % → 90 train, 10 val.
    let text: String = "abcdefghij".repeat(10);
    assert!(Dataset::from_text(&text, 0.1, 9).is_ok());
    let err = Dataset::from_text(&text, 0.1, 10).unwrap_err();
    assert_eq!(
        err,
        DataError::SplitTooShort {
            split: Split::Val,
            len: 10,
            needed: 11,
            block_size: 10,
            hint: ", or a larger val_fraction",
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("validation split has 10") && msg.contains("11"),
        "{msg}"
    );
    let err = Dataset::from_text(&text, 0.0, 100).unwrap_err();
    assert!(matches!(
        err,
        DataError::SplitTooShort {
            split: Split::Train,
            len: 100,
            needed: 101,
            ..
        }
    ));
    assert!(err.to_string().contains("training split has 100"), "{err}");
}

fn ramp(n: u32) -> Vec<u32> {
    (0..n).collect()
}

#[test]
fn targets_are_inputs_shifted_by_one() {
    let tokens = ramp(1000);
    let b = BatchSampler::new(1).next_batch(&tokens, 8, 16);
    assert_eq!((b.batch_size, b.seq_len), (8, 16));
    assert_eq!((b.inputs.len(), b.targets.len()), (128, 128));
    for (row_in, row_tg) in b.inputs.chunks(16).zip(b.targets.chunks(16)) {
        for t in 0..16 {
            assert_eq!(row_tg[t], row_in[t] + 1);
            if t > 0 {
                assert_eq!(row_in[t], row_in[t - 1] + 1, "rows are contiguous windows");
            }
        }
    }
}

#[test]
fn sampler_is_deterministic_and_seeded() {
    let tokens = ramp(5000);
    let mut a = BatchSampler::new(42);
    let mut b = BatchSampler::new(42);
    let mut c = BatchSampler::new(43);
    let (ba, bb) = (a.next_batch(&tokens, 4, 32), b.next_batch(&tokens, 4, 32));
    assert_eq!(ba, bb);
    assert_ne!(ba, c.next_batch(&tokens, 4, 32));
    assert_ne!(ba, a.next_batch(&tokens, 4, 32), "the stream advances");
}

#[test]
fn state_resumes_exactly() {
    let tokens = ramp(3000);
    let mut a = BatchSampler::new(7);
    for _ in 0..5 {
        a.next_batch(&tokens, 3, 10);
    }
    let mut resumed = BatchSampler::from_state(a.state());
    for _ in 0..5 {
        assert_eq!(
            a.next_batch(&tokens, 3, 10),
            resumed.next_batch(&tokens, 3, 10)
        );
    }
}

#[test]
fn starts_cover_every_valid_window_uniformly() {
    // 13 tokens, T = 10: starts 0, 1, 2; start 2 ends on the last token.
    let tokens = ramp(13);
    let mut s = BatchSampler::new(9);
    let mut counts = [0usize; 3];
    let n = 30_000;
    for _ in 0..n / 10 {
        let b = s.next_batch(&tokens, 10, 10);
        for row in b.inputs.chunks(10) {
            counts[row[0] as usize] += 1;
        }
        assert!(b.targets.iter().all(|&t| t <= 12));
    }
    for c in counts {
        let share = c as f64 / n as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.02, "{counts:?}");
    }
}

#[test]
fn impossible_batches_are_errors_and_leave_the_stream() {
    let mut s = BatchSampler::new(1);
    let before = s.state();
    assert_eq!(
        s.try_next_batch(&ramp(10), 2, 10),
        Err(DataError::TooShortForBatch {
            len: 10,
            seq_len: 10
        })
    );
    assert!(matches!(
        s.try_next_batch(&ramp(10), 0, 4),
        Err(DataError::EmptyBatch { .. })
    ));
    assert!(matches!(
        s.try_next_batch(&ramp(10), 2, 0),
        Err(DataError::EmptyBatch { .. })
    ));
    assert_eq!(s.state(), before);
    assert!(s.try_next_batch(&ramp(11), 2, 10).is_ok());
}

#[test]
#[should_panic(expected = "cannot fill a sequence")]
fn next_batch_panics_on_a_too_short_slice() {
    BatchSampler::new(1).next_batch(&ramp(4), 1, 4);
}

#[test]
fn the_default_corpus_builds_a_dataset() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../web/corpus/shakespeare.txt"
    );
    let bytes = std::fs::read(path).expect("web/corpus/shakespeare.txt: see web/corpus/README.md");
    // Figures documented in web/corpus/README.md.
    assert_eq!(bytes.len(), 5_053_975);
    let ds = Dataset::from_bytes(&bytes, DEFAULT_VAL_FRACTION, 256).unwrap();
    assert_eq!(ds.vocab.len(), 83);
    assert!(ds.vocab.chars().iter().all(char::is_ascii));
    assert_eq!((ds.train.len(), ds.val.len()), (4_548_577, 505_398));
}
