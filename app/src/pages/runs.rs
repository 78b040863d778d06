//! Reconciliation runs: each pulling provider's schedule (day cut, ready
//! time, last and next pull, days missing), upload a statement (a plain
//! multipart form), and the runs with status, file (its bill type,
//! download and hash), the statement's own checks, cursor, counts per class and
//! duration; one that is running shows its progress (the page follows
//! it), one that failed says why, and a pull that failed offers resume;
//! each links to its day's tickets.

use super::callbacks::poll_while;
use super::cells::{IdText, use_zone};
use super::{ErrorNote, Frame, Viewer, action_error, url_error};
use crate::api::{ResumeRun, list_runs};
use crate::codes::{Code, Codes};
use crate::console::{PullSchedule, RunPage, RunSummary};
use crate::i18n::{Msg, in_zone, tr};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

#[component]
pub fn RunsPage() -> impl IntoView {
    let query = use_query_map();
    let after = move || query.read().get("after");
    let resume = ServerAction::<ResumeRun>::new();
    let page = Resource::new(
        move || (after(), resume.version().get()),
        |(a, _)| list_runs(a),
    );
    view! {
        <Frame allow=Role::ALL>
            <RunsBody page=page resume=resume/>
        </Frame>
    }
}

#[component]
fn RunsBody(page: super::Loaded<RunPage>, resume: ServerAction<ResumeRun>) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let query = use_query_map();
    let shown = move || query.read().get("run");
    // A refetch that fails or is still loading leaves the page as it was,
    // so it keeps following rather than stopping on a transient error.
    let running = Memo::new(move |before: Option<&bool>| match page.get() {
        Some(Ok(p)) => {
            let wanted = shown();
            p.items.iter().any(|r| r.status == "RUNNING")
                || wanted.is_some_and(|w| !p.items.iter().any(|r| r.id == w))
        }
        _ => before.copied().unwrap_or(shown().is_some()),
    });
    poll_while(running.into(), move || page.refetch());
    let err = action_error(resume, url_error());
    let may_work = matches!(user.role, Role::Operator | Role::Supervisor);
    let title = tr(lang, "Reconciliation runs", "对账批次");
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                let wanted = shown();
                match page.await {
                    Ok(p) => view! { <Runs p=p lang=lang may_work=may_work resume=resume shown=wanted/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Runs(
    p: RunPage,
    lang: Lang,
    may_work: bool,
    resume: ServerAction<ResumeRun>,
    shown: Option<String>,
) -> impl IntoView {
    let waiting = shown
        .as_ref()
        .is_some_and(|w| !p.items.iter().any(|r| &r.id == w));
    let busy = waiting || p.items.iter().any(|r| r.status == "RUNNING");
    let next = p.next.clone().map(|n| format!("/runs?after={n}"));
    let empty = p.items.is_empty().then(|| {
        let (why, action) = match lang {
            Lang::En => (
                "No runs yet: a run reconciles one provider's statement for one day.",
                "Upload a statement above.",
            ),
            Lang::Zh => (
                "尚无对账批次：每个批次核对一个渠道一天的对账单。",
                "在上方上传对账单。",
            ),
        };
        view! { <super::empty::Empty why=why href="#upload-form" action=action/> }
    });
    let zone = use_zone();
    view! {
        {busy.then(|| view! { <noscript inner_html=r#"<meta http-equiv="refresh" content="2">"#></noscript> })}
        {may_work.then(|| view! {
            <form method="post" enctype="multipart/form-data" action="/runs/upload" class="row card" id="upload-form">
                <label>{Msg::Provider.text(lang)}
                    <select name="provider" id="u-provider">
                        {p.providers.iter().map(|name| view! { <option value=name.clone()>{name.clone()}</option> }).collect_view()}
                    </select>
                </label>
                <label>{Msg::BusinessDay.text(lang)}<input type="date" name="business_date" id="u-day" required/></label>
                <label>{tr(lang, "Statement file", "账单文件")}<input type="file" name="file" id="u-file" required/></label>
                <label>{tr(lang, "Accept malformed lines (0: none)", "可容忍的错误行数（0：不容忍）")}
                    <input type="number" name="accept_bad_lines" min="0" value="0" size="4"/></label>
                <button type="submit" id="u-submit">{tr(lang, "Upload and reconcile", "上传并对账")}</button>
            </form>
        })}
        {waiting.then(|| view! { <p class="hint" id="run-starting">{tr(lang, "The run is starting…", "对账批次正在启动…")}</p> })}
        {(!p.schedules.is_empty()).then(|| view! { <Schedules schedules=p.schedules.clone() lang=lang/> })}
        <table class="grid compact" id="runs">
            <thead><tr>
                <th>{tr(lang, "Run", "批次")}</th>
                <th>{tr(lang, "Provider / day", "渠道 / 业务日")}</th>
                <th>{tr(lang, "Source / file", "来源 / 文件")}</th>
                <th>{Msg::Status.text(lang)}</th>
                <th>{tr(lang, "Rows", "行数")}</th>
                <th>{tr(lang, "By class", "按类型")}</th>
                <th>{in_zone(lang, "Started / took", "开始 / 耗时", &zone)}</th>
            </tr></thead>
            <tbody>
                {p.items.into_iter().map(|r| {
                    let highlighted = shown.as_deref() == Some(r.id.as_str());
                    view! { <Run r=r lang=lang may_work=may_work resume=resume highlighted=highlighted/> }
                }).collect_view()}
            </tbody>
        </table>
        {empty}
        {next.map(|h| view! { <p><a href=h id="next-page">{Msg::Older.text(lang)}</a></p> })}
    }
}

#[component]
fn Run(
    r: RunSummary,
    lang: Lang,
    may_work: bool,
    resume: ServerAction<ResumeRun>,
    highlighted: bool,
) -> impl IntoView {
    let took = r
        .finished_at
        .map(|f| format!("{:.1} s", (f - r.started_at) as f64 / 1_000_000.0))
        .unwrap_or_default();
    let zone = use_zone();
    // Reading, then matching, then done: a bar a person can follow.
    let step = match (r.status.as_str(), r.phase.as_deref()) {
        ("RUNNING", Some("matching")) => 2,
        ("RUNNING", _) => 1,
        _ => 3,
    };
    let tickets = format!("/tickets?day={}&provider={}", r.business_date, r.provider);
    // Only a pull resumes (from its cursor, or fetching its bill again): a
    // file's run that failed is sent again, fixed.
    let resumable = r.status == "FAILED" && r.source == "pull";
    let id = r.id.clone();
    view! {
        <tr data-run=r.id.clone() data-status=r.status.clone() class:highlight=highlighted>
            <td><IdText id=r.id.clone() lang=lang/></td>
            <td>{r.provider.clone()} " / " <a href=tickets>{r.business_date.clone()}</a></td>
            <td>{r.source.clone()} " "
                {match (r.file_kept, r.file_name.clone()) {
                    (true, name) => view! {
                        <a class="run-file" href=format!("/runs/{}/file", crate::tickets::encode(&r.id)) download>
                            {name.unwrap_or_else(|| tr(lang, "statement", "账单").to_owned())}</a>
                    }.into_any(),
                    (false, name) => view! { <span>{name.unwrap_or_default()}</span> }.into_any(),
                }}
                {r.bill_type.clone().map(|t| view! { <br/><span class="run-bill-type" title=tr(lang, "Bill type", "账单类型")>{t}</span> })}
                {r.file_hash.clone().map(|h| view! { <br/><span class="muted run-hash">"sha256 " <IdText id=h lang=lang/></span> })}
                {r.config_version.map(|v| view! { <br/><a class="muted run-config-version" href="/settings">{tr(lang, "settings v", "配置版本 v")} {v}</a> })}
                {r.cursor.clone().map(|c| view! { <br/><span class="muted">{tr(lang, "cursor", "游标")} " " {c}</span> })}
                {(!r.checks.is_empty()).then(|| view! {
                    <br/><span class="run-checks">
                        {r.checks.iter().map(|c| view! {
                            <span class="count" class:error=!c.holds data-check=c.what.clone()
                                title=format!("{}: {} / {}", c.what, c.stated, c.read)>
                                {c.label.clone()} " " {c.stated_text.clone()} {if c.holds { " = " } else { " ≠ " }} {c.read_text.clone()}
                            </span> " "
                        }).collect_view()}
                    </span>
                })}</td>
            <td>
                <span class="run-status"><Code set=Codes::RunStatus code=r.status.clone() lang=lang/></span>
                {(r.status == "RUNNING").then(|| view! {
                    <div class="progress-row">
                        <progress max="3" value=step></progress>
                        <span class="muted">{r.phase.clone().unwrap_or_default()}</span>
                    </div>
                })}
                {r.error.clone().map(|e| view! { <p class="error run-error">{e}</p> })}
                // Its rows are read again from the kept file, or from the
                // rows a pull staged.
                {(r.status == "COMPLETED" && (r.file_kept || r.source == "pull")).then(|| {
                    let at = format!("/runs/{}/results", crate::tickets::encode(&r.id));
                    view! {
                        <br/><span class="run-results" title=tr(lang, "Every row with its outcome", "每一行及其结果")>
                            <a class="run-results-csv" href=format!("{at}.csv") rel="external" download>"CSV"</a>
                            " · "
                            <a class="run-results-parquet" href=format!("{at}.parquet") rel="external" download>"Parquet"</a>
                        </span>
                    }
                })}
                {(resumable && may_work).then(|| view! {
                    <ActionForm action=resume attr:class="inline">
                        <input type="hidden" name="id" value=id/>
                        <button type="submit" class="resume-submit">{tr(lang, "Resume", "继续")}</button>
                    </ActionForm>
                })}
            </td>
            <td class="rows">{r.rows_read}</td>
            <td class="classes">
                {r.classes.iter().map(|(k, v)| view! { <span class="count" data-class=k.clone()>{k.clone()} " " <strong>{*v}</strong></span> " " }).collect_view()}
            </td>
            <td>{zone.minutes(r.started_at)} " · " {took} " · " {r.started_by.clone()}</td>
        </tr>
    }
}

/// Each pulling provider's schedule: its day cut and ready time, the last
/// pull, the next, and the days still missing.
#[component]
fn Schedules(schedules: Vec<PullSchedule>, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    view! {
        <table class="grid" id="pull-schedules">
            <thead><tr>
                <th>{Msg::Provider.text(lang)}</th>
                <th>{tr(lang, "Day cut / ready from", "日切时区 / 就绪时间")}</th>
                <th>{in_zone(lang, "Last pull", "上次拉取", &zone)}</th>
                <th>{in_zone(lang, "Next pull", "下次拉取", &zone)}</th>
                <th>{tr(lang, "Days missing", "缺失的业务日")}</th>
            </tr></thead>
            <tbody>
                {schedules.into_iter().map(|s| view! {
                    <tr data-provider=s.provider.clone()>
                        <td>{s.provider.clone()}</td>
                        <td>{s.zone.clone()} " " {format!("{:02}:00", s.ready_hour)}</td>
                        <td>{s.last_at.map(|at| zone.minutes(at)).unwrap_or_else(|| "—".into())}
                            {s.last_run.clone().map(|r| view! { " " <code>{r}</code> })}
                            {s.last_error.clone().map(|e| view! { <p class="error">{e}</p> })}</td>
                        <td>{s.next_at.map(|at| zone.minutes(at)).unwrap_or_else(|| "—".into())}</td>
                        <td class="missing-days">{if s.missing.is_empty() { "—".to_owned() } else { s.missing.join(", ") }}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
