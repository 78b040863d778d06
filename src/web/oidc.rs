//! Sign-in through an OpenID Provider: `GET /auth/oidc/start` sends the
//! browser to the provider, `GET /auth/oidc/callback` takes its answer
//! ([`crate::oidc`]) and opens the console session. Both answer with plain
//! pages, so they work without JavaScript.
//!
//! The session cookie is `SameSite=Strict`: the browser does not send it
//! with the provider's redirect back here, nor right after it. So the
//! callback binds itself to the browser by a cookie of its own
//! (`SameSite=Lax`, sent with that top-level redirect), and after signing
//! in answers a page that moves on to the console itself — a navigation
//! begun on this site, which carries the new session cookie.

use super::AppState;
use crate::accounts::SsoRefusal;
use crate::config::OIDC_CALLBACK_PATH;
use crate::oidc::{Callback, Refusal};
use app::i18n::tr;
use app::ssr::{Peer, SESSION_ID, SESSION_LANG, SESSION_USER};
use app::types::Lang;
use axum::Router;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use tower_sessions::Session;

/// The cookie that ties a callback to the browser that began the sign-in.
const FLOW_COOKIE: &str = "reckon_oidc";
const START_PATH: &str = "/auth/oidc/start";

pub fn router() -> Router<AppState> {
    Router::new()
        .route(START_PATH, get(start))
        .route(OIDC_CALLBACK_PATH, get(callback))
}

async fn start(State(state): State<AppState>, headers: HeaderMap, session: Session) -> Response {
    let lang = lang_of(&session, &headers).await;
    let Some(sso) = state.sso.clone() else {
        return page(
            StatusCode::NOT_FOUND,
            lang,
            tr(lang, "Single sign-on is not set up", "未配置单点登录"),
            tr(
                lang,
                "This console signs in with passwords only.",
                "此控制台仅支持密码登录。",
            )
            .to_owned(),
            None,
        );
    };
    match sso.start(&state.accounts).await {
        Ok(started) => {
            let cookie = flow_cookie(&started.browser, 600, secure(&sso));
            let mut res =
                (StatusCode::SEE_OTHER, [(header::LOCATION, started.url)]).into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().append(header::SET_COOKIE, v);
            }
            res
        }
        Err(refusal) => {
            if let Refusal::Unavailable(detail) = &refusal {
                tracing::warn!(%detail, "the identity provider could not be reached");
            }
            refused(lang, &refusal)
        }
    }
}

async fn callback(
    State(state): State<AppState>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    Query(query): Query<Callback>,
) -> Response {
    let lang = lang_of(&session, &headers).await;
    let Some(sso) = state.sso.clone() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let browser = cookie_value(&headers, FLOW_COOKIE);
    let peer = Peer {
        addr: addr.ip(),
        agent: headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
    };
    let mut res = match sso
        .finish(&state.accounts, &query, browser.as_deref(), &peer)
        .await
    {
        Ok(Ok(signed)) => match open(&session, &signed.user.id, &signed.session_id).await {
            Ok(()) => signed_in(lang),
            Err(e) => {
                tracing::error!(error = %e, "the session could not be written");
                failed(lang)
            }
        },
        Ok(Err(refusal)) => refused(lang, &refusal),
        Err(_) => failed(lang),
    };
    // The flow is over either way.
    if let Ok(v) = HeaderValue::from_str(&flow_cookie("", 0, secure(&sso))) {
        res.headers_mut().append(header::SET_COOKIE, v);
    }
    res
}

/// The console session, as the password sign-in writes it: a new id (a
/// planted one is worthless), the user and the register's session.
async fn open(
    session: &Session,
    user_id: &str,
    register: &str,
) -> Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    session.insert(SESSION_USER, user_id).await?;
    session.insert(SESSION_ID, register).await?;
    Ok(())
}

fn secure(sso: &crate::oidc::Sso) -> bool {
    sso.settings.redirect_url.starts_with("https://")
}

fn flow_cookie(value: &str, max_age: i64, secure: bool) -> String {
    format!(
        "{FLOW_COOKIE}={value}; Path=/auth/oidc; Max-Age={max_age}; HttpOnly; SameSite=Lax{}",
        if secure { "; Secure" } else { "" }
    )
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
        .filter(|v| !v.is_empty())
}

/// The session's chosen language, else the browser's.
async fn lang_of(session: &Session, headers: &HeaderMap) -> Lang {
    if let Ok(Some(lang)) = session.get::<Lang>(SESSION_LANG).await {
        return lang;
    }
    headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map(Lang::from_accept_language)
        .unwrap_or_default()
}

