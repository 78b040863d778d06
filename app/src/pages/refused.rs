//! Refused webhooks: every webhook Reckon did not believe or
//! could not read, newest first, filtered by provider, kind, diagnosis and
//! days; the counts per reason per hour of the last 24 hours; one with its
//! headers masked and the first bytes of its body. A diagnosis names the
//! likely cause (a clock off, a key or secret rotated on one side only, a
//! body changed on the way) in the words of the page's language, with the
//! detail Reckon wrote when it refused it.

use super::cells::use_zone;
use super::raw::{RawOf, RawSection};
use super::{ErrorNote, Frame, Viewer, query_filter};
use crate::api::{list_refused, show_refused};
use crate::filter::QueryFilter;
use crate::i18n::{Msg, in_zone, tr};
use crate::refused::{DIAGNOSES, REFUSAL_KINDS, RefusedDetail, RefusedFilter, RefusedPage};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

/// A diagnosis or a refusal kind in the page's language.
pub fn reason_name(reason: &str, lang: Lang) -> String {
    let (en, zh) = match reason {
        "timestamp_skew" => ("Timestamp skew", "时间戳偏差"),
        "unknown_serial" => ("Unknown platform serial", "未知平台证书序列号"),
        "retired_secret" => (
            "Signed with a retired secret (rotated on one side only)",
            "使用已停用密钥签名（仅一方轮换了密钥）",
        ),
        "body_changed" => ("Body changed in transit", "报文在传输中被改动"),
        "body_seen_verified" => (
            "Same body verified before; signature not its own",
            "相同报文曾验签通过，签名与之不符",
        ),
        "unverified" => ("Signature not verified", "验签未通过"),
        "malformed" => ("Unreadable", "无法解析"),
        "content_type" => ("Wrong content type", "内容类型不符"),
        "too_large" => ("Too large", "报文过大"),
        other => return other.to_owned(),
    };
    match lang {
        Lang::En => en.to_owned(),
        Lang::Zh => zh.to_owned(),
    }
}

#[component]
pub fn RefusedListPage() -> impl IntoView {
    let filter = query_filter::<RefusedFilter>();
    let page = Resource::new(filter, list_refused);
    view! {
        <Frame allow=Role::ALL>
            <RefusedBody page=page/>
        </Frame>
    }
}

#[component]
pub fn RefusedOnePage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let detail = Resource::new(id, show_refused);
    view! {
        <Frame allow=Role::ALL>
            <RefusedOneBody detail=detail/>
        </Frame>
    }
}

/// The dashboard's line: refused webhooks of the last 24 hours, linked.
#[component]
pub fn RefusedOnDashboard(count: i64, lang: Lang) -> impl IntoView {
    view! {
        <section class="card" id="refused-webhooks">
            <h2>{Msg::RefusedWebhooks.text(lang)} " · " {tr(lang, "last 24 h", "最近 24 小时")} ": "
                <a href="/refused" id="refused-count">{count}</a></h2>
        </section>
    }
}

