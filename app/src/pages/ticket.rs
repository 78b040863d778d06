//! One ticket: both sides with the differing fields marked, the payment's
//! timeline, the work (assign, comment, evidence, conclude), the low-risk
//! actions (re-query, replay), and fix proposals. Every form posts without
//! JavaScript too, but a proposal's approval or rejection: that is asked
//! first in the page, which takes the page's script.

use super::approvals::ProposalDiscussion;
use super::cells::{IdText, use_zone};
use super::tickets::{list_href, ticket_href};
use super::{ErrorNote, Frame, Viewer, action_error, query_filter, url_error};
use crate::api::{
    AddEvidence, ApproveFix, AssignTicket, CommentTicket, ConcludeTicket, ProposeFix, RejectFix,
    ReplayForTicket, RequeryTicket, show_ticket, ticket_neighbours,
};
use crate::codes::{Code, Codes};
use crate::error::AppError;
use crate::i18n::{Msg, approvals_so_far, fix_name, in_zone, ticket_status, tr};
use crate::readable::{proposal_rows, proposal_sentence};
use crate::tickets::{
    ActionResult, FixKind, Neighbours, Proposal, Side, TicketDetail, TicketFilter,
};
use crate::types::{Lang, Role, User};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

#[component]
pub fn TicketPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let work = Work {
        assign: ServerAction::<AssignTicket>::new(),
        comment: ServerAction::<CommentTicket>::new(),
        evidence: ServerAction::<AddEvidence>::new(),
        conclude: ServerAction::<ConcludeTicket>::new(),
        requery: ServerAction::<RequeryTicket>::new(),
        replay: ServerAction::<ReplayForTicket>::new(),
        propose: ServerAction::<ProposeFix>::new(),
        decide: Decide {
            approve: ServerAction::<ApproveFix>::new(),
            reject: ServerAction::<RejectFix>::new(),
        },
    };
    // The work forms' refusals show beside their form and leave the page as
    // it is (what was typed stays); their successes reload the ticket.
    let (assigned, commented, attached, concluded, proposed) = (
        successes(work.assign),
        successes(work.comment),
        successes(work.evidence),
        successes(work.conclude),
        successes(work.propose),
    );
    let detail = Resource::new(
        move || {
            (
                id(),
                assigned.get(),
                commented.get(),
                attached.get(),
                concluded.get(),
                work.requery.version().get(),
                work.replay.version().get(),
                proposed.get(),
                work.decide.approve.version().get(),
                work.decide.reject.version().get(),
            )
        },
        |(id, ..)| show_ticket(id),
    );
    // The queue the ticket was opened from (the list's filters travel in
    // the address): previous and next in it, by link or by key.
    let filter = query_filter::<TicketFilter>();
    let neighbours = Resource::new(move || (id(), filter()), |(id, f)| ticket_neighbours(id, f));
    view! {
        <Frame allow=Role::ALL>
            <TicketBody work=work detail=detail neighbours=neighbours/>
        </Frame>
    }
}

/// The ticket page's actions, made once with its data (see `Loaded`).
#[derive(Clone, Copy)]
struct Work {
    assign: ServerAction<AssignTicket>,
    comment: ServerAction<CommentTicket>,
    evidence: ServerAction<AddEvidence>,
    conclude: ServerAction<ConcludeTicket>,
    requery: ServerAction<RequeryTicket>,
    replay: ServerAction<ReplayForTicket>,
    propose: ServerAction<ProposeFix>,
    decide: Decide,
}

/// The actions of a proposal card, shared with the approvals page.
#[derive(Clone, Copy)]
pub struct Decide {
    pub approve: ServerAction<ApproveFix>,
    pub reject: ServerAction<RejectFix>,
}

