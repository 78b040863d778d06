//! Console sessions: every browser signed in as the viewer — where from,
//! when it began and was last seen — and any of them ended; an admin sees
//! and ends another user's from the users page (`/sessions?user=ID`).
//! Ending one signs that browser out at its next request.

use super::cells::{When, use_zone};
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{ChangePassword, EndAllSessions, EndSession, list_sessions};
use crate::i18n::{Msg, in_zone, tr};
use crate::sessions::{SessionList, SessionRow};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;
use leptos_router::hooks::use_query_map;

#[component]
pub fn SessionsPage() -> impl IntoView {
    let end = ServerAction::<EndSession>::new();
    let end_all = ServerAction::<EndAllSessions>::new();
    let change = ServerAction::<ChangePassword>::new();
    let query = use_query_map();
    let list = Resource::new(
        move || {
            (
                query.read().get("user"),
                end.version().get(),
                end_all.version().get(),
            )
        },
        |(user, _, _)| list_sessions(user),
    );
    view! {
        <Frame allow=Role::ALL>
            <SessionsBody end=end end_all=end_all change=change list=list/>
        </Frame>
    }
}

#[component]
fn SessionsBody(
    end: ServerAction<EndSession>,
    end_all: ServerAction<EndAllSessions>,
    change: ServerAction<ChangePassword>,
    list: super::Loaded<SessionList>,
) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let from_url = url_error();
    let page_error = move || {
        action_error(end, || None)()
            .or_else(action_error(end_all, || None))
            .or_else(action_error(change, || None))
            .or_else(from_url)
    };
    view! {
        <Title text=format!("{} · {}", Msg::Sessions.text(lang), Msg::AppName.text(lang))/>
        {move || view! { <ErrorNote err=page_error() lang=lang/> }}
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(list.await.map(|list| {
                    let own = list.own;
                    view! {
                        <SessionTable list=list lang=lang end=end end_all=end_all/>
                        {own.then(|| view! { <PasswordChange change=change lang=lang/> })}
                    }
                }), lang)
            })}
        </Transition>
    }
}

#[component]
fn SessionTable(
    list: SessionList,
    lang: Lang,
    end: ServerAction<EndSession>,
    end_all: ServerAction<EndAllSessions>,
) -> impl IntoView {
    let zone = use_zone();
    let heading = if list.own {
        tr(lang, "Your sessions", "您的登录会话").to_owned()
    } else {
        match lang {
            Lang::En => format!("Sessions of {}", list.username),
            Lang::Zh => format!("{} 的登录会话", list.username),
        }
    };
    let intro = if list.own {
        tr(
            lang,
            "Every browser signed in as you. End one you do not recognise: it is signed out at once, and a password change or reset ends them all.",
            "以您的身份登录的每个浏览器。结束您不认识的会话，它会立即被登出；修改或重置密码会结束全部会话。",
        )
    } else {
        tr(
            lang,
            "Every browser signed in as this user. Ending a session signs it out at once.",
            "以该用户身份登录的每个浏览器。结束会话会立即将其登出。",
        )
    };
    let empty = list.items.is_empty();
    let own = list.own;
    let user_id = list.user_id.clone();
    view! {
        <h1 id="sessions-title">{heading}</h1>
        <p class="hint">{intro}</p>
        {own.then(|| view! {
            <p><A href="/security" attr:id="security-link">
                {tr(lang, "Second factor (authenticator app)", "第二因素（身份验证器应用）")}
            </A></p>
        })}
        {if empty {
            view! { <p id="no-sessions">{tr(lang, "No live sessions.", "没有有效的会话。")}</p> }.into_any()
        } else {
            view! {
                <table class="grid" id="sessions">
                    <thead>
                        <tr>
                            <th>{in_zone(lang, "Signed in", "登录时间", &zone)}</th>
                            <th>{in_zone(lang, "Last seen", "最近活动", &zone)}</th>
                            <th>{tr(lang, "Address", "地址")}</th>
                            <th>{tr(lang, "Browser", "浏览器")}</th>
                            <th>{Msg::Actions.text(lang)}</th>
                        </tr>
                    </thead>
                    <tbody>
                        {list.items.into_iter().map(|row| view! {
                            <SessionLine row=row lang=lang end=end/>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
        // Another user's sessions, all at once (one's own are ended one by
        // one, so the one in use is not ended by mistake).
        {(!own && !empty).then(|| view! {
            <ActionForm action=end_all attr:class="inline" attr:id="end-all-sessions">
                <input type="hidden" name="user_id" value=user_id/>
                <button type="submit" id="end-all-submit">{tr(lang, "End all sessions", "结束全部会话")}</button>
            </ActionForm>
        })}
    }
}

#[component]
fn SessionLine(row: SessionRow, lang: Lang, end: ServerAction<EndSession>) -> impl IntoView {
    let zone = use_zone();
    let agent = if row.user_agent.is_empty() {
        "—".to_owned()
    } else {
        row.user_agent.clone()
    };
    let id = row.id.clone();
    view! {
        <tr data-session=row.id.clone() class:current=row.current>
            <td><When at=row.created_at zone=zone.clone()/></td>
            <td><When at=row.last_seen_at zone=zone/></td>
            <td>{row.address.clone()}</td>
            <td class="agent" title=agent.clone()>{agent.clone()}</td>
            <td>
                {row.current.then(|| view! {
                    <span class="this-session">{tr(lang, "This session", "当前会话")}</span> " "
                })}
                <ActionForm action=end attr:class="inline">
                    <input type="hidden" name="session_id" value=id/>
                    <button type="submit" class="end-session">{tr(lang, "End", "结束")}</button>
                </ActionForm>
            </td>
        </tr>
    }
}

/// One's own password, changed by giving the current one; every session
/// ends with it, this one too, so the browser goes to the sign-in page.
#[component]
fn PasswordChange(change: ServerAction<ChangePassword>, lang: Lang) -> impl IntoView {
    // Signed out by the change: who is looking is asked again, so every
    // page sends this browser to sign in.
    let info = expect_context::<super::Ctx>().info;
    Effect::new(move |_| {
        if matches!(change.value().get(), Some(Ok(()))) {
            info.refetch();
        }
    });
    view! {
        <section id="password-change">
            <h2>{tr(lang, "Change your password", "修改密码")}</h2>
            <p class="hint">{tr(
                lang,
                "Every session of yours ends with the change, this one too: you sign in again with the new password.",
                "修改后您的全部会话都会结束（包括当前会话），请用新密码重新登录。",
            )}</p>
            <ActionForm action=change attr:id="password-form">
                <label>
                    {tr(lang, "Current password", "当前密码")}
                    <input type="password" name="current" id="current-password" autocomplete="current-password" required/>
                </label>
                <label>
                    {tr(lang, "New password", "新密码")}
                    <input type="password" name="password" id="new-password" autocomplete="new-password" required/>
                </label>
                <label>
                    {tr(lang, "New password again", "再次输入新密码")}
                    <input type="password" name="repeat" id="repeat-password" autocomplete="new-password" required/>
                </label>
                <button type="submit" id="change-password">{tr(lang, "Change password", "修改密码")}</button>
            </ActionForm>
        </section>
    }
}
