//! Outbox sinks: each sink's endpoint, what it wants,
//! its retry schedule and state, its deliveries by state, and pausing or
//! resuming it, or making its deliveries waiting for a retry due now, with
//! a reason (operators and supervisors; audited). Also the dashboard's
//! section of failing sinks.

use super::cells::use_zone;
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{PauseSink, RetrySink, list_sinks};
use crate::i18n::{Msg, tr};
use crate::sinks::SinkRow;
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn SinksPage() -> impl IntoView {
    let act = ServerAction::<PauseSink>::new();
    let retry = ServerAction::<RetrySink>::new();
    let sinks = Resource::new(
        move || (act.version().get(), retry.version().get()),
        |_| list_sinks(),
    );
    view! {
        <Frame allow=Role::ALL>
            <SinksBody act=act retry=retry sinks=sinks/>
        </Frame>
    }
}

fn state_text(state: &str, lang: Lang) -> &'static str {
    match state {
        "PAUSED" => tr(lang, "paused", "已暂停"),
        "FAILING" => tr(lang, "failing", "持续失败"),
        _ => tr(lang, "active", "正常"),
    }
}

fn when(zone: &crate::format::Zone, at: Option<i64>) -> String {
    at.map(|t| zone.minutes(t)).unwrap_or_else(|| "—".into())
}

#[component]
fn SinksBody(
    act: ServerAction<PauseSink>,
    retry: ServerAction<RetrySink>,
    sinks: super::Loaded<Vec<SinkRow>>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let err = action_error(act, url_error());
    let retry_err = action_error(retry, || None);
    let may_act = matches!(user.role, Role::Operator | Role::Supervisor);
    let title = Msg::Sinks.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p class="hint">{tr(lang,
            "Where Reckon announces payments and refunds. A paused sink's messages wait and are all delivered after resume; nothing is lost.",
            "Reckon 向这些端点推送支付与退款消息。暂停期间的消息会保留，恢复后全部投递，不会丢失。")}</p>
        {move || view! { <ErrorNote err=err().or_else(retry_err) lang=lang/> }}
        {move || retry.value().get().and_then(Result::ok).map(|r| view! {
            <p class="result" id="retry-result" role="status" data-made-due=r.made_due>
                {if r.made_due == 0 {
                    Msg::SinkNothingWaiting.text(lang).to_owned()
                } else {
                    format!("{} {} {}", r.sink, Msg::SinkMadeDue.text(lang), r.made_due)
                }}
            </p>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(sinks.await.map(|list| view! {
                    {list.is_empty().then(|| view! {
                        <super::empty::Empty
                            why=tr(lang, "No sink is configured: outbox messages are kept, and sent once one is (RECKON_OUTBOX_SINKS or the config file's [[outbox_sinks]]).", "未配置推送端点：外发消息会保留，配置后（RECKON_OUTBOX_SINKS 或配置文件的 [[outbox_sinks]]）再发送。")
                            href="/outbox" action=tr(lang, "See the messages kept.", "查看保留的消息。")/>
                    })}
                    <table class="grid" id="sinks">
                        <thead><tr>
                            <th>{tr(lang, "Sink", "端点")}</th>
                            <th>{tr(lang, "Events", "事件类型")}</th>
                            <th>{tr(lang, "Retry schedule", "重试计划")}</th>
                            <th>{tr(lang, "State", "状态")}</th>
                            <th>{tr(lang, "Waiting", "待投递")}</th>
                            <th>{tr(lang, "Retrying", "重试中")}</th>
                            <th>"DEAD"</th>
                            <th>{tr(lang, "Last success", "最近成功")}</th>
                            <th>{tr(lang, "Last failure", "最近失败")}</th>
                            <th></th>
                        </tr></thead>
                        <tbody>
                            {list.into_iter().map(|s| view! { <SinkLine s=s lang=lang may_act=may_act act=act retry=retry/> }).collect_view()}
                        </tbody>
                    </table>
                }), lang)
            })}
        </Transition>
    }
}

