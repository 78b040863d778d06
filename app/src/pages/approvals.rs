//! The approval queue: every pending proposal, oldest first, with what it
//! changes. Supervisors approve or reject with a comment — never their own
//! proposals (the database refuses; the page does not offer it). Below,
//! the most recent decisions.

use super::ticket::{Decide, ProposalCard};
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{ApproveFix, RejectFix, list_proposals};
use crate::codes::{Code, Codes};
use crate::i18n::{Msg, tr};
use crate::tickets::ActionResult;
use crate::types::Role;
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    view! {
        <Frame allow=Role::ALL>
            <ApprovalsBody/>
        </Frame>
    }
}

#[component]
fn ApprovalsBody() -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let decide = Decide {
        approve: ServerAction::<ApproveFix>::new(),
        reject: ServerAction::<RejectFix>::new(),
    };
    let versions = move || {
        (
            decide.approve.version().get(),
            decide.reject.version().get(),
        )
    };
    let queue = Resource::new(versions, |_| list_proposals("PENDING".into()));
    let recent = Resource::new(versions, |_| list_proposals("ALL".into()));
    let from_url = url_error();
    let page_error = move || {
        action_error(decide.approve, || None)()
            .or_else(action_error(decide.reject, || None))
            .or_else(from_url)
    };
    let title = Msg::Approvals.text(lang);
    let user = StoredValue::new(user);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p class="hint">{tr(lang,
            "Fixes that change money or a status against the provider's word wait here for a second person. The proposer never decides their own.",
            "涉及资金或与渠道结果相悖的状态变更须在此由第二人审批；提议人不能审批自己的提议。")}</p>
        {move || view! { <ErrorNote err=page_error() lang=lang/> }}
        {move || decide.approve.value().get().and_then(Result::ok).map(|r: ActionResult| view! {
            <p class="result" id="action-result" role="status">{tr(lang, "Executed:", "已执行：")} " " {r.detail}</p>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let viewer = user.get_value();
                shown(queue.await.map(|list| view! {
                    <section id="queue">
                        <h2>{tr(lang, "Waiting", "待审批")} " (" <span id="queue-count">{list.len()}</span> ")"</h2>
                        {list.is_empty().then(|| view! {
                            <super::empty::Empty id="empty-queue"
                                why=tr(lang, "Nothing waits for a decision: a fix that changes money, proposed on a discrepancy, waits here for a second person.", "暂无待审批的提议：在差异工单上提出的涉及资金的修复会在此等待第二人审批。")
                                href="/tickets?status=ACTIVE" action=tr(lang, "Open the discrepancies not closed.", "查看未关闭的差异工单。")/>
                        })}
                        {list.into_iter().map(|p| view! { <ProposalCard p=p lang=lang viewer=viewer.clone() decide=decide/> }).collect_view()}
                    </section>
                }), lang)
            })}
        </Transition>
        <super::bulk::BulkProposals lang=lang/>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(recent.await.map(|list| view! {
                    <section id="decided" class="card">
                        <h2>{tr(lang, "Recent proposals", "近期提议")}</h2>
                        {list.iter().all(|p| p.status == "PENDING").then(|| view! {
                            <super::empty::Empty id="empty-decided"
                                why=tr(lang, "No proposal has been decided yet.", "尚无已审批的提议。")
                                href="#queue" action=tr(lang, "See what waits.", "查看待审批。")/>
                        })}
                        <table class="grid">
                            <thead><tr>
                                <th>{Msg::Fix.text(lang)}</th>
                                <th>{Msg::Status.text(lang)}</th>
                                <th>{tr(lang, "Proposer", "提议人")}</th>
                                <th>{Msg::DecidedBy.text(lang)}</th>
                                <th>{tr(lang, "Result", "结果")}</th>
                            </tr></thead>
                            <tbody>
                                {list.into_iter().filter(|p| p.status != "PENDING").map(|p| view! {
                                    <tr data-proposal=p.id.clone()>
                                        <td><a href=format!("/tickets/{}", p.ticket_id)><Code set=Codes::FixKind code=p.kind.as_str() lang=lang/></a></td>
                                        <td><Code set=Codes::ProposalStatus code=p.status.clone() lang=lang/></td>
                                        <td>{p.proposer.clone()}</td>
                                        <td>{p.decided_by.clone().unwrap_or_default()}</td>
                                        <td>{p.result.clone().unwrap_or_default()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </section>
                }), lang)
            })}
        </Transition>
    }
}
