//! Settings (supervisors and admins): the settings that decide money — the
//! version in force and its document, every version with who proposed and
//! approved it and what it changed — and a change of the console-editable
//! ones, proposed by one person and approved by another. The server checks
//! each value as the host's variable is checked, and audits every step.

use super::cells::{When, use_zone};
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{DecideSettings, ProposeSettings, load_settings};
use crate::i18n::{Msg, tr};
use crate::settings::{SettingsVersion, SettingsView};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn SettingsPage() -> impl IntoView {
    let propose = ServerAction::<ProposeSettings>::new();
    let decide = ServerAction::<DecideSettings>::new();
    let loaded = Resource::new(
        move || (propose.version().get(), decide.version().get()),
        |_| load_settings(),
    );
    view! {
        <Frame allow=&[Role::Supervisor, Role::Admin]>
            <SettingsBody propose=propose decide=decide loaded=loaded/>
        </Frame>
    }
}

fn status_text(v: &SettingsVersion, lang: Lang) -> &'static str {
    match (v.status.as_str(), v.source.as_str()) {
        ("PENDING", _) => tr(lang, "waiting for approval", "待审批"),
        ("REJECTED", _) => tr(lang, "rejected", "已驳回"),
        (_, "host") => tr(
            lang,
            "from the host's file and environment",
            "来自主机配置文件和环境变量",
        ),
        _ => tr(lang, "approved in the console", "控制台审批通过"),
    }
}

