//! The bank side: on the dashboard, the day's payouts settled to the bank
//! (matched to a bank credit, per provider and currency); the bank page
//! lists the imported bank statements and the payouts with their match
//! state, each mismatch a ticket in the discrepancy list.

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
                                        let is_ticket = matches!(p.state.as_str(), "PAYOUT_MISSING" | "PAYOUT_AMOUNT_MISMATCH");
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
                    }.into_any(),
                }
            })}
        </Transition>
    }
}
