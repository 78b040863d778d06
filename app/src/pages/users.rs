//! Users (admins only): list, create, change role, reset password, disable.
//! The server enforces the role and writes every change to the audit log.
//! A role that decides (supervisor, admin) granted here waits for a second
//! admin's confirmation: the row says so and offers "confirm" to the admins
//! who may (neither the granter nor the grantee), "revoke" to the others.

use super::cells::use_zone;
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{
    ConfirmGrant, CreateUser, ResetMfa, ResetPassword, RevokeGrant, SetDisabled, SetRole,
    SetViewRaw, list_users,
};
use crate::i18n::{Msg, in_zone, role_name};
use crate::types::{Lang, Role, User};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

#[component]
pub fn UsersPage() -> impl IntoView {
    let create = ServerAction::<CreateUser>::new();
    let set_role = ServerAction::<SetRole>::new();
    let reset = ServerAction::<ResetPassword>::new();
    let disable = ServerAction::<SetDisabled>::new();
    let grants = Grants {
        confirm: ServerAction::<ConfirmGrant>::new(),
        revoke: ServerAction::<RevokeGrant>::new(),
        raw: ServerAction::<SetViewRaw>::new(),
        reset_mfa: ServerAction::<ResetMfa>::new(),
    };
    let users = Resource::new(
        move || {
            (
                create.version().get(),
                set_role.version().get(),
                reset.version().get(),
                disable.version().get(),
                grants.confirm.version().get(),
                grants.revoke.version().get(),
                grants.raw.version().get(),
                grants.reset_mfa.version().get(),
            )
        },
        |_| list_users(),
    );
    view! {
        <Frame allow=&[Role::Admin]>
            <UsersBody create=create set_role=set_role reset=reset disable=disable grants=grants users=users/>
        </Frame>
    }
}

/// A pending grant's two answers, raw access given or taken, and a second
/// factor's reset.
#[derive(Clone, Copy)]
struct Grants {
    confirm: ServerAction<ConfirmGrant>,
    revoke: ServerAction<RevokeGrant>,
    raw: ServerAction<SetViewRaw>,
    reset_mfa: ServerAction<ResetMfa>,
}

#[component]
fn UsersBody(
    create: ServerAction<CreateUser>,
    set_role: ServerAction<SetRole>,
    reset: ServerAction<ResetPassword>,
    disable: ServerAction<SetDisabled>,
    grants: Grants,
    users: super::Loaded<Vec<User>>,
) -> impl IntoView {
    let Viewer { user: me, lang } = expect_context::<Viewer>();
    // One place for the outcome of any form on the page: an action's error
    // after hydration, or the `?err=` a plain form post came back with.
    let from_url = url_error();
    let page_error = move || {
        action_error(create, || None)()
            .or_else(action_error(set_role, || None))
            .or_else(action_error(reset, || None))
            .or_else(action_error(disable, || None))
            .or_else(action_error(grants.confirm, || None))
            .or_else(action_error(grants.revoke, || None))
            .or_else(action_error(grants.raw, || None))
            .or_else(action_error(grants.reset_mfa, || None))
            .or_else(from_url)
    };
    let me_id = StoredValue::new(me.id.clone());
    let me_pending = me.grant.pending;

    view! {
        <Title text=format!("{} · {}", Msg::UsersTitle.text(lang), Msg::AppName.text(lang))/>
        <h1>{Msg::UsersTitle.text(lang)}</h1>
        <p class="hint">{Msg::UsersIntro.text(lang)}</p>
        {move || view! { <ErrorNote err=page_error() lang=lang/> }}

        <section class="card">
            <h2>{Msg::CreateUser.text(lang)}</h2>
            <ActionForm action=create attr:id="create-user" attr:class="row">
                <label>
                    {Msg::Username.text(lang)}
                    <input name="username" id="new-username" autocomplete="off" required/>
                </label>
                <label>
                    {Msg::Role.text(lang)}
                    <RoleSelect id="new-role" selected=Role::Operator lang=lang label=None/>
                </label>
                <label>
                    {Msg::Password.text(lang)}
                    <input type="password" name="password" id="new-password" autocomplete="new-password" required minlength="12"/>
                </label>
                <button type="submit" id="create-user-submit">{Msg::Create.text(lang)}</button>
            </ActionForm>
        </section>

        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(users.await.map(|list| view! {
                    <table class="grid" id="users">
                        <thead>
                            <tr>
                                <th>{Msg::Username.text(lang)}</th>
                                <th>{Msg::Role.text(lang)}</th>
                                <th>{Msg::Status.text(lang)}</th>
                                <th>{in_zone(lang, "Created", "创建时间", &use_zone())}</th>
                                <th>{match lang { Lang::En => "Grant", Lang::Zh => "授权" }}</th>
                                <th>{Msg::Actions.text(lang)}</th>
                            </tr>
                        </thead>
                        <tbody>
                            {list.into_iter().map(|u| {
                                let is_me = me_id.with_value(|id| *id == u.id);
                                // Confirmed by a second admin: neither the
                                // granter, nor the grantee, nor a pending one.
                                let may_confirm = !is_me && !me_pending
                                    && me_id.with_value(|id| u.grant.granted_by_id.as_deref() != Some(id));
                                view! { <UserRow user=u is_me=is_me may_confirm=may_confirm lang=lang set_role=set_role reset=reset disable=disable grants=grants/> }
                            }).collect_view()}
                        </tbody>
                    </table>
                }), lang)
            })}
        </Transition>
    }
}