#[component]
fn SettingsBody(
    propose: ServerAction<ProposeSettings>,
    decide: ServerAction<DecideSettings>,
    loaded: super::Loaded<SettingsView>,
) -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let err = action_error(propose, url_error());
    let decide_err = action_error(decide, || None);
    let title = Msg::NavSettings.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        <p class="hint">{tr(lang,
            "The settings that decide money — cut windows, SLA hours, the bank window, when a missing statement alerts, when a day closes by itself, fees and sinks — are kept as numbered versions. Every run and every daily close records the version it used. The host's file and environment make a new version when they change; a change made here needs a second supervisor or admin, and stays in force until the host's own values change.",
            "影响资金判断的配置（跨日窗口、SLA 时长、银行匹配窗口、账单缺失告警、自动日结条件、费率和推送端点）按编号版本保存。每次对账和每次日结都记录所用的版本。主机配置文件和环境变量变化时生成新版本；在此处的修改需要另一位主管或管理员批准，并在主机自身的值变化之前一直有效。")}</p>
        {move || view! { <ErrorNote err=err().or_else(decide_err) lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || {
                let user = user.clone();
                Suspend::new(async move {
                shown(loaded.await.map(|v| {
                    let e = v.editable.clone();
                    view! {
                        <section class="card" id="settings-in-force">
                            <h2>
                                {tr(lang, "In force: version ", "当前版本：")}
                                <span id="settings-version">{v.in_force.map(|n| n.to_string()).unwrap_or_else(|| "—".into())}</span>
                            </h2>
                            <details>
                                <summary>{tr(lang, "The whole document", "完整配置文档")}</summary>
                                <pre id="settings-document">{v.document.clone()}</pre>
                            </details>
                        </section>
                        {v.pending.clone().map(|p| {
                            let mine = p.proposed_by_id.as_deref() == Some(user.id.as_str());
                            let id = p.id.clone();
                            let approve_id = p.id.clone();
                            view! {
                                <section class="card" id="settings-pending">
                                    <h2>{tr(lang, "Waiting for approval", "待审批的修改")}</h2>
                                    <p>
                                        {tr(lang, "Proposed by ", "申请人 ")} <strong class="proposer">{p.proposed_by.clone()}</strong>
                                        ": " {p.reason.clone().unwrap_or_default()}
                                    </p>
                                    <Changes changes=p.changes.clone() lang=lang/>
                                    <RulesPreview previews=p.preview.clone() lang=lang/>
                                    <p class="hint" id="settings-approvals">{match lang {
                                        Lang::En => format!("Approved by {} of the {} needed besides the proposer{}.", p.approved_by.len(), p.required,
                                            if p.approved_by.is_empty() { String::new() } else { format!(": {}", p.approved_by.join(", ")) }),
                                        Lang::Zh => format!("需要申请人以外的 {} 人批准，已批准 {} 人{}。", p.required, p.approved_by.len(),
                                            if p.approved_by.is_empty() { String::new() } else { format!("：{}", p.approved_by.join("、")) }),
                                    }}</p>
                                    {(!mine).then(move || view! {
                                        <ActionForm action=decide attr:class="inline">
                                            <input type="hidden" name="id" value=approve_id/>
                                            <input type="hidden" name="what" value="approve"/>
                                            <button type="submit" id="settings-approve">{tr(lang, "Approve", "批准")}</button>
                                        </ActionForm>
                                        " "
                                    })}
                                    <ActionForm action=decide attr:class="inline">
                                        <input type="hidden" name="id" value=id/>
                                        <input type="hidden" name="what" value="reject"/>
                                        <button type="submit" id="settings-reject" class="danger">
                                            {if mine { tr(lang, "Withdraw", "撤回") } else { tr(lang, "Reject", "驳回") }}</button>
                                    </ActionForm>
                                </section>
                            }
                        })}
                        <section class="card" id="settings-propose-card">
                            <h2>{tr(lang, "Propose a change", "申请修改")}</h2>
                            <p class="hint" id="settings-needed">{match lang {
                                Lang::En => format!("Under the approval policy in force a change needs {} approver(s) besides you.", v.approvals_needed),
                                Lang::Zh => format!("按现行审批规则，修改须由您以外的 {} 人批准。", v.approvals_needed),
                            }}</p>
                            <ActionForm action=propose attr:id="settings-propose">
                                <p><label>{tr(lang, "SLA hours per class (CLASS=HOURS, *=HOURS for the rest)", "各类差异 SLA 小时（类别=小时，*=其余）")}<br/>
                                    <input name="sla_hours" id="settings-sla" size="80" value=e.sla_hours.clone()/></label></p>
                                <p><label>{tr(lang, "Cut window minutes (0–360; account=MINUTES overrides)", "跨日窗口分钟（0–360；账户=分钟 单独设置）")}<br/>
                                    <input name="cut_window_minutes" id="settings-cut" value=e.cut_window_minutes.clone()/></label></p>
                                <p><label>{tr(lang, "Bank window days (1–60)", "银行匹配窗口天数（1–60）")}<br/>
                                    <input name="bank_window_days" id="settings-bank" value=e.bank_window_days.clone()/></label></p>
                                <p><label>{tr(lang, "Statement missing after hours (1–720)", "账单缺失告警小时（1–720）")}<br/>
                                    <input name="statement_missing_hours" id="settings-missing" value=e.statement_missing_hours.clone()/></label></p>
                                <p><label>{tr(lang, "A day closes by itself with open tickets up to (OFF, NONE, LOW, MEDIUM, HIGH, CRITICAL)", "自动日结允许的未结差异最高级别（OFF、NONE、LOW、MEDIUM、HIGH、CRITICAL）")}<br/>
                                    <input name="close_allow_open" id="settings-allow-open" value=e.close_allow_open.clone()/></label></p>
                                <h3>{tr(lang, "Matching rules", "匹配规则")}</h3>
                                <p class="hint">{tr(lang,
                                    "A change of these is previewed on each provider's latest statement before anyone approves it. A tolerance never matches: a row within it is a LOW amount mismatch to ACCEPT.",
                                    "修改匹配规则时，会先在各渠道最近一份账单上预演，再交审批。容差从不直接匹配：容差内的差异是低级别金额不符工单，由人确认接受。")}</p>
                                <p><label>{tr(lang, "Keys in order (txn, payment_no, reference, amount; txn required, amount last)", "匹配键顺序（txn、payment_no、reference、amount；txn 必填，amount 在最后）")}<br/>
                                    <input name="match_keys" id="settings-match-keys" value=e.match_keys.clone().unwrap_or_default()/></label></p>
                                <p><label>{tr(lang, "Date window of a match by payment_no, hours (0–720; account=HOURS overrides)", "按商户单号匹配的时间窗口小时（0–720；账户=小时 单独设置）")}<br/>
                                    <input name="match_window_hours" id="settings-match-window" value=e.match_window_hours.clone().unwrap_or_default()/></label></p>
                                <p><label>{tr(lang, "Amount tolerance, minor units (account:CURRENCY=MINOR, *:CURRENCY for every account)", "金额容差，最小货币单位（账户:币种=数值，*:币种 适用所有账户）")}<br/>
                                    <input name="amount_tolerance" id="settings-tolerance" size="60" value=e.amount_tolerance.clone().unwrap_or_default()/></label></p>
                                <p><label>{tr(lang, "Reason", "原因")}<br/>
                                    <input name="reason" id="settings-reason" size="80" required/></label></p>
                                <button type="submit" id="settings-propose-submit">{tr(lang, "Propose", "提交申请")}</button>
                            </ActionForm>
                        </section>
                        <section class="card">
                            <h2>{tr(lang, "History", "历史版本")}</h2>
                            <table class="grid" id="settings-history">
                                <thead><tr>
                                    <th>{tr(lang, "Version", "版本")}</th>
                                    <th>{tr(lang, "Status", "状态")}</th>
                                    <th>{tr(lang, "Proposed", "申请")}</th>
                                    <th>{tr(lang, "Decided", "审批")}</th>
                                    <th>{tr(lang, "Changes", "变更")}</th>
                                </tr></thead>
                                <tbody>
                                    {v.history.iter().map(|h| view! { <VersionLine v=h.clone() lang=lang/> }).collect_view()}
                                </tbody>
                            </table>
                        </section>
                    }
                }), lang)
            })}}
        </Transition>
    }
}

