//! Every model card under `models/` agrees with its weights and with the raw
//! log of the run that made them: the page draws the card's curve as the
//! model's own, so it must be that run's.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use tinygpt_core::checkpoint;
use tinygpt_protocol::{suggested, GalleryIndex, ModelCard};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cards() -> Vec<PathBuf> {
    let mut cards: Vec<PathBuf> = std::fs::read_dir(repo().join("models"))
        .expect("models/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".card.json"))
        .collect();
    cards.sort();
    cards
}

/// `(step, train_loss, val_loss)` of each line of a `tinygpt train --json` log.
fn log_rows(path: &Path) -> Vec<(usize, f32, Option<f32>)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let f = |k: &str| v[k].as_f64().map(|x| x as f32);
            (
                v["step"].as_u64().expect("step") as usize,
                f("train_loss").expect("train_loss"),
                f("val_loss"),
            )
        })
        .collect()
}

#[test]
fn every_card_matches_its_checkpoint_and_its_log() {
    let cards = cards();
    assert!(!cards.is_empty(), "no model card under models/");
    for path in cards {
        let card = ModelCard::parse(&std::fs::read(&path).expect("card")).expect("card parses");
        let bytes = std::fs::read(repo().join("models").join(&card.file)).expect("weights");
        assert_eq!(bytes.len() as u64, card.bytes, "{path:?}: bytes");
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest, card.sha256, "{path:?}: sha256");
        let ckpt = checkpoint::load(&bytes).expect("checkpoint loads");
        assert_eq!(ckpt.config, card.config, "{path:?}: config");
        assert_eq!(ckpt.step as usize, card.steps, "{path:?}: steps");
        assert_eq!(card.config.num_params(), card.params, "{path:?}: params");
        let rows = log_rows(&repo().join(&card.log));
        let train: Vec<_> = rows.iter().map(|r| (r.0, r.1)).collect();
        let val: Vec<_> = rows.iter().filter_map(|r| r.2.map(|v| (r.0, v))).collect();
        assert_eq!(
            card.curve.train, train,
            "{path:?}: train curve is not its log's"
        );
        assert_eq!(
            card.curve.val, val,
            "{path:?}: validation curve is not its log's"
        );
        let last = val.last().expect("a validation point").1;
        assert!(
            (last - card.val_loss).abs() < 5e-4,
            "{path:?}: card says {} but its log ends at {last}",
            card.val_loss
        );
        println!(
            "{path:?}: {} steps, validation {}",
            card.steps, card.val_loss
        );
    }
}

#[test]
fn the_gallery_lists_every_card_once_with_unique_ids() {
    let bytes = std::fs::read(repo().join("models/gallery.json")).expect("models/gallery.json");
    let index: GalleryIndex = serde_json::from_slice(&bytes).expect("gallery.json parses");
    let mut listed: Vec<PathBuf> = index
        .cards
        .iter()
        .map(|c| repo().join("models").join(c))
        .collect();
    let cards: Vec<ModelCard> = listed
        .iter()
        .map(|p| ModelCard::parse(&std::fs::read(p).expect("card")).expect("card parses"))
        .collect();
    let ids: Vec<&str> = cards.iter().map(|c| c.id.as_str()).collect();
    assert!(
        ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id)),
        "{ids:?}"
    );
    listed.sort();
    assert_eq!(
        listed,
        self::cards(),
        "gallery.json lists every models/*.card.json"
    );
    // Every device class gets a suggestion: a CPU implementation the small
    // model, a real GPU the best one.
    assert_eq!(
        suggested(&cards, true).map(|c| c.preset.as_str()),
        Some("small")
    );
    assert_eq!(
        suggested(&cards, false).map(|c| c.preset.as_str()),
        Some("nanogpt")
    );
}
