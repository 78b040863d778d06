//! Table cells the lists share so they fit a laptop screen: a long id
//! shortened (the whole id in its title) with a button copying it, and an
//! amount right-aligned with its currency beside it.

use crate::format::{Zone, amount_parts, short_id};
use crate::i18n::Msg;
use crate::types::Lang;
use leptos::prelude::*;

/// The business time zone the session came with (the frame loaded the
/// session before the page's body): times are shown in it.
pub fn use_zone() -> Zone {
    use_context::<super::Ctx>()
        .and_then(|ctx| ctx.info.get_untracked())
        .and_then(Result::ok)
        .map(|info| info.zone)
        .unwrap_or_default()
}

/// A time in the business zone, `YYYY-MM-DD HH:MM` (the header names the
/// zone), with the instant in UTC for a machine and in the title.
#[component]
pub fn When(at: i64, zone: Zone, #[prop(optional)] short: bool) -> impl IntoView {
    let local = if short {
        zone.short(at)
    } else {
        zone.minutes(at)
    };
    let utc = crate::format::utc_minutes(at);
    view! { <time datetime=format!("{}Z", utc.replace(' ', "T")) title=format!("{utc} UTC")>{local}</time> }
}

/// Writes `text` to the clipboard (in the browser; nothing on the server).
fn copy_to_clipboard(text: &str) {
    #[cfg(feature = "hydrate")]
    {
        let clipboard = leptos::prelude::window().navigator().clipboard();
        // Fire and forget: the button says "copied" when the browser took it.
        let _ = clipboard.write_text(text);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = text;
}

/// An id shortened to `head…tail`, the whole in its title, with a copy
/// button; `href` makes the shortened id a link.
#[component]
pub fn IdText(
    id: String,
    #[prop(optional)] href: Option<String>,
    /// More classes of the link (pages and tests find rows' links by them).
    #[prop(optional)]
    link_class: Option<&'static str>,
    #[prop(default = 8)] head: usize,
    #[prop(default = 4)] tail: usize,
    lang: Lang,
) -> impl IntoView {
    if id.is_empty() {
        return ().into_any();
    }
    let short = short_id(&id, head, tail);
    let copied = RwSignal::new(false);
    let whole = id.clone();
    let text = match href {
        Some(h) => {
            let class = format!("id {}", link_class.unwrap_or_default());
            view! { <a href=h class=class title=id.clone()>{short}</a> }.into_any()
        }
        None => view! { <span class="id" title=id.clone()>{short}</span> }.into_any(),
    };
    view! {
        <span class="id-cell">
            {text}
            <button type="button" class="copy" data-copy=id.clone()
                title=move || if copied.get() { Msg::Copied.text(lang) } else { Msg::Copy.text(lang) }
                aria-label=Msg::Copy.text(lang)
                on:click=move |_| {
                    copy_to_clipboard(&whole);
                    copied.set(true);
                }>
                {move || if copied.get() {
                    view! { <span class="copied">"✓"</span> }.into_any()
                } else {
                    // Two sheets, drawn: no font is needed for the icon.
                    view! {
                        <svg viewBox="0 0 16 16" width="12" height="12" aria-hidden="true" fill="none" stroke="currentColor" stroke-width="1.5">
                            <rect x="5.5" y="5.5" width="8" height="8" rx="1"/>
                            <path d="M10.5 3.5v-1a1 1 0 0 0-1-1h-6a1 1 0 0 0-1 1v6a1 1 0 0 0 1 1h1"/>
                        </svg>
                    }.into_any()
                }}
            </button>
        </span>
    }
    .into_any()
}

/// An amount cell: the figure right-aligned, its currency after it.
#[component]
pub fn AmountCell(amount: Option<String>) -> impl IntoView {
    let text = amount.unwrap_or_default();
    let (figure, currency) = amount_parts(&text);
    let (figure, currency) = (figure.to_owned(), currency.to_owned());
    view! {
        <td class="amount">
            <span class="figure">{figure}</span>
            {(!currency.is_empty()).then(|| view! { " " <span class="cur">{currency}</span> })}
        </td>
    }
}
