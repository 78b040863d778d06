//! Bulk work in the console: the tick boxes and the bulk bar of the
//! tickets list (assign, comment, close with one conclusion, or propose one
//! fix for the ticked tickets or for every ticket the filter matches), a
//! bulk proposal's page in the approvals area (each item with its own
//! before and after, approved or rejected one by one or all at once, never
//! by its proposer), and the jobs with their progress and a cancel.

use super::callbacks::poll_while;
use super::ticket::{Decide, ProposalCard};
use super::{ErrorNote, Frame, Viewer, action_error, url_error};
use crate::api::{
    ApproveFix, BulkAction, BulkApprove, BulkPropose, BulkReject, CancelBulkJob, RejectFix,
    list_bulk_jobs, list_bulk_proposals, show_bulk_proposal,
};
use crate::bulk::{BULK_LIMIT, BulkJob, BulkProposal};
use crate::filter::QueryFilter;
use crate::format::utc_minutes;
use crate::i18n::{Msg, tr};
use crate::tickets::{FixKind, TicketFilter};
use crate::types::{Lang, Role, User};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

/// The ticked tickets, kept while the list moves from page to page.
#[derive(Clone, Copy)]
pub struct Picked(pub RwSignal<Vec<String>>);

/// Provides the selection to the list's rows (call once in the list).
pub fn provide_picked() {
    if use_context::<Picked>().is_none() {
        provide_context(Picked(RwSignal::new(Vec::new())));
    }
}

/// A row's tick box.
#[component]
pub fn Pick(id: String) -> impl IntoView {
    let Some(Picked(picked)) = use_context::<Picked>() else {
        return ().into_any();
    };
    let (mine, toggled) = (id.clone(), id);
    view! {
        <input type="checkbox" class="pick" aria-label="select"
            prop:checked=move || picked.with(|p| p.contains(&mine))
            on:change=move |ev| {
                let on = event_target_checked(&ev);
                picked.update(|p| {
                    p.retain(|x| *x != toggled);
                    if on && p.len() < BULK_LIMIT {
                        p.push(toggled.clone());
                    }
                });
            }/>
    }
    .into_any()
}

/// The list's header tick box: every ticket of this page on or off.
#[component]
pub fn PickPage(ids: Vec<String>) -> impl IntoView {
    let Some(Picked(picked)) = use_context::<Picked>() else {
        return ().into_any();
    };
    let all = ids.clone();
    view! {
        <input type="checkbox" id="pick-page" aria-label="select page"
            prop:checked=move || !all.is_empty() && picked.with(|p| all.iter().all(|i| p.contains(i)))
            on:change=move |ev| {
                let on = event_target_checked(&ev);
                picked.update(|p| {
                    p.retain(|x| !ids.contains(x));
                    if on {
                        p.extend(ids.iter().cloned());
                        p.truncate(BULK_LIMIT);
                    }
                });
            }/>
    }
    .into_any()
}

/// The filter as hidden fields of a bulk form (every key but the cursor).
fn filter_fields(f: &TicketFilter) -> impl IntoView + use<> {
    TicketFilter::KEYS
        .iter()
        .filter(|k| **k != "after")
        .filter_map(|k| f.get(k).map(|v| (*k, v.to_owned())))
        .map(|(k, v)| view! { <input type="hidden" name=format!("filter[{k}]") value=v/> })
        .collect_view()
}

/// The scope and the selection, shared by both bulk forms.
#[component]
fn Scope(f: TicketFilter, total: i64, lang: Lang, prefix: &'static str) -> impl IntoView {
    let Picked(picked) = expect_context::<Picked>();
    let ids = move || picked.with(|p| p.join(","));
    let ticked = move || picked.with(Vec::len);
    // Ticks chosen: they are the scope; none: the whole filter.
    let by_ticks = move || picked.with(|p| !p.is_empty());
    let by_filter = move || picked.with(Vec::is_empty);
    view! {
        <label>{tr(lang, "Tickets", "工单")}
            <select name="scope" id=format!("{prefix}-scope")>
                <option value="ids" selected=by_ticks>
                    {move || format!("{} ({})", tr(lang, "ticked", "已勾选"), ticked())}
                </option>
                <option value="filter" selected=by_filter>
                    {format!("{} ({total})", tr(lang, "all matching the filter", "符合筛选条件的全部"))}
                </option>
            </select>
        </label>
        <input type="hidden" name="ids" prop:value=ids/>
        {filter_fields(&f)}
    }
}

