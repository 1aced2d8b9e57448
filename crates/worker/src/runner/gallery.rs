//! The model gallery: `gallery.json` lists the cards, each card names its
//! weights. A model loads like any checkpoint (its gates re-run on its
//! weights), then its card's training curve becomes its history — the
//! chart draws it and Continue appends to it.

use super::Runner;
use crate::js;
use crate::outbox::{error, log, post};
use tinygpt_gpu::engine::run::Run;
use tinygpt_protocol::{GalleryIndex, LogLevel, ModelCard, WorkerOutput};

/// The name the bundled model is loaded under.
const BUNDLED_NAME: &str = "the bundled Shakespeare model";

async fn fetch_card(url: &str) -> Result<ModelCard, String> {
    let bytes = js::fetch_bytes(url).await.map_err(|e| e.to_string())?;
    ModelCard::parse(&bytes)
}

/// Every card the gallery lists, in its order.
async fn gallery() -> Result<Vec<ModelCard>, String> {
    let bytes = js::fetch_bytes(js::GALLERY_INDEX)
        .await
        .map_err(|e| e.to_string())?;
    let index: GalleryIndex =
        serde_json::from_slice(&bytes).map_err(|e| format!("unreadable gallery index: {e}"))?;
    let mut cards = Vec::with_capacity(index.cards.len());
    for file in &index.cards {
        cards.push(fetch_card(&format!("./{file}")).await?);
    }
    Ok(cards)
}

impl Runner {
    /// Posts the gallery's cards, or why they cannot be read.
    pub async fn post_gallery(&self) {
        let msg = match gallery().await {
            Ok(cards) => WorkerOutput::Gallery {
                cards,
                problem: None,
            },
            Err(e) => WorkerOutput::Gallery {
                cards: Vec::new(),
                problem: Some(e),
            },
        };
        post(&msg);
    }

    /// Loads the bundled model with its card.
    pub async fn load_bundled(&mut self) {
        let card = fetch_card(js::BUNDLED_CARD).await;
        self.load_model(BUNDLED_NAME.into(), js::BUNDLED_MODEL, card)
            .await
    }

    /// Loads the gallery's model `id` with its card.
    pub async fn load_gallery(&mut self, id: &str) {
        const WHAT: &str = "loading a model of the gallery";
        let card = match gallery().await {
            Ok(cards) => cards.into_iter().find(|c| c.id == id),
            Err(e) => return error(WHAT, e),
        };
        let Some(card) = card else {
            return error(WHAT, format!("the gallery has no model {id:?}"));
        };
        let url = format!("./{}", card.file);
        // The bundled model keeps its name, whichever way it is loaded.
        let name = match url == js::BUNDLED_MODEL {
            true => BUNDLED_NAME.to_string(),
            false => format!("the {} model", card.title),
        };
        self.load_model(name, &url, Ok(card)).await
    }

    /// Fetches `url`, loads it as `name` (the current model stays when
    /// anything is wrong) and gives it its card's curve.
    async fn load_model(&mut self, name: String, url: &str, card: Result<ModelCard, String>) {
        let what = format!("loading {name} (your current model is unchanged)");
        let bytes = match js::fetch_bytes(url).await {
            Ok(b) => b,
            Err(e) => return error(&what, e),
        };
        if let Ok(c) = &card {
            if bytes.len() as u64 != c.bytes {
                let why = format!(
                    "the download has {} bytes where its card says {}: reload the page and try again",
                    bytes.len(),
                    c.bytes
                );
                return error(&what, why);
            }
        }
        if self.load_checkpoint(name, &bytes).await {
            self.apply_card(card);
        }
    }

    /// The card's curve becomes the model's history, when the card is for
    /// this model's shape.
    fn apply_card(&mut self, card: Result<ModelCard, String>) {
        let config = self.session.as_ref().map(|s| s.config);
        match card {
            Ok(card) if Some(card.config) == config => {
                self.plan = Run::restored(card.steps, card.curve.train, card.curve.val);
                self.post_history();
            }
            Ok(card) => log(
                LogLevel::Warn,
                format!(
                    "[worker] the card {:?} describes another shape: its curve is not shown",
                    card.id
                ),
            ),
            Err(e) => log(
                LogLevel::Warn,
                format!("[worker] no training curve for this model: {e}"),
            ),
        }
    }
}
