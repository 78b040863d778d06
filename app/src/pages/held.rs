//! The actions the approval policy holds (a sink's pause, a large bulk
//! resend, a user's creation, a token that can write), on the approvals
//! page: each waiting one with who proposed it and who approved it so far;
//! approve or reject (the proposer: withdraw). Who may approve is the
//! database's to say; a refusal is shown with its reason.

use super::{ErrorNote, Loaded, action_error, shown};
use crate::api::DecideHeld;
use crate::i18n::tr;
use crate::policy::HeldAction;
use crate::types::{Lang, User};
use leptos::prelude::*;

#[component]
pub fn HeldActions(
    list: Loaded<Vec<HeldAction>>,
    decide: ServerAction<DecideHeld>,
    viewer: User,
    lang: Lang,
) -> impl IntoView {
    let err = action_error(decide, || None);
    view! {
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        {move || decide.value().get().and_then(Result::ok).map(|said: String| view! {
            <p class="result" id="held-result" role="status">{said}</p>
        })}
        <Transition fallback=|| ()>
            {move || {
                let viewer = viewer.clone();
                Suspend::new(async move {
                shown(list.await.map(|all| {
                    let (waiting, decided): (Vec<_>, Vec<_>) = all.into_iter().partition(|h| h.status == "PENDING");
                    view! {
                        <section id="held" class="card">
                            <h2>{tr(lang, "Actions held for approval", "待审批的操作")} " (" <span id="held-count">{waiting.len()}</span> ")"</h2>
                            <p class="hint">{tr(lang,
                                "The approval policy holds these until others approve them; the last approval needed runs them, as their proposer.",
                                "以下操作按审批规则须由他人批准；最后一位所需审批人批准时，以提议人身份执行。")}</p>
                            {waiting.into_iter().map(|h| {
                                let mine = h.proposer_id == viewer.id;
                                let (id_a, id_r) = (h.id.clone(), h.id.clone());
                                view! {
                                    <div class="held-action" data-held=h.id.clone()>
                                        <p><strong class="held-summary">{h.summary.clone()}</strong> " · " {h.action.clone()}</p>
                                        <p class="muted">{tr(lang, "Proposed by ", "提议人 ")} <span class="held-proposer">{h.proposer.clone()}</span>
                                            " · " {tr(lang, "approvals ", "已批准 ")} <span class="held-approvals">{h.approved_by.len()}</span> " / " {h.required}
                                            {(!h.approved_by.is_empty()).then(|| format!(" ({})", h.approved_by.join(", ")))}</p>
                                        {(!mine).then(|| view! {
                                            <ActionForm action=decide attr:class="inline">
                                                <input type="hidden" name="id" value=id_a/>
                                                <input type="hidden" name="what" value="approve"/>
                                                <button type="submit" class="held-approve">{tr(lang, "Approve", "批准")}</button>
                                            </ActionForm>
                                            " "
                                        })}
                                        <ActionForm action=decide attr:class="inline">
                                            <input type="hidden" name="id" value=id_r/>
                                            <input type="hidden" name="what" value="reject"/>
                                            <button type="submit" class="held-reject danger">
                                                {if mine { tr(lang, "Withdraw", "撤回") } else { tr(lang, "Reject", "驳回") }}</button>
                                        </ActionForm>
                                    </div>
                                }
                            }).collect_view()}
                            {(!decided.is_empty()).then(|| view! {
                                <table class="grid" id="held-decided">
                                    <thead><tr>
                                        <th>{tr(lang, "Action", "操作")}</th>
                                        <th>{tr(lang, "Status", "状态")}</th>
                                        <th>{tr(lang, "Proposer", "提议人")}</th>
                                        <th>{tr(lang, "Approved by", "批准人")}</th>
                                        <th>{tr(lang, "Result", "结果")}</th>
                                    </tr></thead>
                                    <tbody>
                                        {decided.into_iter().map(|h| view! {
                                            <tr data-held=h.id.clone()>
                                                <td>{h.summary.clone()}</td>
                                                <td>{h.status.clone()}</td>
                                                <td>{h.proposer.clone()}</td>
                                                <td>{h.approved_by.join(", ")}</td>
                                                <td>{h.outcome.clone().unwrap_or_default()}</td>
                                            </tr>
                                        }).collect_view()}
                                    </tbody>
                                </table>
                            })}
                        </section>
                    }
                }), lang)
            })}}
        </Transition>
    }
}
