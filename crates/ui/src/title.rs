//! The tab title as a done signal: a run's state and progress show in the
//! tab while it trains, and "finished" when it ends, so a run in a
//! background tab can be watched without switching to it.

use crate::Store;
use leptos::prelude::*;
use tinygpt_protocol::{RunState, TrainProgress};

/// The page's own title (index.html's `<title>`).
pub const BASE: &str = "TinyGPT-rs — train and sample a small GPT in your browser";

/// The tab title for a run in `state` at `progress`.
pub fn tab_title(state: RunState, progress: Option<&TrainProgress>) -> String {
    let steps = progress.map(|p| (p.step, p.total_steps));
    match (state, steps) {
        (RunState::Running, Some((step, total))) if total > 0 => {
            format!("▶ {}% · TinyGPT-rs", 100 * step / total)
        }
        (RunState::Running, _) => "▶ training · TinyGPT-rs".to_string(),
        (RunState::Paused, _) => "⏸ paused · TinyGPT-rs".to_string(),
        (RunState::Finished, _) => "✓ finished · TinyGPT-rs".to_string(),
        _ => BASE.to_string(),
    }
}

/// Keeps `document.title` in step with the run.
pub fn follow_the_run(store: Store) {
    Effect::new(move |_| {
        let title = store
            .progress
            .with(|p| tab_title(store.run_state.get(), p.as_ref()));
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            doc.set_title(&title);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(step: usize, total: usize) -> TrainProgress {
        TrainProgress {
            step,
            total_steps: total,
            train_loss: 2.0,
            losses: vec![2.0],
            val_loss: None,
            lr: 1e-3,
            tokens_per_s: 1.0,
            elapsed_s: 1.0,
            eta_s: 1.0,
        }
    }

    #[test]
    fn the_title_follows_the_run() {
        assert_eq!(tab_title(RunState::Idle, None), BASE);
        assert_eq!(
            tab_title(RunState::Running, None),
            "▶ training · TinyGPT-rs"
        );
        assert_eq!(
            tab_title(RunState::Running, Some(&at(37, 100))),
            "▶ 37% · TinyGPT-rs"
        );
        assert_eq!(
            tab_title(RunState::Paused, Some(&at(37, 100))),
            "⏸ paused · TinyGPT-rs"
        );
        assert_eq!(
            tab_title(RunState::Finished, Some(&at(100, 100))),
            "✓ finished · TinyGPT-rs"
        );
        assert_eq!(tab_title(RunState::Stopped, Some(&at(50, 100))), BASE);
    }
}
