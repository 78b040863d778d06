//! Callbacks: search (payment, txn, callback or trace id; status, DEAD
//! included; provider; day), one callback with its headers and raw body
//! masked, its processing and what it produced, and replay — of one, or of
//! every DEAD callback of a provider in a time range as a job whose
//! progress the page follows (and that can be left and returned to).

use super::cells::{IdText, When, use_zone};
use super::raw::{RawOf, RawSection};
use super::{ErrorNote, Frame, Loaded, Viewer, action_error, query_filter, url_error};
use crate::api::{BulkReplay, ReplayCallback, list_callbacks, replay_jobs, show_callback};
use crate::codes::{Code, Codes};
use crate::console::{CallbackDetail, CallbackFilter, CallbackPage, ReplayJob};
use crate::filter::QueryFilter;
use crate::format::facts_text;
use crate::i18n::{Msg, in_zone, tr};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

pub const CALLBACK_STATUSES: &[&str] = &["RECEIVED", "PROCESSING", "SUCCESS", "FAILED", "DEAD"];

#[component]
pub fn CallbacksPage() -> impl IntoView {
    let filter = query_filter::<CallbackFilter>();
    let page = Resource::new(filter, list_callbacks);
    let bulk = ServerAction::<BulkReplay>::new();
    let jobs = Resource::new(move || bulk.version().get(), |_| replay_jobs());
    view! {
        <Frame allow=Role::ALL>
            <CallbacksBody page=page bulk=bulk jobs=jobs/>
        </Frame>
    }
}

#[component]
pub fn CallbackPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let replay = ServerAction::<ReplayCallback>::new();
    let detail = Resource::new(
        move || (id(), replay.version().get()),
        |(id, _)| show_callback(id),
    );
    view! {
        <Frame allow=Role::ALL>
            <CallbackBody replay=replay detail=detail/>
        </Frame>
    }
}

/// While something runs, the page reloads itself (without JavaScript) or
/// refetches (with it) every two seconds.
pub fn poll_while(running: Signal<bool>, refetch: impl Fn() + Clone + 'static) {
    #[cfg(feature = "hydrate")]
    {
        let handle = leptos::prelude::set_interval_with_handle(
            move || {
                if running.get_untracked() {
                    refetch();
                }
            },
            std::time::Duration::from_secs(2),
        );
        if let Ok(h) = handle {
            on_cleanup(move || h.clear());
        }
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (running, refetch);
    }
}

