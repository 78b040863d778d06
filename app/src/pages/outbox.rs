//! The outbox: every message Reckon sent or will send, each
//! sink's delivery (delivered, retrying, DEAD) filtered by event type,
//! sink, status, payment and time; a message's payload and every attempt;
//! resending one message, many by the filter, or a sink's DEAD deliveries
//! after an outage (operators and supervisors), as jobs the page follows.

use super::callbacks::poll_while;
use super::cells::{IdText, When, use_zone};
use super::{ErrorNote, Frame, Viewer, action_error, query_filter, url_error};
use crate::api::{
    BulkResendOutbox, CancelOutboxJob, RecoverOutbox, ResendOutbox, list_outbox, outbox_jobs,
    show_outbox,
};
use crate::filter::QueryFilter;
use crate::i18n::{Msg, in_zone, tr};
use crate::outbox::{
    DELIVERY_STATUSES, OutboxDelivery, OutboxDetail, OutboxFilter, OutboxJob, OutboxPage,
};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

#[component]
pub fn OutboxPage() -> impl IntoView {
    let filter = query_filter::<OutboxFilter>();
    let page = Resource::new(filter, list_outbox);
    let bulk = ServerAction::<BulkResendOutbox>::new();
    let recover = ServerAction::<RecoverOutbox>::new();
    let cancel = ServerAction::<CancelOutboxJob>::new();
    let jobs = Resource::new(
        move || {
            (
                bulk.version().get(),
                recover.version().get(),
                cancel.version().get(),
            )
        },
        |_| outbox_jobs(),
    );
    view! {
        <Frame allow=Role::ALL>
            <OutboxBody page=page bulk=bulk recover=recover cancel=cancel jobs=jobs/>
        </Frame>
    }
}

#[component]
pub fn OutboxMessagePage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let resend = ServerAction::<ResendOutbox>::new();
    let detail = Resource::new(
        move || (id(), resend.version().get()),
        |(id, _)| show_outbox(id),
    );
    view! {
        <Frame allow=Role::ALL>
            <MessageBody resend=resend detail=detail/>
        </Frame>
    }
}

/// A delivery's status in words: PENDING with attempts is retrying.
fn status_text(d: &OutboxDelivery, lang: Lang) -> &'static str {
    match d.status.as_str() {
        "DELIVERED" => tr(lang, "delivered", "已送达"),
        "DEAD" => "DEAD",
        _ if d.attempts > 0 => tr(lang, "retrying", "重试中"),
        _ => tr(lang, "pending", "待发送"),
    }
}

