//! Sign-in. Works as a plain form without JavaScript; after a failed plain
//! post the error comes back in the address.

use super::{Ctx, ErrorNote, LangSwitch, action_error, url_error};
use crate::i18n::Msg;
use crate::types::SessionInfo;
use leptos::either::EitherOf3;
use leptos::prelude::*;
use leptos_meta::{Html, Title};
use leptos_router::components::Redirect;

#[component]
pub fn LoginPage() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let login = ctx.login;
    let error = action_error(login, url_error());
    view! {
        <Transition fallback=|| view! { <p class="loading">"…"</p> }>
            {move || Suspend::new(async move {
                match ctx.info.await {
                    Err(err) => EitherOf3::A(view! { <ErrorNote err=Some(err) lang=Default::default()/> }),
                    Ok(SessionInfo { user: Some(_), .. }) => EitherOf3::B(view! { <Redirect path="/"/> }),
                    Ok(SessionInfo { lang, needs_first_admin, sign_in, .. }) => EitherOf3::C(view! {
                        <Html attr:lang=lang.html_tag()/>
                        <Title text=format!("{} · {}", Msg::SignIn.text(lang), Msg::AppName.text(lang))/>
                        <main class="login">
                            <h1>{Msg::AppName.text(lang)}</h1>
                            <p class="tagline">{Msg::Tagline.text(lang)}</p>
                            {needs_first_admin.then(|| view! {
                                <section class="notice" id="first-admin">
                                    <h2>{Msg::FirstAdminTitle.text(lang)}</h2>
                                    <p>{Msg::FirstAdminBody.text(lang)}</p>
                                    <pre><code>"reckon user add --username admin --role admin"</code></pre>
                                </section>
                            })}
                            {sign_in.passwords.then(|| view! {
                                <ActionForm action=login attr:id="login-form">
                                    <label>
                                        {Msg::Username.text(lang)}
                                        <input name="username" id="username" autocomplete="username" required/>
                                    </label>
                                    <label>
                                        {Msg::Password.text(lang)}
                                        <input type="password" name="password" id="password" autocomplete="current-password" required/>
                                    </label>
                                    <button type="submit" id="sign-in">{Msg::SignIn.text(lang)}</button>
                                </ActionForm>
                            })}
                            {sign_in.provider.map(|name| view! { <SsoButton name=name lang=lang/> })}
                            {move || view! { <ErrorNote err=error() lang=lang/> }}
                            <LangSwitch action=ctx.set_lang lang=lang/>
                        </main>
                    }),
                }
            })}
        </Transition>
    }
}

/// The identity provider's way in: a plain link to the server's own route
/// (`rel="external"`: the browser, not the console's router, follows it).
#[component]
fn SsoButton(name: String, lang: crate::types::Lang) -> impl IntoView {
    let label = match lang {
        crate::types::Lang::En => format!("Sign in with {name}"),
        crate::types::Lang::Zh => format!("使用 {name} 登录"),
    };
    view! {
        <p class="sso">
            <a class="button" id="sso-sign-in" href="/auth/oidc/start" rel="external">{label}</a>
        </p>
    }
}