/// The bulk bar above the tickets list (operators and supervisors).
#[component]
pub fn BulkBar(f: TicketFilter, total: i64, lang: Lang) -> impl IntoView {
    let Viewer { user, .. } = expect_context::<Viewer>();
    if !matches!(user.role, Role::Operator | Role::Supervisor) {
        return ().into_any();
    }
    let act = ServerAction::<BulkAction>::new();
    let propose = ServerAction::<BulkPropose>::new();
    let from_url = url_error();
    let err = move || action_error(act, from_url)().or_else(action_error(propose, || None));
    let Picked(picked) = expect_context::<Picked>();
    let versions = move || (act.version().get(), propose.version().get());
    let f2 = f.clone();
    view! {
        <section class="card" id="bulk-bar">
            <h2>{tr(lang, "Bulk work", "批量处理")}</h2>
            <p class="hint">{format!("{} {BULK_LIMIT} {}",
                tr(lang, "Each ticket is worked on its own, as if done by hand, and recorded in the audit log. At most", "每张工单逐一处理，与手工操作相同，并逐条记入审计日志。每次最多"),
                tr(lang, "tickets at a time.", "张工单。"))}
                " " <button type="button" id="bulk-clear" on:click=move |_| picked.set(Vec::new())>{tr(lang, "Clear ticks", "清除勾选")}</button>
            </p>
            {move || view! { <ErrorNote err=err() lang=lang/> }}
            <ActionForm action=act attr:class="row" attr:id="bulk-action-form">
                <Scope f=f.clone() total=total lang=lang prefix="ba"/>
                <label>{Msg::Actions.text(lang)}
                    <select name="action" id="bulk-action">
                        <option value="ASSIGN">{tr(lang, "Assign to", "分配给")}</option>
                        <option value="COMMENT">{tr(lang, "Comment", "添加备注")}</option>
                        <option value="CLOSE">{tr(lang, "Close with one conclusion (no money changes)", "以同一结论关闭（不涉及资金变更）")}</option>
                    </select>
                </label>
                <label class="wide">{tr(lang, "Owner, comment or conclusion", "负责人、备注或结论")}<input name="text" id="bulk-text" required/></label>
                <button type="submit" id="bulk-action-submit">{tr(lang, "Start", "开始")}</button>
            </ActionForm>
            <ActionForm action=propose attr:class="row" attr:id="bulk-propose-form">
                <Scope f=f2 total=total lang=lang prefix="bp"/>
                <label>{Msg::Fix.text(lang)}
                    <select name="kind" id="bulk-kind">
                        {FixKind::ALL.iter().map(|k| view! { <option value=k.as_str()>{k.as_str()}</option> }).collect_view()}
                    </select>
                </label>
                <label class="wide">{tr(lang, "Reason", "原因")}<input name="reason" id="bulk-reason" required/></label>
                <label class="wide">{tr(lang, "Evidence", "证据")}<input name="evidence" id="bulk-evidence" required/></label>
                <button type="submit" id="bulk-propose-submit">{tr(lang, "Propose the same fix for all", "为全部提议同一修复")}</button>
            </ActionForm>
            {move || propose.value().get().and_then(Result::ok).and_then(|s| s.bulk_id).map(|id| view! {
                <p class="result" role="status">{tr(lang, "Bulk proposal made; a second supervisor decides it:", "批量提议已创建，须由另一位主管审批：")} " "
                    <a id="bulk-proposal-link" href=format!("/approvals/bulk/{id}")>{id.clone()}</a></p>
            })}
            <BulkJobs versions=Signal::derive(versions) bulk=None lang=lang/>
        </section>
    }
    .into_any()
}

/// Recent jobs (or a bulk proposal's), refreshed while one runs.
#[component]
fn BulkJobs(
    versions: Signal<(usize, usize)>,
    bulk: Option<Vec<BulkJob>>,
    lang: Lang,
) -> impl IntoView {
    let cancel = ServerAction::<CancelBulkJob>::new();
    let fixed = bulk.clone();
    let jobs = Resource::new(
        move || (versions.get(), cancel.version().get()),
        move |_| {
            let fixed = fixed.clone();
            async move {
                match fixed {
                    Some(list) => Ok(list),
                    None => list_bulk_jobs().await,
                }
            }
        },
    );
    let running = Signal::derive(move || {
        jobs.get()
            .and_then(Result::ok)
            .is_some_and(|j| j.iter().any(BulkJob::running))
    });
    poll_while(running, move || jobs.refetch());
    let err = action_error(cancel, || None);
    view! {
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                jobs.await.ok().filter(|j| !j.is_empty()).map(|list| view! {
                    <div id="bulk-jobs">
                        <h3>{tr(lang, "Bulk jobs", "批量任务")}</h3>
                        {list.iter().any(BulkJob::running).then(|| view! { <noscript inner_html=r#"<meta http-equiv="refresh" content="2">"#></noscript> })}
                        {list.into_iter().map(|j| view! { <JobRow j=j lang=lang cancel=cancel/> }).collect_view()}
                    </div>
                })
            })}
        </Transition>
    }
}