#[component]
fn OutboxBody(
    page: super::Loaded<OutboxPage>,
    bulk: ServerAction<BulkResendOutbox>,
    recover: ServerAction<RecoverOutbox>,
    cancel: ServerAction<CancelOutboxJob>,
    jobs: super::Loaded<Vec<OutboxJob>>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let filter = query_filter::<OutboxFilter>();
    let running = Signal::derive(move || {
        jobs.get().and_then(Result::ok).is_some_and(|j| {
            j.iter()
                .any(|j| j.status == "RUNNING" || j.status == "CANCELLING")
        })
    });
    poll_while(running, move || jobs.refetch());
    let from_url = url_error();
    let bulk_err = action_error(bulk, from_url);
    let recover_err = action_error(recover, from_url);
    let cancel_err = action_error(cancel, from_url);
    let may_resend = matches!(user.role, Role::Operator | Role::Supervisor);
    let title = Msg::Outbox.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || view! { <ErrorNote err=bulk_err().or_else(recover_err).or_else(cancel_err) lang=lang/> }}
        {move || {
            let f = filter();
            view! {
                <form method="get" action="/outbox" class="row card" id="outbox-filters">
                    <label>{tr(lang, "Event type", "事件类型")}
                        <input name="event_type" id="o-type" size="16" value=f.event_type.clone()/></label>
                    <label>{Msg::Sink.text(lang)}<input name="sink" id="o-sink" size="10" value=f.sink.clone()/></label>
                    <label>{Msg::Status.text(lang)}
                        <select name="status" id="o-status">
                            <option value="">{Msg::Any.text(lang)}</option>
                            {DELIVERY_STATUSES.iter().map(|s| view! {
                                <option value=*s selected=f.status.as_deref() == Some(*s)>{*s}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    <label>{Msg::Payment.text(lang)}<input name="payment" id="o-payment" size="16" value=f.payment.clone()/></label>
                    <label>{tr(lang, "From", "起")}<input type="date" name="from" id="o-from" value=f.from.clone()/></label>
                    <label>{tr(lang, "to (inclusive)", "至（含）")}<input type="date" name="to" id="o-to" value=f.to.clone()/></label>
                    <button type="submit" id="o-search">{Msg::Search.text(lang)}</button>
                    <a href="/outbox">{Msg::Clear.text(lang)}</a>
                </form>
            }
        }}
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                jobs.await.ok().filter(|j| !j.is_empty()).map(|list| view! {
                    <section class="card" id="outbox-jobs">
                        <h2>{tr(lang, "Resend jobs", "重新发送任务")}</h2>
                        {list.iter().any(|j| j.status == "RUNNING").then(|| view! { <noscript inner_html=r#"<meta http-equiv="refresh" content="2">"#></noscript> })}
                        {list.into_iter().map(|j| view! { <Job j=j lang=lang cancel=cancel may_cancel=may_resend/> }).collect_view()}
                    </section>
                })
            })}
        </Transition>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let f = filter();
                match page.await {
                    Ok(p) => view! {
                        {may_resend.then(|| if p.sinks_configured {
                            view! { <ResendOps filter=filter bulk=bulk recover=recover lang=lang/> }.into_any()
                        } else {
                            view! { <NoSink lang=lang/> }.into_any()
                        })}
                        <List p=p f=f lang=lang/>
                    }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// Resending: every delivery the filter matches, or a sink's DEAD ones
/// after its outage.
#[component]
fn ResendOps(
    filter: impl Fn() -> OutboxFilter + Copy + Send + Sync + 'static,
    bulk: ServerAction<BulkResendOutbox>,
    recover: ServerAction<RecoverOutbox>,
    lang: Lang,
) -> impl IntoView {
    view! {
        <section class="card" id="outbox-ops">
            <h2>{tr(lang, "Resend", "重新发送")}</h2>
            {move || {
                let f = filter();
                let hidden = OutboxFilter::KEYS
                    .iter()
                    .filter(|k| **k != "after")
                    .filter_map(|k| f.get(k).map(|v| (*k, v.to_owned())))
                    .map(|(k, v)| view! { <input type="hidden" name=format!("filter[{k}]") value=v/> })
                    .collect_view();
                view! {
                    <ActionForm action=bulk attr:class="inline" attr:id="bulk-resend-form">
                        {hidden}
                        <button type="submit" id="bulk-resend">
                            {tr(lang, "Resend every delivery this filter matches", "重新发送此筛选匹配的全部投递")}
                        </button>
                    </ActionForm>
                }
            }}
            <ActionForm action=recover attr:class="row" attr:id="recover-form">
                <span>{tr(lang, "After a sink's outage, queue its DEAD deliveries again:", "接收端故障恢复后，重新排队其 DEAD 投递：")}</span>
                <label>{Msg::Sink.text(lang)}<input name="sink" id="r-sink" required size="10"/></label>
                <label>{tr(lang, "Dead since (day or RFC 3339 time)", "自（日期或 RFC 3339 时间）")}<input name="since" id="r-since" required size="22"/></label>
                <button type="submit" id="recover">{tr(lang, "Recover", "恢复投递")}</button>
            </ActionForm>
        </section>
    }
}

/// Why nothing can be resent: no sink is configured, and how to name one.
#[component]
pub fn NoSink(lang: Lang) -> impl IntoView {
    view! {
        <section class="card" id="no-sink">
            <h2>{tr(lang, "Resend", "重新发送")}</h2>
            <p class="hint">
                {tr(lang,
                    "No sink is configured, so Reckon sends no message and nothing can be resent. Name one in RECKON_OUTBOX_SINKS (for example fulfilment=https://host/path) or as a [[sinks]] section of the configuration file, then restart Reckon; it is then listed on the ",
                    "尚未配置任何推送端点，Reckon 不发送消息，也无法重新发送。请在 RECKON_OUTBOX_SINKS 中配置（例如 fulfilment=https://host/path），或在配置文件中添加 [[sinks]] 一节，然后重启 Reckon；配置后可在")}
                <a href="/sinks" id="no-sink-link">{Msg::Sinks.text(lang)}</a>
                {tr(lang, " page.", " 页面查看。")}
            </p>
        </section>
    }
}

#[component]
fn Job(
    j: OutboxJob,
    lang: Lang,
    cancel: ServerAction<CancelOutboxJob>,
    may_cancel: bool,
) -> impl IntoView {
    let running = j.status == "RUNNING";
    let job_id = j.job_id.clone();
    view! {
        <div class="job" data-job=j.job_id.clone() data-status=j.status.clone()>
            <strong>{j.kind.clone()}</strong> " " <code>{j.params.clone()}</code> " · " {j.requested_by.clone()} " · "
            <span class="job-status">{j.status.clone()}</span>
            <div class="progress-row">
                <progress max=j.total.max(1) value=j.done + j.skipped></progress>
                <span class="job-count">{j.done + j.skipped} " / " {j.total}</span>
            </div>
            <p class="job-summary">
                {tr(lang, "Queued again:", "已重新排队：")} " " {j.done} " · "
                {tr(lang, "already pending:", "已在待发送：")} " " {j.skipped} " · "
                {tr(lang, "not reached:", "未处理：")} " " {j.pending}
            </p>
            {j.error.clone().map(|e| view! { <p class="error">{e}</p> })}
            {(may_cancel && running).then(|| view! {
                <ActionForm action=cancel attr:class="inline">
                    <input type="hidden" name="id" value=job_id.clone()/>
                    <button type="submit" class="cancel-job">{tr(lang, "Cancel", "取消")}</button>
                </ActionForm>
            })}
        </div>
    }
}

#[component]
fn List(p: OutboxPage, f: OutboxFilter, lang: Lang) -> impl IntoView {
    let empty = p.items.is_empty().then(|| {
        super::empty::empty_note(
            super::empty::narrowed(&f),
            ("messages", "消息"),
            "/outbox",
            [
                (
                    "No messages yet: Reckon writes one when a payment or refund reaches a final state.",
                    "尚无消息：支付或退款到达终态时 Reckon 会写入一条消息。",
                ),
                ("See the sinks they go to.", "查看推送端点。"),
            ],
            "/sinks",
            lang,
        )
    });
    let zone = use_zone();
    let next = p
        .next
        .clone()
        .map(|n| format!("/outbox?{}", f.query_with_after(Some(&n))));
    view! {
        <table class="grid compact" id="outbox">
            <thead><tr>
                <th>{in_zone(lang, "Created", "创建时间", &zone)}</th>
                <th>{tr(lang, "Message", "消息")}</th>
                <th>{tr(lang, "Event type", "事件类型")}</th>
                <th>{Msg::Payment.text(lang)}</th>
                <th>{Msg::Sink.text(lang)}</th>
                <th>{Msg::Status.text(lang)}</th>
                <th class="num">{Msg::Attempts.text(lang)}</th>
                <th>{tr(lang, "Last error", "最近错误")}</th>
            </tr></thead>
            <tbody>
                {p.items.into_iter().map(|m| {
                    let rows = m.deliveries.len().max(1);
                    let head = view! {
                        <td class="when" rowspan=rows><When at=m.created_at zone=zone.clone()/></td>
                        <td rowspan=rows><IdText id=m.message_id.clone() href=format!("/outbox/{}", m.message_id) link_class="open-message" head=12 lang=lang/></td>
                        <td rowspan=rows>{m.event_type.clone()}</td>
                        <td rowspan=rows><IdText id=m.payment_no.clone() href=format!("/payments/{}", m.payment_no) head=12 lang=lang/></td>
                    };
                    if m.deliveries.is_empty() {
                        return view! {
                            <tr data-message=m.message_id.clone()>
                                {head}
                                <td colspan="4" class="hint">{tr(lang, "no sink was configured", "当时未配置接收端")}</td>
                            </tr>
                        }.into_any();
                    }
                    let mut head = Some(head);
                    m.deliveries.iter().map(|d| view! {
                        <tr data-message=m.message_id.clone() data-sink=d.sink.clone() data-status=d.status.clone()>
                            {head.take()}
                            <td>{d.sink.clone()}</td>
                            <td class="delivery-status">{status_text(d, lang)}</td>
                            <td class="num">{d.attempts}</td>
                            <td>{d.last_error.clone().unwrap_or_default()}</td>
                        </tr>
                    }).collect_view().into_any()
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
    }
}

#[component]
fn MessageBody(
    resend: ServerAction<ResendOutbox>,
    detail: super::Loaded<OutboxDetail>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let err = action_error(resend, url_error());
    let may_resend = matches!(user.role, Role::Operator | Role::Supervisor);
    view! {
        <Title text=format!("{} · {}", Msg::Outbox.text(lang), Msg::AppName.text(lang))/>
        <p><a href="/outbox">{tr(lang, "← All messages", "← 全部消息")}</a></p>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {move || resend.value().get().and_then(Result::ok).map(|r| view! {
            <p class="result" id="action-result" role="status">
                {tr(lang, "Queued again for:", "已重新排队：")} " " <strong>{r.queued.join(", ")}</strong>
                {(!r.already_pending.is_empty()).then(|| format!(
                    " · {} {}", tr(lang, "already pending:", "已在待发送："), r.already_pending.join(", ")
                ))}
            </p>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(d) => view! { <Detail d=d lang=lang resend=resend may_resend=may_resend/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Detail(
    d: OutboxDetail,
    lang: Lang,
    resend: ServerAction<ResendOutbox>,
    may_resend: bool,
) -> impl IntoView {
    let m = d.message.clone();
    let id = m.message_id.clone();
    let zone = use_zone();
    let amount = payload_amount(&d.payload);
    let all_id = id.clone();
    let configured = d.sinks_configured;
    view! {
        <section class="card" id="message" data-message=id.clone()>
            <h1>{tr(lang, "Message", "消息")} " " <code>{id.clone()}</code></h1>
            <dl class="facts">
                <dt>{tr(lang, "Event type", "事件类型")}</dt><dd id="event-type">{m.event_type.clone()}</dd>
                <dt>{Msg::Payment.text(lang)}</dt>
                <dd><a id="message-payment" href=format!("/payments/{}", m.payment_no)>{m.payment_no.clone()}</a></dd>
                {amount.map(|a| view! { <dt>{Msg::Amount.text(lang)}</dt><dd id="message-amount">{a}</dd> })}
                <dt>{tr(lang, "Created", "创建时间")}</dt><dd>{zone.named(m.created_at)}</dd>
                <dt>"webhook-id"</dt><dd>{tr(lang, "the message id, the same on every attempt and resend", "即消息编号，每次投递和重发都相同")}</dd>
            </dl>
            <table class="grid" id="deliveries">
                <thead><tr>
                    <th>{Msg::Sink.text(lang)}</th>
                    <th>{Msg::Status.text(lang)}</th>
                    <th class="num">{Msg::Attempts.text(lang)}</th>
                    <th>{in_zone(lang, "Delivered / next try", "送达 / 下次尝试", &zone)}</th>
                    <th>{tr(lang, "Last error", "最近错误")}</th>
                    <th>{tr(lang, "Resent by", "重发人")}</th>
                    <th></th>
                </tr></thead>
                <tbody>
                    {m.deliveries.clone().into_iter().map(|dl| {
                        let (id, dl_sink) = (id.clone(), dl.sink.clone());
                        let when = match (dl.published_at, dl.status.as_str()) {
                            (Some(p), "DELIVERED") => zone.minutes(p),
                            (_, "PENDING") => zone.minutes(dl.next_attempt_at),
                            _ => String::new(),
                        };
                        let resent = dl.resent_by.clone().map(|by| format!(
                            "{by} {}", dl.resent_at.map(|at| zone.minutes(at)).unwrap_or_default()
                        ));
                        view! {
                            <tr data-sink=dl.sink.clone() data-status=dl.status.clone()>
                                <td>{dl.sink.clone()}</td>
                                <td class="delivery-status">{status_text(&dl, lang)}</td>
                                <td class="num">{dl.attempts}</td>
                                <td class="when">{when}</td>
                                <td>{dl.last_error.clone().unwrap_or_default()}</td>
                                <td>{resent}</td>
                                <td>{(may_resend && configured && dl.status != "PENDING").then(move || view! {
                                    <ActionForm action=resend attr:class="inline">
                                        <input type="hidden" name="id" value=id/>
                                        <input type="hidden" name="sink" value=dl_sink/>
                                        <button type="submit" class="resend-sink">{Msg::Resend.text(lang)}</button>
                                    </ActionForm>
                                })}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
            {(may_resend && !d.sinks_configured).then(|| view! { <NoSink lang=lang/> })}
            {(may_resend && d.sinks_configured && !m.deliveries.is_empty()).then(move || view! {
                <ActionForm action=resend attr:class="inline" attr:id="resend-all-form">
                    <input type="hidden" name="id" value=all_id/>
                    <button type="submit" id="resend-all">{tr(lang, "Resend to every sink", "重新发送到全部接收端")}</button>
                </ActionForm>
            })}
        </section>
        <section class="card">
            <h2>{tr(lang, "Attempts", "投递记录")}</h2>
            <table class="grid compact" id="attempts">
                <thead><tr>
                    <th>{in_zone(lang, "Time", "时间", &zone)}</th>
                    <th>{Msg::Sink.text(lang)}</th>
                    <th class="num">"HTTP"</th>
                    <th class="num">{tr(lang, "Latency (ms)", "耗时（毫秒）")}</th>
                    <th>{tr(lang, "Answer (first bytes)", "应答（开头）")}</th>
                    <th>{tr(lang, "Error", "错误")}</th>
                    <th>{tr(lang, "By", "来源")}</th>
                </tr></thead>
                <tbody>
                    {d.attempts.iter().map(|a| view! {
                        <tr class="attempt" data-sink=a.sink.clone() data-code=a.status_code.map(|c| c.to_string()).unwrap_or_default()>
                            <td class="when"><When at=a.at zone=zone.clone()/></td>
                            <td>{a.sink.clone()}</td>
                            <td class="num">{a.status_code.map(|c| c.to_string()).unwrap_or_else(|| "—".into())}</td>
                            <td class="num">{format!("{:.1}", a.latency_us as f64 / 1000.0)}</td>
                            <td><code>{a.answer_head.clone()}</code></td>
                            <td>{a.error.clone().unwrap_or_else(|| tr(lang, "delivered", "已送达").to_owned())}</td>
                            <td>{if a.origin == "RESEND" { tr(lang, "resend", "人工重发") } else { tr(lang, "relay", "自动投递") }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <h2>{tr(lang, "Payload", "消息内容")}</h2>
            <pre id="payload" class="json">{pretty_json(&d.payload)}</pre>
        </section>
    }
}

/// The amount a message announces (`amount_minor` and `currency` of its
/// payload), as a person reads it.
fn payload_amount(payload: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    let minor = v.get("amount_minor")?.as_i64()?;
    let currency = v.get("currency")?.as_str()?;
    Some(crate::format::money(minor, currency))
}

/// A payload as indented JSON for reading; kept as sent when it is not JSON.
fn pretty_json(payload: &str) -> String {
    serde_json::from_str::<serde_json::Value>(payload)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| payload.to_owned())
}