#[component]
fn VersionLine(v: SettingsVersion, lang: Lang) -> impl IntoView {
    let zone = use_zone();
    view! {
        <tr data-version=v.version.map(|n| n.to_string()).unwrap_or_default() data-status=v.status.clone()>
            <td>{v.version.map(|n| n.to_string()).unwrap_or_else(|| "—".into())}
                <br/><code class="muted" title=v.digest.clone()>{v.digest.chars().take(12).collect::<String>()}</code></td>
            <td>{status_text(&v, lang)}</td>
            <td><When at=v.created_at zone=zone.clone()/> " · " {v.proposed_by.clone()}
                {v.reason.clone().map(|r| view! { <br/><span class="muted">{r}</span> })}</td>
            <td>{v.decided_at.map(|at| view! { <When at=at zone=zone.clone()/> })}
                {v.decided_by.clone().map(|by| view! { " · " {by} })}</td>
            <td><Changes changes=v.changes.clone() lang=lang/></td>
        </tr>
    }
}

#[component]
fn Changes(changes: Vec<crate::settings::SettingChange>, lang: Lang) -> impl IntoView {
    let none = || "—".to_owned();
    if changes.is_empty() {
        return view! { <span class="muted">{tr(lang, "no change", "无变更")}</span> }.into_any();
    }
    view! {
        <ul class="settings-changes">
            {changes.into_iter().map(|c| view! {
                <li data-setting=c.setting.clone()>
                    <code>{c.setting.clone()}</code> ": "
                    <del>{c.before.unwrap_or_else(none)}</del> " → " <ins>{c.after.unwrap_or_else(none)}</ins>
                </li>
            }).collect_view()}
        </ul>
    }
    .into_any()
}

/// What a proposed change of the matching rules would do, per provider.
#[component]
fn RulesPreview(previews: Vec<crate::settings::RulePreview>, lang: Lang) -> impl IntoView {
    if previews.is_empty() {
        return ().into_any();
    }
    let signed = |n: i64| {
        if n > 0 {
            format!("+{n}")
        } else {
            n.to_string()
        }
    };
    view! {
        <h3>{tr(lang, "Preview on the latest statements", "在最近账单上的预演")}</h3>
        <table class="grid" id="settings-preview">
            <thead><tr>
                <th>{tr(lang, "Provider, day", "渠道、日期")}</th>
                <th>{tr(lang, "Matched", "已匹配")}</th>
                <th>{tr(lang, "Tickets", "工单")}</th>
                <th>{tr(lang, "Rows by class; tickets by class and severity", "按类别的行数；按类别和级别的工单")}</th>
            </tr></thead>
            <tbody>
                {previews.into_iter().map(|p| {
                    let by_class = p.classes_more.iter().map(|(c, n)| format!("{c} {}", signed(*n))).collect::<Vec<_>>().join(", ");
                    let by_ticket = p.tickets_more.iter().map(|(c, n)| format!("{c} {}", signed(*n))).collect::<Vec<_>>().join(", ");
                    let by_key = p.by_key_proposed.iter().flat_map(|(k, by)| by.iter().map(move |(w, n)| format!("{k} {w} {n}"))).collect::<Vec<_>>().join(", ");
                    view! {
                        <tr data-provider=p.provider.clone()>
                            <td>{p.provider.clone()} " " {p.business_date.clone()}<br/><code class="muted">{p.run_id.clone()}</code></td>
                            {match p.error.clone() {
                                Some(e) => view! { <td colspan="3" class="error">{e}</td> }.into_any(),
                                None => view! {
                                    <td class="preview-matched">{p.matched_now} " → " {p.matched_proposed}
                                        " (" {signed(p.matched_proposed - p.matched_now)} ")"</td>
                                    <td class="preview-tickets">{p.tickets_now} " → " {p.tickets_proposed}
                                        " (" {signed(p.tickets_proposed - p.tickets_now)} ")"</td>
                                    <td class="preview-classes">{by_class}<br/><span class="preview-ticket-classes">{by_ticket}</span><br/><span class="preview-keys">{by_key}</span></td>
                                }.into_any(),
                            }}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