#[component]
fn JobRow(j: BulkJob, lang: Lang, cancel: ServerAction<CancelBulkJob>) -> impl IntoView {
    let worked = j.done + j.skipped + j.failed;
    let id = j.id.clone();
    view! {
        <div class="job" data-job=j.id.clone() data-status=j.status.clone()>
            <strong>{j.kind.clone()}</strong> " · " {j.requested_by.clone()} " · " {utc_minutes(j.started_at)} " · "
            <span class="job-status">{j.status.clone()}</span>
            {j.bulk_id.clone().map(|b| view! { " · " <a href=format!("/approvals/bulk/{b}")>{b.clone()}</a> })}
            <div class="progress-row">
                <progress max=j.total.max(1) value=worked></progress>
                <span class="job-count">
                    {tr(lang, "done", "完成")} " " <span class="job-done">{j.done}</span> " · "
                    {tr(lang, "skipped", "跳过")} " " <span class="job-skipped">{j.skipped}</span> " · "
                    {tr(lang, "failed", "失败")} " " <span class="job-failed">{j.failed}</span> " · "
                    {tr(lang, "total", "共")} " " <span class="job-total">{j.total}</span>
                </span>
            </div>
            {(j.status == "CANCELLED").then(|| view! {
                <p class="hint">{format!("{} {}", j.pending, tr(lang, "items were not worked and stay as they were.", "项未处理，保持原状。"))}</p>
            })}
            {j.error.clone().map(|e| view! { <p class="error">{e}</p> })}
            {(!j.exceptions.is_empty()).then(|| view! {
                <ul class="job-exceptions">
                    {j.exceptions.iter().map(|(target, status, why)| view! {
                        <li>{target.clone()} " — " {status.clone()} ": " {why.clone()}</li>
                    }).collect_view()}
                </ul>
            })}
            {(j.status == "RUNNING").then(|| view! {
                <ActionForm action=cancel attr:class="row cancel-job">
                    <input type="hidden" name="id" value=id/>
                    <button type="submit" class="danger cancel-submit">{tr(lang, "Cancel", "取消")}</button>
                </ActionForm>
            })}
        </div>
    }
}

/// The bulk proposals on the approvals page, newest first.
#[component]
pub fn BulkProposals(lang: Lang) -> impl IntoView {
    let list = Resource::new(|| (), |_| list_bulk_proposals());
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                list.await.ok().filter(|l| !l.is_empty()).map(|l| view! {
                    <section class="card" id="bulk-proposals">
                        <h2>{tr(lang, "Bulk proposals", "批量提议")}</h2>
                        <table class="grid">
                            <thead><tr>
                                <th>{Msg::Fix.text(lang)}</th>
                                <th>{tr(lang, "Proposer", "提议人")}</th>
                                <th>{tr(lang, "Items", "项数")}</th>
                                <th>{tr(lang, "Waiting", "待审批")}</th>
                                <th>{tr(lang, "Stale", "已失效")}</th>
                                <th>{tr(lang, "Executed", "已执行")}</th>
                                <th>{tr(lang, "Rejected", "已驳回")}</th>
                            </tr></thead>
                            <tbody>
                                {l.into_iter().map(|b: BulkProposal| view! {
                                    <tr data-bulk=b.id.clone()>
                                        <td><a class="open-bulk" href=format!("/approvals/bulk/{}", b.id)>{b.kind.as_str()}</a></td>
                                        <td>{b.proposer.clone()}</td>
                                        <td>{b.items}</td>
                                        <td>{b.pending}</td>
                                        <td>{b.stale}</td>
                                        <td>{b.executed}</td>
                                        <td>{b.rejected}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </section>
                })
            })}
        </Transition>
    }
}

#[component]
pub fn BulkProposalPage() -> impl IntoView {
    view! {
        <Frame allow=Role::ALL>
            <BulkProposalBody/>
        </Frame>
    }
}

