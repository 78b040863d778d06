//! What an empty list says: why it is empty, and a link to what to do —
//! the filter to clear when one narrows it, else where its rows come from.

use crate::filter::QueryFilter;
use crate::types::Lang;
use leptos::prelude::*;

/// Does the filter narrow the list (any key but the page cursor)?
pub fn narrowed<F: QueryFilter>(f: &F) -> bool {
    !f.cleaned().query_with_after(None).is_empty()
}

/// An empty list's note: `why` and a link to `href` saying `action`.
#[component]
pub fn Empty(
    #[prop(into)] why: String,
    #[prop(into)] href: String,
    #[prop(into)] action: String,
    #[prop(default = "empty-list")] id: &'static str,
) -> impl IntoView {
    view! {
        <p class="empty" id=id role="status">
            {why} " " <a href=href class="empty-action">{action}</a>
        </p>
    }
}

/// The note of a list its filter left empty: `noun` is what it lists
/// (plural in English, as a Chinese noun), `clear` the unfiltered list.
#[component]
pub fn EmptyFiltered(
    noun: (&'static str, &'static str),
    clear: &'static str,
    lang: Lang,
) -> impl IntoView {
    let (why, action) = match lang {
        Lang::En => (
            format!("No {} match this filter.", noun.0),
            "Clear the filter to see them all.",
        ),
        Lang::Zh => (
            format!("没有符合此筛选条件的{}。", noun.1),
            "清除筛选以查看全部。",
        ),
    };
    view! { <Empty why=why href=clear action=action/> }
}

/// A list's note when it is empty: filtered, or with nothing yet (`why`,
/// `href`, `action` then say so, each `(English, Chinese)`).
pub fn empty_note(
    filtered: bool,
    noun: (&'static str, &'static str),
    clear: &'static str,
    unfiltered: [(&'static str, &'static str); 2],
    href: &'static str,
    lang: Lang,
) -> AnyView {
    if filtered {
        view! { <EmptyFiltered noun=noun clear=clear lang=lang/> }.into_any()
    } else {
        let pick = |(en, zh): (&'static str, &'static str)| match lang {
            Lang::En => en,
            Lang::Zh => zh,
        };
        let [why, action] = unfiltered;
        view! { <Empty why=pick(why) href=href action=pick(action)/> }.into_any()
    }
}
