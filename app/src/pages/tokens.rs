//! API tokens (admins only): every token with its owner, scopes, expiry
//! and last use; make one (owned by the admin, shown once) and revoke one.
//! The server enforces the role and audits both.

use super::cells::{When, use_zone};
use super::confirm::ConfirmSubmit;
use super::{ErrorNote, Frame, Viewer, action_error, shown, url_error};
use crate::api::{CreateToken, RevokeToken, list_tokens};
use crate::i18n::{Msg, in_zone, tr};
use crate::tokens::{MAX_EXPIRY_DAYS, Scope, TokenRow};
use crate::types::{Lang, Role};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn TokensPage() -> impl IntoView {
    let create = ServerAction::<CreateToken>::new();
    let revoke = ServerAction::<RevokeToken>::new();
    let tokens = Resource::new(
        move || (create.version().get(), revoke.version().get()),
        |_| list_tokens(),
    );
    view! {
        <Frame allow=&[Role::Admin]>
            <TokensBody create=create revoke=revoke tokens=tokens/>
        </Frame>
    }
}

#[component]
fn TokensBody(
    create: ServerAction<CreateToken>,
    revoke: ServerAction<RevokeToken>,
    tokens: super::Loaded<Vec<TokenRow>>,
) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    let from_url = url_error();
    let page_error = move || {
        action_error(create, || None)()
            .or_else(action_error(revoke, || None))
            .or_else(from_url)
    };
    // The token is in the answer to the script's call only: a form posted
    // without script would come back without it, the token made and never
    // seen. So the button waits for the page to be interactive.
    let interactive = RwSignal::new(false);
    Effect::new(move |_| interactive.set(true));
    // Shown once: gone as soon as anything else is done on the page.
    Effect::new(move |_| {
        if revoke.version().get() > 0 {
            create.value().set(None);
        }
    });
    let made = move || create.value().get().and_then(Result::ok);

    view! {
        <Title text=format!("{} · {}", Msg::NavTokens.text(lang), Msg::AppName.text(lang))/>
        <h1>{Msg::NavTokens.text(lang)}</h1>
        <p class="hint">{tr(lang,
            "Tokens let other systems call Reckon's API (/api/v1). Each has an owner (the admin who made it), the scopes it may use, and an expiry if you give one. A token whose owner is disabled stops working; a revoked one stops at once. What a token does is audited as token:<name>.",
            "令牌供其他系统调用 Reckon 的 API（/api/v1）。每个令牌有负责人（创建它的管理员）、可用的权限范围，以及可选的有效期。负责人被停用时令牌随之失效；吊销后立即失效。令牌所做的操作以 token:<名称> 记入审计日志。")}</p>
        {move || view! { <ErrorNote err=page_error() lang=lang/> }}

        {move || made().map(|t| view! {
            <section class="notice" id="new-token-card" role="status">
                <p>
                    {tr(lang, "The token ", "令牌 ")} <strong>{t.name.clone()}</strong>
                    {tr(lang, " was made. Copy it now: it is shown only this once, and Reckon keeps only its hash.",
                        " 已创建。请立即复制：它只显示这一次，Reckon 只保存其哈希。")}
                </p>
                <p><code id="new-token">{t.token.clone()}</code></p>
                {t.held_action.clone().map(|id| view! {
                    <p id="token-held">{match lang {
                        Lang::En => format!("It can write, so the approval policy holds it: it works once another admin approves {id} on the Approvals page."),
                        Lang::Zh => format!("该令牌有写权限，按审批规则须经另一位管理员在审批页批准 {id} 后才可使用。"),
                    }}</p>
                })}
            </section>
        })}

        <section class="card">
            <h2>{tr(lang, "Make a token", "创建令牌")}</h2>
            <ActionForm action=create attr:id="create-token">
                <p>
                    <label>
                        {tr(lang, "Name", "名称")} " "
                        <input name="name" id="token-name" autocomplete="off" required maxlength="64"/>
                    </label>
                </p>
                <fieldset id="token-scopes">
                    <legend>{tr(lang, "Scopes (at least one)", "权限范围（至少一项）")}</legend>
                    {Scope::ALL.iter().map(|s| view! {
                        <label class="scope">
                            <input type="checkbox" name="scopes[]" value=s.as_str() data-scope=s.as_str()/>
                            " " <code>{s.as_str()}</code> " "
                            <span class="hint">{s.describe(lang)}</span>
                        </label>
                        <br/>
                    }).collect_view()}
                </fieldset>
                <p>
                    <label>
                        {tr(lang, "Expires in (days; blank: never)", "有效天数（留空：永不过期）")} " "
                        <input type="number" name="expires_days" id="token-expiry" min="1"
                            max=MAX_EXPIRY_DAYS.to_string() inputmode="numeric"/>
                    </label>
                </p>
                <button type="submit" id="create-token-submit" disabled=move || !interactive.get()>
                    {Msg::Create.text(lang)}
                </button>
            </ActionForm>
        </section>

        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(tokens.await.map(|list| view! {
                    <table class="grid" id="tokens">
                        <thead>
                            <tr>
                                <th>{tr(lang, "Name", "名称")}</th>
                                <th>{tr(lang, "Prefix", "前缀")}</th>
                                <th>{Msg::Owner.text(lang)}</th>
                                <th>{tr(lang, "Scopes", "权限范围")}</th>
                                <th>{in_zone(lang, "Created", "创建时间", &use_zone())}</th>
                                <th>{tr(lang, "Expires", "过期时间")}</th>
                                <th>{tr(lang, "Last used", "最近使用")}</th>
                                <th>{tr(lang, "Revoked", "吊销时间")}</th>
                                <th>{Msg::Actions.text(lang)}</th>
                            </tr>
                        </thead>
                        <tbody>
                            {list.into_iter().map(|t| view! { <TokenLine token=t lang=lang revoke=revoke/> }).collect_view()}
                        </tbody>
                    </table>
                }), lang)
            })}
        </Transition>
    }
}

