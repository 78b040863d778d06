//! Bulk work in the console: the tick boxes and the bulk bar of the
//! tickets list (assign, comment, close with one conclusion, or propose one
//! fix for the ticked tickets — or for every ticket the filter matches,
//! when chosen by hand — each asked in the page with its count first), a
//! bulk proposal's page in the approvals area (each item with its own
//! before and after, approved or rejected one by one or all at once, never
//! by its proposer), and the jobs with their progress, a cancel and a bulk
//! close's undo.

use super::callbacks::poll_while;
use super::cells::use_zone;
use super::confirm::ConfirmSubmit;
use super::ticket::{Decide, ProposalCard};
use super::{ErrorNote, Frame, Viewer, action_error, url_error};
use crate::api::{
    ApproveFix, BulkAction, BulkApprove, BulkPropose, BulkReject, CancelBulkJob, RejectFix,
    UndoBulkClose, list_bulk_jobs, show_bulk_proposal,
};
use crate::bulk::{BULK_LIMIT, BulkDetail, BulkJob, BulkProposal, UNDO_MINUTES};
use crate::filter::QueryFilter;
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

/// What the bulk bar works on: the ticked tickets, unless the whole filter
/// was chosen by hand — never the filter by default.
#[derive(Clone, Copy)]
struct Chosen {
    picked: RwSignal<Vec<String>>,
    all: RwSignal<bool>,
    total: i64,
}

impl Chosen {
    fn count(self) -> i64 {
        if self.all.get() {
            self.total
        } else {
            self.picked.with(Vec::len) as i64
        }
    }

    /// "12 tickets", or "all 117 tickets matching the filter": what a
    /// question names.
    fn phrase(self, lang: Lang) -> String {
        let n = self.count();
        match (lang, self.all.get()) {
            (Lang::En, true) => format!("all {n} tickets matching the filter"),
            (Lang::En, false) if n == 1 => "1 ticket".to_owned(),
            (Lang::En, false) => format!("{n} tickets"),
            (Lang::Zh, true) => format!("符合筛选条件的全部 {n} 张工单"),
            (Lang::Zh, false) => format!("{n} 张工单"),
        }
    }
}

/// The selection as a bulk form sends it: scope, ticked ids, the filter.
#[component]
fn Selected(f: TicketFilter, chosen: Chosen) -> impl IntoView {
    let scope = move || if chosen.all.get() { "filter" } else { "ids" };
    let ids = move || chosen.picked.with(|p| p.join(","));
    view! {
        <input type="hidden" name="scope" value=scope/>
        <input type="hidden" name="ids" value=ids/>
        {filter_fields(&f)}
    }
}

/// The choice of tickets, shared by both bulk forms: the ticked ones (the
/// default), or every ticket the filter matches when chosen explicitly.
#[component]
fn ScopeChoice(chosen: Chosen, lang: Lang) -> impl IntoView {
    let total = chosen.total;
    let over = total as usize > BULK_LIMIT;
    let ticked = move || chosen.picked.with(Vec::len);
    let all_label = match lang {
        Lang::En => format!("all {total} matching the filter"),
        Lang::Zh => format!("符合筛选条件的全部 {total} 张"),
    };
    view! {
        <fieldset id="bulk-scope">
            <legend>{tr(lang, "Tickets", "工单")}</legend>
            <label><input type="radio" name="bulk-scope" id="scope-ticked" value="ids"
                prop:checked=move || !chosen.all.get()
                on:change=move |_| chosen.all.set(false)/>
                " " {tr(lang, "ticked", "已勾选")} " (" <span id="ticked-count">{ticked}</span> ")"</label>
            <label><input type="radio" name="bulk-scope" id="scope-all" value="filter"
                disabled=total == 0 || over
                prop:checked=move || chosen.all.get()
                on:change=move |_| chosen.all.set(true)/>
                " " {all_label}
                {over.then(|| view! { " " <span class="hint">{format!("({} {BULK_LIMIT}{})",
                    tr(lang, "more than", "超过"), tr(lang, ": narrow the filter", " 张：请缩小筛选范围"))}</span> })}
            </label>
            <span id="bulk-count" data-count=move || chosen.count()>
                {move || match lang {
                    Lang::En => format!("Works on {}.", chosen.phrase(lang)),
                    Lang::Zh => format!("将处理{}。", chosen.phrase(lang)),
                }}
            </span>
        </fieldset>
        {move || (chosen.count() == 0).then(|| view! {
            <p class="hint" id="bulk-none" role="status">
                {tr(lang, "Nothing chosen: tick tickets in the list, or choose all matching the filter. Nothing is sent until you do.",
                    "尚未选择：请在列表中勾选工单，或选择符合筛选条件的全部工单。选择之前不会提交任何操作。")}
            </p>
        })}
    }
}

