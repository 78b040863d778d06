//! The bank side: on the dashboard, the day's payouts settled to the bank
//! (matched to a bank credit, per provider and currency); the bank page
//! lists the imported bank statements and the payouts with their match
//! state, each mismatch a ticket in the discrepancy list, and the cash
//! expected at the bank per day against what arrived.

use super::{ErrorNote, Frame, url_error};
use crate::api::load_bank;
use crate::bank::SettledRow;
use crate::format::utc_minutes;
use crate::i18n::{Msg, tr};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// The dashboard's "settled to bank" for its day.
#[component]
pub fn SettledToBank(rows: Vec<SettledRow>, lang: Lang) -> impl IntoView {
    view! {
        <section class="card" id="settled-to-bank">
            <h2>{Msg::SettledToBank.text(lang)} " " <a href="/bank">{tr(lang, "bank statements →", "银行对账单 →")}</a></h2>
            {if rows.is_empty() {
                view! { <p class="hint">{tr(lang, "No payout matched to a bank credit arrives on this day.", "当日没有与银行入账匹配的结算款。")}</p> }.into_any()
            } else {
                view! {
                    <table class="grid">
                        <thead><tr>
                            <th>{Msg::Provider.text(lang)}</th>
                            <th class="num">{tr(lang, "Payouts", "结算笔数")}</th>
                            <th class="num">{tr(lang, "Amount", "金额")}</th>
                        </tr></thead>
                        <tbody>
                            {rows.into_iter().map(|r| view! {
                                <tr data-provider=r.provider.clone() data-currency=r.currency.clone()>
                                    <td>{r.provider.clone()}</td>
                                    <td class="num">{r.payouts}</td>
                                    <td class="num settled-amount">{r.amount.clone()} " " {r.currency.clone()}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
    }
}

#[component]
pub fn BankPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_bank());
    view! {
        <Frame allow=Role::ALL>
            <BankBody data=data/>
        </Frame>
    }
}

/// A payout's state in words a finance team reads.
fn state_text(state: &str, lang: Lang) -> &'static str {
    match state {
        "PAYOUT_MATCHED" => tr(lang, "matched to a bank credit", "已与银行入账匹配"),
        "PAYOUT_MISSING" => tr(lang, "missing at the bank", "银行未到账"),
        "PAYOUT_LATE" => tr(lang, "later than usual", "晚于惯常到账"),
        "PAYOUT_AMOUNT_MISMATCH" => tr(lang, "bank credit differs", "银行入账金额不符"),
        "NOT_SENT" => tr(lang, "failed or cancelled", "已失败或取消"),
        _ => tr(lang, "waiting for the bank", "等待银行入账"),
    }
}

#[component]
fn BankBody(data: super::Loaded<crate::bank::BankView>) -> impl IntoView {
    let super::Viewer { lang, user } = expect_context::<super::Viewer>();
    let title = Msg::Bank.text(lang);
    let may_work = matches!(user.role, Role::Operator | Role::Supervisor);
    let err = url_error();
    let query = use_query_map();
    let imported = move || {
        let q = query.read();
        q.get("statement")
            .map(|id| (id, q.get("duplicate").as_deref() == Some("1")))
    };
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p class="hint">{tr(lang,
            "Bank statements (camt.053, MT940, BAI2 or CSV) are imported here, with `reckon bank import FILE` or POST /api/v1/bank/statements; each provider payout is matched to a bank credit. Differences open tickets; no money moves.",
            "银行对账单（camt.053、MT940、BAI2 或 CSV）可在此导入，也可用 `reckon bank import FILE` 或 POST /api/v1/bank/statements；每笔渠道结算款与银行入账匹配，差异生成工单，不会自动动账。")}</p>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {move || imported().map(|(id, duplicate)| view! {
            <p class="notice" id="bank-imported" data-statement=id.clone()>
                {if duplicate {
                    tr(lang, "This file was imported before: nothing changed.", "此文件此前已导入：未做任何更改。")
                } else {
                    tr(lang, "Statement imported and matched; it is listed below.", "对账单已导入并完成匹配，见下表。")
                }}
            </p>
        })}
        {may_work.then(|| view! {
            <form method="post" enctype="multipart/form-data" action="/bank/upload" class="row card" id="bank-upload-form">
                <label>{tr(lang, "Bank statement file", "银行对账单文件")}<input type="file" name="file" id="b-file" required/></label>
                <label>{tr(lang, "Format", "格式")}
                    <select name="format" id="b-format">
                        <option value="">{tr(lang, "by its content", "按内容识别")}</option>
                        <option value="camt053">"camt.053"</option>
                        <option value="mt940">"MT940"</option>
                        <option value="bai2">"BAI2"</option>
                        <option value="csv">"CSV"</option>
                    </select>
                </label>
                <label>{tr(lang, "CSV columns (field=Header;…, optional)", "CSV 列映射（字段=表头;…，可选）")}
                    <input name="csv_columns" id="b-columns" size="28" placeholder="date=Buchungstag;amount=Betrag"/></label>
                <button type="submit" id="b-submit">{tr(lang, "Import and match", "导入并匹配")}</button>
            </form>
        })}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                match data.await {
                    Err(e) => view! { <ErrorNote err=Some(e) lang=lang/> }.into_any(),
                    Ok(v) => view! {
                        <section class="card" id="bank-statements">
                            <h2>{tr(lang, "Imported bank statements", "已导入的银行对账单")} " (" {v.statements.len()} ")"</h2>
                            <table class="grid">
                                <thead><tr>
                                    <th>{tr(lang, "Imported (UTC)", "导入时间（UTC）")}</th>
                                    <th>{tr(lang, "File", "文件")}</th>
                                    <th>{tr(lang, "Format", "格式")}</th>
                                    <th>{tr(lang, "Account", "账户")}</th>
                                    <th class="num">{tr(lang, "Entries", "条目")}</th>
                                    <th class="num">{tr(lang, "Credits", "入账")}</th>
                                    <th>{tr(lang, "By", "导入人")}</th>
                                </tr></thead>
                                <tbody>
                                    {v.statements.is_empty().then(|| view! { <tr><td colspan="7">
                                        <super::empty::Empty id="empty-statements"
                                            why=tr(lang, "No bank statement imported yet: payouts are matched to the bank's credits once one is.", "尚未导入银行对账单：导入后结算款将与银行入账匹配。")
                                            href="#bank-upload-form" action=tr(lang, "Import one above.", "在上方导入。")/>
                                    </td></tr> })}
                                    {v.statements.into_iter().map(|s| view! {
                                        <tr data-statement=s.statement_id.clone()>
                                            <td>{utc_minutes(s.imported_at)}</td>
                                            <td>{s.file_name.clone().unwrap_or_default()}</td>
                                            <td>{s.format.clone()}</td>
                                            <td>{s.account.clone().unwrap_or_default()}</td>
                                            <td class="num">{s.entries}</td>
                                            <td class="num">{s.credits}</td>
                                            <td>{s.imported_by.clone()}</td>
                                        </tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </section>
                        <section class="card" id="bank-payouts">
                            <h2>{tr(lang, "Payouts", "渠道结算款")} " (" {v.payouts.len()} ")"</h2>
                            <table class="grid">
                                <thead><tr>
                                    <th>{Msg::Provider.text(lang)}</th>
                                    <th>{tr(lang, "Payout", "结算单号")}</th>
                                    <th>{tr(lang, "Arrival", "预计到账日")}</th>
                                    <th class="num">{tr(lang, "Amount", "金额")}</th>
                                    <th>{Msg::PayoutState.text(lang)}</th>
                                </tr></thead>
                                <tbody>
                                    {v.payouts.is_empty().then(|| view! { <tr><td colspan="5">
                                        <super::empty::Empty id="empty-payouts"
                                            why=tr(lang, "No payouts yet: they come from providers' settlement statements.", "尚无结算款：结算款来自渠道的结算对账单。")
                                            href="/runs" action=tr(lang, "Reconcile statements on Runs.", "到“对账批次”对账。")/>
                                    </td></tr> })}
                                    {v.payouts.into_iter().map(|p| {
                                        let tickets = format!("/tickets?q={}", crate::tickets::encode(&p.payout_id));
                                        let is_ticket = matches!(p.state.as_str(), "PAYOUT_LATE" | "PAYOUT_MISSING" | "PAYOUT_AMOUNT_MISMATCH");
                                        view! {
                                            <tr data-payout=p.payout_id.clone() data-state=p.state.clone()>
                                                <td>{p.provider.clone()}</td>
                                                <td title=p.status.clone()>{p.payout_id.clone()}</td>
                                                <td>{p.arrival_on.clone()}</td>
                                                <td class="num">{p.amount.clone()} " " {p.currency.clone()}</td>
                                                <td>
                                                    {state_text(&p.state, lang)}
                                                    {is_ticket.then(|| view! { " " <a href=tickets>{tr(lang, "ticket →", "工单 →")}</a> })}
                                                </td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </section>
                        <ExpectedCash cash=v.cash delays=v.delays lang=lang/>
                    }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The cash expected at the bank per day, per provider and currency,
/// against what arrived, and the delays it rests on.
#[component]
fn ExpectedCash(
    cash: Vec<crate::bank::CashLine>,
    delays: Vec<crate::bank::DelayLine>,
    lang: Lang,
) -> impl IntoView {
    view! {
        <section class="card" id="bank-expected">
            <h2>{tr(lang, "Expected cash", "预计到账资金")}</h2>
            <p class="hint">{tr(lang,
                "Per day: payouts announced for it, plus reconciled days no payout has taken yet, placed at their day + the provider's usual delay; against the credits the bank booked. Also `reckon bank expected` and GET /api/v1/bank/expected.",
                "按日：渠道已公布到账日的结算款，加上尚未结算出款的已对账日净额（按该渠道惯常延迟顺延），对比银行实际入账。亦可用 `reckon bank expected` 或 GET /api/v1/bank/expected。")}</p>
            <ul class="delays">
                {delays.into_iter().map(|d| {
                    let text = match (d.median_days, d.late_after_days) {
                        (Some(m), Some(l)) => format!("{} {}: {m} {} ({} {l}; {} {})", d.provider, d.currency,
                            tr(lang, "days usually", "天（惯常）"), tr(lang, "late after", "超过即迟到："),
                            d.samples, tr(lang, "payouts", "笔")),
                        _ => format!("{} {}: {} {} — {}", d.provider, d.currency, d.samples,
                            tr(lang, "payouts", "笔"), tr(lang, "too few to learn a delay (5 needed)", "不足以学习延迟（需 5 笔）")),
                    };
                    view! { <li data-provider=d.provider.clone() data-currency=d.currency.clone()>{text}</li> }
                }).collect_view()}
            </ul>
            <table class="grid">
                <thead><tr>
                    <th>{tr(lang, "Day", "日期")}</th>
                    <th>{Msg::Provider.text(lang)}</th>
                    <th class="num">{tr(lang, "Payouts announced", "已公布结算款")}</th>
                    <th class="num">{tr(lang, "Settled, not paid out", "已对账未出款")}</th>
                    <th class="num">{tr(lang, "Expected", "预计")}</th>
                    <th class="num">{tr(lang, "Arrived", "已到账")}</th>
                </tr></thead>
                <tbody>
                    {cash.is_empty().then(|| view! { <tr><td colspan="6">
                        <super::empty::Empty id="empty-expected"
                            why=tr(lang, "No cash expected or arrived in these days.", "这些日期内没有预计或已到账的资金。")
                            href="/runs" action=tr(lang, "Reconcile statements on Runs.", "到“对账批次”对账。")/>
                    </td></tr> })}
                    {cash.into_iter().map(|c| view! {
                        <tr data-day=c.day.clone() data-provider=c.provider.clone() data-currency=c.currency.clone()
                            class:ahead=c.ahead>
                            <td>{c.day.clone()}</td>
                            <td>{c.provider.clone()}</td>
                            <td class="num">{c.announced.clone()} " (" {c.payouts} ")"</td>
                            <td class="num">{c.settled.clone()} " (" {c.settled_days} ")"</td>
                            <td class="num expected">{c.expected.clone()} " " {c.currency.clone()}</td>
                            <td class="num arrived">{c.arrived.clone()} " " {c.currency.clone()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}
