//! The approval queue: every pending proposal, oldest first, with what it
//! changes and what was said about it. Each card has one comment box: a
//! comment alone, or the reason supervisors approve or reject with — never
//! their own proposals (the database refuses; the page does not offer it).
//! Below, the most recent decisions.

use super::cells::use_zone;
use super::confirm::ConfirmSubmit;
use super::ticket::{Decide, ProposalCard};
use super::{ErrorNote, Frame, Loaded, Viewer, action_error, shown, url_error};
use crate::api::{
    ApproveFix, CommentProposal, DecideHeld, RejectFix, held_actions, list_bulk_proposals,
    list_proposals,
};
use crate::bulk::BulkProposal;
use crate::codes::{Code, Codes};
use crate::i18n::{Msg, tr};
use crate::policy::HeldAction;
use crate::tickets::{ActionResult, Proposal, ProposalComment};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
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
    let bulk = Resource::new(|| (), |_| list_bulk_proposals());
    let held_decide = ServerAction::<DecideHeld>::new();
    let held = Resource::new(move || held_decide.version().get(), |_| held_actions());
    view! {
        <Frame allow=Role::ALL>
            <ApprovalsBody decide=decide queue=queue recent=recent bulk=bulk held=held held_decide=held_decide/>
        </Frame>
    }
}

#[component]
fn ApprovalsBody(
    decide: Decide,
    queue: Loaded<Vec<Proposal>>,
    recent: Loaded<Vec<Proposal>>,
    bulk: Loaded<Vec<BulkProposal>>,
    held: Loaded<Vec<HeldAction>>,
    held_decide: ServerAction<DecideHeld>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
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
            <p class="result" id="action-result" role="status">{if r.class == "approved" { tr(lang, "Approved:", "已批准：") } else { tr(lang, "Executed:", "已执行：") }} " " {r.detail}</p>
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
        {(user.get_value().role != Role::Operator).then(|| view! {
            <super::held::HeldActions list=held decide=held_decide viewer=user.get_value() lang=lang/>
        })}
        <super::bulk::BulkProposals list=bulk lang=lang/>
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

/// A proposal's comments and its one comment box: *Comment* posts the text
/// alone (a note on the ticket, listed here), *Approve* and *Reject* send
/// it as the decision's reason.
#[allow(clippy::too_many_arguments)]
#[component]
pub fn ProposalDiscussion(
    id: String,
    comments: Vec<ProposalComment>,
    may_comment: bool,
    may_decide: bool,
    approve_q: String,
    reject_q: String,
    decide: Decide,
    lang: Lang,
) -> impl IntoView {
    let zone = use_zone();
    let post = ServerAction::<CommentProposal>::new();
    let text = RwSignal::new(String::new());
    let listed = RwSignal::new(comments);
    // A posted comment joins the list and leaves the box.
    Effect::new(move |_| {
        if let Some(Ok(c)) = post.value().get() {
            listed.update(|l| {
                if !l.contains(&c) {
                    l.push(c);
                }
            });
            text.set(String::new());
        }
    });
    let err = action_error(post, || None);
    let empty = Signal::derive(move || text.get().trim().is_empty());
    let (id_c, id_a, id_r) = (id.clone(), id.clone(), id);
    view! {
        <div class="discussion">
            <ul class="proposal-comments">
                {move || listed.get().into_iter().map(|c| view! {
                    <li class="proposal-comment-item">
                        <span class="muted">{zone.named(c.at)} " · " <strong class="comment-author">{c.author}</strong></span> " "
                        <span class="comment-text">{c.text}</span>
                    </li>
                }).collect_view()}
            </ul>
            {move || view! { <ErrorNote err=err() lang=lang/> }}
            {may_comment.then(|| view! {
                <ActionForm action=post attr:class="row comment-proposal-form">
                    <input type="hidden" name="proposal" value=id_c/>
                    <label class="wide">{tr(lang, "Comment", "审批意见")}
                        <input name="text" class="proposal-comment approve-comment reject-comment" required
                            prop:value=move || text.get()
                            on:input=move |ev| text.set(event_target_value(&ev))/>
                    </label>
                    <button type="submit" class="comment-proposal-submit">{tr(lang, "Comment only", "仅发表意见")}</button>
                </ActionForm>
            })}
            {may_decide.then(|| view! {
                <p class="hint">{tr(lang,
                    "Approve or Reject sends the comment above as the decision's reason.",
                    "批准或驳回时，上方意见即为审批理由。")}</p>
                <div class="decide">
                    <ActionForm action=decide.approve attr:class="row approve-form">
                        <input type="hidden" name="proposal" value=id_a/>
                        <input type="hidden" name="comment" prop:value=move || text.get()/>
                        <ConfirmSubmit label=tr(lang, "Approve and execute", "批准并执行").to_owned()
                            question=approve_q lang=lang class="approve-submit" disabled=empty/>
                    </ActionForm>
                    <ActionForm action=decide.reject attr:class="row reject-form">
                        <input type="hidden" name="proposal" value=id_r/>
                        <input type="hidden" name="comment" prop:value=move || text.get()/>
                        <ConfirmSubmit label=tr(lang, "Reject", "驳回").to_owned()
                            question=reject_q lang=lang class="reject-submit danger" disabled=empty/>
                    </ActionForm>
                </div>
            })}
        </div>
    }
}
