//! The start page after sign-in. The dashboard replaces it once built.

use super::{Frame, Viewer};
use crate::i18n::{Msg, role_name};
use crate::types::Role;
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Frame allow=Role::ALL>
            <HomeBody/>
        </Frame>
    }
}

#[component]
fn HomeBody() -> impl IntoView {
    let Viewer { user, lang } = expect_context::<Viewer>();
    view! {
        <Title text=Msg::AppName.text(lang)/>
        <section id="home">
            <h1>{Msg::HomeTitle.text(lang)} ", " {user.username}</h1>
            <p>{Msg::HomeBody.text(lang)}</p>
            <p>{Msg::Role.text(lang)} ": " {role_name(user.role, lang)}</p>
        </section>
    }
}
