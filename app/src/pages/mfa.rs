//! The second factor's pages: the sign-in's second step (`/login/code`,
//! a plain form that works without JavaScript), enrolment when the role
//! needs a second factor and none is set up (`/login/enrol`), and a user's
//! own page (`/security`) to set one up or get new recovery codes.

use super::{Ctx, ErrorNote, Frame, LangSwitch, Viewer, action_error, shown, url_error};
use crate::api::{
    ConfirmEnrolment, NewRecoveryCodes, begin_enrolment, my_second_factor, sign_in_step,
};
use crate::i18n::{Msg, tr};
use crate::mfa::{Enrolment, MfaPage, SecondStep};
use crate::types::{Lang, Role, SessionInfo};
use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use leptos_meta::{Html, Title};
use leptos_router::components::Redirect;

/// The language of a page shown before the session is open.
async fn lang_of(ctx: Ctx) -> Lang {
    match ctx.info.await {
        Ok(SessionInfo { lang, .. }) => lang,
        Err(_) => Lang::En,
    }
}

#[component]
pub fn SecondStepPage() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let step = Resource::new(|| (), |_| sign_in_step());
    let error = url_error();
    view! {
        <Transition fallback=|| view! { <p class="loading">"…"</p> }>
            {move || Suspend::new(async move {
                let lang = lang_of(ctx).await;
                match step.await {
                    Err(err) => EitherOf3::A(view! { <ErrorNote err=Some(err) lang=lang/> }),
                    Ok(None) => EitherOf3::B(view! { <Redirect path="/login"/> }.into_any()),
                    Ok(Some(SecondStep { enrol: true, .. })) => {
                        EitherOf3::B(view! { <Redirect path="/login/enrol"/> }.into_any())
                    }
                    Ok(Some(SecondStep { username, .. })) => EitherOf3::C(view! {
                        <Html attr:lang=lang.html_tag()/>
                        <Title text=format!("{} · {}", tr(lang, "Second factor", "第二因素"), Msg::AppName.text(lang))/>
                        <main class="login">
                            <h1>{Msg::AppName.text(lang)}</h1>
                            <p id="second-step-who">{match lang {
                                Lang::En => format!("Signing in as {username}: enter the 6-digit code from your authenticator app, or one of your recovery codes."),
                                Lang::Zh => format!("正在以 {username} 登录：请输入身份验证器应用中的 6 位验证码，或一个恢复码。"),
                            }}</p>
                            // A plain form: the answer is a full page (home, or
                            // back here with the error), with or without script.
                            <form method="post" action="/api/mfa/verify" id="second-step-form">
                                <label>
                                    {tr(lang, "Code", "验证码")}
                                    <input name="code" id="mfa-code" autocomplete="one-time-code"
                                        inputmode="text" required maxlength="24"/>
                                </label>
                                <button type="submit" id="mfa-submit">{Msg::SignIn.text(lang)}</button>
                            </form>
                            {move || view! { <ErrorNote err=error() lang=lang/> }}
                            <p><a href="/login" rel="external" id="mfa-start-over">
                                {tr(lang, "Sign in as someone else", "以其他用户登录")}
                            </a></p>
                            <LangSwitch action=ctx.set_lang lang=lang/>
                        </main>
                    }.into_any()),
                }
            })}
        </Transition>
    }
}

