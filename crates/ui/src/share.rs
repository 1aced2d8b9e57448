//! Share a setup: a link that carries the preset, the hyper-parameters,
//! the prompt and the sampling settings (never data or weights), and
//! restores them when opened. Every value is checked as the forms check
//! what is typed (and the hyper-parameters by the engine's own ranges); a
//! bad or hostile value is refused with one message naming it, and the
//! rest of the link still applies.

use crate::{format, BUNDLED_VOCAB};
use tinygpt_protocol::Preset;

/// The link's keys, in the order it lists them.
pub const KEYS: [&str; 16] = [
    "preset",
    "steps",
    "batch",
    "lr",
    "warmup",
    "dropout",
    "eval_interval",
    "eval_batches",
    "seed",
    "prompt",
    "length",
    "temperature",
    "top_k",
    "top_p",
    "sample_seed",
    "samples",
];

/// Longest prompt a link may carry (characters).
pub const MAX_PROMPT_CHARS: usize = 1000;
/// Longest generation a link may ask for (the engine's own limit is far
/// higher; a link should not start one that ties up a page for minutes).
pub const MAX_LINK_LENGTH: usize = 5000;

/// The link's values that passed, by key, and why the others were refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shared {
    pub values: Vec<(&'static str, String)>,
    pub refused: Vec<String>,
}

impl Shared {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// One message for every refused value, or `None` when all passed.
    pub fn problem(&self) -> Option<String> {
        (!self.refused.is_empty()).then(|| {
            format!(
                "this link's settings were not all applied — refused: {}",
                self.refused.join("; ")
            )
        })
    }
}

