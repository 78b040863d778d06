//! The landing page: one business day (default yesterday, in the business
//! time zone) for one provider or all, with the days before and after — to
//! process, matched, pending, repaired, still unknown, as of when they were
//! read, and whether they add up (or why not), the day's money beside
//! them, counts per class, each a link to the list behind it; a 30-day
//! trend drawn as SVG on the server (readable without JavaScript); the
//! day's callbacks; the open alerts counted by kind; the providers whose
//! statement of the day is alerted missing; a supervisor's queue.

use super::cells::AmountCell;
use super::{ErrorNote, Frame, Viewer};
use crate::api::load_dashboard;
use crate::console::{ApprovalQueue, Dashboard, DayFigures, TrendPoint};
use crate::i18n::{Msg, tr};
use crate::tickets::encode;
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

#[component]
pub fn DashboardPage() -> impl IntoView {
    let query = use_query_map();
    let key = move || {
        let q = query.read();
        (
            q.get("day").filter(|v| !v.is_empty()),
            q.get("provider").filter(|v| !v.is_empty()),
        )
    };
    let data = Resource::new(key, |(day, provider)| load_dashboard(day, provider));
    view! {
        <Frame allow=Role::ALL>
            <DashboardBody data=data/>
        </Frame>
    }
}

#[component]
fn DashboardBody(data: super::Loaded<Dashboard>) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let title = Msg::Dashboard.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(d) => view! { <Body d=d lang=lang/> }.into_any(),
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Body(d: Dashboard, lang: Lang) -> impl IntoView {
    let day = d.day.clone();
    let prov = d.provider.clone().unwrap_or_default();
    let p = |key: &str| {
        if prov.is_empty() {
            String::new()
        } else {
            format!("&{key}={}", encode(&prov))
        }
    };
    let tickets = |extra: &str| format!("/tickets?day={day}{}{extra}", p("provider"));
    let payments = |status: &str| format!("/payments?day={day}{}&status={status}", p("provider"));
    let callbacks = |extra: &str| format!("/callbacks?day={day}{}{extra}", p("provider"));
    let f = d.figures.clone();
    let figure = |id: &'static str, label: &'static str, n: i64, href: String| {
        view! {
            <a class="figure" id=id href=href>
                <span class="n">{n}</span>
                <span class="label">{label}</span>
            </a>
        }
    };
    let cb = d.callbacks.clone();
    let p99 = cb
        .p99_ms
        .map(|m| format!("{m:.0} ms"))
        .unwrap_or_else(|| "—".into());
    let day_link = |to: &str| format!("/?day={to}{}", p("provider"));
    view! {
        <h1>{Msg::Dashboard.text(lang)} " · " <span id="dash-day">{d.day.clone()}</span></h1>
        <p class="row" id="day-nav">
            <a id="prev-day" href=day_link(&d.prev_day)>{format!("← {}", d.prev_day)}</a>
            " "
            <a id="next-day" href=day_link(&d.next_day)>{format!("{} →", d.next_day)}</a>
        </p>
        <form method="get" action="/" class="row card" id="dash-filters">
            <label>{Msg::BusinessDay.text(lang)}<input type="date" name="day" id="d-day" value=d.day.clone()/></label>
            <label>{Msg::Provider.text(lang)}
                <select name="provider" id="d-provider">
                    <option value="">{tr(lang, "all", "全部")}</option>
                    {d.providers.iter().map(|name| view! {
                        <option value=name.clone() selected=d.provider.as_deref() == Some(name.as_str())>{name.clone()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button type="submit" id="d-show">{tr(lang, "Show", "查看")}</button>
            <span class="hint">{tr(lang, "Days are cut in", "业务日时区")} " " {d.timezone.clone()}</span>
        </form>
        <section class="figures" id="figures">
            {figure("fig-to-process", tr(lang, "to process", "待核对"), f.to_process, "/runs".into())}
            {figure("fig-matched", tr(lang, "matched", "已匹配"), f.matched, payments("SUCCEEDED"))}
            {figure("fig-pending", tr(lang, "pending", "待定"), f.pending, payments("PENDING"))}
            {figure("fig-repaired", tr(lang, "repaired", "已自动修复"), f.repaired, tickets("&class=STATUS_LAG&status=CLOSED"))}
            {figure("fig-unknown", tr(lang, "still unknown", "仍未明"), f.unknown, tickets("&status=ACTIVE"))}
        </section>
        <p class="hint" id="as-of">{tr(lang, "Figures as of", "数据截至")} " " {d.as_of.clone()}</p>
        {(!f.runs.is_empty()).then(|| view! { <Reconciled f=f.clone() lang=lang/> })}
        {(!d.money.is_empty()).then(|| view! {
            <table class="grid compact" id="day-money">
                <thead><tr>
                    <th>{tr(lang, "Currency", "币种")}</th>
                    <th class="amount">{Msg::Gross.text(lang)}</th>
                    <th class="amount">{Msg::Net.text(lang)}</th>
                    <th class="amount">{tr(lang, "Still unknown (open tickets)", "仍未明金额（未结工单）")}</th>
                </tr></thead>
                <tbody>
                    {d.money.iter().map(|m| view! {
                        <tr data-currency=m.currency.clone()>
                            <td>{m.currency.clone()}</td>
                            <AmountCell amount=Some(m.gross.clone())/>
                            <AmountCell amount=Some(m.net.clone())/>
                            <AmountCell amount=Some(m.unknown.clone())/>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        })}
        {f.runs.is_empty().then(|| view! {
            <p class="hint" id="no-run">{tr(lang, "No completed reconciliation run for this day yet.", "该业务日尚无完成的对账批次。")}</p>
        })}
        <super::closes::DayCloses day=d.day.clone() initial=d.closes.clone() lang=lang/>
        {(!d.missing_statements.is_empty()).then(|| view! {
            <p class="error" id="missing-statements">
                {tr(lang, "Statement missing past its ready time:", "账单超过就绪时间仍未获取：")} " "
                {d.missing_statements.join(", ")} " " <a href="/runs">{tr(lang, "pull schedule →", "拉取计划 →")}</a>
            </p>
        })}
        <super::sinks::FailingSinks sinks=d.failing_sinks.clone() lang=lang/>
        <super::ageing::AgeingSection a=d.ageing.clone() provider=d.provider.clone() lang=lang/>
        <section class="card">
            <h2>{tr(lang, "By class", "按差异类型")}</h2>
            <p class="classes" id="classes">
                {f.classes.iter().map(|(class, n)| {
                    let href = if class == "MATCHED" { payments("SUCCEEDED") } else { tickets(&format!("&class={class}")) };
                    view! { <a class="count" href=href data-class=class.clone()>{class.clone()} " " <strong>{*n}</strong></a> }
                }).collect_view()}
            </p>
        </section>
        <section class="card">
            <h2>{tr(lang, "Last 30 days", "近 30 天")}</h2>
            <Trend points=d.trend.clone() lang=lang/>
        </section>
        <super::bank::SettledToBank rows=d.settled_to_bank.clone() lang=lang/>
        <super::refused::RefusedOnDashboard count=d.refused_24h lang=lang/>
        <section class="card" id="callback-figures">
            <h2>{tr(lang, "Callbacks of the day", "当日回调")}</h2>
            <dl class="facts">
                <dt>{tr(lang, "received", "接收")}</dt><dd><a id="cb-received" href=callbacks("")>{cb.received}</a></dd>
                <dt>{tr(lang, "duplicates", "重复")}</dt><dd id="cb-duplicates">{cb.duplicates}</dd>
                <dt>{tr(lang, "failed (retrying)", "失败（重试中）")}</dt><dd><a id="cb-failed" href=callbacks("&status=FAILED")>{cb.failed}</a></dd>
                <dt>"DEAD"</dt><dd><a id="cb-dead" href=callbacks("&status=DEAD")>{cb.dead}</a></dd>
                <dt>{tr(lang, "p99 receipt → processed", "p99 接收至处理完成")}</dt><dd id="cb-p99">{p99}</dd>
            </dl>
        </section>
        {d.queue.clone().map(|q| view! { <QueueCard q=q lang=lang/> })}
        <section class="card" id="open-alerts">
            <h2>{tr(lang, "Open alerts", "未处理告警")} " (" <span id="open-alert-count">{d.open_alerts}</span> ") "
                <a href="/alerts?state=open">{tr(lang, "all open alerts →", "全部未处理告警 →")}</a></h2>
            {d.alerts_by_kind.is_empty().then(|| view! { <p class="hint">{tr(lang, "No alert is open.", "没有未处理的告警。")}</p> })}
            <p class="classes" id="alert-kinds">
                {d.alerts_by_kind.iter().map(|(kind, n)| view! {
                    <a class="count" data-kind=kind.clone() href=format!("/alerts?kind={}&state=open", encode(kind))>
                        {kind.clone()} " " <strong>{*n}</strong>
                    </a>
                }).collect_view()}
            </p>
        </section>
    }
}

/// Whether to process = matched + pending + repaired + unknown; if not,
/// each reason with what it makes of the difference.
#[component]
fn Reconciled(f: DayFigures, lang: Lang) -> impl IntoView {
    let sum = f.accounted();
    let parts = format!(
        "{} {} + {} {} + {} {} + {} {}",
        tr(lang, "matched", "已匹配"),
        f.matched,
        tr(lang, "pending", "待定"),
        f.pending,
        tr(lang, "repaired", "已自动修复"),
        f.repaired,
        tr(lang, "still unknown", "仍未明"),
        f.unknown,
    );
    let to_process = format!("{} {}", tr(lang, "to process", "待核对"), f.to_process);
    let formula = if sum == f.to_process {
        format!("{to_process} = {parts}")
    } else {
        format!("{to_process} ≠ {parts} = {sum}")
    };
    let reason = move |code: &str| match code {
        "decided" => tr(
            lang,
            "tickets of the day closed other than by this run's automatic repair (decided by people, or by a later statement)",
            "当日工单已关闭（由人工决定或后续账单关闭，非本批次自动修复）",
        ),
        "duplicate_rows" => tr(
            lang,
            "DUPLICATE rows beyond the one ticket they share",
            "重复行中多于其共用工单的行数",
        ),
        "fee_tickets" => tr(
            lang,
            "open FEE_MISMATCH tickets on rows that matched (counted twice)",
            "已匹配行上未结的手续费差异工单（重复计数）",
        ),
        "awaiting_repair" => tr(
            lang,
            "open STATUS_LAG tickets whose automatic repair is queued (pending and unknown both)",
            "自动修复排队中的状态滞后工单（同时计入待定与仍未明）",
        ),
        _ => tr(lang, "not explained by the above", "以上原因未能解释的部分"),
    };
    let adds_up = sum == f.to_process;
    let explained = !f.differences.is_empty();
    let class = if adds_up {
        "reconciled ok"
    } else {
        "reconciled differs"
    };
    view! {
        <section class=class id="reconciled" data-adds-up=adds_up.to_string()>
            <p id="identity">{formula}</p>
            {explained.then(|| view! {
                <p>{tr(lang, "The difference, by reason (what each adds to the four figures):", "差额及其原因（各项计入上述四个数的数量）：")}</p>
                <ul id="differences">
                    {f.differences.iter().map(|(code, n)| view! {
                        <li data-reason=code.clone()>{reason(code)} ": " <strong>{format!("{n:+}")}</strong></li>
                    }).collect_view()}
                </ul>
            })}
        </section>
    }
}

/// A supervisor's queue: how many proposals of others wait for them, the
/// oldest, the next to expire.
#[component]
fn QueueCard(q: ApprovalQueue, lang: Lang) -> impl IntoView {
    view! {
        <section class="card" id="queue-card">
            <h2>{Msg::WaitingForYou.text(lang)} " " <a href="/approvals" id="queue-count">{q.waiting}</a></h2>
            <dl class="facts">
                <dt>{tr(lang, "oldest waiting since", "最早的提议于")}</dt>
                <dd id="queue-oldest">{q.oldest.clone().unwrap_or_else(|| "—".into())}</dd>
                <dt>{tr(lang, "next expiry", "最近到期")}</dt>
                <dd id="queue-expiry">{q.next_expiry.clone().unwrap_or_else(|| "—".into())}</dd>
            </dl>
        </section>
    }
}

/// Matched, pending and unknown per day as three lines; axes, labels and
/// a legend in the SVG itself.
#[component]
fn Trend(points: Vec<TrendPoint>, lang: Lang) -> impl IntoView {
    const W: f64 = 760.0;
    const H: f64 = 240.0;
    const LEFT: f64 = 56.0;
    const RIGHT: f64 = 16.0;
    const TOP: f64 = 22.0;
    const BOTTOM: f64 = 60.0;
    let max = points
        .iter()
        .flat_map(|p| [p.matched, p.pending, p.unknown])
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let n = points.len().max(2) as f64;
    let x = move |i: usize| LEFT + (W - LEFT - RIGHT) * i as f64 / (n - 1.0);
    let y = move |v: i64| TOP + (H - TOP - BOTTOM) * (1.0 - v as f64 / max);
    let line = |pick: fn(&TrendPoint) -> i64| {
        points
            .iter()
            .enumerate()
            .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(pick(p))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let series = [
        (
            "matched",
            tr(lang, "matched", "已匹配"),
            "#2e7d32",
            line(|p| p.matched),
        ),
        (
            "pending",
            tr(lang, "pending", "待定"),
            "#b26a00",
            line(|p| p.pending),
        ),
        (
            "unknown",
            tr(lang, "still unknown", "仍未明"),
            "#b3261e",
            line(|p| p.unknown),
        ),
    ];
    let ticks = [0.0, 0.5, 1.0].map(|t| ((max * t).round() as i64, y((max * t).round() as i64)));
    let last = points.len().saturating_sub(1);
    let labels: Vec<(f64, &'static str, String)> = [0, points.len() / 2, last]
        .into_iter()
        .filter_map(|i| {
            let anchor = match i {
                0 => "start",
                i if i == last => "end",
                _ => "middle",
            };
            points.get(i).map(|p| (x(i), anchor, p.day.clone()))
        })
        .collect();
    let title = tr(
        lang,
        "Matched, pending and still unknown per business day",
        "每个业务日的已匹配、待定与仍未明数量",
    );
    view! {
        <svg id="trend" viewBox=format!("0 0 {W} {H}") width="100%" role="img" aria-label=title
            xmlns="http://www.w3.org/2000/svg">
            <title>{title}</title>
            <line x1=LEFT y1=TOP x2=LEFT y2={H - BOTTOM} stroke="#8a93a3"/>
            <line x1=LEFT y1={H - BOTTOM} x2={W - RIGHT} y2={H - BOTTOM} stroke="#8a93a3"/>
            {ticks.into_iter().map(|(v, ty)| view! {
                <line x1=LEFT y1=ty x2={W - RIGHT} y2=ty stroke="#e3e7ee"/>
                <text x={LEFT - 6.0} y={ty + 4.0} text-anchor="end" font-size="11" fill="#5d6677">{v}</text>
            }).collect_view()}
            {labels.into_iter().map(|(lx, anchor, day)| view! {
                <text x=lx y={H - BOTTOM + 16.0} text-anchor=anchor font-size="11" fill="#5d6677">{day}</text>
            }).collect_view()}
            <text x={LEFT + 4.0} y={TOP - 4.0} font-size="11" fill="#5d6677">{tr(lang, "count", "数量")}</text>
            <text x={(W + LEFT) / 2.0} y={H - BOTTOM + 32.0} text-anchor="middle" font-size="11" fill="#5d6677">{tr(lang, "business day", "业务日")}</text>
            {series.iter().map(|(id, _, color, pts)| view! {
                <polyline class=format!("series-{id}") points=pts.clone() fill="none" stroke=*color stroke-width="2"/>
            }).collect_view()}
            <g class="legend">
                {series.iter().enumerate().map(|(i, (id, label, color, _))| {
                    let lx = LEFT + 170.0 * i as f64;
                    view! {
                        <rect x=lx y={H - 18.0} width="12" height="12" fill=*color/>
                        <text x={lx + 18.0} y={H - 8.0} font-size="12" fill="#1d2330" data-series=*id>{*label}</text>
                    }
                }).collect_view()}
            </g>
        </svg>
    }
}