fn signed_in(lang: Lang) -> Response {
    let title = tr(lang, "Signed in", "已登录");
    let body = format!(
        "<meta http-equiv=\"refresh\" content=\"0;url=/\"><p id=\"sso-done\">{}</p><p><a href=\"/\">{}</a></p>",
        tr(lang, "You are signed in.", "您已登录。"),
        tr(lang, "Continue to the console", "进入控制台"),
    );
    html(StatusCode::OK, lang, title, &body)
}

fn failed(lang: Lang) -> Response {
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        lang,
        tr(lang, "Sign-in failed", "登录失败"),
        tr(
            lang,
            "Reckon could not complete the sign-in. Try again; if it keeps failing, the server's log says why.",
            "Reckon 无法完成登录。请重试；若仍失败，服务器日志中有原因。",
        )
        .to_owned(),
        None,
    )
}

/// A refused sign-in, said plainly; no session.
fn refused(lang: Lang, refusal: &Refusal) -> Response {
    let zh = lang == Lang::Zh;
    let (status, text) = match refusal {
        Refusal::Unavailable(_) => (
            StatusCode::BAD_GATEWAY,
            tr(
                lang,
                "The identity provider could not be reached. Try again later.",
                "无法连接身份提供方，请稍后再试。",
            )
            .to_owned(),
        ),
        Refusal::Provider { code } => (
            StatusCode::FORBIDDEN,
            if zh {
                format!("身份提供方未让您登录（{code}）。")
            } else {
                format!("The identity provider did not sign you in ({code}).")
            },
        ),
        Refusal::UnknownState | Refusal::OtherBrowser | Refusal::Expired => (
            StatusCode::BAD_REQUEST,
            tr(
                lang,
                "This sign-in is no longer valid: it was already used, is older than ten minutes, or was begun in another browser. Start again from the sign-in page.",
                "此次登录已失效：已被使用、超过十分钟或在其他浏览器中发起。请从登录页重新开始。",
            )
            .to_owned(),
        ),
        Refusal::BadToken(_) => (
            StatusCode::BAD_GATEWAY,
            tr(
                lang,
                "The identity provider's answer failed its checks; no session was opened.",
                "身份提供方的应答未通过校验，未建立会话。",
            )
            .to_owned(),
        ),
        Refusal::Unmapped => (
            StatusCode::FORBIDDEN,
            tr(
                lang,
                "Your account at the identity provider has no role in Reckon: ask an administrator to add you to a group that is mapped to operator, supervisor or admin.",
                "您在身份提供方的账户在 Reckon 中没有角色：请管理员将您加入映射到操作员、主管或管理员的组。",
            )
            .to_owned(),
        ),
        Refusal::Account(SsoRefusal::Disabled) => (
            StatusCode::FORBIDDEN,
            tr(lang, "This user is disabled in Reckon.", "该用户在 Reckon 中已被停用。").to_owned(),
        ),
        Refusal::Account(SsoRefusal::NameTaken(name)) => (
            StatusCode::CONFLICT,
            if zh {
                format!(
                    "Reckon 中已有名为 {name} 的用户，且未绑定此身份：请管理员在服务器上用 `reckon user bind --username {name} --oidc-subject …` 绑定。"
                )
            } else {
                format!(
                    "A Reckon user named {name} exists and is not bound to this identity: an administrator binds it on the host with `reckon user bind --username {name} --oidc-subject …`."
                )
            },
        ),
        Refusal::Account(SsoRefusal::NoName) => (
            StatusCode::FORBIDDEN,
            tr(
                lang,
                "The identity provider gave no usable username (preferred_username or email).",
                "身份提供方未提供可用的用户名（preferred_username 或 email）。",
            )
            .to_owned(),
        ),
        Refusal::Account(SsoRefusal::LastAdmin) => (
            StatusCode::CONFLICT,
            tr(
                lang,
                "The identity provider no longer gives you the admin role, but you are the last active admin: an administrator changes this on the host first.",
                "身份提供方已不再授予您管理员角色，但您是最后一位有效管理员：请先在服务器上处理。",
            )
            .to_owned(),
        ),
    };
    page(
        status,
        lang,
        tr(lang, "Sign-in refused", "登录被拒绝"),
        text,
        Some(refusal.reason()),
    )
}

fn page(
    status: StatusCode,
    lang: Lang,
    title: &str,
    text: String,
    reason: Option<&str>,
) -> Response {
    let body = format!(
        "<p id=\"sso-error\" data-reason=\"{}\">{}</p><p><a href=\"/login\">{}</a></p>",
        escape(reason.unwrap_or("")),
        escape(&text),
        tr(lang, "Back to the sign-in page", "返回登录页"),
    );
    html(status, lang, title, &body)
}

fn html(status: StatusCode, lang: Lang, title: &str, body: &str) -> Response {
    let doc = format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\"><title>{} · Reckon</title></head>\
         <body><main class=\"login\"><h1>{}</h1>{body}</main></body></html>",
        lang.html_tag(),
        escape(title),
        escape(title),
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        doc,
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
