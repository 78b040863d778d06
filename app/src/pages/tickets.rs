//! The discrepancy list: filters (a plain GET form), counts per status and
//! class (each a link to that filter), most severe then oldest first, one
//! keyset page at a time, and the CSV export of the whole filtered set.

use super::cells::{AmountCell, IdText};
use super::{ErrorNote, Frame, Viewer, query_filter};
use crate::ageing::AgeBucket;
use crate::api::list_tickets;
use crate::codes::{Code, Codes};
use crate::filter::QueryFilter;
use crate::format::{utc_minutes, utc_short};
use crate::i18n::{Msg, ticket_status, tr};
use crate::tickets::{CLASSES, SEVERITIES, STATUSES, TicketFilter, TicketPage};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn TicketsPage() -> impl IntoView {
    view! {
        <Frame allow=Role::ALL>
            <TicketsBody/>
        </Frame>
    }
}

/// A ticket's page, carrying the list's filters (and page) so the page can
/// walk the same queue and lead back to it.
pub fn ticket_href(id: &str, f: &TicketFilter) -> String {
    let q = f.query_with_after(f.after.as_deref());
    if q.is_empty() {
        format!("/tickets/{id}")
    } else {
        format!("/tickets/{id}?{q}")
    }
}

pub fn list_href(f: &TicketFilter) -> String {
    let q = f.query_with_after(f.after.as_deref());
    if q.is_empty() {
        "/tickets".into()
    } else {
        format!("/tickets?{q}")
    }
}