/// Percent-decodes a query value (`+` is a space); `None` when malformed.
fn decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Percent-encodes everything but unreserved characters.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Checks one value of `key`; `preset` is the link's (or the default). A
/// hyper-parameter goes through the engine's own ranges
/// (`TrainConfig::validate`) with the preset's other defaults.
fn check(key: &str, value: &str, preset: &Preset) -> Result<(), String> {
    let mut t = preset.train();
    match key {
        "preset" => {
            return Preset::by_name(value)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        "steps" => t.steps = format::whole(key, value)?,
        "batch" => t.batch_size = format::whole(key, value)?,
        "warmup" => t.warmup_steps = format::whole(key, value)?,
        "eval_interval" => t.eval_interval = format::whole(key, value)?,
        "eval_batches" => t.eval_batches = format::whole(key, value)?,
        "lr" => {
            t.lr = format::decimal(key, value)?;
            t.min_lr = t.lr / 10.0;
        }
        "dropout" => t.dropout = format::decimal(key, value)?,
        _ => return check_sampling(key, value),
    }
    t.validate(&preset.model(BUNDLED_VOCAB))
        .map_err(|e| e.to_string())
}

/// The prompt and the sampling settings.
fn check_sampling(key: &str, value: &str) -> Result<(), String> {
    match key {
        "seed" | "sample_seed" => format::seed(key, value).map(|_| ()),
        "prompt" => check_prompt(value),
        "length" => match format::whole(key, value)? {
            n if (1..=MAX_LINK_LENGTH).contains(&n) => Ok(()),
            n => Err(format!("length {n} is outside 1..={MAX_LINK_LENGTH}")),
        },
        "temperature" => match format::decimal(key, value)? {
            x if (0.0..=5.0).contains(&x) => Ok(()),
            x => Err(format!("temperature {x} is outside 0..=5")),
        },
        "top_k" => format::optional_whole(key, value).map(|_| ()),
        // With greedy decoding several samples are refused at Generate,
        // where the temperature is known.
        "samples" => tinygpt_protocol::check_num_samples(format::whole(key, value)?, 1.0),
        "top_p" => match format::optional_decimal(key, value)? {
            Some(p) if !(p > 0.0 && p <= 1.0) => Err(format!("top_p {p} is outside (0, 1]")),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

fn check_prompt(p: &str) -> Result<(), String> {
    if p.chars().count() > MAX_PROMPT_CHARS {
        return Err(format!(
            "the prompt is longer than {MAX_PROMPT_CHARS} characters"
        ));
    }
    if p.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err("the prompt has control characters".into());
    }
    Ok(())
}

/// Reads a query string (`?preset=small&steps=500…`): the values of known
/// keys that pass their checks, and why the others were refused. Keys this
/// module does not know (the test switches) are left alone.
pub fn parse(search: &str) -> Shared {
    let mut pairs: Vec<(&'static str, String)> = Vec::new();
    let mut out = Shared::default();
    for kv in search
        .trim_start_matches('?')
        .split('&')
        .filter(|s| !s.is_empty())
    {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let Some(key) = KEYS.iter().find(|&&key| key == k) else {
            continue;
        };
        match decode(v) {
            Some(v) if v.len() <= 4 * MAX_PROMPT_CHARS => pairs.push((key, v)),
            _ => out.refused.push(format!("{k}: not a readable value")),
        }
    }
    let preset_value = pairs
        .iter()
        .find(|(k, _)| *k == "preset")
        .map(|(_, v)| v.clone());
    let preset = preset_value
        .as_deref()
        .and_then(|p| Preset::by_name(p).ok())
        .unwrap_or(&tinygpt_protocol::PRESETS[0]);
    for (key, value) in pairs {
        match check(key, &value, preset) {
            Ok(()) => out.values.push((key, value)),
            Err(e) => out.refused.push(format!("{key}: {e}")),
        }
    }
    out
}

/// The link for `values` (`(key, value)`) on `base` (the page's address
/// without its query).
pub fn link(base: &str, values: &[(&str, String)]) -> String {
    let query: Vec<String> = values
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// The page's own link settings (read once per panel, cheap).
pub fn from_location() -> Shared {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    parse(&search)
}

/// "Share this setup": the link of the forms as typed now, shown to copy
/// (and put on the clipboard where the browser allows).
#[leptos::component]
pub fn SharePanel(store: crate::Store) -> impl leptos::IntoView {
    use leptos::prelude::*;
    let shown = RwSignal::new(String::new());
    let make = move |_| {
        let Some(window) = web_sys::window() else {
            return;
        };
        let loc = window.location();
        let base = format!(
            "{}{}",
            loc.origin().unwrap_or_default(),
            loc.pathname().unwrap_or_default()
        );
        let url = store.share_link(&base);
        // Best effort: a browser that refuses the clipboard still shows
        // the link; the refusal is handled, not left as an uncaught error.
        let ignore =
            wasm_bindgen::closure::Closure::<dyn FnMut(wasm_bindgen::JsValue)>::new(|_| {});
        let _ = window
            .navigator()
            .clipboard()
            .write_text(&url)
            .catch(&ignore);
        ignore.forget();
        shown.set(url);
    };
    view! {
        <section class="card share" data-testid="share-panel">
            <h2>"Share this setup" <crate::help::Help topic="panel-share" label="sharing a setup" controls="share-make share-link" /></h2>
            <p class="muted">"A link with the preset, the hyper-parameters, the prompt and the sampling settings — no data, no weights."</p>
            <button data-testid="share-make" on:click=make>"Make a link"</button>
            <Show when=move || !shown.get().is_empty()>
                <input class="share-link" type="text" readonly aria-label="the link to this setup"
                    data-testid="share-link" prop:value=move || shown.get() />
            </Show>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_round_trips_through_parse() {
        let values = vec![
            ("preset", "small".to_string()),
            ("steps", "500".to_string()),
            ("lr", "0.002".to_string()),
            ("prompt", "ROMEO:\nO, & 100% ünïcode".to_string()),
            ("temperature", "0.7".to_string()),
            ("top_p", "0.9".to_string()),
            ("samples", "4".to_string()),
        ];
        let url = link("http://x/", &values);
        let search = url.split_once('?').unwrap().1;
        let back = parse(search);
        assert_eq!(back.refused, Vec::<String>::new());
        assert_eq!(back.values, values);
    }

    #[test]
    fn bad_and_hostile_values_are_refused_by_name_and_the_rest_applies() {
        let long = "a".repeat(MAX_PROMPT_CHARS + 1);
        let s = parse(&format!(
            "?preset=huge&steps=abc&batch=0&lr=1e9&prompt={long}&length=999999&top_p=2&temperature=-1&seed=7&fault=f16acc&dropout=%ZZ&samples=9"
        ));
        assert_eq!(s.get("seed"), Some("7"));
        let refused = s.refused.join("\n");
        for key in [
            "preset",
            "steps",
            "batch",
            "lr",
            "prompt",
            "length",
            "top_p",
            "temperature",
            "dropout",
            "samples",
        ] {
            assert!(
                refused.contains(&format!("{key}:")),
                "{key} not refused:\n{refused}"
            );
        }
        assert!(!refused.contains("fault"), "unknown keys are left alone");
        assert!(s
            .problem()
            .unwrap()
            .starts_with("this link's settings were not all applied"));
        assert!(parse("?prompt=a%00b").refused[0].contains("control"));
    }
}