#[component]
fn TokenLine(token: TokenRow, lang: Lang, revoke: ServerAction<RevokeToken>) -> impl IntoView {
    let zone = use_zone();
    let never = || view! { <span class="muted">{tr(lang, "never", "从不")}</span> };
    let scopes = match &token.scopes {
        Some(list) => list
            .iter()
            .map(|s| view! { <code class="scope">{s.as_str()}</code> " " })
            .collect_view()
            .into_any(),
        None => view! {
            <strong class="legacy">{tr(lang, "every scope (made before scopes)", "全部权限（早于权限范围创建）")}</strong>
        }
        .into_any(),
    };
    let question = match lang {
        Lang::En => format!(
            "Revoke {}? Its next call is refused; this cannot be undone.",
            token.name
        ),
        Lang::Zh => format!("吊销 {}？其下一次调用即被拒绝，且无法撤销。", token.name),
    };
    let revoked = token.revoked_at.is_some();
    view! {
        <tr data-token=token.name.clone() class:disabled=revoked>
            <td>{token.name.clone()}</td>
            <td><code>{token.prefix.clone()}</code></td>
            <td>{token.owner.clone().unwrap_or_else(|| "—".into())}</td>
            <td class="scopes">{scopes}</td>
            <td><When at=token.created_at zone=zone.clone()/> " · " {token.created_by.clone()}</td>
            <td>{match token.expires_at {
                Some(at) => view! { <When at=at zone=zone.clone()/> }.into_any(),
                None => never().into_any(),
            }}</td>
            <td>{match token.last_used_at {
                Some(at) => view! { <When at=at zone=zone.clone()/> }.into_any(),
                None => never().into_any(),
            }}</td>
            <td class="revoked">{token.revoked_at.map(|at| view! { <When at=at zone=zone.clone()/> })}</td>
            <td>
                {(!revoked).then(|| view! {
                    <ActionForm action=revoke attr:class="inline">
                        <input type="hidden" name="id" value=token.id.clone()/>
                        <ConfirmSubmit label=tr(lang, "Revoke", "吊销").to_owned()
                            question=question lang=lang class="revoke-submit danger"/>
                    </ActionForm>
                })}
            </td>
        </tr>
    }
}