/// The question a bulk action asks before it starts.
fn action_question(lang: Lang, action: &str, text: &str, tickets: &str) -> String {
    match (lang, action) {
        (Lang::En, "ASSIGN") => format!("Assign {tickets} to {text}?"),
        (Lang::En, "COMMENT") => format!("Add this comment to {tickets}?"),
        (Lang::En, _) => format!(
            "Close {tickets} with this conclusion? Undo is offered for {UNDO_MINUTES} minutes after."
        ),
        (Lang::Zh, "ASSIGN") => format!("将{tickets}分配给 {text}？"),
        (Lang::Zh, "COMMENT") => format!("为{tickets}添加此备注？"),
        (Lang::Zh, _) => format!("以此结论关闭{tickets}？之后 {UNDO_MINUTES} 分钟内可撤销。"),
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
    let undo = ServerAction::<UndoBulkClose>::new();
    let from_url = url_error();
    let err = move || {
        action_error(act, from_url)()
            .or_else(action_error(propose, || None))
            .or_else(action_error(undo, || None))
    };
    let Picked(picked) = expect_context::<Picked>();
    let chosen = Chosen {
        picked,
        all: RwSignal::new(false),
        total,
    };
    // Once a bulk has gone, the whole filter must be chosen again.
    Effect::new(move |_| {
        act.version().get();
        propose.version().get();
        // Written only when set: a write while the page hydrates redraws it.
        if chosen.all.get_untracked() {
            chosen.all.set(false);
        }
    });
    let versions = move || {
        (
            act.version().get() + undo.version().get(),
            propose.version().get(),
        )
    };
    let none = Signal::derive(move || chosen.count() == 0);
    let action = RwSignal::new("ASSIGN".to_owned());
    let text = RwSignal::new(String::new());
    let kind = RwSignal::new(FixKind::ALL[0].as_str().to_owned());
    let act_question = Signal::derive(move || {
        action_question(lang, &action.get(), text.get().trim(), &chosen.phrase(lang))
    });
    let propose_question = Signal::derive(move || {
        let (k, tickets) = (kind.get(), chosen.phrase(lang));
        match lang {
            Lang::En => {
                format!("Propose {k} for {tickets}? Each is decided by a second supervisor.")
            }
            Lang::Zh => format!("为{tickets}提议 {k}？每项均须由另一位主管审批。"),
        }
    });
    let f2 = f.clone();
    view! {
        <section class="card" id="bulk-bar">
            <h2>{tr(lang, "Bulk work", "批量处理")}</h2>
            <p class="hint">{format!("{} {BULK_LIMIT} {}",
                tr(lang, "Each ticket is worked on its own, as if done by hand, and recorded in the audit log. At most", "每张工单逐一处理，与手工操作相同，并逐条记入审计日志。每次最多"),
                tr(lang, "tickets at a time.", "张工单。"))}
                " " <button type="button" id="bulk-clear" on:click=move |_| picked.set(Vec::new())>{tr(lang, "Clear ticks", "清除勾选")}</button>
            </p>
            <ScopeChoice chosen=chosen lang=lang/>
            {move || view! { <ErrorNote err=err() lang=lang/> }}
            <ActionForm action=act attr:class="row" attr:id="bulk-action-form">
                <Selected f=f.clone() chosen=chosen/>
                <label>{Msg::Actions.text(lang)}
                    <select name="action" id="bulk-action" on:change=move |ev| action.set(event_target_value(&ev))>
                        <option value="ASSIGN">{tr(lang, "Assign to", "分配给")}</option>
                        <option value="COMMENT">{tr(lang, "Comment", "添加备注")}</option>
                        <option value="CLOSE">{tr(lang, "Close with one conclusion (no money changes)", "以同一结论关闭（不涉及资金变更）")}</option>
                    </select>
                </label>
                <label class="wide">{tr(lang, "Owner, comment or conclusion", "负责人、备注或结论")}
                    <input name="text" id="bulk-text" required on:input=move |ev| text.set(event_target_value(&ev))/></label>
                <ConfirmSubmit label=tr(lang, "Start", "开始").to_owned() question=act_question lang=lang
                    id="bulk-action-submit" disabled=none/>
            </ActionForm>
            <ActionForm action=propose attr:class="row" attr:id="bulk-propose-form">
                <Selected f=f2 chosen=chosen/>
                <label>{Msg::Fix.text(lang)}
                    <select name="kind" id="bulk-kind" on:change=move |ev| kind.set(event_target_value(&ev))>
                        {FixKind::ALL.iter().map(|k| view! { <option value=k.as_str()>{k.as_str()}</option> }).collect_view()}
                    </select>
                </label>
                <label class="wide">{tr(lang, "Reason", "原因")}<input name="reason" id="bulk-reason" required/></label>
                <label class="wide">{tr(lang, "Evidence", "证据")}<input name="evidence" id="bulk-evidence" required/></label>
                <ConfirmSubmit label=tr(lang, "Propose the same fix for all", "为全部提议同一修复").to_owned()
                    question=propose_question lang=lang id="bulk-propose-submit" disabled=none/>
            </ActionForm>
            {move || act.value().get().and_then(Result::ok).map(|s| view! {
                <p class="result" role="status" id="bulk-started" data-job=s.job_id.clone()>
                    {match lang {
                        Lang::En => format!("Started on {} tickets: job {}.", s.total, s.job_id),
                        Lang::Zh => format!("已开始处理 {} 张工单：任务 {}。", s.total, s.job_id),
                    }}
                </p>
            })}
            {move || undo.value().get().and_then(Result::ok).map(|s| view! {
                <p class="result" role="status" id="bulk-undone" data-job=s.job_id.clone()>
                    {match lang {
                        Lang::En => format!("Undoing: {} tickets are being reopened by job {}.", s.total, s.job_id),
                        Lang::Zh => format!("正在撤销：任务 {} 正在重新打开 {} 张工单。", s.job_id, s.total),
                    }}
                </p>
            })}
            {move || propose.value().get().and_then(Result::ok).and_then(|s| s.bulk_id).map(|id| view! {
                <p class="result" role="status">{tr(lang, "Bulk proposal made; a second supervisor decides it:", "批量提议已创建，须由另一位主管审批：")} " "
                    <a id="bulk-proposal-link" href=format!("/approvals/bulk/{id}")>{id.clone()}</a></p>
            })}
            <BulkJobs versions=Signal::derive(versions) bulk=None lang=lang undo=Some(undo)/>
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
    /// Offers a bulk close's undo (the tickets list's jobs).
    undo: Option<ServerAction<UndoBulkClose>>,
) -> impl IntoView {
    let cancel = ServerAction::<CancelBulkJob>::new();
    let err = action_error(cancel, || None);
    let list = match bulk {
        // A bulk proposal's jobs come with its page, which polls them.
        Some(list) => view! { <JobList list=list lang=lang cancel=cancel undo=undo/> }.into_any(),
        None => {
            // Fetched in the browser once the page has hydrated, into a
            // plain signal: a resource read inside the list's suspense
            // made the page hydrate twice now and then.
            let jobs = RwSignal::new(None::<Vec<BulkJob>>);
            let fetch = move || {
                leptos::task::spawn_local(async move {
                    if let Ok(list) = list_bulk_jobs().await {
                        jobs.set(Some(list));
                    }
                })
            };
            Effect::new(move |_| {
                let _ = (versions.get(), cancel.version().get());
                fetch();
            });
            let running = Signal::derive(move || {
                jobs.with(|j| j.as_ref().is_some_and(|j| j.iter().any(BulkJob::running)))
            });
            poll_while(running, fetch);
            view! {
                {move || jobs.get().map(|list| view! {
                    <JobList list=list lang=lang cancel=cancel undo=undo/>
                })}
            }
            .into_any()
        }
    };
    view! {
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {list}
    }
}

/// The jobs, newest first; nothing when there is none.
#[component]
fn JobList(
    list: Vec<BulkJob>,
    lang: Lang,
    cancel: ServerAction<CancelBulkJob>,
    undo: Option<ServerAction<UndoBulkClose>>,
) -> impl IntoView {
    (!list.is_empty()).then(|| {
        view! {
            <div id="bulk-jobs">
                <h3>{tr(lang, "Bulk jobs", "批量任务")}</h3>
                {list.iter().any(BulkJob::running).then(|| view! { <noscript inner_html=r#"<meta http-equiv="refresh" content="2">"#></noscript> })}
                {list.into_iter().map(|j| view! { <JobRow j=j lang=lang cancel=cancel undo=undo/> }).collect_view()}
            </div>
        }
    })
}

#[component]
fn JobRow(
    j: BulkJob,
    lang: Lang,
    cancel: ServerAction<CancelBulkJob>,
    undo: Option<ServerAction<UndoBulkClose>>,
) -> impl IntoView {
    let worked = j.done + j.skipped + j.failed;
    let id = j.id.clone();
    let undo_id = j.id.clone();
    let zone = use_zone();
    let undo_form = undo.zip(j.undo_until).map(|(undo, until)| {
        let label = match lang {
            Lang::En => format!("Undo: reopen the {} tickets this job closed", j.done),
            Lang::Zh => format!("撤销：重新打开本任务关闭的 {} 张工单", j.done),
        };
        let offered = match lang {
            Lang::En => format!(
                "offered until {} {} ({UNDO_MINUTES} minutes after the job ended)",
                zone.minutes(until),
                zone.name()
            ),
            Lang::Zh => format!(
                "可撤销至 {}（{}，任务结束后 {UNDO_MINUTES} 分钟内）",
                zone.minutes(until),
                zone.name()
            ),
        };
        view! {
            <ActionForm action=undo attr:class="row undo-job">
                <input type="hidden" name="id" value=undo_id/>
                <button type="submit" class="undo-submit">{label}</button>
                <span class="hint undo-until">{offered}</span>
            </ActionForm>
        }
    });
    view! {
        <div class="job" data-job=j.id.clone() data-status=j.status.clone() data-kind=j.kind.clone()>
            <strong>{j.kind.clone()}</strong> " · " {j.requested_by.clone()} " · " {zone.minutes(j.started_at)} " · "
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
            {undo_form}
            {j.undone_by.clone().map(|by| view! {
                <p class="hint undone">{tr(lang, "Undone: its tickets are reopened by job", "已撤销：其工单由任务重新打开：")} " " {by}</p>
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
pub fn BulkProposals(list: super::Loaded<Vec<BulkProposal>>, lang: Lang) -> impl IntoView {
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
    view! {
        <Frame allow=Role::ALL>
            <BulkProposalBody decide=decide all=all none=none detail=detail/>
        </Frame>
    }
}

#[component]
fn BulkProposalBody(
    decide: Decide,
    all: ServerAction<BulkApprove>,
    none: ServerAction<BulkReject>,
    detail: super::Loaded<BulkDetail>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
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
                        let (waiting, fix) = (b.pending + b.stale, b.kind.as_str());
                        let approve_all = match lang {
                            Lang::En => format!("Approve and execute {fix} for all {waiting} waiting items? Each executes in turn (a stale one is skipped)."),
                            Lang::Zh => format!("批准并执行全部 {waiting} 项待审批的 {fix}？将逐项执行（已失效的项会跳过）。"),
                        };
                        let reject_all = match lang {
                            Lang::En => format!("Reject all {waiting} waiting items of this {fix}? Their tickets go back to their owners."),
                            Lang::Zh => format!("驳回此 {fix} 全部 {waiting} 项待审批项？相应工单退回处理。"),
                        };
                        let jobs = d.jobs.clone();
                        let zone = use_zone();
                        view! {
                            <section class="card" id="bulk-summary" data-bulk=b.id.clone()>
                                <h2>{b.kind.as_str()} " · " {b.items} " " {tr(lang, "tickets", "张工单")}</h2>
                                <p>{tr(lang, "proposed by", "提议人")} " " <strong class="proposer">{b.proposer.clone()}</strong> " " {zone.minutes(b.proposed_at)}</p>
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
                                            <ConfirmSubmit label=tr(lang, "Approve all waiting items and execute each", "批准全部待审批项并逐一执行").to_owned()
                                                question=approve_all lang=lang id="bulk-approve-submit"/>
                                        </ActionForm>
                                        <ActionForm action=none attr:class="row" attr:id="bulk-reject-form">
                                            <input type="hidden" name="bulk" value=id_r/>
                                            <label class="wide">{tr(lang, "Comment", "审批意见")}<input name="comment" id="bulk-reject-comment" required/></label>
                                            <ConfirmSubmit label=tr(lang, "Reject all waiting items", "驳回全部待审批项").to_owned()
                                                question=reject_all lang=lang class="danger" id="bulk-reject-submit"/>
                                        </ActionForm>
                                    </div>
                                })}
                                <BulkJobs versions=Signal::derive(|| (0, 0)) bulk=Some(jobs) lang=lang undo=None/>
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
