//! The dashboard's ageing section: open tickets per class in the four age
//! buckets (each count a link to the list of those tickets), how many are
//! past their class's SLA, and the chosen day's new, persisting and
//! resolved tickets beside the day before's.

use crate::ageing::{AgeBucket, Ageing, DayChange};
use crate::codes::{Code, Codes};
use crate::i18n::{Msg, tr};
use crate::tickets::encode;
use crate::types::Lang;
use leptos::prelude::*;

/// The tickets list of open tickets of `class` (all when empty) aged `age`.
fn list_of(provider: &str, class: &str, age: Option<AgeBucket>) -> String {
    let mut q = vec!["status=ACTIVE".to_owned()];
    if !class.is_empty() {
        q.push(format!("class={}", encode(class)));
    }
    if !provider.is_empty() {
        q.push(format!("provider={}", encode(provider)));
    }
    if let Some(b) = age {
        q.push(format!("age={}", b.as_str()));
    }
    format!("/tickets?{}", q.join("&"))
}

#[component]
pub fn AgeingSection(a: Ageing, provider: Option<String>, lang: Lang) -> impl IntoView {
    let provider = provider.unwrap_or_default();
    let totals = a.totals();
    let overdue: i64 = a.classes.iter().map(|c| c.overdue).sum();
    let cells = |class: &str, counts: [i64; 4]| {
        AgeBucket::ALL
            .into_iter()
            .zip(counts)
            .map(|(b, n)| {
                let href = list_of(&provider, class, Some(b));
                view! {
                    <td class="num" data-bucket=b.as_str()>
                        {if n > 0 { view! { <a href=href>{n}</a> }.into_any() } else { view! { <span class="muted">"0"</span> }.into_any() }}
                    </td>
                }
            })
            .collect_view()
    };
    let rows = a
        .classes
        .iter()
        .map(|c| {
            view! {
                <tr data-class=c.class.clone()>
                    <th><a href=list_of(&provider, &c.class, None)><Code set=Codes::Class code=c.class.clone() lang=lang/></a></th>
                    {cells(&c.class, c.buckets)}
                    <td class="num" class:overdue={c.overdue > 0} data-overdue=c.overdue.to_string()>{c.overdue}</td>
                    <td class="num muted">{c.sla_hours} " h"</td>
                </tr>
            }
        })
        .collect_view();
    let change_row = |label: &'static str, pick: fn(&DayChange) -> i64, id: &'static str| {
        let (now, before) = (pick(&a.day), pick(&a.before));
        let delta = now - before;
        let sign = if delta > 0 { "+" } else { "" };
        view! {
            <tr id=id>
                <th>{label}</th>
                <td class="num today">{now}</td>
                <td class="num before">{before}</td>
                <td class="num delta" class:up={delta > 0} class:down={delta < 0}>{format!("{sign}{delta}")}</td>
            </tr>
        }
    };
    view! {
        <section class="card" id="ageing">
            <h2>{tr(lang, "Open tickets by age", "未关闭工单账龄")}</h2>
            {a.classes.is_empty().then(|| view! {
                <super::empty::Empty id="no-open-tickets"
                    why=tr(lang, "No open tickets: nothing is ageing.", "没有未关闭的工单：没有账龄可统计。")
                    href="/tickets" action=tr(lang, "See all discrepancies.", "查看全部差异工单。")/>
            })}
            <div class="split">
                <table class="grid compact" id="ageing-table">
                    <thead><tr>
                        <th>{tr(lang, "Class", "差异类型")}</th>
                        {AgeBucket::ALL.into_iter().map(|b| view! { <th class="num">{b.label()}</th> }).collect_view()}
                        <th class="num">{Msg::Overdue.text(lang)}</th>
                        <th class="num">"SLA"</th>
                    </tr></thead>
                    <tbody>{rows}</tbody>
                    <tfoot><tr data-class="">
                        <th>{tr(lang, "All classes", "全部类型")}</th>
                        {cells("", totals)}
                        <td class="num" class:overdue={overdue > 0} id="ageing-overdue">{overdue}</td>
                        <td></td>
                    </tr></tfoot>
                </table>
                <table class="grid compact" id="day-change">
                    <thead><tr>
                        <th></th>
                        <th class="num">{a.day.day.clone()}</th>
                        <th class="num">{a.before.day.clone()}</th>
                        <th class="num">{tr(lang, "change", "变化")}</th>
                    </tr></thead>
                    <tbody>
                        {change_row(tr(lang, "new (found that day)", "新增（当日发现）"), |c| c.new, "change-new")}
                        {change_row(tr(lang, "persisting (open at its end, found before)", "持续（日终仍未关闭、此前发现）"), |c| c.persisting, "change-persisting")}
                        {change_row(tr(lang, "resolved (closed that day)", "已解决（当日关闭）"), |c| c.resolved, "change-resolved")}
                    </tbody>
                </table>
            </div>
            <p class="hint">{tr(lang,
                "Age: whole days since a ticket was found. Overdue: open longer than its class's SLA; each overdue ticket raises one alert.",
                "账龄：自发现起的整天数。已超时：未关闭时间超过该类型的 SLA；每个超时工单产生一条告警。")}</p>
        </section>
    }
}