/// Enrolment before the first session, for a role that needs a second
/// factor: nothing else is reachable until it is confirmed.
#[component]
pub fn EnrolStepPage() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let step = Resource::new(|| (), |_| sign_in_step());
    let enrolment = Resource::new(|| (), |_| begin_enrolment());
    let confirm = ServerAction::<ConfirmEnrolment>::new();
    view! {
        <Transition fallback=|| view! { <p class="loading">"…"</p> }>
            {move || Suspend::new(async move {
                let lang = lang_of(ctx).await;
                match step.await {
                    Err(err) => EitherOf3::A(view! { <ErrorNote err=Some(err) lang=lang/> }),
                    // Already confirmed here (the session is open now), or
                    // nothing pending: the codes stay shown until left.
                    Ok(None) if confirm.value().get_untracked().is_none() => {
                        EitherOf3::B(view! { <Redirect path="/login"/> }.into_any())
                    }
                    Ok(Some(SecondStep { enrol: false, .. })) => {
                        EitherOf3::B(view! { <Redirect path="/login/code"/> }.into_any())
                    }
                    Ok(step) => {
                        let username = step.map(|s| s.username).unwrap_or_default();
                        let loaded = enrolment.await;
                        EitherOf3::C(view! {
                            <Html attr:lang=lang.html_tag()/>
                            <Title text=format!("{} · {}", tr(lang, "Set up a second factor", "设置第二因素"), Msg::AppName.text(lang))/>
                            <main class="login enrol">
                                <h1>{Msg::AppName.text(lang)}</h1>
                                <p id="enrol-why">{match lang {
                                    Lang::En => format!("{username}: your role signs in with a second factor. Set one up to go on."),
                                    Lang::Zh => format!("{username}：您的角色需要第二因素才能登录。请先完成设置。"),
                                }}</p>
                                {shown(loaded.map(|e| view! {
                                    <Enrol enrolment=e confirm=confirm lang=lang continue_to=true/>
                                }), lang)}
                                <p><a href="/login" rel="external" id="mfa-start-over">
                                    {tr(lang, "Sign in as someone else", "以其他用户登录")}
                                </a></p>
                            </main>
                        }.into_any())
                    }
                }
            })}
        </Transition>
    }
}

/// A new secret to add to an authenticator app, the form that confirms it
/// with a code, and then the recovery codes, shown this once.
#[component]
fn Enrol(
    enrolment: Enrolment,
    confirm: ServerAction<ConfirmEnrolment>,
    lang: Lang,
    /// After enrolling at sign-in: a link on into the console.
    continue_to: bool,
) -> impl IntoView {
    let error = action_error(confirm, || None);
    let codes = move || match confirm.value().get() {
        Some(Ok(codes)) => Some(codes),
        _ => None,
    };
    view! {
        <Show when=move || codes().is_none()>
            <section class="card" id="enrol">
                <h2>{tr(lang, "Set up a second factor", "设置第二因素")}</h2>
                <ol class="steps">
                    <li>{tr(lang,
                        "Scan this code with an authenticator app (or type the key into it).",
                        "用身份验证器应用扫描此二维码（或手动输入密钥）。")}</li>
                    <li>{tr(lang,
                        "Enter the 6-digit code it shows, to confirm.",
                        "输入应用显示的 6 位验证码以确认。")}</li>
                </ol>
                <img src=enrolment.qr.clone() id="mfa-qr" width="200" height="200"
                    alt=tr(lang, "QR code of the key", "密钥的二维码")/>
                <p>{tr(lang, "Key", "密钥")} ": " <code id="mfa-secret">{enrolment.secret.clone()}</code></p>
                <details>
                    <summary>{tr(lang, "Address for the app", "应用地址")}</summary>
                    <code id="mfa-uri" class="wrap">{enrolment.uri.clone()}</code>
                </details>
                <ActionForm action=confirm attr:id="enrol-form">
                    <label>
                        {tr(lang, "Code", "验证码")}
                        <input name="code" id="enrol-code" autocomplete="one-time-code"
                            inputmode="numeric" required maxlength="8"/>
                    </label>
                    <button type="submit" id="enrol-submit">{tr(lang, "Confirm", "确认")}</button>
                </ActionForm>
                {move || view! { <ErrorNote err=error() lang=lang/> }}
            </section>
        </Show>
        {move || codes().map(|codes| view! {
            <RecoveryCodes codes=codes lang=lang/>
            {continue_to.then(|| view! {
                <p><a href="/" rel="external" id="mfa-continue">{tr(lang, "Continue", "继续")}</a></p>
            })}
        })}
    }
}

