//! Inside the model: the prompt and sample run through the model once
//! ([`WorkerInput::Inspect`]); every character coloured by the model's
//! confidence in it, its top alternatives on selection, and each layer's
//! and head's attention weights as a heatmap (queries down, keys across).

use crate::help::Help;
use crate::Store;
use leptos::prelude::*;
use tinygpt_protocol::{Inspection, WorkerInput};

/// Confidence class of a probability (`conf-0` … `conf-4`).
pub fn confidence_class(p: f32) -> &'static str {
    match p {
        p if p >= 0.8 => "conf-4",
        p if p >= 0.5 => "conf-3",
        p if p >= 0.2 => "conf-2",
        p if p >= 0.05 => "conf-1",
        _ => "conf-0",
    }
}

/// A character as shown in the alternatives table.
pub fn show_char(c: char) -> String {
    match c {
        '\n' => "↵ (new line)".into(),
        ' ' => "(space)".into(),
        c => c.to_string(),
    }
}

/// RGBA pixels of one head's weights: dark for 0, bright orange for 1.
pub fn heat_pixels(weights: &[u8]) -> Vec<u8> {
    weights
        .iter()
        .flat_map(|&w| {
            let x = w as u32;
            [
                x as u8,
                (x * x / 255 * 3 / 5) as u8,
                (24 + x / 8) as u8,
                255,
            ]
        })
        .collect()
}

/// The inspection card under the sample.
#[component]
pub fn InspectPanel(store: Store) -> impl IntoView {
    let text = move || store.sample.with(|s| format!("{}{}", s.prompt, s.text(0)));
    let can = move || store.model.with(|m| m.is_some()) && !store.busy() && !text().is_empty();
    view! {
        <div class="inspect" data-testid="inspect-panel" data-inspected=move || store.inspected.get()>
            <div class="buttons">
                <button data-testid="inspect-run" disabled=move || !can()
                    on:click=move |_| store.send(WorkerInput::Inspect { text: text() })>
                    "Inspect the text"
                </button>
                <Help topic="inspect-run" label="inspecting the text" />
            </div>
            {move || store.inspection.get().map(|i| view! { <InspectionView i=i /> })}
        </div>
    }
}

/// One inspection: the coloured text, the selected character's
/// alternatives and the attention heatmap.
#[component]
fn InspectionView(i: Inspection) -> impl IntoView {
    let chars: Vec<char> = i.text.chars().collect();
    let n = chars.len();
    let (window, from) = (i.t, i.attention_from);
    let selected = RwSignal::new(n.saturating_sub(1));
    let colour = RwSignal::new(true);
    let i = StoredValue::new(i);
    let spans = chars
        .iter()
        .enumerate()
        .map(|(k, &c)| {
            let conf = i.with_value(|i| k.checked_sub(1).map(|j| i.next_prob[j]));
            let class = move || {
                let mut cls = String::from("tok");
                if let (true, Some(p)) = (colour.get(), conf) {
                    cls.push(' ');
                    cls.push_str(confidence_class(p));
                }
                if selected.get() == k {
                    cls.push_str(" selected");
                }
                cls
            };
            let title = conf.map(|p| format!("p = {:.3}", p)).unwrap_or_else(|| "first character: no context".into());
            view! { <span class=class data-i=k title=title on:click=move |_| selected.set(k)>{c.to_string()}</span> }
        })
        .collect_view();
    let on_key = move |ev: web_sys::KeyboardEvent| {
        let at = selected.get_untracked();
        match ev.key().as_str() {
            "ArrowRight" => selected.set((at + 1).min(n - 1)),
            "ArrowLeft" => selected.set(at.saturating_sub(1)),
            "Home" => selected.set(0),
            "End" => selected.set(n - 1),
            _ => return,
        }
        ev.prevent_default();
    };
    view! {
        <div class="inspection" data-testid="inspection" data-t=n data-window=window data-attention-from=from
            data-backend=i.with_value(|i| i.backend.clone())>
            <label class="check">
                <input type="checkbox" data-testid="inspect-colour" prop:checked=move || colour.get()
                    on:change=move |ev| colour.set(event_target_checked(&ev)) />
                " colour by the model's confidence"
            </label>
            <Help topic="inspect-colour" label="the confidence colours" />
            <pre class="inspect-text" data-testid="inspect-text" tabindex="0" on:keydown=on_key
                aria-label="the text inspected; ← → Home End choose a character">{spans}</pre>
            <Alternatives i=i selected=selected chars=chars.clone() />
            <AttentionMap i=i selected=selected />
        </div>
    }
}