#[component]
fn TicketsBody() -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let filter = query_filter::<TicketFilter>();
    let page = Resource::new(filter, list_tickets);
    super::bulk::provide_picked();
    let title = Msg::Discrepancies.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || view! { <FilterForm f=filter() lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let f = filter();
                match page.await {
                    Ok(p) => view! { <Results page=p f=f lang=lang/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Choice(
    name: &'static str,
    options: &'static [&'static str],
    current: Option<String>,
    any: &'static str,
) -> impl IntoView {
    view! {
        <select name=name id=format!("f-{name}")>
            <option value="">{any}</option>
            {options.iter().map(|o| view! {
                <option value=*o selected=current.as_deref() == Some(*o)>{*o}</option>
            }).collect_view()}
        </select>
    }
}

#[component]
fn FilterForm(f: TicketFilter, lang: Lang) -> impl IntoView {
    let any = Msg::Any.text(lang);
    let csv = format!("/tickets.csv?{}", f.query_with_after(None));
    view! {
        <form method="get" action="/tickets" class="row card filters" id="ticket-filters">
            <label>{tr(lang, "Class", "差异类型")}<Choice name="class" options=CLASSES current=f.class.clone() any=any/></label>
            <label>{tr(lang, "Severity", "严重程度")}<Choice name="severity" options=SEVERITIES current=f.severity.clone() any=any/></label>
            <label>{Msg::Status.text(lang)}
                <select name="status" id="f-status">
                    <option value="">{any}</option>
                    {STATUSES.iter().map(|s| view! {
                        <option value=*s selected=f.status.as_deref() == Some(*s)>{ticket_status(s, lang)}</option>
                    }).collect_view()}
                </select>
            </label>
            <label>{Msg::Provider.text(lang)}<input name="provider" id="f-provider" size="10" value=f.provider.clone()/></label>
            <label>{Msg::BusinessDay.text(lang)}<input name="day" id="f-day" type="date" value=f.day.clone()/></label>
            <label>{tr(lang, "Run", "对账批次")}<input name="run" id="f-run" size="12" value=f.run.clone()/></label>
            <label>{tr(lang, "Owner (- = none)", "负责人（- 表示未分配）")}<input name="owner" id="f-owner" size="10" value=f.owner.clone()/></label>
            <label>{tr(lang, "Payment, order or txn id (or its start)", "支付单号、订单号或渠道流水号（或其开头）")}<input name="q" id="f-q" size="18" value=f.q.clone()/></label>
            <label>{Msg::Age.text(lang)}
                <select name="age" id="f-age">
                    <option value="">{any}</option>
                    {AgeBucket::ALL.into_iter().map(|b| view! {
                        <option value=b.as_str() selected=f.age.as_deref() == Some(b.as_str())>{b.label()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit" id="apply-filters">{Msg::Filter.text(lang)}</button>
            <a href="/tickets">{Msg::Clear.text(lang)}</a>
            <a href=csv id="export-csv" rel="external" download="reckon-tickets.csv">{tr(lang, "Export CSV", "导出 CSV")}</a>
        </form>
    }
}

#[component]
fn Results(page: TicketPage, f: TicketFilter, lang: Lang) -> impl IntoView {
    let counts = |pairs: Vec<(String, i64)>, key: &'static str, f: &TicketFilter| {
        pairs
            .into_iter()
            .map(|(value, n)| {
                let href = list_href(&f.with(key, Some(&value)));
                let label = match key {
                    "status" => ticket_status(&value, lang).to_owned(),
                    "class" => Codes::Class.shown(&value, lang),
                    _ => value.clone(),
                };
                view! { <a class="count" href=href data-count=format!("{key}:{value}")>{label} " " <strong>{n}</strong></a> }
            })
            .collect_view()
    };
    let next = page.next.clone().map(|n| {
        let mut g = f.clone();
        g.after = Some(n);
        list_href(&g)
    });
    let by_status = counts(page.by_status.clone(), "status", &f);
    let by_class = counts(page.by_class.clone(), "class", &f);
    let on_page: Vec<String> = page.items.iter().map(|t| t.id.clone()).collect();
    let empty = page.items.is_empty().then(|| {
        super::empty::empty_note(
            super::empty::narrowed(&f),
            ("discrepancies", "差异工单"),
            "/tickets",
            [
                (
                    "No discrepancies: every statement reconciled so far matched, or none has been reconciled yet.",
                    "没有差异工单：已对账的账单全部一致，或尚未对账。",
                ),
                ("Reconcile a statement on Runs.", "到“对账批次”对账。"),
            ],
            "/runs",
            lang,
        )
    });
    view! {
        <super::bulk::BulkBar f=f.clone() total=page.total lang=lang/>
        <section class="counts">
            <p id="ticket-total">{tr(lang, "Matching tickets:", "符合条件的工单：")} " " <strong>{page.total}</strong></p>
            <p class="by-status">{by_status}</p>
            <p class="by-class">{by_class}</p>
        </section>
        <table class="grid compact" id="tickets">
            <thead><tr>
                <th><super::bulk::PickPage ids=on_page/></th>
                <th>{tr(lang, "Sev.", "级别")}</th>
                <th>{tr(lang, "Class", "差异类型")}</th>
                <th>{Msg::Status.text(lang)}</th>
                <th>{Msg::Provider.text(lang)}</th>
                <th>{tr(lang, "Day", "业务日")}</th>
                <th>{Msg::Payment.text(lang)}</th>
                <th>{Msg::TxnId.text(lang)}</th>
                <th class="amount">{tr(lang, "Reckon", "本地")}</th>
                <th class="amount">{tr(lang, "Statement", "账单")}</th>
                <th>{Msg::Owner.text(lang)}</th>
                <th class="num">{Msg::Age.text(lang)}</th>
                <th>{Msg::FoundUtc.text(lang)}</th>
            </tr></thead>
            <tbody>
                {page.items.into_iter().map(|t| {
                    let href = ticket_href(&t.id, &f);
                    let age = t.age_days.map(|d| format!("{d} {}", Msg::AgeDays.text(lang))).unwrap_or_default();
                    view! {
                        <tr data-ticket=t.id.clone() data-class=t.class.clone() class=format!("sev-{}", t.severity.to_lowercase()) class:overdue=t.overdue>
                            <td><super::bulk::Pick id=t.id.clone()/></td>
                            <td><span class="badge"><Code set=Codes::Severity code=t.severity.clone() lang=lang/></span></td>
                            <td><a href=href class="open-ticket"><Code set=Codes::Class code=t.class.clone() lang=lang/></a></td>
                            <td class="status">{ticket_status(&t.status, lang)}</td>
                            <td>{t.provider.clone()}</td>
                            <td class="when">{t.business_date.clone().unwrap_or_default()}</td>
                            <td><IdText id=t.payment_no.clone().unwrap_or_default() lang=lang/></td>
                            <td><IdText id=t.provider_txn_id.clone().unwrap_or_default() lang=lang/></td>
                            <AmountCell amount=t.local_amount.clone()/>
                            <AmountCell amount=t.provider_amount.clone()/>
                            <td>{t.owner.clone().unwrap_or_default()}</td>
                            <td class="num age" data-age=t.age_days.map(|d| d.to_string())>
                                {age}
                                {t.overdue.then(|| view! { " " <span class="badge overdue-badge">{Msg::Overdue.text(lang)}</span> })}
                            </td>
                            <td class="when" title=utc_minutes(t.found_at)>{utc_short(t.found_at)}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|href| view! { <p><a href=href id="next-page">{tr(lang, "Next page →", "下一页 →")}</a></p> })}
    }
}