#[component]
fn RecoveryCodes(codes: Vec<String>, lang: Lang) -> impl IntoView {
    view! {
        <section class="card notice" id="recovery">
            <h2>{tr(lang, "Recovery codes", "恢复码")}</h2>
            <p>{tr(lang,
                "Keep these somewhere safe: each signs you in once without the app. They are not shown again.",
                "请妥善保存：每个恢复码可在没有应用时登录一次。它们不会再次显示。")}</p>
            <ol id="recovery-codes">
                {codes.into_iter().map(|c| view! { <li><code class="recovery-code">{c}</code></li> }).collect_view()}
            </ol>
        </section>
    }
}

/// A user's own second factor: set one up, or see it is and get new
/// recovery codes.
#[component]
pub fn SecurityPage() -> impl IntoView {
    let confirm = ServerAction::<ConfirmEnrolment>::new();
    let regenerate = ServerAction::<NewRecoveryCodes>::new();
    let page = Resource::new(move || regenerate.version().get(), |_| my_second_factor());
    view! {
        <Frame allow=Role::ALL>
            <SecurityBody page=page confirm=confirm regenerate=regenerate/>
        </Frame>
    }
}

#[component]
fn SecurityBody(
    page: super::Loaded<MfaPage>,
    confirm: ServerAction<ConfirmEnrolment>,
    regenerate: ServerAction<NewRecoveryCodes>,
) -> impl IntoView {
    let Viewer { lang, .. } = expect_context::<Viewer>();
    view! {
        <Title text=format!("{} · {}", tr(lang, "Second factor", "第二因素"), Msg::AppName.text(lang))/>
        <h1 id="security-title">{tr(lang, "Second factor", "第二因素")}</h1>
        <Transition fallback=move || view! { <p class="loading">{Msg::Loading.text(lang)}</p> }>
            {move || Suspend::new(async move {
                shown(page.await.map(|p| {
                    let required = p.status.required.then(|| view! {
                        <p class="hint" id="mfa-required">{tr(lang,
                            "Your role signs in only with a second factor.",
                            "您的角色只能使用第二因素登录。")}</p>
                    });
                    let body = match p.enrolment {
                        Some(e) if !p.status.enrolled => Either::Left(view! {
                            <Enrol enrolment=e confirm=confirm lang=lang continue_to=false/>
                        }),
                        _ => Either::Right(view! {
                            <Enrolled left=p.status.recovery_left regenerate=regenerate lang=lang/>
                        }),
                    };
                    view! { {required} {body} }
                }), lang)
            })}
        </Transition>
        <p class="hint">{tr(lang,
            "Lost your phone? Sign in with a recovery code, or ask an admin to reset your second factor (you then set it up again).",
            "手机丢失？请用恢复码登录，或请管理员重置您的第二因素（之后需重新设置）。")}</p>
    }
}

#[component]
fn Enrolled(left: i64, regenerate: ServerAction<NewRecoveryCodes>, lang: Lang) -> impl IntoView {
    let error = action_error(regenerate, || None);
    let codes = move || match regenerate.value().get() {
        Some(Ok(codes)) => Some(codes),
        _ => None,
    };
    view! {
        <section class="card" id="mfa-on">
            <p id="mfa-state">{match lang {
                Lang::En => format!("A second factor is set up. Recovery codes left: {left}."),
                Lang::Zh => format!("已设置第二因素。剩余恢复码：{left} 个。"),
            }}</p>
            <ActionForm action=regenerate attr:id="regenerate-form" attr:class="row">
                <label>
                    {tr(lang, "Current code", "当前验证码")}
                    <input name="code" id="regenerate-code" autocomplete="one-time-code"
                        inputmode="numeric" required maxlength="8"/>
                </label>
                <button type="submit" id="regenerate-submit">{tr(lang, "New recovery codes", "生成新的恢复码")}</button>
            </ActionForm>
            {move || view! { <ErrorNote err=error() lang=lang/> }}
        </section>
        {move || codes().map(|codes| view! { <RecoveryCodes codes=codes lang=lang/> })}
    }
}
