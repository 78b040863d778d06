//! Payments: search (payment, order or txn id; status; provider; amount;
//! day) and one payment's whole record — state history, callbacks,
//! effects, outbox messages with their deliveries, refunds and the refund
//! ledger, provider calls, tickets, amount adjustments.

use super::cells::{AmountCell, IdText, When, use_zone};
use super::{ErrorNote, Frame, Viewer, query_filter};
use crate::api::{list_payments, show_payment};
use crate::codes::{Code, Codes, PAYMENT_STATUSES};
use crate::console::{Line, PaymentFilter, PaymentPage, PaymentView};
use crate::filter::QueryFilter;
use crate::i18n::{Msg, in_zone, tr};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

#[component]
pub fn PaymentsPage() -> impl IntoView {
    let filter = query_filter::<PaymentFilter>();
    let page = Resource::new(filter, list_payments);
    view! {
        <Frame allow=Role::ALL>
            <PaymentsBody page=page/>
        </Frame>
    }
}

#[component]
pub fn PaymentPage() -> impl IntoView {
    let params = use_params_map();
    let no = move || params.read().get("no").unwrap_or_default();
    let view_of = Resource::new(no, show_payment);
    view! {
        <Frame allow=Role::ALL>
            <PaymentBody view_of=view_of/>
        </Frame>
    }
}

