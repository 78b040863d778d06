//! The dashboard's "Closing the day" section: per provider, the day's
//! money as its statement states it (gross, refunds, fees, net) and its
//! close — by whom and when, the record's hash, the signed report to
//! download — with a supervisor's close (with a reason, asked in the page
//! before it is sent) and the two-person reopening (one proposes, another
//! approves or rejects).

use super::cells::use_zone;
use super::confirm::ConfirmSubmit;
use super::{ErrorNote, Viewer, action_error, shown};
use crate::api::{ActOnDay, day_closes};
use crate::console::DayClose;
use crate::i18n::{Msg, approvals_so_far, tr};
use crate::tickets::encode;
use crate::types::{Lang, Role};
use leptos::prelude::*;

#[component]
pub fn DayCloses(day: String, initial: Vec<DayClose>, lang: Lang) -> impl IntoView {
    let Viewer { user, .. } = expect_context::<Viewer>();
    let act = ServerAction::<ActOnDay>::new();
    // The dashboard's own figures first; fetched again after each action.
    let closes = Resource::new(
        move || act.version().get(),
        move |version| {
            let (day, initial) = (day.clone(), initial.clone());
            async move {
                if version == 0 {
                    Ok(initial)
                } else {
                    day_closes(day).await
                }
            }
        },
    );
    let err = action_error(act, || None);
    let supervisor = user.role == Role::Supervisor;
    let me = user.id.clone();
    view! {
        <section class="card" id="day-closes">
            <h2>{tr(lang, "Fees, net and closing the day", "手续费、净额与日结")}</h2>
            {move || view! { <ErrorNote err=err() lang=lang/> }}
            <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
                {move || {
                    let me = me.clone();
                    Suspend::new(async move {
                        shown(closes.await.map(|list| view! {
                            <table class="grid" id="close-table">
                                <thead><tr>
                                    <th>{Msg::Provider.text(lang)}</th>
                                    <th>{Msg::Gross.text(lang)}</th>
                                    <th>{Msg::RefundsTotal.text(lang)}</th>
                                    <th>{Msg::Fees.text(lang)}</th>
                                    <th>{Msg::Net.text(lang)}</th>
                                    <th>{tr(lang, "Close", "日结")}</th>
                                </tr></thead>
                                <tbody>
                                    {list.into_iter().map(|c| view! { <CloseRow c=c lang=lang supervisor=supervisor me=me.clone() act=act/> }).collect_view()}
                                </tbody>
                            </table>
                        }), lang)
                    })
                }}
            </Transition>
        </section>
    }
}

/// Amounts of one column, a line per currency.
fn lines(c: &DayClose, pick: fn(&crate::console::DayMoney) -> &String) -> String {
    if c.money.is_empty() {
        return "—".into();
    }
    c.money
        .iter()
        .map(pick)
        .cloned()
        .collect::<Vec<_>>()
        .join(" / ")
}

