//! Damaged checkpoints never panic the loader: every mutation of a valid
//! file either is refused with an error or loads as a checkpoint that
//! validates and survives another save/load round trip.
//!
//! 2,000 cases by default; raise with `PROPTEST_CASES=100000`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use tinygpt_core::checkpoint::{load, save, AdamMoments, Checkpoint, WeightDtype};
use tinygpt_core::{ModelConfig, ParamLayout, Rng, TrainConfig};

/// Valid files to damage: F32, F32 with AdamW moments, F16 with moments.
fn originals() -> &'static [Vec<u8>] {
    static FILES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    FILES.get_or_init(|| {
        let config = ModelConfig {
            vocab_size: 4,
            block_size: 3,
            n_layer: 1,
            n_head: 2,
            d_model: 4,
        };
        let total = ParamLayout::new(&config).total;
        let mut rng = Rng::new(5);
        let mut values = |n: usize| (0..n).map(|_| rng.normal()).collect::<Vec<f32>>();
        let params = values(total);
        let m = values(total);
        let v = values(total).iter().map(|x| x * x).collect();
        let plain = Checkpoint {
            config,
            vocab: vec!['\n', ' ', 'a', 'b'],
            step: 9,
            params,
            adam: None,
            train_config: Some(TrainConfig {
                seq_len: 3,
                ..TrainConfig::default()
            }),
            extra: BTreeMap::from([("note".to_string(), "{\"k\":[1,2]}".to_string())]),
        };
        let with_adam = Checkpoint {
            adam: Some(AdamMoments { m, v, step: 9 }),
            ..plain.clone()
        };
        vec![
            save(&plain, WeightDtype::F32).unwrap(),
            save(&with_adam, WeightDtype::F32).unwrap(),
            save(&with_adam, WeightDtype::F16).unwrap(),
        ]
    })
}

/// The end of the header if the length prefix is intact, else of the file.
fn header_end(bytes: &[u8]) -> usize {
    bytes
        .first_chunk::<8>()
        .map(|n| u64::from_le_bytes(*n))
        .filter(|&n| n > 0 && n <= (bytes.len() - 8) as u64)
        .map_or(bytes.len(), |n| 8 + n as usize)
}

const JSON_CHARS: &[u8] = b"0123456789,:[]{}\"\\ -.eE_aefsntrulFIU";

#[derive(Clone, Debug)]
enum Damage {
    Truncate(Index),
    /// XOR anywhere in the file.
    Flip(Vec<(Index, u8)>),
    /// XOR inside the JSON header, where most of the parsing happens.
    FlipHeader(Vec<(Index, u8)>),
    /// Overwrite header bytes with JSON punctuation, digits and letters:
    /// stays UTF-8, so the damage reaches the JSON parser.
    HeaderChar(Vec<(Index, Index)>),
    /// Rewrite one decimal digit of the header: usually still valid JSON,
    /// so the damage reaches offsets, shapes and the config.
    Digit(Index, u8),
    HeaderLen(u64),
    /// Replace `remove` bytes at `at` with `insert`.
    Splice {
        at: Index,
        remove: usize,
        insert: Vec<u8>,
    },
    /// Copy `len` bytes of the file over another place in it.
    Transplant {
        from: Index,
        to: Index,
        len: usize,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    let flips = || prop::collection::vec((any::<Index>(), 1u8..=255), 1..6);
    prop_oneof![
        any::<Index>().prop_map(Damage::Truncate),
        flips().prop_map(Damage::Flip),
        flips().prop_map(Damage::FlipHeader),
        prop::collection::vec((any::<Index>(), any::<Index>()), 1..4).prop_map(Damage::HeaderChar),
        (any::<Index>(), 0u8..10).prop_map(|(i, d)| Damage::Digit(i, d)),
        prop_oneof![any::<u64>(), 0u64..20_000].prop_map(Damage::HeaderLen),
        (
            any::<Index>(),
            0usize..64,
            prop::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(at, remove, insert)| Damage::Splice { at, remove, insert }),
        (any::<Index>(), any::<Index>(), 1usize..256)
            .prop_map(|(from, to, len)| Damage::Transplant { from, to, len }),
    ]
}

fn apply(original: &[u8], damage: &Damage) -> Vec<u8> {
    let mut b = original.to_vec();
    if b.len() < 8 {
        // Earlier damage left too little to aim at; append and go on.
        b.extend_from_slice(&[0xAB; 8]);
    }
    match damage {
        Damage::Truncate(i) => b.truncate(i.index(b.len())),
        Damage::Flip(flips) => {
            for (i, x) in flips {
                let i = i.index(b.len());
                b[i] ^= x;
            }
        }
        Damage::FlipHeader(flips) => {
            let end = header_end(&b);
            for (i, x) in flips {
                b[8.min(end - 1) + i.index((end - 8).max(1))] ^= x;
            }
        }
        Damage::HeaderChar(edits) => {
            let end = header_end(&b);
            for (i, c) in edits {
                b[8.min(end - 1) + i.index((end - 8).max(1))] =
                    JSON_CHARS[c.index(JSON_CHARS.len())];
            }
        }
        Damage::Digit(i, d) => {
            let end = header_end(&b);
            let digits: Vec<usize> = (8.min(end)..end)
                .filter(|&j| b[j].is_ascii_digit())
                .collect();
            if !digits.is_empty() {
                b[digits[i.index(digits.len())]] = b'0' + d;
            }
        }
        Damage::HeaderLen(n) => b[..8].copy_from_slice(&n.to_le_bytes()),
        Damage::Splice { at, remove, insert } => {
            let at = at.index(b.len());
            let end = (at + remove).min(b.len());
            b.splice(at..end, insert.iter().copied());
        }
        Damage::Transplant { from, to, len } => {
            let from = from.index(b.len());
            let to = to.index(b.len());
            let len = (*len).min(b.len() - from).min(b.len() - to);
            b.copy_within(from..from + len, to);
        }
    }
    b
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000)
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn damaged_files_never_panic_the_loader(
        which in 0usize..3,
        damages in prop::collection::vec(damage(), 1..4),
    ) {
        let mut bytes = originals()[which].clone();
        for d in &damages {
            bytes = apply(&bytes, d);
        }
        if let Ok(ckpt) = load(&bytes) {
            // Whatever loads is a checkpoint `save` accepts and reproduces.
            prop_assert_eq!(ckpt.validate(), Ok(()));
            prop_assert_eq!(ckpt.params.len(), ckpt.layout().total);
            let again = load(&save(&ckpt, WeightDtype::F32).unwrap()).unwrap();
            prop_assert_eq!(again, ckpt);
        }
    }
}

#[test]
fn undamaged_originals_load() {
    for bytes in originals() {
        assert!(load(bytes).is_ok());
    }
}
