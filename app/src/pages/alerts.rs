//! Alerts: the open ones oldest first, each acknowledged with a comment
//! (audited); then the most recent acknowledged ones.

use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{AcknowledgeAlert, list_alerts};
use crate::format::utc_minutes;
use crate::i18n::{Msg, tr};
use crate::types::Role;
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn AlertsPage() -> impl IntoView {
    view! {
        <Frame allow=Role::ALL>
            <AlertsBody/>
        </Frame>
    }
}

#[component]
fn AlertsBody() -> impl IntoView {
    let Viewer { lang, user } = expect_context::<Viewer>();
    let ack = ServerAction::<AcknowledgeAlert>::new();
    let open = Resource::new(move || ack.version().get(), |_| list_alerts(true));
    let all = Resource::new(move || ack.version().get(), |_| list_alerts(false));
    let err = action_error(ack, url_error());
    let may_ack = matches!(user.role, Role::Operator | Role::Supervisor);
    let title = Msg::Alerts.text(lang);
    view! {
        <Title text=format!("{title} · {}", Msg::AppName.text(lang))/>
        <h1>{title}</h1>
        {move || view! { <ErrorNote err=err() lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(open.await.map(|list| view! {
                    <section id="open">
                        <h2>{tr(lang, "Open, oldest first", "未处理（最早的在前）")} " (" {list.len()} ")"</h2>
                        {list.into_iter().map(|a| {
                            let id = a.id.clone();
                            view! {
                                <article class=format!("card alert alert-{}", a.severity) data-alert=a.id.clone() data-kind=a.kind.clone()>
                                    <p><strong>{a.severity.clone()}</strong> " · " {a.kind.clone()} " · " {utc_minutes(a.created_at)}
                                        {a.payment_no.clone().map(|no| view! { " · " <a href=format!("/payments/{no}")>{no.clone()}</a> })}</p>
                                    <p>{a.message.clone()}</p>
                                    {may_ack.then(|| view! {
                                        <ActionForm action=ack attr:class="row ack-form">
                                            <input type="hidden" name="id" value=id/>
                                            <label class="wide">{tr(lang, "Comment", "处理说明")}<input name="comment" class="ack-comment" required/></label>
                                            <button type="submit" class="ack-submit">{tr(lang, "Acknowledge", "确认")}</button>
                                        </ActionForm>
                                    })}
                                </article>
                            }
                        }).collect_view()}
                    </section>
                }), lang)
            })}
        </Transition>
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                shown(all.await.map(|list| view! {
                    <section class="card" id="acknowledged">
                        <h2>{tr(lang, "Acknowledged", "已确认")}</h2>
                        <table class="grid">
                            <tbody>
                                {list.into_iter().filter(|a| a.acknowledged_at.is_some()).map(|a| view! {
                                    <tr>
                                        <td>{utc_minutes(a.created_at)}</td>
                                        <td>{a.kind.clone()}</td>
                                        <td>{a.message.clone()}</td>
                                        <td>{a.acknowledged_by.clone().unwrap_or_default()} ": " {a.ack_comment.clone().unwrap_or_default()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </section>
                }), lang)
            })}
        </Transition>
    }
}