#[component]
fn CloseRow(
    c: DayClose,
    lang: Lang,
    supervisor: bool,
    me: String,
    act: ServerAction<ActOnDay>,
) -> impl IntoView {
    let zone = use_zone();
    let provider = c.provider.clone();
    let day = c.business_date.clone();
    let export = format!("/closes/{}/{}", encode(&provider), encode(&day));
    let state_text = match c.state.as_str() {
        "CLOSED" => Msg::DayClosed.text(lang),
        "REOPENED" => tr(lang, "reopened", "已重开"),
        _ => tr(lang, "open", "未日结"),
    };
    // Closing signs the day's figures and refuses its statements until a
    // reopening: asked in the page first.
    let close_question = match lang {
        Lang::En => format!(
            "Close {provider}'s day {day}? Its figures are signed now, and statements for it are refused until two supervisors reopen it."
        ),
        Lang::Zh => format!(
            "对 {provider} 的 {day} 执行日结？当日数据将立即签名，重开（须两位主管）之前不再接收该日账单。"
        ),
    };
    // Reopening and deciding a reopening change what the day accepts: each
    // asked in the page first, as closing is.
    let reopen_question = |what: &str| match (lang, what) {
        (Lang::En, "propose_reopen") => format!(
            "Propose reopening {provider}'s day {day}? A second supervisor must approve it before its statements are accepted again."
        ),
        (Lang::En, "approve_reopen") => format!(
            "Approve reopening {provider}'s day {day}? Its statements are accepted again until it is closed anew."
        ),
        (Lang::En, _) => format!("Reject reopening {provider}'s day {day}? The day stays closed."),
        (Lang::Zh, "propose_reopen") => {
            format!("申请重开 {provider} 的 {day}？须另一位主管批准后才重新接收该日账单。")
        }
        (Lang::Zh, "approve_reopen") => {
            format!("批准重开 {provider} 的 {day}？在重新日结之前将再次接收该日账单。")
        }
        (Lang::Zh, _) => format!("驳回重开 {provider} 的 {day}？该日保持已日结。"),
    };
    let form = |what: &'static str, label: &'static str, with_reason: bool, class: &'static str| {
        let question = if what == "close" {
            close_question.clone()
        } else {
            reopen_question(what)
        };
        let (provider, day) = (provider.clone(), day.clone());
        let submit = view! {
            <ConfirmSubmit label=label.to_owned() question=question lang=lang class="close-submit"/>
        };
        view! {
            <ActionForm action=act attr:class=format!("row close-form {class}")>
                <input type="hidden" name="what" value=what/>
                <input type="hidden" name="provider" value=provider/>
                <input type="hidden" name="day" value=day/>
                {with_reason.then(|| view! {
                    <input name="reason" class="close-reason" required placeholder=tr(lang, "reason", "原因")/>
                })}
                {submit}
            </ActionForm>
        }
    };
    let closed = c.state == "CLOSED";
    let pending = c.reopen.clone();
    let own_pending = pending.as_ref().is_some_and(|p| p.proposer_id == me);
    view! {
        <tr data-provider=c.provider.clone() data-state=c.state.clone()>
            <td>{c.provider.clone()}
                {c.settlement.clone().map(|s| {
                    let figures = s
                        .lines
                        .iter()
                        .map(|l| format!("{} {} · {} {} · {} {}", tr(lang, "balance", "余额变动"), l.balance_net, tr(lang, "to bank", "提现"), l.withdrawn, tr(lang, "difference", "差额"), l.difference))
                        .collect::<Vec<_>>()
                        .join(" / ");
                    view! {
                        <br/><span class="settlement muted" data-state=s.state.clone() title=s.error.clone().unwrap_or_default()>
                            {tr(lang, "balance bill", "资金账单")} " " {s.state.clone()}
                            {(!figures.is_empty()).then(|| view! { ": " {figures} })}
                        </span>
                    }
                })}
                {(!c.disputes.is_empty()).then(|| {
                    let figures = c
                        .disputes
                        .iter()
                        .map(|d| format!("{} {} · {} {} · {} {} · {} {} ({})", tr(lang, "disputed", "拒付扣款"), d.withdrawn, tr(lang, "reinstated", "拒付退回"), d.reinstated, tr(lang, "dispute fees", "拒付费用"), d.fees, tr(lang, "open", "未决"), d.open_count, d.open_amount))
                        .collect::<Vec<_>>()
                        .join(" / ");
                    view! {
                        <br/><a class="disputes muted" href=format!("/tickets?provider={}&class=DISPUTE", encode(&provider))>{figures}</a>
                    }
                })}
                {(c.fee_mismatches > 0).then(|| view! {
                    <br/><a class="fee-mismatches" href=format!("/tickets?day={}&provider={}&class=FEE_MISMATCH", encode(&day), encode(&provider))>
                        {c.fee_mismatches} " FEE_MISMATCH"</a>
                })}
            </td>
            <td class="num" style="white-space:nowrap;text-align:right">{lines(&c, |m| &m.gross)}</td>
            <td class="num" style="white-space:nowrap;text-align:right">{lines(&c, |m| &m.refunds)}</td>
            <td class="num" style="white-space:nowrap;text-align:right">{lines(&c, |m| &m.fees)}</td>
            <td class="num" style="white-space:nowrap;text-align:right">{lines(&c, |m| &m.net)}</td>
            <td>
                <span class="close-state">{state_text}</span>
                {c.close.clone().map(|k| view! {
                    <span class="muted close-by">
                        " #" {k.seq} " · " {k.closed_by.clone()} " · " {zone.minutes(k.closed_at)}
                        {k.reason.clone().map(|r| view! { " · " {r} })}
                    </span>
                    " " <code class="close-hash" title=k.hash.clone()>{k.hash.chars().take(12).collect::<String>()}</code>
                    {k.config_version.map(|v| view! { " " <a class="muted close-config-version" href="/settings">{tr(lang, "settings v", "配置版本 v")} {v}</a> })}
                    " " <a class="close-export" href=export.clone() download="">{tr(lang, "signed report", "签名报告")}</a>
                    {k.reopened_by.clone().map(|by| view! {
                        <span class="muted">" · " {tr(lang, "reopened by", "重开人")} " " {by}</span>
                    })}
                })}
                {pending.clone().map(|p| view! {
                    <p class="reopen-pending">{tr(lang, "Reopening proposed by", "重开申请人")} " " {p.proposer.clone()} ": " {p.reason.clone()}</p>
                    {(p.required > 1 || !p.approved_by.is_empty()).then(|| view! {
                        <p class="approvals">{approvals_so_far(lang, &p.approved_by, p.required)}</p>
                    })}
                })}
                {(supervisor && !closed && c.has_run).then(|| form("close", tr(lang, "Close the day", "日结"), true, "close-day"))}
                {(supervisor && closed && pending.is_none()).then(|| form("propose_reopen", tr(lang, "Propose reopening", "申请重开"), true, "propose-reopen"))}
                {(supervisor && pending.is_some() && !own_pending).then(|| view! {
                    {form("approve_reopen", tr(lang, "Approve reopening", "批准重开"), false, "approve-reopen")}
                    {form("reject_reopen", tr(lang, "Reject", "驳回"), false, "reject-reopen")}
                })}
                {(supervisor && own_pending).then(|| view! {
                    <span class="hint">{tr(lang, "A second supervisor decides your proposal.", "需由另一位主管审批您的申请。")}</span>
                })}
            </td>
        </tr>
    }
}
