//! Keyboard shortcuts, listed in the page. Each presses the button it
//! stands for, so a shortcut does exactly what the click would (and nothing
//! while the button is disabled).

use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// One shortcut: what to press, what it does, the button it presses.
pub struct Shortcut {
    pub keys: &'static str,
    pub does: &'static str,
    /// `data-testid` of the button pressed, or `None` for the list itself.
    pub button: Option<&'static str>,
}

pub const SHORTCUTS: [Shortcut; 5] = [
    Shortcut {
        keys: "Ctrl/⌘ + Enter",
        does: "generate from the prompt",
        button: Some("generate"),
    },
    Shortcut {
        keys: "Esc",
        does: "stop generating",
        button: Some("stop-sampling"),
    },
    Shortcut {
        keys: "Alt + P",
        does: "pause or resume training",
        button: None,
    },
    Shortcut {
        keys: "Alt + S",
        does: "stop training",
        button: Some("stop"),
    },
    Shortcut {
        keys: "?",
        does: "show or hide this list (outside text fields)",
        button: None,
    },
];

/// The shortcut a key press stands for: its index in [`SHORTCUTS`].
/// `typing` is true when the focus is in a text field, where `?` types.
pub fn shortcut_for(key: &str, ctrl_or_meta: bool, alt: bool, typing: bool) -> Option<usize> {
    match (key, ctrl_or_meta, alt) {
        ("Enter", true, false) => Some(0),
        ("Escape", false, false) => Some(1),
        ("p" | "P" | "π", false, true) => Some(2),
        ("s" | "S" | "ß", false, true) => Some(3),
        ("?", false, false) if !typing => Some(4),
        _ => None,
    }
}

/// Clicks the enabled button with `data-testid` `id`; whether it did.
fn press(id: &str) -> bool {
    let button = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| {
            d.query_selector(&format!("[data-testid=\"{id}\"]"))
                .ok()
                .flatten()
        })
        .and_then(|e| e.dyn_into::<web_sys::HtmlButtonElement>().ok());
    match button {
        Some(b) if !b.disabled() => {
            b.click();
            true
        }
        _ => false,
    }
}

fn toggle_list() {
    let list = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| {
            d.query_selector("[data-testid=\"shortcuts\"]")
                .ok()
                .flatten()
        })
        .and_then(|e| e.dyn_into::<web_sys::HtmlDetailsElement>().ok());
    if let Some(l) = list {
        l.set_open(!l.open());
    }
}

/// Listens for the shortcuts on the whole page (as long as it lives).
pub fn listen() {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let on_key = wasm_bindgen::closure::Closure::<dyn FnMut(web_sys::KeyboardEvent)>::new(
        move |ev: web_sys::KeyboardEvent| {
            let typing = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
            let Some(i) = shortcut_for(
                &ev.key(),
                ev.ctrl_key() || ev.meta_key(),
                ev.alt_key(),
                typing,
            ) else {
                return;
            };
            let done = match (i, SHORTCUTS[i].button) {
                (2, _) => press("pause") || press("resume"),
                (_, Some(id)) => press(id),
                (_, None) => {
                    toggle_list();
                    true
                }
            };
            if done {
                ev.prevent_default();
            }
        },
    );
    let _ = document.add_event_listener_with_callback("keydown", on_key.as_ref().unchecked_ref());
    on_key.forget();
}

/// The list of shortcuts.
#[component]
pub fn ShortcutList() -> impl IntoView {
    view! {
        <details class="shortcuts" data-testid="shortcuts">
            <summary>"keyboard shortcuts"</summary>
            <dl>
                {SHORTCUTS.iter().map(|s| view! { <dt><kbd>{s.keys}</kbd></dt><dd>{s.does}</dd> }).collect_view()}
            </dl>
        </details>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_their_shortcuts_and_question_mark_types_in_fields() {
        assert_eq!(shortcut_for("Enter", true, false, true), Some(0));
        assert_eq!(
            shortcut_for("Enter", false, false, true),
            None,
            "a plain Enter types"
        );
        assert_eq!(shortcut_for("Escape", false, false, true), Some(1));
        assert_eq!(shortcut_for("p", false, true, false), Some(2));
        assert_eq!(shortcut_for("S", false, true, true), Some(3));
        assert_eq!(shortcut_for("?", false, false, false), Some(4));
        assert_eq!(shortcut_for("?", false, false, true), None);
        assert_eq!(shortcut_for("x", false, false, false), None);
        assert_eq!(SHORTCUTS[0].button, Some("generate"));
    }
}