#[component]
fn TicketBody(
    work: Work,
    detail: super::Loaded<TicketDetail>,
    neighbours: super::Loaded<Neighbours>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let Work {
        assign,
        comment,
        evidence,
        conclude,
        requery,
        replay,
        propose,
        decide,
    } = work;
    let from_url = url_error();
    let page_error = move || {
        action_error(requery, || None)()
            .or_else(action_error(replay, || None))
            .or_else(action_error(decide.approve, || None))
            .or_else(action_error(decide.reject, || None))
            .or_else(from_url)
    };
    let result = move || {
        [
            requery.value().get(),
            replay.value().get(),
            decide.approve.value().get(),
        ]
        .into_iter()
        .flatten()
        .find_map(Result::ok)
    };
    let user = StoredValue::new(user);
    // Where the keyboard goes once the page has redrawn after a post: back
    // to the form just sent, or the comment box when asked for by `#comment`.
    provide_context(Refocus {
        to: StoredValue::new(None),
        drawn: StoredValue::new(false),
    });
    let filter = query_filter::<TicketFilter>();
    queue_keys(filter, neighbours);
    view! {
        <Title text=format!("{} · {}", tr(lang, "Ticket", "工单"), Msg::AppName.text(lang))/>
        <nav class="queue" id="queue-nav">
            <a href=move || list_href(&filter()) id="back-to-list">{tr(lang, "← All discrepancies", "← 全部差异工单")}</a>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    let n = neighbours.await.unwrap_or_default();
                    let f = filter();
                    let link = |to: Option<String>, id: &'static str, rel: &'static str, label: &'static str| match to {
                        Some(t) => view! { <a href=ticket_href(&t, &f) id=id rel=rel>{label}</a> }.into_any(),
                        None => view! { <span class="muted" id=id>{label}</span> }.into_any(),
                    };
                    view! {
                        {link(n.previous, "prev-ticket", "prev", Msg::PreviousTicket.text(lang))}
                        {link(n.next, "next-ticket", "next", Msg::NextTicket.text(lang))}
                    }
                })}
            </Transition>
            <span class="hint keys">{Msg::QueueKeys.text(lang)}</span>
        </nav>
        {move || view! { <ErrorNote err=page_error() lang=lang/> }}
        {move || result().map(|r: ActionResult| view! {
            <p class="result" id="action-result" role="status">
                {tr(lang, "Result:", "结果：")} " " <strong>{r.class}</strong> " — " {r.detail}
            </p>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let user = user.get_value();
                match detail.await {
                    Ok(d) => view! {
                        <Detail d=d lang=lang user=user assign=assign comment=comment evidence=evidence
                            conclude=conclude requery=requery replay=replay propose=propose decide=decide/>
                    }
                    .into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn SideRows(local: Side, provider: Side, differing: Vec<String>, lang: Lang) -> impl IntoView {
    let row = |key: &'static str, label: &str, p: Option<String>, l: Option<String>| {
        let differs = differing.iter().any(|d| d == key);
        view! {
            <tr class:diff=differs data-field=key>
                <th>{label.to_owned()}</th>
                <td class="provider-side">{p.unwrap_or_else(|| "—".into())}</td>
                <td class="local-side">{l.unwrap_or_else(|| "—".into())}</td>
            </tr>
        }
    };
    let zone = use_zone();
    let time = |t: Option<i64>| t.map(|at| zone.minutes(at));
    view! {
        <table class="grid sides" id="sides">
            <thead><tr>
                <th></th>
                <th>{tr(lang, "Provider's statement", "渠道账单")}</th>
                <th>{tr(lang, "Reckon (now)", "本地（当前）")}</th>
            </tr></thead>
            <tbody>
                {row("amount", Msg::Amount.text(lang), provider.amount.clone(), local.amount.clone())}
                {row("currency", tr(lang, "Currency", "币种"), provider.currency.clone(), local.currency.clone())}
                {row("status", Msg::Status.text(lang), provider.status.clone(), local.status.clone())}
                {row("txn", Msg::TxnId.text(lang), provider.txn.clone(), local.txn.clone())}
                {row("payment", tr(lang, "Payment no", "支付单号"), provider.payment_no.clone(), local.payment_no.clone())}
                {row("time", &in_zone(lang, "Time", "时间", &zone), time(provider.at), time(local.at))}
            </tbody>
        </table>
    }
}

#[allow(clippy::too_many_arguments)]
#[component]
fn Detail(
    d: TicketDetail,
    lang: Lang,
    user: User,
    assign: ServerAction<AssignTicket>,
    comment: ServerAction<CommentTicket>,
    evidence: ServerAction<AddEvidence>,
    conclude: ServerAction<ConcludeTicket>,
    requery: ServerAction<RequeryTicket>,
    replay: ServerAction<ReplayForTicket>,
    propose: ServerAction<ProposeFix>,
    decide: Decide,
) -> impl IntoView {
    let s = d.summary.clone();
    let id = s.id.clone();
    let closed = s.status == "CLOSED";
    let works = matches!(user.role, Role::Operator | Role::Supervisor);
    let can_work = works && !closed;
    let payment_link =
        s.payment_no.clone().filter(|_| d.local.present).map(
            |no| view! { <a href=format!("/payments/{no}") id="payment-link">{no.clone()}</a> },
        );
    let upload = format!("/tickets/{}/evidence", id);
    let backfill_needs_order = !d.local.present;
    let me = user.username.clone();
    let zone = use_zone();
    Effect::new(move |_| {
        if let Some(to) = use_context::<Refocus>() {
            to.redrawn();
        }
    });
    view! {
        <div class="ticket-grid" class:split=can_work>
        <div class="evidence-col">
        <section class="card" id="ticket" data-status=s.status.clone() data-class=s.class.clone()>
            <h1>
                <span class="badge"><Code set=Codes::Severity code=s.severity.clone() lang=lang/></span> " " <Code set=Codes::Class code=s.class.clone() lang=lang/> " · "
                <span id="ticket-status">{ticket_status(&s.status, lang)}</span>
            </h1>
            <p class="reason">{d.reason.clone()}</p>
            <dl class="facts">
                <dt>{Msg::Provider.text(lang)}</dt><dd>{s.provider.clone()}</dd>
                <dt>{Msg::BusinessDay.text(lang)}</dt><dd>{s.business_date.clone().unwrap_or_default()}</dd>
                <dt>{Msg::Payment.text(lang)}</dt><dd>{payment_link}{(!d.local.present).then(|| s.payment_no.clone().unwrap_or_default())}</dd>
                <dt>{Msg::Order.text(lang)}</dt><dd>{s.order_no.clone().unwrap_or_default()}</dd>
                <dt>{tr(lang, "Run / file / line", "批次 / 文件 / 行号")}</dt>
                <dd><IdText id=d.run_id.clone().unwrap_or_default() head=36 tail=4 lang=lang/> " " <StatementLine run=d.run_id.clone() file=d.statement_file.clone() line=d.line_no lang=lang/></dd>
                <dt>{Msg::Owner.text(lang)}</dt><dd id="ticket-owner">{s.owner.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>{in_zone(lang, "Found", "发现时间", &zone)}</dt><dd>{zone.minutes(s.found_at)}</dd>
                {s.age_days.map(|days| view! {
                    <dt>{Msg::Age.text(lang)}</dt>
                    <dd id="ticket-age">{days} " " {Msg::AgeDays.text(lang)}</dd>
                })}
                {s.sla_due_at.map(|due| view! {
                    <dt>{in_zone(lang, "SLA due", "SLA 到期", &zone)}</dt>
                    <dd id="ticket-sla" class:overdue=s.overdue>
                        {zone.minutes(due)}
                        {s.overdue.then(|| view! { " " <span class="badge overdue-badge">{Msg::Overdue.text(lang)}</span> })}
                    </dd>
                })}
                <dt>{Msg::TraceId.text(lang)}</dt><dd><IdText id=d.trace_id.clone().unwrap_or_default() head=36 tail=4 lang=lang/></dd>
                {d.hold_reason.clone().map(|h| view! { <dt>{Msg::Held.text(lang)}</dt><dd class="held">{h}</dd> })}
                {d.conclusion.clone().map(|c| view! { <dt>{tr(lang, "Conclusion", "结论")}</dt><dd id="ticket-conclusion">{c}</dd> })}
            </dl>
        </section>

        <SideRows local=d.local.clone() provider=d.provider.clone() differing=d.differing.clone() lang=lang/>

        {can_work.then(|| {
            let id5 = id.clone();
            view! {
                <section class="card" id="low-risk">
                    <h2>{tr(lang, "Low-risk actions", "低风险操作")}</h2>
                    <p class="hint">{tr(lang,
                        "These ask the provider again or re-process a stored callback: the payment changes only if the provider's answer is a valid next state. Each is recorded on the ticket and in the audit log.",
                        "向渠道重新查询，或重新处理已保存的回调：只有渠道的结果是合法的下一状态时，支付单才会变更。每次操作都记录到工单与审计日志。")}</p>
                    {d.local.present.then(|| view! {
                        <ActionForm action=requery attr:class="inline" attr:id="requery-form">
                            <input type="hidden" name="id" value=id5.clone()/>
                            <button type="submit" id="requery-submit">{tr(lang, "Re-query the provider", "重新查询渠道")}</button>
                        </ActionForm>
                    })}
                    <table class="grid" id="callbacks">
                        <thead><tr>
                            <th>{Msg::Callback.text(lang)}</th>
                            <th>{Msg::Signature.text(lang)}</th>
                            <th>{Msg::Processing.text(lang)}</th>
                            <th>{in_zone(lang, "Received", "接收时间", &zone)}</th>
                            <th></th>
                        </tr></thead>
                        <tbody>
                            {d.callbacks.iter().map(|c| {
                                let verified = c.verify_result == "VERIFIED";
                                let (tid, cid) = (id.clone(), c.id.clone());
                                view! {
                                    <tr data-callback=c.callback_id.clone()>
                                        <td><a href=format!("/callbacks/{}", c.id)>{c.callback_id.clone()}</a></td>
                                        <td>{c.verify_result.clone()}</td>
                                        <td>{c.processing_status.clone()} " " {c.outcome.clone().unwrap_or_default()}</td>
                                        <td>{zone.minutes(c.received_at)}</td>
                                        <td>{verified.then(|| view! {
                                            <ActionForm action=replay attr:class="inline">
                                                <input type="hidden" name="id" value=tid/>
                                                <input type="hidden" name="callback" value=cid/>
                                                <button type="submit" class="replay-submit">{tr(lang, "Replay", "重放")}</button>
                                            </ActionForm>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </section>
            }
        })}
        </div>

        {can_work.then(|| {
            let (id1, id2, id3, id4, id6) = (id.clone(), id.clone(), id.clone(), id.clone(), id.clone());
            let mine = s.owner.as_deref() == Some(me.as_str());
            let pending = Pending {
                assign: assign.pending().into(),
                comment: comment.pending().into(),
                evidence: evidence.pending().into(),
                conclude: conclude.pending().into(),
                propose: propose.pending().into(),
            };
            let (me1, me2) = (me.clone(), me.clone());
            view! {
                <div class="work-col">
                <section class="card work" id="work">
                    <h2>{tr(lang, "Work", "处理")}</h2>
                    {(!mine).then(|| view! {
                        <ActionForm action=assign attr:class="row" attr:id="assign-me-form">
                            <input type="hidden" name="id" value=id6/>
                            <input type="hidden" name="owner" value=me1/>
                            <PostButton pending=pending.assign id="assign-me" refocus="assign-owner">{Msg::AssignToMe.text(lang)}</PostButton>
                        </ActionForm>
                    })}
                    <ActionForm action=assign attr:class="row" attr:id="assign-form">
                        <input type="hidden" name="id" value=id1/>
                        <label>{tr(lang, "Assign to", "分配给")}
                            <select name="owner" id="assign-owner">
                                {d.operators.iter().map(|o| view! {
                                    <option value=o.clone() selected=*o == me2>{o.clone()}</option>
                                }).collect_view()}
                            </select>
                        </label>
                        <PostButton pending=pending.assign id="assign-submit" refocus="assign-owner">{tr(lang, "Assign", "分配")}</PostButton>
                    </ActionForm>
                    <FormError action=assign id="assign-error" forms=&["assign-me-form", "assign-form"] lang=lang/>
                    <ActionForm action=comment attr:class="row" attr:id="comment-form">
                        <input type="hidden" name="id" value=id2/>
                        <label class="wide">{tr(lang, "Comment", "备注")}
                            <textarea name="text" id="comment-text" required rows="2" aria-describedby="comment-hint comment-error"
                                on:keydown=move |ev| send_on_ctrl_enter(&ev)></textarea>
                        </label>
                        <PostButton pending=pending.comment id="comment-submit" refocus="comment-text">{tr(lang, "Add comment", "添加备注")}</PostButton>
                        <span class="hint" id="comment-hint">{tr(lang, "Ctrl+Enter adds it.", "Ctrl+Enter 提交。")}</span>
                    </ActionForm>
                    <FormError action=comment id="comment-error" forms=&["comment-form"] lang=lang/>
                    <ActionForm action=evidence attr:class="row" attr:id="evidence-form">
                        <input type="hidden" name="id" value=id3/>
                        <label>{tr(lang, "Evidence", "证据")}
                            <select name="kind" id="evidence-kind">
                                <option value="text">{tr(lang, "text", "文字")}</option>
                                <option value="reference">{tr(lang, "reference", "引用编号/链接")}</option>
                            </select>
                        </label>
                        <label class="wide">{tr(lang, "Content", "内容")}<input name="text" id="evidence-text" required aria-describedby="evidence-error"/></label>
                        <PostButton pending=pending.evidence id="evidence-submit" refocus="evidence-text">{tr(lang, "Attach", "附加")}</PostButton>
                    </ActionForm>
                    <FormError action=evidence id="evidence-error" forms=&["evidence-form"] lang=lang/>
                    <form method="post" enctype="multipart/form-data" action=upload class="row" id="evidence-file-form">
                        <label>{tr(lang, "Evidence file (≤ 256 KiB)", "证据文件（≤ 256 KiB）")}<input type="file" name="file" id="evidence-file" required/></label>
                        <button type="submit" id="evidence-file-submit">{tr(lang, "Upload", "上传")}</button>
                    </form>
                    <ActionForm action=conclude attr:class="row" attr:id="conclude-form">
                        <input type="hidden" name="id" value=id4/>
                        <label class="wide">{tr(lang, "Close with a conclusion (no money changes)", "填写结论并关闭（不涉及资金变更）")}
                            <input name="conclusion" id="conclusion-text" required aria-describedby="conclude-error" placeholder=tr(lang, "e.g. explained: provider fee", "例如：已说明，渠道手续费")/>
                        </label>
                        <PostButton pending=pending.conclude id="conclude-submit" refocus="conclusion-text">{tr(lang, "Close ticket", "关闭工单")}</PostButton>
                    </ActionForm>
                    <FormError action=conclude id="conclude-error" forms=&["conclude-form"] lang=lang/>
                </section>

                {(!d.fixes.is_empty()).then(|| view! {
                    <section class="card" id="propose">
                        <h2>{tr(lang, "Propose a fix (a second person approves)", "提议修复（须由另一人审批）")}</h2>
                        <ActionForm action=propose attr:class="stack" attr:id="propose-form">
                            <input type="hidden" name="id" value=id.clone()/>
                            <label>{Msg::Fix.text(lang)}
                                <select name="kind" id="fix-kind">
                                    {d.fixes.iter().map(|k| view! { <option value=k.as_str()>{fix_name(*k, lang)}</option> }).collect_view()}
                                </select>
                            </label>
                            {(backfill_needs_order && d.fixes.contains(&FixKind::Backfill)).then(|| view! {
                                <label>{tr(lang, "Order no (the payment is created for it)", "订单号（将为其补建支付单）")}
                                    <input name="order_no" id="fix-order"/>
                                </label>
                            })}
                            {d.fixes.contains(&FixKind::Merge).then(|| view! {
                                <label>{tr(lang, "Payment to keep (empty: the one bound to the txn)", "保留的支付单（留空：绑定该流水的那笔）")}
                                    <input name="keep" id="fix-keep"/>
                                </label>
                            })}
                            <label>{tr(lang, "Reason", "原因")}<textarea name="reason" id="fix-reason" required rows="2"></textarea></label>
                            <label>{tr(lang, "Evidence", "证据")}<textarea name="evidence" id="fix-evidence" required rows="2"></textarea></label>
                            <PostButton pending=pending.propose id="propose-submit" refocus="fix-kind">{tr(lang, "Propose", "提交提议")}</PostButton>
                        </ActionForm>
                        <FormError action=propose id="propose-error" forms=&["propose-form"] lang=lang/>
                    </section>
                })}
                </div>
            }
        })}
        </div>

        {(!d.proposals.is_empty()).then(|| view! {
            <section id="proposals">
                <h2>{tr(lang, "Proposals", "修复提议")}</h2>
                {d.proposals.iter().cloned().map(|p| view! { <ProposalCard p=p lang=lang viewer=user.clone() decide=decide/> }).collect_view()}
            </section>
        })}

        <section class="card" id="notes">
            <h2>{tr(lang, "Notes and evidence", "备注与证据")}</h2>
            <ul>
                {d.notes.iter().map(|n| view! {
                    <li data-kind=n.kind.clone()>
                        <span class="muted">{zone.named(n.at)} " · " {n.author.clone()} " · " {n.kind.clone()}</span> " "
                        {match n.file_name.clone() {
                            Some(name) => view! { <a href=format!("/evidence/{}", n.id) rel="external">{name}</a> " (" {n.file_size.unwrap_or_default()} " B)" }.into_any(),
                            None => view! { <span>{n.body.clone()}</span> }.into_any(),
                        }}
                    </li>
                }).collect_view()}
            </ul>
        </section>

        <section class="card" id="timeline">
            <h2>{tr(lang, "Timeline", "时间线")}</h2>
            <table class="grid">
                <thead><tr>
                    <th>{in_zone(lang, "Time", "时间", &zone)}</th>
                    <th>{tr(lang, "Kind", "类型")}</th>
                    <th>{tr(lang, "What", "事件")}</th>
                    <th>{tr(lang, "Detail", "详情")}</th>
                </tr></thead>
                <tbody>
                    {d.timeline.iter().map(|t| view! {
                        <tr data-kind=t.kind.clone()>
                            <td>{zone.minutes(t.at)}</td>
                            <td>{t.kind.clone()}</td>
                            <td>{t.title.clone()}</td>
                            <td>{t.detail.clone()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

/// A proposal with what it changes; a supervisor who did not propose it
/// may approve or reject it (with a comment). The server refuses the
/// proposer regardless of what this shows.
#[component]
pub fn ProposalCard(p: Proposal, lang: Lang, viewer: User, decide: Decide) -> impl IntoView {
    let own = p.proposer_id == viewer.id;
    let open = p.status == "PENDING" && !p.expired && p.stale_reason.is_none();
    let approved_already = p.approved_by.contains(&viewer.username);
    let may_decide = open && !own && !approved_already && viewer.role == Role::Supervisor;
    // Several approvers: the count, and who approved so far.
    let tally = (p.required > 1 || !p.approved_by.is_empty())
        .then(|| approvals_so_far(lang, &p.approved_by, p.required));
    let state = if p.expired {
        tr(lang, "expired", "已过期").to_owned()
    } else if p.stale_reason.is_some() && p.status == "PENDING" {
        tr(lang, "stale", "已失效").to_owned()
    } else {
        p.status.clone()
    };
    let (fix, payment) = (
        fix_name(p.kind, lang),
        // A grouped match names payouts and credits, not one payment.
        p.payment_no
            .clone()
            .unwrap_or_else(|| tr(lang, "the group", "该匹配组").to_owned()),
    );
    // Short of the last approval it needs, an approval executes nothing yet.
    let (so_far, required) = (p.approved_by.len(), p.required);
    let approve_q = match (lang, so_far as i64 + 1 >= required) {
        (Lang::En, true) => format!("Approve and execute {fix} for {payment} now?"),
        (Lang::Zh, true) => format!("批准并立即执行 {payment} 的{fix}？"),
        (Lang::En, false) => format!(
            "Approve {fix} for {payment}? It is executed once {required} approvers have approved it ({so_far} so far)."
        ),
        (Lang::Zh, false) => {
            format!("批准 {payment} 的{fix}？须 {required} 人批准后才执行（目前 {so_far} 人）。")
        }
    };
    let reject_q = match lang {
        Lang::En => format!(
            "Reject {fix} for {payment}? Nothing is executed; the ticket goes back to its owner."
        ),
        Lang::Zh => format!("驳回 {payment} 的{fix}？不执行任何操作，工单退回处理。"),
    };
    let zone = use_zone();
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap_or_default();
    let (before, after) = (json(&p.before), json(&p.after));
    let sentence = proposal_sentence(p.kind, p.payment_no.as_deref(), &before, &after, lang);
    let rows = proposal_rows(&before, &after, &zone, lang);
    view! {
        <article class="card proposal" data-proposal=p.id.clone() data-status=p.status.clone() data-ticket=p.ticket_id.clone()>
            <h3>
                {fix_name(p.kind, lang)} " · " <span class="proposal-state">{state}</span>
            </h3>
            <p class="proposal-sentence">{sentence}</p>
            <p>
                <a href=format!("/tickets/{}", p.ticket_id)>{p.ticket_class.clone()}</a> " · "
                {p.payment_no.clone().unwrap_or_default()} " · "
                {tr(lang, "proposed by", "提议人")} " " <strong class="proposer">{p.proposer.clone()}</strong> " "
                {zone.named(p.proposed_at)} " · " {tr(lang, "expires", "到期")} " " {zone.named(p.expires_at)}
            </p>
            <p><strong>{tr(lang, "Reason:", "原因：")}</strong> " " {p.reason.clone()}</p>
            <p><strong>{tr(lang, "Evidence:", "证据：")}</strong> " " {p.evidence.clone()}</p>
            <table class="grid proposal-fields">
                <thead><tr>
                    <th>{tr(lang, "Field", "字段")}</th>
                    <th>{Msg::Before.text(lang)} " → " {Msg::After.text(lang)}</th>
                    <th class="amount">{tr(lang, "Difference", "差额")}</th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|r| view! {
                        <tr data-field=r.key.clone() class:changed=r.changed>
                            <th>{r.label}</th>
                            <td><span class="before">{r.before}</span> " → " <span class="after">{r.after}</span></td>
                            <td class="amount difference">{r.difference}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            <details class="before-after">
                <summary>{tr(lang, "As recorded (JSON)", "原始记录（JSON）")}</summary>
                <div><h4>{Msg::Before.text(lang)}</h4><pre>{p.before.clone()}</pre></div>
                <div><h4>{Msg::After.text(lang)}</h4><pre>{p.after.clone()}</pre></div>
            </details>
            {p.stale_reason.clone().map(|r| view! { <p class="error">{tr(lang, "Stale:", "已失效：")} " " {r}</p> })}
            {p.decided_by.clone().map(|by| view! {
                <p class="decision">{Msg::DecidedBy.text(lang)} " " {by} ": " {p.decision_comment.clone().unwrap_or_default()}
                    {p.result.clone().map(|r| view! { <br/>{r} })}</p>
            })}
            {tally.map(|t| view! { <p class="approvals" data-required=p.required.to_string()
                data-approved=p.approved_by.len().to_string()>{t}</p> })}
            {(open && approved_already).then(|| view! { <p class="hint approved-already">{tr(lang,
                "You approved it: it waits for another approver.", "您已批准：等待另一位审批人。")}</p> })}
            {(open && own).then(|| view! { <p class="hint own">{tr(lang, "Your proposal: another supervisor must decide it.", "这是您的提议：须由另一位主管审批。")}</p> })}
            <ProposalDiscussion id=p.id.clone() comments=p.comments.clone()
                may_comment=open && matches!(viewer.role, Role::Operator | Role::Supervisor)
                may_decide=may_decide approve_q=approve_q reject_q=reject_q decide=decide lang=lang/>
        </article>
    }
}

/// The element to focus once the page has redrawn (by its id), and whether
/// the ticket has been drawn yet.
#[derive(Clone, Copy)]
struct Refocus {
    to: StoredValue<Option<&'static str>>,
    drawn: StoredValue<bool>,
}

impl Refocus {
    /// The ticket is drawn (again): the element waiting for the keyboard
    /// gets it; on the first drawing, an address ending in `#comment` (the
    /// list's `c`) asks for the comment box.
    fn redrawn(self) {
        let first = !self.drawn.get_value();
        self.drawn.set_value(true);
        self.take_into_focus(first);
    }

    /// Focuses the element waiting for it, once; after the next frame, when
    /// a redrawn page is in the document (and the address is complete).
    fn take_into_focus(self, first: bool) {
        let to = self.to;
        request_animation_frame(move || {
            let id = to.try_update_value(Option::take).flatten().or_else(|| {
                (first && window().location().hash().ok().as_deref() == Some("#comment"))
                    .then_some("comment-text")
            });
            if let Some(id) = id {
                focus_by_id(id);
            }
        });
    }
}

fn focus_by_id(id: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if let Some(el) = document()
            .get_element_by_id(id)
            .and_then(|el| el.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        {
            let _ = el.focus();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}

/// How far `action` has got counting only its successes: a refusal leaves
/// this where it was.
pub(super) fn successes<A>(action: ServerAction<A>) -> Memo<usize>
where
    A: leptos::server_fn::ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    A::Output: Clone + Send + Sync + 'static,
{
    Memo::new(move |before: Option<&usize>| {
        let version = action.version().get();
        let ok = action.value().with(|v| matches!(v, Some(Ok(_))));
        if ok {
            version
        } else {
            before.copied().unwrap_or(0)
        }
    })
}

/// Whether each work form's post is under way.
#[derive(Clone, Copy)]
struct Pending {
    assign: Signal<bool>,
    comment: Signal<bool>,
    evidence: Signal<bool>,
    conclude: Signal<bool>,
    propose: Signal<bool>,
}

/// A work form's submit: off while its post is under way, so a double
/// click or a second Enter posts nothing more. `refocus` is where the
/// keyboard goes once the post is answered.
#[component]
fn PostButton(
    pending: Signal<bool>,
    id: &'static str,
    refocus: &'static str,
    children: Children,
) -> impl IntoView {
    let again = use_context::<Refocus>();
    view! {
        <button type="submit" id=id
            disabled=move || pending.get()
            aria-busy=move || pending.get().then_some("true")
            on:click=move |ev| {
                // Between the first post and the button's redraw.
                if pending.get_untracked() {
                    ev.prevent_default();
                } else if let Some(again) = again {
                    again.to.set_value(Some(refocus));
                }
            }>
            {children()}
        </button>
    }
}

/// A work form's refusal, beside the form and in the viewer's language.
/// Once a post is answered the keyboard goes back to the form, and a post
/// taken empties `forms` (a refused one keeps what was typed). The page
/// redraws the ticket into the same elements, which keeps their values.
#[component]
fn FormError<A>(
    action: ServerAction<A>,
    id: &'static str,
    forms: &'static [&'static str],
    lang: Lang,
) -> impl IntoView
where
    A: leptos::server_fn::ServerFn<Error = AppError> + Clone + Send + Sync + 'static,
    A::Output: Clone + Send + Sync + 'static,
{
    let err = action_error(action, || None);
    let again = use_context::<Refocus>();
    // On each answer, not on the one already there when the form is drawn.
    Effect::watch(
        move || action.version().get(),
        move |_, _, _| {
            if action.value().with_untracked(|v| matches!(v, Some(Ok(_)))) {
                forms.iter().for_each(|form| reset_form(form));
            }
            if let Some(to) = again {
                to.take_into_focus(false);
            }
        },
        false,
    );
    view! {
        <div class="form-error" id=id aria-live="polite">
            {move || view! { <ErrorNote err=err() lang=lang/> }}
        </div>
    }
}

fn reset_form(id: &str) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        if let Some(form) = document()
            .get_element_by_id(id)
            .and_then(|el| el.dyn_into::<leptos::web_sys::HtmlFormElement>().ok())
        {
            form.reset();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}

/// Ctrl+Enter (or Cmd+Enter) in a text area sends its form, through the
/// form's submit button and so its guard.
fn send_on_ctrl_enter(ev: &leptos::ev::KeyboardEvent) {
    if ev.key() != "Enter" || !(ev.ctrl_key() || ev.meta_key()) {
        return;
    }
    ev.prevent_default();
    #[cfg(feature = "hydrate")]
    {
        use leptos::web_sys::{Element, HtmlElement};
        use wasm_bindgen::JsCast;
        if let Some(button) = ev
            .target()
            .and_then(|t| t.dyn_into::<Element>().ok())
            .and_then(|el| el.closest("form").ok().flatten())
            .and_then(|form| form.query_selector("button[type=submit]").ok().flatten())
            .and_then(|b| b.dyn_into::<HtmlElement>().ok())
        {
            button.click();
        }
    }
}

/// Keys for working a queue: `j`/`n` the next ticket, `k`/`p` the
/// previous, `u` back to the list — never while typing in a field, nor
/// with a modifier held (the browser's own shortcuts stay).
fn queue_keys(
    filter: impl Fn() -> TicketFilter + Copy + 'static,
    neighbours: Resource<Result<Neighbours, crate::error::AppError>>,
) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let navigate = leptos_router::hooks::use_navigate();
        let handle = window_event_listener(leptos::ev::keydown, move |e| {
            if e.ctrl_key() || e.meta_key() || e.alt_key() || e.default_prevented() {
                return;
            }
            let typing = e
                .target()
                .and_then(|t| t.dyn_into::<leptos::web_sys::HtmlElement>().ok())
                .is_some_and(|el| {
                    matches!(
                        el.tag_name().as_str(),
                        "INPUT" | "TEXTAREA" | "SELECT" | "BUTTON"
                    ) || el.is_content_editable()
                });
            if typing {
                return;
            }
            let f = untrack(filter);
            let n = neighbours
                .get_untracked()
                .and_then(Result::ok)
                .unwrap_or_default();
            let to = match e.key().as_str() {
                "j" | "n" => n.next.map(|id| ticket_href(&id, &f)),
                "k" | "p" => n.previous.map(|id| ticket_href(&id, &f)),
                "u" => Some(list_href(&f)),
                _ => None,
            };
            if let Some(to) = to {
                e.prevent_default();
                navigate(&to, Default::default());
            }
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (filter, neighbours);
}

/// "line N of FILE", linking the run's kept statement file (the evidence
/// the ticket came from).
#[component]
fn StatementLine(
    run: Option<String>,
    file: Option<String>,
    line: Option<i64>,
    lang: Lang,
) -> impl IntoView {
    let name = file.unwrap_or_else(|| tr(lang, "the statement", "账单").to_owned());
    let text = match line {
        Some(n) => format!(
            "{} {n} {} {name}",
            tr(lang, "line", "第"),
            tr(lang, "of", "行，")
        ),
        None => name,
    };
    match run {
        Some(run) => view! {
            <a href=format!("/runs/{}/file", crate::tickets::encode(&run)) id="statement-line" download>{text}</a>
        }
        .into_any(),
        None => view! { <span>{text}</span> }.into_any(),
    }
}