#[component]
#[allow(clippy::too_many_arguments)]
fn UserRow(
    user: User,
    is_me: bool,
    may_confirm: bool,
    lang: Lang,
    set_role: ServerAction<SetRole>,
    reset: ServerAction<ResetPassword>,
    disable: ServerAction<SetDisabled>,
    grants: Grants,
) -> impl IntoView {
    let zone = use_zone();
    let (id_role, id_reset, id_disable) = (user.id.clone(), user.id.clone(), user.id.clone());
    let id_raw = user.id.clone();
    let role_label = match lang {
        Lang::En => format!("Role of {}", user.username),
        Lang::Zh => format!("{} 的角色", user.username),
    };
    view! {
        <tr data-user=user.username.clone() class:disabled=user.disabled>
            <td>
                {user.username.clone()}
                {is_me.then(|| view! { " (" {Msg::You.text(lang)} ")" })}
            </td>
            <td>
                <ActionForm action=set_role attr:class="inline">
                    <input type="hidden" name="user_id" value=id_role/>
                    <RoleSelect id="" selected=user.role lang=lang label=Some(role_label)/>
                    <button type="submit" class="role-submit">{Msg::ChangeRole.text(lang)}</button>
                </ActionForm>
            </td>
            <td class="status">
                {if user.disabled { Msg::Disabled.text(lang) } else { Msg::Active.text(lang) }}
                {user.view_raw.then(|| view! {
                    " · " <span class="raw-access">{match lang { Lang::En => "raw access", Lang::Zh => "可看原文" }}</span>
                })}
                {user.mfa.then(|| view! {
                    <br/><span class="mfa-on">{match lang { Lang::En => "second factor", Lang::Zh => "已设第二因素" }}</span>
                })}
            </td>
            <td>{zone.minutes(user.created_at)}</td>
            <td class="grant"><GrantCell user=user.clone() is_me=is_me may_confirm=may_confirm lang=lang grants=grants/></td>
            <td>
                <ActionForm action=reset attr:class="inline">
                    <input type="hidden" name="user_id" value=id_reset/>
                    <input type="password" name="password" autocomplete="new-password" required minlength="12"
                        placeholder=Msg::NewPassword.text(lang)/>
                    <button type="submit" class="reset-submit">{Msg::ResetPassword.text(lang)}</button>
                </ActionForm>
                <A href=format!("/sessions?user={}", user.id) attr:class="sessions-link">
                    {Msg::Sessions.text(lang)}
                </A>
                " "
                // Another admin's reset: it ends the user's sessions. One's
                // own is not reset here (the server refuses it too).
                {(user.mfa && !is_me).then(|| view! {
                    <ActionForm action=grants.reset_mfa attr:class="inline">
                        <input type="hidden" name="user_id" value=user.id.clone()/>
                        <button type="submit" class="mfa-reset-submit">
                            {match lang { Lang::En => "Reset second factor", Lang::Zh => "重置第二因素" }}
                        </button>
                    </ActionForm>
                })}
                " "
                // No one may disable themselves (the server refuses it too).
                {(!is_me).then(|| view! {
                    <ActionForm action=disable attr:class="inline">
                        <input type="hidden" name="user_id" value=id_disable/>
                        <input type="hidden" name="disabled" value=(!user.disabled).to_string()/>
                        <button type="submit" class="disable-submit">
                            {if user.disabled { Msg::Enable.text(lang) } else { Msg::Disable.text(lang) }}
                        </button>
                    </ActionForm>
                    // Raw access: callbacks and refused webhooks unmasked,
                    // each look audited; never given to oneself.
                    <ActionForm action=grants.raw attr:class="inline">
                        <input type="hidden" name="user_id" value=id_raw/>
                        <input type="hidden" name="allow" value=(!user.view_raw).to_string()/>
                        <button type="submit" class="raw-submit">
                            {match (user.view_raw, lang) {
                                (false, Lang::En) => "Give raw access",
                                (false, Lang::Zh) => "授予原文查看",
                                (true, Lang::En) => "Take raw access",
                                (true, Lang::Zh) => "收回原文查看",
                            }}
                        </button>
                    </ActionForm>
                })}
            </td>
        </tr>
    }
}