#[component]
fn SinkLine(
    s: SinkRow,
    lang: Lang,
    may_act: bool,
    act: ServerAction<PauseSink>,
    retry: ServerAction<RetrySink>,
) -> impl IntoView {
    let zone = use_zone();
    let events = if s.event_types.is_empty() {
        tr(lang, "all", "全部").to_owned()
    } else {
        s.event_types.join(", ")
    };
    let paused = s.state == "PAUSED";
    let name = s.name.clone();
    let retry_name = s.name.clone();
    let pause_note = s.paused_by.clone().map(|by| {
        format!(
            "{by}: {} ({})",
            s.pause_reason.clone().unwrap_or_default(),
            when(&zone, s.paused_at)
        )
    });
    view! {
        <tr data-sink=s.name.clone() data-state=s.state.clone() class=format!("sink-{}", s.state.to_lowercase())>
            <td><strong>{s.name.clone()}</strong><br/><span class="muted">{s.url.clone()}</span></td>
            <td>{events}</td>
            <td>{s.schedule.join(", ")} " · " {tr(lang, "timeout", "超时")} " " {s.timeout_secs} "s"</td>
            <td class="sink-state">{state_text(&s.state, lang)}
                {pause_note.map(|n| view! { <br/><span class="muted">{n}</span> })}
                {(s.consecutive_failures > 0).then(|| view! {
                    <br/><span class="muted">{s.consecutive_failures} " " {tr(lang, "failed in a row", "次连续失败")}</span>
                })}
            </td>
            <td class="sink-pending">{s.pending}</td>
            <td class="sink-retrying">{s.retrying}</td>
            <td class="sink-dead">{s.dead}</td>
            <td>{when(&zone, s.last_success_at)}</td>
            <td>{when(&zone, s.last_failure_at)}
                {s.last_error.clone().map(|e| view! { <br/><span class="muted">{e}</span> })}
            </td>
            <td>
                {may_act.then(|| view! {
                    <ActionForm action=act attr:class="row sink-form">
                        <input type="hidden" name="name" value=name/>
                        <input type="hidden" name="pause" value=if paused { "false" } else { "true" }/>
                        <label>{Msg::SinkReason.text(lang)}<input name="reason" class="sink-reason" required/></label>
                        <button type="submit" class="sink-submit">
                            {if paused { Msg::SinkResume.text(lang) } else { Msg::SinkPause.text(lang) }}
                        </button>
                    </ActionForm>
                })}
                // A paused sink sends nothing: resuming it makes its waiting deliveries due.
                {(may_act && !paused).then(|| view! {
                    <ActionForm action=retry attr:class="row sink-retry-form">
                        <input type="hidden" name="name" value=retry_name/>
                        <label>{Msg::SinkReason.text(lang)}<input name="reason" class="sink-retry-reason" required/></label>
                        <button type="submit" class="sink-retry" title=Msg::SinkRetryNowHint.text(lang)>
                            {Msg::SinkRetryNow.text(lang)}
                        </button>
                    </ActionForm>
                })}
            </td>
        </tr>
    }
}

/// The dashboard's section: the sinks failing now, or nothing.
#[component]
pub fn FailingSinks(sinks: Vec<SinkRow>, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    (!sinks.is_empty()).then(|| view! {
        <section class="card error" id="failing-sinks">
            <h2>{Msg::SinksFailing.text(lang)} " " <a href="/sinks">{Msg::Sinks.text(lang)} " →"</a></h2>
            <ul>
                {sinks.into_iter().map(|s| view! {
                    <li data-sink=s.name.clone()>
                        <strong>{s.name.clone()}</strong> " · "
                        {tr(lang, "failing since", "失败开始于")} " " {when(&zone, s.failing_since)} " · "
                        {s.consecutive_failures} " " {tr(lang, "failed in a row", "次连续失败")} " · "
                        {s.retrying} " " {tr(lang, "retrying", "重试中")}
                        {s.last_error.clone().map(|e| view! { " · " <span class="muted">{e}</span> })}
                    </li>
                }).collect_view()}
            </ul>
        </section>
    })
}
