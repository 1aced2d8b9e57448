//! A model card: what a downloadable model is, how it was trained and how
//! good it is, shipped as JSON beside the weights (`models/*.card.json`).
//! The worker sends a loaded model's curve to the chart; the tests check a
//! card against its checkpoint and its raw training log.

use crate::ModelConfig;
use serde::{Deserialize, Serialize};

/// Card format version.
pub const CARD_VERSION: u32 = 1;

/// One `models/<name>.card.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelCard {
    pub version: u32,
    /// Stable name in the gallery and in messages (`"small"`).
    pub id: String,
    /// Shown in the page, e.g. "Shakespeare, small".
    pub title: String,
    /// The weights file, relative to the card.
    pub file: String,
    pub bytes: u64,
    pub sha256: String,
    pub preset: String,
    pub config: ModelConfig,
    pub params: usize,
    /// Training steps the weights saw.
    pub steps: usize,
    /// Validation loss at the last step (nats/char), and how it was measured.
    pub val_loss: f32,
    pub val_protocol: String,
    /// One paragraph: corpus, optimiser, schedule, device.
    pub summary: String,
    /// Whether it samples fast enough on a CPU implementation of WebGPU
    /// (SwiftShader, lavapipe, WARP) to be suggested there.
    pub for_cpu_implementations: bool,
    /// The training curve of the run that made the weights.
    pub curve: CardCurve,
    /// Where the raw log of that run is, in the repository.
    pub log: String,
}

/// Loss by step, as the run logged it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CardCurve {
    pub train: Vec<(usize, f32)>,
    pub val: Vec<(usize, f32)>,
}

/// `models/gallery.json`: the cards of the page's gallery, in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GalleryIndex {
    pub version: u32,
    /// Card files, relative to the index.
    pub cards: Vec<String>,
}

/// The model the page suggests on a device: on a CPU implementation the
/// best card marked for one, elsewhere the best card (lowest validation
/// loss); ties keep gallery order.
pub fn suggested(cards: &[ModelCard], cpu_implementation: bool) -> Option<&ModelCard> {
    cards
        .iter()
        .filter(|c| !cpu_implementation || c.for_cpu_implementations)
        .fold(None, |best: Option<&ModelCard>, c| match best {
            Some(b) if b.val_loss <= c.val_loss => Some(b),
            _ => Some(c),
        })
}

impl ModelCard {
    /// Parses a card and checks what a reader relies on.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let card: Self =
            serde_json::from_slice(bytes).map_err(|e| format!("unreadable model card: {e}"))?;
        if card.version != CARD_VERSION {
            return Err(format!(
                "model card version {} (this build reads {CARD_VERSION})",
                card.version
            ));
        }
        let steps_rise = |s: &[(usize, f32)]| s.windows(2).all(|w| w[0].0 < w[1].0);
        let finite = |s: &[(usize, f32)]| s.iter().all(|p| p.1.is_finite());
        let c = &card.curve;
        if !(steps_rise(&c.train) && steps_rise(&c.val) && finite(&c.train) && finite(&c.val)) {
            return Err("model card: its curve's steps must rise and its losses be finite".into());
        }
        Ok(card)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_with_a_bad_curve_or_version_is_refused() {
        let card = ModelCard {
            version: CARD_VERSION,
            id: "t".into(),
            title: "t".into(),
            file: "f".into(),
            bytes: 1,
            sha256: String::new(),
            preset: "tiny".into(),
            config: ModelConfig {
                vocab_size: 3,
                block_size: 4,
                n_layer: 1,
                n_head: 1,
                d_model: 4,
            },
            params: 1,
            steps: 2,
            val_loss: 1.0,
            val_protocol: String::new(),
            summary: String::new(),
            for_cpu_implementations: true,
            curve: CardCurve {
                train: vec![(1, 2.0), (2, 1.5)],
                val: vec![(2, 1.6)],
            },
            log: String::new(),
        };
        let json = serde_json::to_vec(&card).unwrap();
        assert_eq!(ModelCard::parse(&json).unwrap(), card);
        let mut bad = card.clone();
        bad.curve.train.reverse();
        let err = ModelCard::parse(&serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(err.contains("steps must rise"), "{err}");
        let mut old = card.clone();
        old.version = 9;
        let err = ModelCard::parse(&serde_json::to_vec(&old).unwrap()).unwrap_err();
        assert!(err.contains("version 9"), "{err}");
        assert!(ModelCard::parse(b"{").unwrap_err().contains("unreadable"));
        // The suggestion: the best card, or the best one a CPU
        // implementation can run.
        let mut big = card.clone();
        big.id = "big".into();
        big.val_loss = 0.5;
        big.for_cpu_implementations = false;
        let both = vec![card.clone(), big];
        assert_eq!(suggested(&both, false).map(|c| c.id.as_str()), Some("big"));
        assert_eq!(suggested(&both, true).map(|c| c.id.as_str()), Some("t"));
        assert_eq!(suggested(&both[1..], true), None);
    }
}