#[component]
fn BulkProposalBody() -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let decide = Decide {
        approve: ServerAction::<ApproveFix>::new(),
        reject: ServerAction::<RejectFix>::new(),
    };
    let all = ServerAction::<BulkApprove>::new();
    let none = ServerAction::<BulkReject>::new();
    let versions = move || {
        (
            decide.approve.version().get() + decide.reject.version().get(),
            all.version().get() + none.version().get(),
        )
    };
    let detail = Resource::new(move || (id(), versions()), |(id, _)| show_bulk_proposal(id));
    let running = Signal::derive(move || {
        detail
            .get()
            .and_then(Result::ok)
            .is_some_and(|d| d.jobs.iter().any(BulkJob::running))
    });
    poll_while(running, move || detail.refetch());
    let from_url = url_error();
    let err = move || {
        action_error(all, from_url)()
            .or_else(action_error(none, || None))
            .or_else(action_error(decide.approve, || None))
            .or_else(action_error(decide.reject, || None))
    };
    let title = tr(lang, "Bulk proposal", "批量提议");
    let user = StoredValue::new(user);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p><a href="/approvals">{Msg::Approvals.text(lang)}</a></p>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let viewer: User = user.get_value();
                match detail.await {
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                    Ok(d) => {
                        let b = d.bulk.clone();
                        let own = b.proposer_id == viewer.id;
                        let may_decide = !own && viewer.role == Role::Supervisor && b.pending + b.stale > 0;
                        let (id_a, id_r) = (b.id.clone(), b.id.clone());
                        let jobs = d.jobs.clone();
                        view! {
                            <section class="card" id="bulk-summary" data-bulk=b.id.clone()>
                                <h2>{b.kind.as_str()} " · " {b.items} " " {tr(lang, "tickets", "张工单")}</h2>
                                <p>{tr(lang, "proposed by", "提议人")} " " <strong class="proposer">{b.proposer.clone()}</strong> " " {utc_minutes(b.proposed_at)}</p>
                                <p><strong>{tr(lang, "Reason:", "原因：")}</strong> " " {b.reason.clone()}</p>
                                <p><strong>{tr(lang, "Evidence:", "证据：")}</strong> " " {b.evidence.clone()}</p>
                                <p id="bulk-counts">
                                    {tr(lang, "waiting", "待审批")} " " <span id="bulk-pending">{b.pending}</span> " · "
                                    {tr(lang, "stale", "已失效")} " " <span id="bulk-stale">{b.stale}</span> " · "
                                    {tr(lang, "executed", "已执行")} " " <span id="bulk-executed">{b.executed}</span> " · "
                                    {tr(lang, "rejected", "已驳回")} " " <span id="bulk-rejected">{b.rejected}</span> " · "
                                    {tr(lang, "failed", "失败")} " " <span id="bulk-failed">{b.failed}</span>
                                </p>
                                {own.then(|| view! { <p class="hint own">{tr(lang, "Your proposal: another supervisor must decide it.", "这是您的提议：须由另一位主管审批。")}</p> })}
                                {may_decide.then(|| view! {
                                    <div class="decide">
                                        <ActionForm action=all attr:class="row" attr:id="bulk-approve-form">
                                            <input type="hidden" name="bulk" value=id_a/>
                                            <label class="wide">{tr(lang, "Comment", "审批意见")}<input name="comment" id="bulk-approve-comment" required/></label>
                                            <button type="submit" id="bulk-approve-submit">{tr(lang, "Approve all waiting items and execute each", "批准全部待审批项并逐一执行")}</button>
                                        </ActionForm>
                                        <ActionForm action=none attr:class="row" attr:id="bulk-reject-form">
                                            <input type="hidden" name="bulk" value=id_r/>
                                            <label class="wide">{tr(lang, "Comment", "审批意见")}<input name="comment" id="bulk-reject-comment" required/></label>
                                            <button type="submit" class="danger" id="bulk-reject-submit">{tr(lang, "Reject all waiting items", "驳回全部待审批项")}</button>
                                        </ActionForm>
                                    </div>
                                })}
                                <BulkJobs versions=Signal::derive(|| (0, 0)) bulk=Some(jobs) lang=lang/>
                            </section>
                            <section id="bulk-items">
                                <h2>{tr(lang, "Items", "明细")}</h2>
                                {d.items.into_iter().map(|p| view! { <ProposalCard p=p lang=lang viewer=viewer.clone() decide=decide/> }).collect_view()}
                            </section>
                        }
                        .into_any()
                    }
                }
            })}
        </Transition>
    }
}