/// Who made the account and gave its role; a pending grant with its
/// answers.
#[component]
fn GrantCell(
    user: User,
    is_me: bool,
    may_confirm: bool,
    lang: Lang,
    grants: Grants,
) -> impl IntoView {
    let zone = use_zone();
    let g = user.grant.clone();
    let name = |n: &Option<String>| n.clone().unwrap_or_else(|| "—".into());
    let created = g.created_by.as_ref().map(|by| match lang {
        Lang::En => format!("created by {by}"),
        Lang::Zh => format!("由 {by} 创建"),
    });
    let granted = name(&g.granted_by);
    let when = g.granted_at.map(|t| zone.minutes(t)).unwrap_or_default();
    let state = if g.pending {
        match lang {
            Lang::En => format!(
                "{} granted by {granted} at {when}: waiting for a second admin",
                role_name(user.role, lang)
            ),
            Lang::Zh => format!(
                "{} 于 {when} 授予{}：待另一位管理员确认",
                granted,
                role_name(user.role, lang)
            ),
        }
    } else if let Some(by) = &g.confirmed_by {
        match lang {
            Lang::En => format!("{} confirmed by {by}", role_name(user.role, lang)),
            Lang::Zh => format!("{}已由 {by} 确认", role_name(user.role, lang)),
        }
    } else if g.granted_by.is_some() {
        match lang {
            Lang::En => format!("{} granted by {granted}", role_name(user.role, lang)),
            Lang::Zh => format!("{}由 {granted} 授予", role_name(user.role, lang)),
        }
    } else {
        String::new()
    };
    let (id_confirm, id_revoke) = (user.id.clone(), user.id.clone());
    let role = user.role.as_str();
    view! {
        <span class:grant-pending=g.pending>{state}</span>
        {(g.pending && g.confirmations_required > 1).then(|| view! {
            <br/><span class="hint grant-confirmations">{match lang {
                Lang::En => format!("{} of {} admins' confirmations", g.confirmations, g.confirmations_required),
                Lang::Zh => format!("已有 {} 位管理员确认，共需 {} 位", g.confirmations, g.confirmations_required),
            }}</span>
        })}
        {created.map(|c| view! { <br/><span class="hint">{c}</span> })}
        {(g.pending && may_confirm).then(|| view! {
            <ActionForm action=grants.confirm attr:class="inline">
                <input type="hidden" name="user_id" value=id_confirm/>
                <input type="hidden" name="role" value=role/>
                <button type="submit" class="confirm-grant">{match lang { Lang::En => "Confirm", Lang::Zh => "确认授权" }}</button>
            </ActionForm>
        })}
        {(g.pending && !is_me).then(|| view! {
            <ActionForm action=grants.revoke attr:class="inline">
                <input type="hidden" name="user_id" value=id_revoke/>
                <input type="hidden" name="role" value=role/>
                <button type="submit" class="revoke-grant">{match lang { Lang::En => "Revoke", Lang::Zh => "撤销授权" }}</button>
            </ActionForm>
        })}
    }
}

#[component]
/// `label`: the select's name for a screen reader where no visible label
/// names it (a row of the users table).
fn RoleSelect(
    id: &'static str,
    selected: Role,
    lang: Lang,
    label: Option<String>,
) -> impl IntoView {
    view! {
        <select name="role" id=(!id.is_empty()).then_some(id) aria-label=label>
            {Role::ALL.iter().map(|r| view! {
                <option value=r.as_str() selected=*r == selected>{role_name(*r, lang)}</option>
            }).collect_view()}
        </select>
    }
}