/// The distribution the selected character was drawn from.
#[component]
fn Alternatives(
    i: StoredValue<Inspection>,
    selected: RwSignal<usize>,
    chars: Vec<char>,
) -> impl IntoView {
    let chars = StoredValue::new(chars);
    view! {
        <div class="alternatives" data-testid="alternatives" data-selected=move || selected.get()>
            {move || {
                let k = selected.get();
                let Some(j) = k.checked_sub(1) else {
                    return view! { <p class="muted">"The first character has no context: choose another."</p> }.into_any();
                };
                let actual = chars.with_value(|c| c[k]);
                let (top, p) = i.with_value(|i| (i.top[j].clone(), i.next_prob[j]));
                let before: String = chars.with_value(|c| c[k.saturating_sub(12)..k].iter().collect());
                view! {
                    <p class="muted" data-testid="alternatives-head">
                        {format!("after “{}”: the text has {} at p = {p:.3}; the model's top {}:", before.replace('\n', "↵"), show_char(actual), top.len())}
                    </p>
                    <table class="alt-table" data-testid="alternatives-table">
                        <thead><tr><th scope="col">"character"</th><th scope="col">"probability"</th></tr></thead>
                        <tbody>
                            {top.into_iter().map(|(c, q)| view! {
                                <tr class=if c == actual { "actual" } else { "" } data-p=q.to_string()>
                                    <td>{show_char(c)}</td>
                                    <td><span class="alt-bar">{"█".repeat(((q * 20.0).round() as usize).max(1))}</span>{format!(" {q:.3}")}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </div>
    }
}

/// Draws one head's weights into the canvas, one pixel per weight.
fn draw(
    canvas: &web_sys::HtmlCanvasElement,
    weights: &[u8],
    t: usize,
) -> Result<(), wasm_bindgen::JsValue> {
    use wasm_bindgen::JsCast;
    canvas.set_width(t as u32);
    canvas.set_height(t as u32);
    let ctx = canvas
        .get_context("2d")?
        .ok_or("no 2d context")?
        .dyn_into::<web_sys::CanvasRenderingContext2d>()?;
    let pixels = heat_pixels(weights);
    let image =
        web_sys::ImageData::new_with_u8_clamped_array(wasm_bindgen::Clamped(&pixels), t as u32)?;
    ctx.put_image_data(&image, 0.0, 0.0)
}

/// The heatmap of the chosen layer and head, and where the selected
/// character's query looked.
#[component]
fn AttentionMap(i: StoredValue<Inspection>, selected: RwSignal<usize>) -> impl IntoView {
    let (layers, heads, t, from) = i.with_value(|i| (i.layers, i.heads, i.t, i.attention_from));
    // The selected character's row in the window, if it is in it.
    let query = move || selected.get().checked_sub(from);
    let layer = RwSignal::new(0usize);
    let head = RwSignal::new(0usize);
    let canvas = NodeRef::<leptos::html::Canvas>::new();
    Effect::new(move |_| {
        let (l, h) = (layer.get(), head.get());
        if let Some(c) = canvas.get() {
            if let Err(e) = i.with_value(|i| draw(&c, i.head(l, h), t)) {
                web_sys::console::error_2(&"drawing the attention map failed".into(), &e);
            }
        }
    });
    let row = move || {
        let (l, h) = (layer.get(), head.get());
        let q = query()?;
        Some(i.with_value(|i| i.head(l, h)[q * t..(q + 1) * t].to_vec()))
    };
    let upper_zero = move || {
        let (l, h) = (layer.get(), head.get());
        i.with_value(|i| {
            i.head(l, h)
                .chunks(t)
                .enumerate()
                .all(|(q, r)| r[q + 1..].iter().all(|&w| w == 0))
        })
    };
    let row_sum = move || row().map(|r| r.iter().map(|&w| w as u32).sum::<u32>() as f32 / 255.0);
    let looked = move || {
        let chars: Vec<char> = i.with_value(|i| i.text.chars().collect());
        let Some(row) = row() else {
            return format!(
                "character {} is before the attention window (the last {t} characters, from {from})",
                selected.get()
            );
        };
        let mut keys: Vec<(usize, u8)> = row.into_iter().enumerate().filter(|k| k.1 > 0).collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let top: Vec<String> = keys
            .iter()
            .take(3)
            .map(|&(k, w)| {
                format!(
                    "{} at {} ({:.0} %)",
                    show_char(chars[from + k]),
                    from + k,
                    w as f32 / 2.55
                )
            })
            .collect();
        format!(
            "character {} ({}) looks most at: {}",
            selected.get(),
            show_char(chars[selected.get()]),
            top.join(", ")
        )
    };
    let pick = |n: usize, label: &'static str, sig: RwSignal<usize>, testid: &'static str| {
        view! {
            <label>{label}" "
                <select data-testid=testid on:change=move |ev| sig.set(event_target_value(&ev).parse().unwrap_or(0))>
                    {(0..n).map(|k| view! { <option value=k.to_string()>{k.to_string()}</option> }).collect_view()}
                </select>
            </label>
        }
    };
    view! {
        <div class="attention" data-testid="attention" data-layer=move || layer.get() data-head=move || head.get()
            data-row-sum=row_sum
            data-upper-zero=move || upper_zero().to_string()>
            <div class="chart-controls">
                {pick(layers, "layer", layer, "attention-layer")}
                {pick(heads, "head", head, "attention-head")}
                <Help topic="attention" label="the attention map" controls="attention-layer attention-head" />
            </div>
            <canvas class="heatmap" node_ref=canvas data-testid="attention-canvas" role="img"
                aria-label=move || format!("attention weights of layer {} head {}: queries down, keys across", layer.get(), head.get())></canvas>
            <p class="muted" data-testid="attention-row">{looked}</p>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_pixels() {
        assert_eq!(confidence_class(0.9), "conf-4");
        assert_eq!(confidence_class(0.01), "conf-0");
        assert_eq!(show_char('\n'), "↵ (new line)");
        let px = heat_pixels(&[0, 255]);
        assert_eq!(px.len(), 8);
        assert_eq!(&px[4..8], &[255, 153, 55, 255]);
        assert_eq!(px[3], 255);
    }
}