#[component]
fn PaymentsBody(page: super::Loaded<PaymentPage>) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let filter = query_filter::<PaymentFilter>();
    let title = Msg::Payments.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || {
            let f = filter();
            view! {
                <form method="get" action="/payments" class="row card" id="payment-filters">
                    <label>{tr(lang, "Payment, order or txn id", "支付单号、订单号或渠道流水号")}<input name="q" id="p-q" size="22" value=f.q.clone()/></label>
                    <label>{Msg::Status.text(lang)}
                        <select name="status" id="p-status">
                            <option value="">{Msg::Any.text(lang)}</option>
                            {PAYMENT_STATUSES.iter().map(|s| view! {
                                <option value=*s selected=f.status.as_deref() == Some(*s)>{Codes::PaymentStatus.shown(s, lang)}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    <label>{Msg::Provider.text(lang)}<input name="provider" id="p-provider" size="10" value=f.provider.clone()/></label>
                    <label>{Msg::Amount.text(lang)}<input name="amount" id="p-amount" size="8" placeholder="66.60" value=f.amount.clone()/></label>
                    <label>{tr(lang, "Created on", "创建日")}<input type="date" name="day" id="p-day" value=f.day.clone()/></label>
                    <button type="submit" id="p-search">{Msg::Search.text(lang)}</button>
                    <a href="/payments">{Msg::Clear.text(lang)}</a>
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
fn List(p: PaymentPage, f: PaymentFilter, lang: Lang) -> impl IntoView {
    let empty = p.items.is_empty().then(|| {
        super::empty::empty_note(
            super::empty::narrowed(&f),
            ("payments", "支付单"),
            "/payments",
            [
                (
                    "No payments yet: merchants create them through the API, and their results arrive as callbacks.",
                    "尚无支付单：商户通过 API 创建支付单，结果经回调送达。",
                ),
                ("See the callbacks.", "查看回调。"),
            ],
            "/callbacks",
            lang,
        )
    });
    let zone = use_zone();
    let next = p
        .next
        .clone()
        .map(|n| format!("/payments?{}", f.query_with_after(Some(&n))));
    view! {
        <table class="grid compact" id="payments">
            <thead><tr>
                <th>{Msg::Payment.text(lang)}</th>
                <th>{Msg::Order.text(lang)}</th>
                <th>{Msg::Provider.text(lang)}</th>
                <th>{Msg::TxnId.text(lang)}</th>
                <th class="amount">{Msg::Amount.text(lang)}</th>
                <th>{Msg::Status.text(lang)}</th>
                <th>{in_zone(lang, "Created", "创建时间", &zone)}</th>
            </tr></thead>
            <tbody>
                {p.items.into_iter().map(|x| view! {
                    <tr data-payment=x.payment_no.clone() data-status=x.status.clone()>
                        <td><IdText id=x.payment_no.clone() href=format!("/payments/{}", x.payment_no) link_class="open-payment" head=12 lang=lang/></td>
                        <td><IdText id=x.order_no.clone() head=12 lang=lang/></td>
                        <td>{x.provider.clone()}</td>
                        <td><IdText id=x.provider_txn_id.clone().unwrap_or_default() head=12 lang=lang/></td>
                        <AmountCell amount=Some(x.amount.clone())/>
                        <td><Code set=Codes::PaymentStatus code=x.status.clone() lang=lang/> {x.held.then(|| view! { " " <span class="held">{tr(lang, "held", "冻结")}</span> })}</td>
                        <td class="when"><When at=x.created_at zone=zone.clone()/></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
    }
}

#[component]
fn PaymentBody(view_of: super::Loaded<PaymentView>) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    view! {
        <Title text=format!("{} · {}", Msg::Payment.text(lang), Msg::AppName.text(lang))/>
        <p><a href="/payments">{tr(lang, "← All payments", "← 全部支付单")}</a></p>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                match view_of.await {
                    Ok(v) => view! { <Record v=v lang=lang/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Lines(
    id: &'static str,
    title: &'static str,
    lines: Vec<Line>,
    /// A link below the lines: where to see all of them (href, words).
    #[prop(optional)]
    more: Option<(String, &'static str)>,
) -> impl IntoView {
    let zone = use_zone();
    view! {
        <section class="card" id=id>
            <h2>{title} " (" {lines.len()} ")"</h2>
            <table class="grid">
                <tbody>
                    {lines.into_iter().map(|l| view! {
                        <tr>
                            <td class="when"><When at=l.at zone=zone.clone()/></td>
                            <td class="what">{match l.link {
                                Some(href) => view! { <a href=href>{l.what.clone()}</a> }.into_any(),
                                None => view! { <span>{l.what.clone()}</span> }.into_any(),
                            }}</td>
                            <td>{l.detail}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            {more.map(|(href, words)| view! { <p><a class="more" href=href>{words}</a></p> })}
        </section>
    }
}

#[component]
fn Record(v: PaymentView, lang: Lang) -> impl IntoView {
    let s = v.summary.clone();
    let zone = use_zone();
    view! {
        <section class="card" id="payment" data-status=s.status.clone()>
            <h1>{s.payment_no.clone()} " · " <span id="payment-status">{s.status.clone()}</span></h1>
            <dl class="facts">
                <dt>{Msg::Order.text(lang)}</dt><dd>{s.order_no.clone()}</dd>
                <dt>{Msg::Provider.text(lang)}</dt><dd>{s.provider.clone()}</dd>
                <dt>{Msg::TxnId.text(lang)}</dt><dd>{s.provider_txn_id.clone().unwrap_or_default()}</dd>
                <dt>{Msg::Amount.text(lang)}</dt><dd id="payment-amount">{s.amount.clone()}</dd>
                <dt>{tr(lang, "Refunded", "已退款")}</dt><dd>{v.refunded.clone()}</dd>
                <dt>{in_zone(lang, "Created / paid", "创建 / 支付", &zone)}</dt>
                <dd>{zone.minutes(s.created_at)} " / " {s.paid_at.map(|at| zone.minutes(at)).unwrap_or_default()}</dd>
                <dt>{tr(lang, "Version", "版本")}</dt><dd>{v.version}</dd>
                {v.hold_reason.clone().map(|h| view! { <dt>{Msg::Held.text(lang)}</dt><dd class="held">{h}</dd> })}
            </dl>
        </section>
        <Lines id="history" title=tr(lang, "State history", "状态历史") lines=v.history.clone()/>
        <section class="card" id="payment-callbacks">
            <h2>{Msg::Callbacks.text(lang)} " (" {v.callbacks.len()} ")"</h2>
            <table class="grid">
                <tbody>
                    {v.callbacks.iter().map(|c| view! {
                        <tr data-status=c.processing_status.clone()>
                            <td class="when"><When at=c.received_at zone=zone.clone()/></td>
                            <td><a href=format!("/callbacks/{}", c.id)>{c.callback_id.clone()}</a></td>
                            <td>{c.callback_status.clone()}</td>
                            <td>{c.verify_result.clone()}</td>
                            <td>{c.processing_status.clone()} " " {c.outcome.clone().unwrap_or_default()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <Lines id="effects" title=tr(lang, "Effects", "下游效果") lines=v.effects.clone()/>
        <Lines id="outbox" title=tr(lang, "Outbox messages and deliveries", "出站消息与投递") lines=v.outbox.clone()
            more=(
                format!("/outbox?payment={}", crate::tickets::encode(&s.payment_no)),
                tr(lang, "Its messages on the outbox page", "在出站消息页查看其消息"),
            )/>
        <Lines id="refunds" title=tr(lang, "Refunds", "退款") lines=v.refunds.clone()/>
        <Lines id="ledger" title=tr(lang, "Refund ledger", "退款台账") lines=v.ledger.clone()/>
        <Lines id="queries" title=tr(lang, "Provider calls (create, status queries, refunds)", "渠道调用（下单、查询、退款）") lines=v.queries.clone()/>
        <Lines id="payment-tickets" title=Msg::Discrepancies.text(lang) lines=v.discrepancies.clone()/>
        <Lines id="adjustments" title=tr(lang, "Amount adjustments", "金额调整") lines=v.adjustments.clone()/>
    }
}
