//! Alerts, newest first, a page at a time: filtered by kind, severity and
//! state (open, acknowledged, resolved — an alert whose cause has gone, as
//! an SLA alert whose ticket closed, is resolved by itself), each linking
//! to its payment, ticket, run, sink or message. Operators and supervisors
//! tick open alerts and acknowledge them with one comment (audited each),
//! confirmed in the page before anything is sent.

use super::cells::use_zone;
use super::{ErrorNote, Frame, Viewer, action_error, query_filter, url_error};
use crate::api::{AcknowledgeAlerts, list_alerts};
use crate::codes::{Code, Codes};
use crate::console::{ALERT_SEVERITIES, ALERT_STATES, AlertFilter, AlertPage, AlertRow};
use crate::filter::QueryFilter;
use crate::i18n::{Msg, alert_state_text, in_zone, tr};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn AlertsPage() -> impl IntoView {
    let filter = query_filter::<AlertFilter>();
    let ack = ServerAction::<AcknowledgeAlerts>::new();
    let page = Resource::new(
        move || (filter(), ack.version().get()),
        |(f, _)| list_alerts(f),
    );
    view! {
        <Frame allow=Role::ALL>
            <AlertsBody page=page ack=ack/>
        </Frame>
    }
}

#[component]
fn AlertsBody(
    page: super::Loaded<AlertPage>,
    ack: ServerAction<AcknowledgeAlerts>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let filter = query_filter::<AlertFilter>();
    let err = action_error(ack, url_error());
    let may_ack = matches!(user.role, Role::Operator | Role::Supervisor);
    let title = Msg::Alerts.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p class="hint">{tr(lang,
            "An alert is open until someone acknowledges it; one whose cause has gone (an overdue ticket closed) is resolved by itself.",
            "告警在有人确认前保持未处理；起因已消失的告警（如超时工单已关闭）会自动消除。")}</p>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {move || ack.value().get().and_then(Result::ok).map(|done| view! {
            <p class="result" id="ack-result" role="status">
                {format!("{} {}", tr(lang, "Acknowledged:", "已确认："), done.acknowledged.len())}
                {(!done.skipped.is_empty()).then(|| format!("; {} {}",
                    tr(lang, "no longer open, left as they were:", "已非未处理状态，未作改动："),
                    done.skipped.len()))}
            </p>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let f = filter();
                match page.await {
                    Ok(p) => view! {
                        <Filters f=f.clone() kinds=p.kinds.clone() lang=lang/>
                        <List p=p f=f lang=lang may_ack=may_ack ack=ack/>
                    }
                    .into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The filter form: a plain GET, so it works before hydration too.
#[component]
fn Filters(f: AlertFilter, kinds: Vec<String>, lang: Lang) -> impl IntoView {
    let select = |name: &'static str,
                  id: &'static str,
                  chosen: Option<String>,
                  options: Vec<(String, String)>| {
        view! {
            <select name=name id=id>
                <option value="">{Msg::Any.text(lang)}</option>
                {options.into_iter().map(|(value, label)| {
                    let selected = chosen.as_deref() == Some(value.as_str());
                    view! { <option value=value selected=selected>{label}</option> }
                }).collect_view()}
            </select>
        }
    };
    let kinds = kinds
        .into_iter()
        .map(|k| (k.clone(), Codes::AlertKind.shown(&k, lang)))
        .collect();
    let severities = ALERT_SEVERITIES
        .iter()
        .map(|s| ((*s).to_owned(), Codes::Severity.shown(s, lang)))
        .collect();
    let states = ALERT_STATES
        .iter()
        .map(|s| ((*s).to_owned(), alert_state_text(s, lang)))
        .collect();
    view! {
        <form method="get" action="/alerts" class="row card" id="alert-filters">
            <label>{Msg::Kind.text(lang)}{select("kind", "a-kind", f.kind.clone(), kinds)}</label>
            <label>{Msg::Severity.text(lang)}{select("severity", "a-severity", f.severity.clone(), severities)}</label>
            <label>{Msg::Status.text(lang)}{select("state", "a-state", f.state.clone(), states)}</label>
            <button type="submit" id="a-filter">{Msg::Filter.text(lang)}</button>
            <a href="/alerts" id="a-clear">{Msg::Clear.text(lang)}</a>
        </form>
    }
}

#[component]
fn List(
    p: AlertPage,
    f: AlertFilter,
    lang: Lang,
    may_ack: bool,
    ack: ServerAction<AcknowledgeAlerts>,
) -> impl IntoView {
    let next = p
        .next
        .clone()
        .map(|n| format!("/alerts?{}", f.query_with_after(Some(&n))));
    // The ticked open alerts, and whether the page is asking to confirm.
    let picked = RwSignal::new(Vec::<String>::new());
    let confirming = RwSignal::new(false);
    let comment = RwSignal::new(String::new());
    let shown = p.items.len();
    view! {
        <p class="hint" id="alert-counts">
            {format!("{} {} · {} {shown}",
                tr(lang, "Open in all:", "未处理共"), p.open,
                tr(lang, "on this page:", "本页："))}
        </p>
        <ActionForm action=ack attr:id="ack-form">
            <table class="grid" id="alerts">
                <thead><tr>
                    <th>{may_ack.then(|| tr(lang, "Tick", "勾选"))}</th>
                    <th>{in_zone(lang, "Time", "时间", &use_zone())}</th>
                    <th>{Msg::Severity.text(lang)}</th>
                    <th>{Msg::Kind.text(lang)}</th>
                    <th>{tr(lang, "Message", "内容")}</th>
                    <th>{tr(lang, "About", "关联")}</th>
                    <th>{Msg::Status.text(lang)}</th>
                </tr></thead>
                <tbody>
                    {p.items.into_iter().map(|a| view! { <Row a=a lang=lang may_ack=may_ack picked=picked/> }).collect_view()}
                </tbody>
            </table>
            {(shown == 0).then(|| super::empty::empty_note(
                super::empty::narrowed(&f),
                ("alerts", "告警"),
                "/alerts",
                [
                    (
                        "No alerts: nothing has needed a person's attention.",
                        "没有告警：尚无需要人工处理的情况。",
                    ),
                    ("See the day on the dashboard.", "查看总览。"),
                ],
                "/",
                lang,
            ))}
            {may_ack.then(|| view! {
                <div class="row card" id="ack-bar">
                    <label class="wide">{tr(lang, "Comment", "处理说明")}
                        <input name="comment" id="ack-comment" required
                            on:input=move |ev| comment.set(event_target_value(&ev))/>
                    </label>
                    // Once hydrated, the first press asks to confirm; without
                    // JavaScript it sends at once.
                    <button type="submit" id="ack-ticked"
                        style:display=move || if confirming.get() { "none" } else { "" }
                        on:click=move |ev| {
                            if !confirming.get_untracked() {
                                ev.prevent_default();
                                confirming.set(true);
                            }
                        }>
                        {tr(lang, "Acknowledge ticked…", "确认已勾选…")}
                    </button>
                    {move || confirming.get().then(|| {
                        let n = picked.with(Vec::len);
                        view! {
                            <p class="confirm" id="ack-confirm" role="status">
                                {if n == 0 {
                                    tr(lang, "No alert is ticked.", "尚未勾选告警。").to_owned()
                                } else {
                                    format!("{} {n} {} “{}”?",
                                        tr(lang, "Acknowledge", "确认"),
                                        tr(lang, "alert(s) with the comment", "条告警，处理说明为"),
                                        comment.get())
                                }}
                                " "
                                <button type="submit" id="ack-confirm-yes" disabled=n == 0>{tr(lang, "Confirm", "确认提交")}</button>
                                " "
                                <button type="button" id="ack-cancel" on:click=move |_| confirming.set(false)>{tr(lang, "Cancel", "取消")}</button>
                            </p>
                        }
                    })}
                </div>
            })}
        </ActionForm>
        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
    }
}

#[component]
fn Row(a: AlertRow, lang: Lang, may_ack: bool, picked: RwSignal<Vec<String>>) -> impl IntoView {
    let zone = use_zone();
    let tickable = may_ack && a.state == "open";
    let id = a.id.clone();
    let what = move |w: &str| match w {
        "ticket" => tr(lang, "ticket", "工单"),
        "run" => tr(lang, "runs", "对账批次"),
        "sink" => tr(lang, "sink", "推送端点"),
        "outbox" => tr(lang, "message", "外发消息"),
        "callback" => tr(lang, "callback", "回调"),
        "refused" => tr(lang, "refused webhooks", "被拒回调"),
        _ => "",
    };
    let state_detail = match a.state.as_str() {
        "resolved" => a
            .resolved_reason
            .clone()
            .map(|r| match r.as_str() {
                "ticket closed" => tr(lang, "ticket closed", "工单已关闭").to_owned(),
                _ => r,
            })
            .map(|r| {
                format!(
                    "{r} · {}",
                    a.resolved_at.map(|t| zone.minutes(t)).unwrap_or_default()
                )
            }),
        "acknowledged" => Some(format!(
            "{}: {}",
            a.acknowledged_by.clone().unwrap_or_default(),
            a.ack_comment.clone().unwrap_or_default()
        )),
        _ => None,
    };
    view! {
        <tr data-alert=a.id.clone() data-kind=a.kind.clone() data-severity=a.severity.clone()
            data-state=a.state.clone() class=format!("alert-{}", a.severity)>
            <td>{tickable.then(|| {
                let (mine, toggled) = (id.clone(), id.clone());
                view! {
                    <input type="checkbox" class="pick" name="ids[]" value=id.clone()
                        aria-label=tr(lang, "tick", "勾选")
                        prop:checked=move || picked.with(|p| p.contains(&mine))
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            picked.update(|p| {
                                p.retain(|x| *x != toggled);
                                if on {
                                    p.push(toggled.clone());
                                }
                            });
                        }/>
                }
            })}</td>
            <td class="when">{zone.minutes(a.created_at)}</td>
            <td><strong><Code set=Codes::Severity code=a.severity.clone() lang=lang/></strong></td>
            <td><Code set=Codes::AlertKind code=a.kind.clone() lang=lang/></td>
            <td>{a.message.clone()}</td>
            <td class="links">
                {a.payment_no.clone().map(|no| view! {
                    <a class="alert-link" data-what="payment" href=format!("/payments/{}", crate::tickets::encode(&no))>
                        {Msg::Payment.text(lang)} " " {no.clone()}
                    </a> " "
                })}
                {a.links.iter().map(|l| view! {
                    <a class="alert-link" data-what=l.what.clone() href=l.href.clone()>{what(&l.what)} " " {l.label.clone()}</a> " "
                }).collect_view()}
            </td>
            <td class="state">{alert_state_text(&a.state, lang)}
                {state_detail.map(|d| view! { <br/><span class="muted">{d}</span> })}</td>
        </tr>
    }
}
