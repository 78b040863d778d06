//! The approval policy (supervisors and admins read it): how many distinct
//! approvers each action needs, with amount thresholds per currency; the
//! version in force with its digest, the change waiting with its approvals,
//! and the versions before. Admins propose a change as text; another admin
//! approves it. The server checks the text, the roles and the count.

use super::cells::{When, use_zone};
use super::confirm::ConfirmSubmit;
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{DecidePolicy, ProposePolicy, show_policy};
use crate::i18n::{Msg, approvals_so_far, tr};
use crate::policy::{PolicyPage, PolicyVersion};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn PolicyPageView() -> impl IntoView {
    let propose = ServerAction::<ProposePolicy>::new();
    let decide = ServerAction::<DecidePolicy>::new();
    let page = Resource::new(
        move || (propose.version().get(), decide.version().get()),
        |_| show_policy(),
    );
    view! {
        <Frame allow=&[Role::Supervisor, Role::Admin]>
            <PolicyBody propose=propose decide=decide page=page/>
        </Frame>
    }
}

fn title(lang: Lang) -> &'static str {
    tr(lang, "Approval policy", "审批策略")
}

#[component]
fn PolicyBody(
    propose: ServerAction<ProposePolicy>,
    decide: ServerAction<DecidePolicy>,
    page: super::Loaded<PolicyPage>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let from_url = url_error();
    let page_error = move || {
        action_error(propose, || None)()
            .or_else(action_error(decide, || None))
            .or_else(from_url)
    };
    let said = move || {
        decide.value().get().and_then(Result::ok).or_else(|| {
            propose
                .value()
                .get()
                .and_then(Result::ok)
                .map(|_| tr(lang, "proposed", "已提议").to_owned())
        })
    };
    let user = StoredValue::new(user);
    view! {
        <Title text=format!("{} · {}", title(lang), Msg::AppName.text(lang))/>
        <h1>{title(lang)}</h1>
        <p class="hint">{tr(lang,
            "How many people other than the proposer must approve each action before it is executed. A rule reads ACTION N, or ACTION N above AMOUNT CURRENCY for larger amounts (compared in the currency's own digits); a bulk resend's threshold is a number of deliveries (BULK_RESEND 1 above 500 deliveries). No action needs fewer than 1, except SINK_PAUSE, BULK_RESEND, USER_CREATE and TOKEN_CREATE, which run at once at 0 and otherwise wait on the Approvals page. A proposal keeps the count it was given when it was proposed; a change of this policy is itself approved by other admins.",
            "每项操作在执行前须由提议人以外的几个人批准。规则写作 ACTION N，或对较大金额写作 ACTION N above 金额 币种（按该币种的小数位比较）；批量重发的阈值是投递条数（BULK_RESEND 1 above 500 deliveries）。任何操作都不少于 1 人，但 SINK_PAUSE、BULK_RESEND、USER_CREATE、TOKEN_CREATE 为 0 时立即执行，否则在审批页等待批准。提议在提出时确定所需人数；修改本策略本身也须由其他管理员批准。")}</p>
        {move || view! { <ErrorNote err=page_error() lang=lang/> }}
        {move || said().map(|s| view! { <p class="result" id="policy-result" role="status">{s}</p> })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let viewer = user.get_value();
                shown(page.await.map(|p| {
                    let is_admin = viewer.role == Role::Admin;
                    let start = p.active.text.clone();
                    let waiting = p.pending.is_some();
                    view! {
                        <section class="card" id="policy-active">
                            <h2>{tr(lang, "In force: version ", "现行版本：")} <span id="policy-version">{p.active.version}</span></h2>
                            <VersionFacts v=p.active.clone() lang=lang/>
                            <Rules text=p.active.text.clone() lang=lang/>
                        </section>
                        {p.pending.clone().map(|c| view! { <Pending c=c lang=lang viewer_id=viewer.id.clone() viewer_name=viewer.username.clone() is_admin=is_admin decide=decide/> })}
                        {(is_admin && !waiting).then(|| view! {
                            <section class="card" id="policy-propose">
                                <h2>{tr(lang, "Propose a change", "提议修改")}</h2>
                                <ActionForm action=propose attr:id="propose-policy">
                                    <p><label>{tr(lang, "Rules, one a line", "规则（每行一条）")}<br/>
                                        <textarea name="text" id="policy-text" rows="14" cols="60" spellcheck="false">{start}</textarea>
                                    </label></p>
                                    <p class="hint">{tr(lang, "Actions: ", "可用操作：")} <code>{p.actions.join(" ")}</code></p>
                                    <p><label>{tr(lang, "Why", "原因")} " "
                                        <input name="reason" id="policy-reason" required maxlength="500" size="60"/>
                                    </label></p>
                                    <button type="submit" id="propose-policy-submit">{tr(lang, "Propose", "提议")}</button>
                                </ActionForm>
                            </section>
                        })}
                        <section class="card" id="policy-history">
                            <h2>{tr(lang, "Versions", "历史版本")}</h2>
                            <table class="grid">
                                <thead><tr>
                                    <th>{tr(lang, "Version", "版本")}</th>
                                    <th>{Msg::Status.text(lang)}</th>
                                    <th>{tr(lang, "Proposer", "提议人")}</th>
                                    <th>{tr(lang, "Approved by", "批准人")}</th>
                                    <th>{tr(lang, "Why", "原因")}</th>
                                    <th>{tr(lang, "Digest", "摘要")}</th>
                                </tr></thead>
                                <tbody>
                                    {p.history.into_iter().map(|v| view! {
                                        <tr data-policy=v.id.clone()>
                                            <td>{(v.version > 0).then_some(v.version)}</td>
                                            <td>{v.status.clone()}</td>
                                            <td>{v.proposer.clone()}</td>
                                            <td>{v.approved_by.join(", ")}</td>
                                            <td>{v.reason.clone()}</td>
                                            <td><code>{v.digest.chars().take(12).collect::<String>()}</code></td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </section>
                    }
                }), lang)
            })}
        </Transition>
    }
}

/// Digest, who proposed and approved it, since when.
#[component]
fn VersionFacts(v: PolicyVersion, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    view! {
        <p class="facts">
            {tr(lang, "Digest ", "摘要 ")} <code class="digest">{v.digest.clone()}</code>
            {(!v.id.is_empty()).then(|| view! {
                <br/>{tr(lang, "Proposed by ", "提议人 ")} {v.proposer.clone()} " · "
                {tr(lang, "approved by ", "批准人 ")} {v.approved_by.join(", ")}
                {v.active_from.map(|at| view! { " · " {tr(lang, "in force since ", "生效于 ")} <When at=at zone=zone.clone()/> })}
                <br/>{v.reason.clone()}
            })}
            {v.id.is_empty().then(|| view! { <br/>{tr(lang,
                "Built in: one approver besides the proposer for every action.",
                "内置默认：每项操作须由提议人以外的 1 人批准。")} })}
        </p>
    }
}

/// A policy's rules as a table: action, approvers, above which amount.
#[component]
fn Rules(text: String, lang: Lang) -> impl IntoView {
    let rows: Vec<(String, String, String)> = text
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match w.as_slice() {
                [a, n] => Some((a.to_string(), n.to_string(), String::new())),
                [a, n, _, amount, cur] => {
                    Some((a.to_string(), n.to_string(), format!("{amount} {cur}")))
                }
                _ => None,
            }
        })
        .collect();
    view! {
        <table class="grid rules">
            <thead><tr>
                <th>{tr(lang, "Action", "操作")}</th>
                <th>{tr(lang, "Approvers", "审批人数")}</th>
                <th>{tr(lang, "Above", "金额超过")}</th>
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|(a, n, above)| view! {
                    <tr data-action=a.clone()><td><code>{a.clone()}</code></td><td class="count">{n}</td><td class="amount">{above}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The change waiting: its rules, its approvals so far, and for another
/// admin the decision.
#[component]
fn Pending(
    c: PolicyVersion,
    lang: Lang,
    viewer_id: String,
    viewer_name: String,
    is_admin: bool,
    decide: ServerAction<DecidePolicy>,
) -> impl IntoView {
    let zone = use_zone();
    let own = c.proposer_id == viewer_id;
    let approved = c.approved_by.contains(&viewer_name);
    let may_decide = is_admin && !own && !approved;
    let (id, reject_id) = (c.id.clone(), c.id.clone());
    let question = tr(
        lang,
        "Approve this policy change? Once approved by enough admins it applies to every proposal made after it.",
        "批准此策略修改？达到所需人数后，对此后提出的所有提议生效。",
    );
    view! {
        <section class="card" id="policy-pending" data-policy=c.id.clone()>
            <h2>{tr(lang, "Change waiting for approval", "待批准的修改")}</h2>
            <p>{tr(lang, "Proposed by ", "提议人 ")} <strong>{c.proposer.clone()}</strong> " · "
                <When at=c.proposed_at zone=zone/> " · " {c.reason.clone()}</p>
            <p class="approvals" id="policy-approvals">{approvals_so_far(lang, &c.approved_by, c.required)}</p>
            <Rules text=c.text.clone() lang=lang/>
            {own.then(|| view! { <p class="hint own">{tr(lang, "Your proposal: another admin must decide it.", "这是您的提议：须由另一位管理员审批。")}</p> })}
            {may_decide.then(|| view! {
                <ActionForm action=decide attr:id="decide-policy">
                    <input type="hidden" name="id" value=id.clone()/>
                    <input type="hidden" name="what" value="approve"/>
                    <label>{tr(lang, "Comment", "备注")} " " <input name="comment" id="policy-comment" maxlength="500"/></label>
                    " "
                    <ConfirmSubmit label=tr(lang, "Approve", "批准").to_owned() question=question.to_owned()
                        lang=lang class="approve-policy" id="approve-policy"/>
                </ActionForm>
                <ActionForm action=decide attr:id="reject-policy-form" attr:class="inline">
                    <input type="hidden" name="id" value=reject_id/>
                    <input type="hidden" name="what" value="reject"/>
                    <button type="submit" id="reject-policy" class="danger">{tr(lang, "Reject", "驳回")}</button>
                </ActionForm>
            })}
        </section>
    }
}
