//! A submit asked twice, in the page: the form's button puts the question
//! beside it with Confirm and Cancel, and only Confirm submits the form
//! (Enter in one of its fields submits nothing).
//! In the page rather than `window.confirm`, so it speaks the console's
//! language and a test can answer it.

use crate::i18n::Msg;
use crate::types::Lang;
use leptos::prelude::*;

/// The button that asks before its form is sent. Until the page has
/// hydrated it does nothing: nothing is sent unasked.
#[component]
pub fn ConfirmSubmit(
    /// The button's words.
    #[prop(into)]
    label: Signal<String>,
    /// What Confirm will do, as a question.
    #[prop(into)]
    question: Signal<String>,
    lang: Lang,
    /// Classes of the button (pages and tests find it by them).
    #[prop(optional)]
    class: &'static str,
    #[prop(optional)] id: Option<&'static str>,
    /// Nothing to ask about yet: the button stays off.
    #[prop(into, optional)]
    disabled: Signal<bool>,
) -> impl IntoView {
    let asking = RwSignal::new(false);
    // Whatever made the question moot (a choice cleared) closes it. Set
    // only when open: a write while the page hydrates would redraw it.
    Effect::new(move |_| {
        if disabled.get() && asking.get_untracked() {
            asking.set(false);
        }
    });
    view! {
        // The form's first submit button, and disabled: Enter in a field
        // (implicit submission) then sends nothing unasked.
        <button type="submit" class="implicit-guard" disabled hidden tabindex="-1" aria-hidden="true"></button>
        <button type="button" class=class id=id
            disabled=move || disabled.get() || asking.get()
            on:click=move |ev| {
                if form_ready(&ev) {
                    asking.set(true);
                }
            }>
            {move || label.get()}
        </button>
        <Show when=move || asking.get()>
            <span class="confirm" role="alertdialog">
                <span class="confirm-question">{move || question.get()}</span> " "
                // The box closes once the click has submitted the form: a
                // button taken out of the page first would submit nothing.
                <button type="submit" class="confirm-yes"
                    on:click=move |_| set_timeout(move || asking.set(false), std::time::Duration::ZERO)>
                    {Msg::Confirm.text(lang)}
                </button> " "
                <button type="button" class="confirm-no" on:click=move |_| asking.set(false)>
                    {Msg::Cancel.text(lang)}
                </button>
            </span>
        </Show>
    }
}

/// The button's form has what it requires (the browser says what is
/// missing); a button outside a form is always ready.
fn form_ready(ev: &leptos::ev::MouseEvent) -> bool {
    #[cfg(feature = "hydrate")]
    {
        use leptos::web_sys::{Element, HtmlFormElement};
        use wasm_bindgen::JsCast;
        ev.target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .and_then(|el| el.closest("form").ok().flatten())
            .and_then(|f| f.dyn_into::<HtmlFormElement>().ok())
            .is_none_or(|f| f.report_validity())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = ev;
        true
    }
}
