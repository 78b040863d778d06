//! What was received, unmasked, for a user an admin gave raw access: shown
//! only when they ask, and each look is in the audit log. Everyone else
//! sees the masked copy only, and no button.

use super::ErrorNote;
use crate::api::{raw_callback, raw_refused};
use crate::console::RawView;
use crate::i18n::tr;
use crate::types::Lang;
use leptos::prelude::*;

/// Whose raw copy a section shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawOf {
    Callback,
    Refused,
}

#[component]
pub fn RawSection(id: String, of: RawOf, lang: Lang) -> impl IntoView {
    let look = Action::new(move |id: &String| {
        let id = id.clone();
        async move {
            match of {
                RawOf::Callback => raw_callback(id).await,
                RawOf::Refused => raw_refused(id).await,
            }
        }
    });
    let shown = move || look.value().get();
    view! {
        <section class="card" id="raw">
            <h2>{tr(lang, "Unmasked", "未脱敏原文")}</h2>
            <p class="hint">{tr(
                lang,
                "You have raw access: the copy as received, personal data included. Each look is recorded in the audit log.",
                "您有查看原文的权限：按接收时的原样显示，包括个人数据。每次查看都会记入审计日志。",
            )}</p>
            <button type="button" id="show-raw" on:click=move |_| { look.dispatch(id.clone()); }>
                {tr(lang, "Show unmasked", "显示原文")}
            </button>
            {move || match shown() {
                None => ().into_any(),
                Some(Err(e)) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                Some(Ok(raw)) => view! { <RawCopy raw=raw/> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn RawCopy(raw: RawView) -> impl IntoView {
    view! {
        <table class="grid" id="raw-headers">
            <tbody>
                {raw.headers.into_iter().map(|(k, v)| view! { <tr><th>{k}</th><td><code>{v}</code></td></tr> }).collect_view()}
            </tbody>
        </table>
        <pre id="raw-payload">{raw.body}</pre>
    }
}
