//! The done signals: a run's state and progress in the tab title while it
//! trains, "finished" when it ends, so a run in a background tab can be
//! watched without switching to it; and, when the user asks for it, a
//! system notification as the run finishes.

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

/// The notification's text for a finished run at `progress`.
pub fn finished_body(progress: Option<&TrainProgress>) -> String {
    match progress {
        Some(p) => format!(
            "step {} of {} · train loss {:.4}{}",
            p.step,
            p.total_steps,
            p.train_loss,
            p.val_loss
                .map(|v| format!(" · val {v:.4}"))
                .unwrap_or_default()
        ),
        None => "the run is done".to_string(),
    }
}

/// Keeps `document.title` in step with the run, and notifies as a run
/// finishes when the user asked for it.
pub fn follow_the_run(store: Store) {
    Effect::new(move |previous: Option<RunState>| {
        let state = store.run_state.get();
        let title = store.progress.with(|p| tab_title(state, p.as_ref()));
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            doc.set_title(&title);
        }
        let finished_now = state == RunState::Finished && previous.is_some_and(|s| s != state);
        if finished_now && store.notify_when_done.get_untracked() {
            let body = store.progress.with_untracked(|p| finished_body(p.as_ref()));
            notify("TinyGPT-rs: run finished", &body);
        }
        state
    });
}

fn notify(title: &str, body: &str) {
    use web_sys::{Notification, NotificationOptions, NotificationPermission};
    if Notification::permission() != NotificationPermission::Granted {
        return;
    }
    let options = NotificationOptions::new();
    options.set_body(body);
    let _ = Notification::new_with_options(title, &options);
}

/// Asks for permission to notify; calls `done` with whether it was granted.
pub fn ask_to_notify(done: impl FnOnce(bool) + 'static) {
    use web_sys::{Notification, NotificationPermission};
    if Notification::permission() == NotificationPermission::Granted {
        return done(true);
    }
    let Ok(promise) = Notification::request_permission() else {
        return done(false);
    };
    wasm_bindgen_futures::spawn_local(async move {
        let answer = wasm_bindgen_futures::JsFuture::from(promise).await;
        done(answer.ok().and_then(|v| v.as_string()).as_deref() == Some("granted"));
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

    #[test]
    fn the_notification_says_where_the_run_ended() {
        let mut p = at(100, 100);
        assert_eq!(
            finished_body(Some(&p)),
            "step 100 of 100 · train loss 2.0000"
        );
        p.val_loss = Some(1.5);
        assert_eq!(
            finished_body(Some(&p)),
            "step 100 of 100 · train loss 2.0000 · val 1.5000"
        );
        assert_eq!(finished_body(None), "the run is done");
    }
}