#[component]
fn CallbacksBody(
    page: Loaded<CallbackPage>,
    bulk: ServerAction<BulkReplay>,
    jobs: Loaded<Vec<ReplayJob>>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let filter = query_filter::<CallbackFilter>();
    let running = Signal::derive(move || {
        jobs.get()
            .and_then(Result::ok)
            .is_some_and(|j| j.iter().any(|j| j.status == "RUNNING"))
    });
    poll_while(running, move || jobs.refetch());
    let from_url = url_error();
    let err = action_error(bulk, from_url);
    let may_replay = matches!(user.role, Role::Operator | Role::Supervisor);
    let title = Msg::Callbacks.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {move || {
            let f = filter();
            view! {
                <form method="get" action="/callbacks" class="row card" id="callback-filters">
                    <label>{tr(lang, "Payment, txn, callback or trace id", "支付单号、渠道流水号、回调编号或追踪号")}
                        <input name="q" id="c-q" size="22" value=f.q.clone()/></label>
                    <label>{Msg::Status.text(lang)}
                        <select name="status" id="c-status">
                            <option value="">{Msg::Any.text(lang)}</option>
                            {CALLBACK_STATUSES.iter().map(|s| view! {
                                <option value=*s selected=f.status.as_deref() == Some(*s)>{Codes::CallbackStatus.shown(s, lang)}</option>
                            }).collect_view()}
                        </select>
                    </label>
                    <label>{Msg::Provider.text(lang)}<input name="provider" id="c-provider" size="10" value=f.provider.clone()/></label>
                    <label>{tr(lang, "Received on", "接收日")}<input type="date" name="day" id="c-day" value=f.day.clone()/></label>
                    <button type="submit" id="c-search">{Msg::Search.text(lang)}</button>
                    <a href="/callbacks">{Msg::Clear.text(lang)}</a>
                </form>
            }
        }}
        {may_replay.then(|| view! {
            <section class="card" id="bulk">
                <h2>{tr(lang, "Replay every DEAD callback of a provider", "批量重放某渠道的 DEAD 回调")}</h2>
                <ActionForm action=bulk attr:class="row" attr:id="bulk-form">
                    <label>{Msg::Provider.text(lang)}<input name="provider" id="b-provider" required size="10"/></label>
                    <label>{tr(lang, "Received from", "接收日起")}<input type="date" name="from" id="b-from" required/></label>
                    <label>{tr(lang, "to (inclusive)", "至（含）")}<input type="date" name="to" id="b-to" required/></label>
                    <button type="submit" id="b-start">{tr(lang, "Start", "开始")}</button>
                </ActionForm>
            </section>
        })}
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                jobs.await.ok().filter(|j| !j.is_empty()).map(|list| view! {
                    <section class="card" id="jobs">
                        <h2>{tr(lang, "Bulk replays", "批量重放任务")}</h2>
                        {list.iter().any(|j| j.status == "RUNNING").then(|| view! { <noscript inner_html=r#"<meta http-equiv="refresh" content="2">"#></noscript> })}
                        {list.into_iter().map(|j| view! { <Job j=j lang=lang/> }).collect_view()}
                    </section>
                })
            })}
        </Transition>
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
fn Job(j: ReplayJob, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    let summary = j
        .classes
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    view! {
        <div class="job" data-job=j.id.clone() data-status=j.status.clone()>
            <strong>{j.provider.clone()}</strong> " "
            {zone.minutes(j.from_at)} " – " {zone.named(j.to_at)} " · " {j.requested_by.clone()} " · "
            <span class="job-status">{j.status.clone()}</span>
            <div class="progress-row">
                <progress max=j.total.max(1) value=j.done></progress>
                <span class="job-count">{j.done} " / " {j.total}</span>
            </div>
            <p class="job-summary">{tr(lang, "Summary:", "结果：")} " " {summary}</p>
            {j.error.clone().map(|e| view! { <p class="error">{e}</p> })}
        </div>
    }
}

#[component]
fn List(p: CallbackPage, f: CallbackFilter, lang: Lang) -> impl IntoView {
    let empty = p.items.is_empty().then(|| {
        super::empty::empty_note(
            super::empty::narrowed(&f),
            ("callbacks", "回调"),
            "/callbacks",
            [
                (
                    "No callbacks yet: providers post payment results to Reckon's webhooks; refused ones are listed apart.",
                    "尚无回调：渠道将支付结果推送到 Reckon 的回调地址；被拒的回调另行列出。",
                ),
                ("See refused webhooks.", "查看被拒回调。"),
            ],
            "/refused",
            lang,
        )
    });
    let zone = use_zone();
    let next = p
        .next
        .clone()
        .map(|n| format!("/callbacks?{}", f.query_with_after(Some(&n))));
    view! {
        <table class="grid compact" id="callbacks">
            <thead><tr>
                <th>{in_zone(lang, "Received", "接收时间", &zone)}</th>
                <th>{Msg::Provider.text(lang)}</th>
                <th>{tr(lang, "Callback id", "回调编号")}</th>
                <th>{Msg::Payment.text(lang)}</th>
                <th>{tr(lang, "Reported", "上报状态")}</th>
                <th>{Msg::Signature.text(lang)}</th>
                <th>{Msg::Processing.text(lang)}</th>
                <th class="num">{tr(lang, "Tries", "次数")}</th>
            </tr></thead>
            <tbody>
                {p.items.into_iter().map(|c| view! {
                    <tr data-callback=c.callback_id.clone() data-status=c.processing_status.clone()>
                        <td class="when"><When at=c.received_at zone=zone.clone()/></td>
                        <td>{c.provider.clone()}</td>
                        <td><IdText id=c.callback_id.clone() href=format!("/callbacks/{}", c.id) link_class="open-callback" head=12 lang=lang/></td>
                        <td>{c.payment_no.clone().map(|no| view! { <IdText id=no.clone() href=format!("/payments/{no}") head=12 lang=lang/> })}</td>
                        <td>{c.callback_status.clone()}</td>
                        <td><Code set=Codes::Verify code=c.verify_result.clone() lang=lang/></td>
                        <td><Code set=Codes::CallbackStatus code=c.processing_status.clone() lang=lang/> " " {c.outcome.clone().unwrap_or_default()}</td>
                        <td class="num">{c.retry_count}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
    }
}

#[component]
fn CallbackBody(
    replay: ServerAction<ReplayCallback>,
    detail: Loaded<CallbackDetail>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let err = action_error(replay, url_error());
    let may_replay = matches!(user.role, Role::Operator | Role::Supervisor);
    let view_raw = user.view_raw;
    view! {
        <Title text=format!("{} · {}", Msg::Callback.text(lang), Msg::AppName.text(lang))/>
        <p><a href="/callbacks">{tr(lang, "← All callbacks", "← 全部回调")}</a></p>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {move || replay.value().get().and_then(Result::ok).map(|r| view! {
            <p class="result" id="action-result" role="status">
                {tr(lang, "Replayed:", "已重放：")} " " <strong class="replay-class">{r.class}</strong> " — " {r.detail}
            </p>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(d) => {
                        let id = d.summary.id.clone();
                        view! {
                            <Detail d=d lang=lang replay=replay may_replay=may_replay/>
                            {view_raw.then(|| view! { <RawSection id=id of=RawOf::Callback lang=lang/> })}
                        }.into_any()
                    }
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Detail(
    d: CallbackDetail,
    lang: Lang,
    replay: ServerAction<ReplayCallback>,
    may_replay: bool,
) -> impl IntoView {
    let s = d.summary.clone();
    let zone = use_zone();
    let facts = d.facts.clone().unwrap_or_default();
    view! {
        <section class="card" id="callback" data-status=s.processing_status.clone() data-verify=s.verify_result.clone()>
            <h1>{Msg::Callback.text(lang)} " " {s.callback_id.clone()}</h1>
            <dl class="facts">
                <dt>{Msg::Provider.text(lang)}</dt><dd>{s.provider.clone()}</dd>
                <dt>{Msg::Payment.text(lang)}</dt>
                <dd>{s.payment_no.clone().map(|no| view! { <a id="callback-payment" href=format!("/payments/{no}")>{no.clone()}</a> })}
                    {d.refund_no.clone().map(|r| format!(" (refund {r})"))}</dd>
                <dt>{tr(lang, "Provider txn id", "渠道流水号")}</dt><dd>{s.provider_txn_id.clone().unwrap_or_default()}</dd>
                <dt>{tr(lang, "Reported status", "上报状态")}</dt><dd>{s.callback_status.clone()}</dd>
                <dt>{Msg::Signature.text(lang)}</dt><dd id="verify">{s.verify_result.clone()}</dd>
                <dt>{tr(lang, "Original outcome", "原始处理结果")}</dt>
                <dd id="original-outcome" data-status=d.original.status.clone()>
                    {d.original.status.clone()} " " {d.original.outcome.clone().unwrap_or_default()}
                    {d.original.error.clone().map(|e| view! { " · " <span class="original-error">{e}</span> })}
                    {d.original.at.map(|at| format!(" · {}", zone.minutes(at)))}
                </dd>
                <dt>{tr(lang, "Processing now", "当前处理状态")}</dt><dd id="processing">{s.processing_status.clone()} " " {s.outcome.clone().unwrap_or_default()}</dd>
                <dt>{tr(lang, "Tries", "处理次数")}</dt><dd>{s.retry_count}</dd>
                <dt>{tr(lang, "Redeliveries", "重复投递")}</dt><dd id="duplicates">{s.duplicates}</dd>
                <dt>{tr(lang, "Facts", "业务事实")}</dt><dd><span id="facts" title=facts.clone()>{facts_text(&facts)}</span></dd>
                <dt>{tr(lang, "Error", "错误")}</dt><dd>{d.error_message.clone().unwrap_or_default()}</dd>
                <dt>{in_zone(lang, "Received / processed", "接收 / 处理", &zone)}</dt>
                <dd>{zone.minutes(s.received_at)} " / " {d.processed_at.map(|at| zone.minutes(at)).unwrap_or_default()}
                    {d.next_retry_at.map(|n| format!(" · {} {}", tr(lang, "next try", "下次尝试"), zone.minutes(n)))}</dd>
                <dt>{Msg::TraceId.text(lang)}</dt><dd>{s.trace_id.clone()}</dd>
                <dt>"SHA-256"</dt><dd><code>{d.payload_hash.clone()}</code></dd>
            </dl>
            {(may_replay && d.replayable).then(|| view! {
                <ActionForm action=replay attr:class="inline" attr:id="replay-form">
                    <input type="hidden" name="id" value=s.id.clone()/>
                    <button type="submit" id="replay-submit">{tr(lang, "Process this callback again", "重新处理此回调")}</button>
                </ActionForm>
            })}
            {(!d.replayable).then(|| view! {
                <p class="hint" id="not-replayable">{tr(lang, "Its signature did not verify: it is never replayed.", "验签未通过：不会被重放。")}</p>
            })}
        </section>
        <section class="card">
            <h2>{tr(lang, "What it produced", "产生的结果")}</h2>
            <ul id="produced">{d.produced.iter().map(|p| view! { <li>{p.clone()}</li> }).collect_view()}</ul>
            <h2>{tr(lang, "Replays", "重放记录")}</h2>
            {d.replays.is_empty().then(|| view! { <p class="hint" id="no-replays">{tr(lang, "Never replayed.", "从未重放。")}</p> })}
            <ul id="replays">{d.replays.iter().map(|r| view! {
                <li class="replay" data-class=r.class.clone()>
                    {zone.minutes(r.at)} " " <strong class="replay-actor">{r.actor.clone()}</strong> ": "
                    <span class="replay-class">{r.class.clone()}</span>
                    {(!r.detail.is_empty()).then(|| format!(" — {}", r.detail))}
                    {r.error.clone().map(|e| view! { " · " <span class="error replay-error">{e}</span> })}
                    {r.job.clone().map(|j| format!(" · {j}"))}
                </li>
            }).collect_view()}</ul>
            <h2>{tr(lang, "Redeliveries", "重复投递")}</h2>
            <p id="identical-redeliveries" data-count=d.identical_redeliveries>
                {match lang {
                    Lang::En if d.identical_redeliveries == 1 => "1 identical redelivery (the same bytes).".to_owned(),
                    Lang::En => format!("{} identical redeliveries (the same bytes).", d.identical_redeliveries),
                    Lang::Zh => format!("报文完全相同的重复投递：{} 次。", d.identical_redeliveries),
                }}
            </p>
            {(!d.redeliveries.is_empty()).then(|| view! {
                <h3>{tr(lang, "With other bytes", "报文不同的投递")}</h3>
                <ul id="redeliveries">{d.redeliveries.iter().map(|p| view! { <li>{p.clone()}</li> }).collect_view()}</ul>
            })}
        </section>
        <section class="card">
            <h2>{tr(lang, "Headers (masked)", "请求头（已脱敏）")}</h2>
            <table class="grid" id="headers">
                <tbody>
                    {d.headers.iter().map(|(k, v)| view! { <tr><th>{k.clone()}</th><td><code>{v.clone()}</code></td></tr> }).collect_view()}
                </tbody>
            </table>
            <h2>{tr(lang, "Body (masked)", "报文（已脱敏）")} " · " {d.payload_bytes} " B"</h2>
            <pre id="payload">{d.payload.clone()}</pre>
        </section>
    }
}