#[component]
fn RefusedBody(page: super::Loaded<RefusedPage>) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let filter = query_filter::<RefusedFilter>();
    let title = Msg::RefusedWebhooks.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || {
            let f = filter();
            view! {
                <form method="get" action="/refused" class="row card" id="refused-filters">
                    <label>{Msg::Provider.text(lang)}<input name="provider" id="r-provider" size="10" value=f.provider.clone()/></label>
                    <label>{tr(lang, "Kind", "类型")}
                        <select name="kind" id="r-kind">
                            <option value="">{Msg::Any.text(lang)}</option>
                            {REFUSAL_KINDS.iter().map(|k| view! {
                                <option value=*k selected=f.kind.as_deref() == Some(*k)>{reason_name(k, lang)}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    <label>{Msg::Diagnosis.text(lang)}
                        <select name="diagnosis" id="r-diagnosis">
                            <option value="">{Msg::Any.text(lang)}</option>
                            {DIAGNOSES.iter().map(|k| view! {
                                <option value=*k selected=f.diagnosis.as_deref() == Some(*k)>{reason_name(k, lang)}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    <label>{tr(lang, "From", "起")}<input type="date" name="from" id="r-from" value=f.from.clone()/></label>
                    <label>{tr(lang, "to (inclusive)", "至（含）")}<input type="date" name="to" id="r-to" value=f.to.clone()/></label>
                    <button type="submit" id="r-search">{Msg::Search.text(lang)}</button>
                    <a href="/refused">{Msg::Clear.text(lang)}</a>
                </form>
            }
        }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let f = filter();
                match page.await {
                    Ok(p) => view! { <List p=p f=f lang=lang/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn List(p: RefusedPage, f: RefusedFilter, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    let empty = p.items.is_empty().then(|| {
        super::empty::empty_note(
            super::empty::narrowed(&f),
            ("refused webhooks", "被拒回调"),
            "/refused",
            [
                (
                    "No refused webhooks: every webhook so far was signed and well formed.",
                    "没有被拒回调：迄今所有回调均验签通过且格式正确。",
                ),
                ("See the callbacks taken.", "查看已接收的回调。"),
            ],
            "/callbacks",
            lang,
        )
    });
    let next = p
        .next
        .clone()
        .map(|n| format!("/refused?{}", f.query_with_after(Some(&n))));
    view! {
        <section class="card" id="refused-hourly">
            <h2>{tr(lang, "Per hour and reason, last 24 hours", "最近 24 小时按小时和原因统计")}</h2>
            {p.hourly.is_empty().then(|| view! { <p class="muted">{tr(lang, "None.", "无。")}</p> })}
            <table class="grid compact">
                <tbody>
                    {p.hourly.iter().map(|h| view! {
                        <tr data-reason=h.reason.clone()>
                            <td class="when">{zone.minutes(h.hour)}</td>
                            <td>{reason_name(&h.reason, lang)}</td>
                            <td class="num">{h.count}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <table class="grid compact" id="refused">
            <thead><tr>
                <th>{in_zone(lang, "Received", "接收时间", &zone)}</th>
                <th>{Msg::Provider.text(lang)}</th>
                <th>{Msg::Reason.text(lang)}</th>
                <th>{Msg::Diagnosis.text(lang)}</th>
                <th>{Msg::SourceAddress.text(lang)}</th>
            </tr></thead>
            <tbody>
                {p.items.into_iter().map(|r| view! {
                    <tr data-refused=r.id.clone() data-kind=r.kind.clone() data-diagnosis=r.diagnosis.clone().unwrap_or_default()>
                        <td class="when"><a class="open-refused" href=format!("/refused/{}", r.id)>{zone.minutes(r.received_at)}</a></td>
                        <td>{r.provider.clone()}</td>
                        <td>{reason_name(&r.kind, lang)} <div class="muted">{r.reason.clone()}</div></td>
                        <td class="diagnosis">
                            {r.diagnosis.as_deref().map(|d| view! { <strong>{reason_name(d, lang)}</strong> })}
                            {r.diagnosis_detail.clone().map(|d| view! { <div class="muted">{d}</div> })}
                        </td>
                        <td>{r.source_addr.clone().unwrap_or_default()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
    }
}

#[component]
fn RefusedOneBody(detail: super::Loaded<RefusedDetail>) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let view_raw = user.view_raw;
    view! {
        <Title text=format!("{} · {}", Msg::RefusedWebhooks.text(lang), Msg::AppName.text(lang))/>
        <p><a href="/refused">{tr(lang, "← All refused webhooks", "← 全部被拒回调")}</a></p>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(d) => {
                        let id = d.summary.id.clone();
                        view! {
                            <Detail d=d lang=lang/>
                            {view_raw.then(|| view! { <RawSection id=id of=RawOf::Refused lang=lang/> })}
                        }.into_any()
                    }
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Detail(d: RefusedDetail, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    let s = d.summary.clone();
    view! {
        <section class="card" id="refused-one" data-kind=s.kind.clone() data-diagnosis=s.diagnosis.clone().unwrap_or_default()>
            <h1>{Msg::RefusedWebhooks.text(lang)} " · " {s.provider.clone()}</h1>
            <dl class="facts">
                <dt>{in_zone(lang, "Received", "接收时间", &zone)}</dt><dd>{zone.minutes(s.received_at)}</dd>
                <dt>{Msg::Reason.text(lang)}</dt><dd id="reason">{reason_name(&s.kind, lang)} " — " {s.reason.clone()}</dd>
                <dt>{Msg::Diagnosis.text(lang)}</dt>
                <dd id="diagnosis">{s.diagnosis.as_deref().map(|k| view! { <strong>{reason_name(k, lang)}</strong> })}
                    {s.diagnosis_detail.clone().map(|t| view! { <p>{t}</p> })}</dd>
                <dt>{Msg::SourceAddress.text(lang)}</dt><dd id="source">{s.source_addr.clone().unwrap_or_default()}</dd>
                <dt>{tr(lang, "Payment it names (not trusted)", "报文声称的支付单（未经验证）")}</dt><dd>{s.payment_no.clone().unwrap_or_default()}</dd>
                <dt>{Msg::TraceId.text(lang)}</dt><dd>{s.trace_id.clone()}</dd>
                <dt>"SHA-256"</dt><dd><code>{d.body_hash.clone()}</code></dd>
            </dl>
        </section>
        <section class="card">
            <h2>{tr(lang, "Headers (masked)", "请求头（已脱敏）")}</h2>
            <table class="grid" id="headers">
                <tbody>
                    {d.headers.iter().map(|(k, v)| view! { <tr><th>{k.clone()}</th><td><code>{v.clone()}</code></td></tr> }).collect_view()}
                </tbody>
            </table>
            <h2>{tr(lang, "Body (masked, first bytes)", "报文（已脱敏，前若干字节）")} " · " {s.body_len} " B"</h2>
            <pre id="payload">{d.body.clone()}</pre>
        </section>
    }
}
