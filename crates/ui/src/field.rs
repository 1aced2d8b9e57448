//! The labelled text field shared by the training panel's hyper-parameters
//! and the sample panel's decoding settings.

use crate::help::Help;
use leptos::prelude::*;

/// A labelled text field bound to a signal, with its hint shown on hover
/// (an absent hint renders `title=""`) and its "?" explainer (topic: the
/// test id); the training panel's hyper-parameters and the sample panel's
/// decoding settings.
#[component]
pub(crate) fn Field(
    /// `data-testid` of the input.
    testid: &'static str,
    /// The label shown.
    label: &'static str,
    /// Text of the field.
    value: RwSignal<String>,
    /// Shown on hover.
    #[prop(optional)]
    hint: &'static str,
) -> impl IntoView {
    view! {
        // `for`: the "?" button inside the label must not become its control.
        <label class="field" title=hint for=format!("field-{testid}")>
            <span>{label} <Help topic=testid label=label /></span>
            <input type="text" inputmode="decimal" spellcheck="false" id=format!("field-{testid}") aria-label=label
                data-testid=testid bind:value=value />
        </label>
    }
}
