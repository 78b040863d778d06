//! The audit log: newest first, filtered by actor, action, object and
//! time, one keyset page at a time. Each entry's time is in the business
//! zone, its object links to its page where it has one, its before and
//! after read with amounts in major units; it shows the start of its hash
//! (`reckon audit verify` walks the chain).

use super::cells::use_zone;
use super::{Frame, Viewer, shown};
use crate::api::list_audit;
use crate::i18n::{Msg, in_zone, tr};
use crate::readable::readable_json;
use crate::tickets::{AuditFilter, encode};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

#[component]
pub fn AuditPage() -> impl IntoView {
    let page = Resource::new(audit_filter(), list_audit);
    view! {
        <Frame allow=&[Role::Supervisor, Role::Admin]>
            <AuditBody page=page/>
        </Frame>
    }
}

fn href(f: &AuditFilter, before: Option<i64>) -> String {
    let mut parts = Vec::new();
    for (k, v) in [
        ("actor", &f.actor),
        ("action", &f.action),
        ("object", &f.object),
        ("from", &f.from),
        ("to", &f.to),
    ] {
        if let Some(v) = v {
            parts.push(format!("{k}={}", encode(v)));
        }
    }
    if let Some(b) = before {
        parts.push(format!("before={b}"));
    }
    format!("/audit?{}", parts.join("&"))
}

/// The audit log's filter, as the address has it.
fn audit_filter() -> impl Fn() -> AuditFilter + Copy + Send + Sync + 'static {
    let query = use_query_map();
    move || {
        let q = query.read();
        let get = |k: &str| q.get(k).filter(|v| !v.trim().is_empty());
        AuditFilter {
            actor: get("actor"),
            action: get("action"),
            object: get("object"),
            from: get("from"),
            to: get("to"),
            before: get("before").and_then(|b| b.parse().ok()),
        }
    }
}

#[component]
fn AuditBody(page: super::Loaded<crate::tickets::AuditPage>) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let filter = audit_filter();
    let zone = StoredValue::new(use_zone());
    let title = tr(lang, "Audit log", "审计日志");
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p class="hint">{tr(lang,
            "Append-only; each entry carries the hash of the one before, so an edited or deleted entry breaks the chain (reckon audit verify).",
            "只追加；每条记录包含上一条的哈希，任何修改或删除都会使链断裂（reckon audit verify）。")}</p>
        {move || view! { <AuditForm f=filter() lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let f = filter();
                let zone = zone.get_value();
                shown(page.await.map(|p| {
                    let next = p.next.map(|n| href(&f, Some(n)));
                    let empty = p.items.is_empty().then(|| super::empty::empty_note(
                        [&f.actor, &f.action, &f.object, &f.from, &f.to].iter().any(|v| v.is_some()),
                        ("entries", "审计记录"),
                        "/audit",
                        [
                            (
                                "Nothing audited yet: every change a person makes in Reckon is written here.",
                                "尚无审计记录：人员在 Reckon 中的每项变更都会记录于此。",
                            ),
                            ("See the users.", "查看用户。"),
                        ],
                        "/users",
                        lang,
                    ));
                    view! {
                        <table class="grid" id="audit">
                            <thead><tr>
                                <th>"#"</th>
                                <th>{in_zone(lang, "Time", "时间", &zone)}</th>
                                <th>{tr(lang, "Actor", "操作人")}</th>
                                <th>{tr(lang, "Action", "动作")}</th>
                                <th>{tr(lang, "Object", "对象")}</th>
                                <th>{Msg::Before.text(lang)}</th>
                                <th>{Msg::After.text(lang)}</th>
                                <th>{tr(lang, "Hash", "哈希")}</th>
                            </tr></thead>
                            <tbody>
                                {p.items.into_iter().map(|e| {
                                    let object = format!("{}:{}", e.object_type, e.object_id);
                                    let json = |text: Option<String>| text.map(|t| readable_json(&t, &zone)).unwrap_or_default();
                                    view! {
                                        <tr data-action=e.action.clone() data-seq=e.seq>
                                            <td>{e.seq}</td>
                                            <td class="when" title=format!("{} UTC", crate::format::utc_minutes(e.at))>{zone.minutes(e.at)}</td>
                                            <td class="actor">{e.actor.clone()}</td>
                                            <td class="action">{e.action.clone()}</td>
                                            <td class="object">{match e.link {
                                                Some(href) => view! { <a href=href class="object-link">{object}</a> }.into_any(),
                                                None => view! { <span>{object}</span> }.into_any(),
                                            }}</td>
                                            <td><pre class="json">{json(e.before)}</pre></td>
                                            <td><pre class="json">{json(e.after)}</pre></td>
                                            <td><code>{e.hash.chars().take(12).collect::<String>()}</code></td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                        {empty}
                        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
                    }
                }), lang)
            })}
        </Transition>
    }
}

#[component]
fn AuditForm(f: AuditFilter, lang: Lang) -> impl IntoView {
    // The days are the business zone's, as on every page.
    let zone = use_zone();
    view! {
        <form method="get" action="/audit" class="row card" id="audit-filters">
            <label>{tr(lang, "Actor", "操作人")}<input name="actor" id="a-actor" value=f.actor.clone()/></label>
            <label>{tr(lang, "Action (e.g. fix or fix.approve)", "动作（如 fix 或 fix.approve）")}<input name="action" id="a-action" value=f.action.clone()/></label>
            <label>{tr(lang, "Object (type or type:id)", "对象（类型 或 类型:编号）")}<input name="object" id="a-object" value=f.object.clone()/></label>
            <label>{in_zone(lang, "From", "起", &zone)}<input type="date" name="from" id="a-from" value=f.from.clone()/></label>
            <label>{in_zone(lang, "To", "止", &zone)}<input type="date" name="to" id="a-to" value=f.to.clone()/></label>
            <button type="submit">{Msg::Filter.text(lang)}</button>
            <a href="/audit">{Msg::Clear.text(lang)}</a>
        </form>
    }
}
