//! Server-only glue: the `Backend` and the console's ports ([`ports`])
//! the server crate implements, the one access guard every server
//! function goes through, and the response shaping that lets forms work
//! without JavaScript.

use crate::error::AppError;
use crate::mfa::{Enrolment, MfaStatus, Pending};
use crate::types::{Lang, Role, SessionInfo, User};
use crate::{ERROR_PARAM, ERROR_SEAL};
use axum::http::{HeaderValue, Method, StatusCode, header, request::Parts};
use leptos::prelude::*;
use leptos_axum::ResponseOptions;
use std::net::IpAddr;
use std::sync::Arc;
use tower_sessions::Session;

mod ports;
pub use ports::*;

pub const SESSION_USER: &str = "user_id";
pub const SESSION_LANG: &str = "lang";
/// The session's own id in the session register (the cookie's id changes
/// at sign-in; this one is the session's for its whole life).
pub const SESSION_ID: &str = "session_id";
/// When the register last saw this session: written when it moves, so the
/// record (and the cookie's idle expiry) is saved again about once a minute.
pub const SESSION_SEEN: &str = "seen_at";
/// A sign-in waiting for its second factor ([`crate::mfa::Pending`]): no
/// `SESSION_USER` is set until it is given, so no guard lets it through.
pub const SESSION_PENDING: &str = "mfa_pending";

/// Where a sign-in comes from: the peer's address and the browser's
/// description of itself (its User-Agent).
#[derive(Clone, Debug)]
pub struct Peer {
    pub addr: IpAddr,
    pub agent: String,
}

/// A sign-in that succeeded: the user, and the id of the session the
/// register opened for it.
#[derive(Clone, Debug)]
pub struct SignedIn {
    pub user: User,
    pub session_id: String,
}

/// What a right password leads to: a session, or the second step first.
#[derive(Clone, Debug)]
pub enum LoginOutcome {
    SignedIn(Box<SignedIn>),
    /// The user must give a code (or enrol first).
    SecondFactor(Pending),
}

/// A live session's user, and the time it was last seen when that was
/// just moved (`None`: not moved by this request).
#[derive(Clone, Debug)]
pub struct Live {
    pub user: User,
    pub touched: Option<i64>,
}

/// Everything the console may ask of the server. Implemented in the server
/// crate; pages and server functions never see SQL.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    async fn user(&self, id: &str) -> Result<Option<User>, AppError>;
    async fn has_users(&self) -> Result<bool, AppError>;
    /// Checks throttling, then the password. Records the outcome; a
    /// success opens a session in the register.
    async fn login(
        &self,
        username: &str,
        password: &str,
        peer: &Peer,
    ) -> Result<LoginOutcome, AppError>;
    /// Records the sign-out and ends the register's session, if named.
    async fn logout(&self, user: &User, session_id: Option<&str>) -> Result<(), AppError>;
    async fn set_lang(&self, user: &User, lang: Lang) -> Result<(), AppError>;
    async fn list_users(&self) -> Result<Vec<User>, AppError>;
    async fn create_user(
        &self,
        actor: &User,
        username: &str,
        role: Role,
        password: &str,
    ) -> Result<User, AppError>;
    async fn set_role(&self, actor: &User, user_id: &str, role: Role) -> Result<(), AppError>;
    /// A second admin confirms a pending grant of `role` (the role seen).
    async fn confirm_grant(&self, actor: &User, user_id: &str, role: Role) -> Result<(), AppError>;
    /// An admin other than the grantee withdraws a pending grant of `role`.
    async fn revoke_grant(&self, actor: &User, user_id: &str, role: Role) -> Result<(), AppError>;
    async fn reset_password(
        &self,
        actor: &User,
        user_id: &str,
        password: &str,
    ) -> Result<(), AppError>;
    async fn set_disabled(
        &self,
        actor: &User,
        user_id: &str,
        disabled: bool,
    ) -> Result<(), AppError>;
    /// An admin gives another user raw access or takes it away.
    async fn set_view_raw(&self, actor: &User, user_id: &str, allow: bool) -> Result<(), AppError>;
    /// A user changes their own password, giving the current one first;
    /// every session of theirs ends.
    async fn change_password(
        &self,
        user: &User,
        current: &str,
        password: &str,
        peer: &Peer,
    ) -> Result<(), AppError>;
    // Console sessions.
    /// The enabled user of a live session; `None` when the session is
    /// unknown, ended, idle past the timeout or older than its lifetime.
    async fn session_user(&self, session_id: &str) -> Result<Option<Live>, AppError>;
    /// A user's live sessions: their own, or any user's for an admin.
    async fn sessions(
        &self,
        actor: &User,
        user_id: &str,
    ) -> Result<crate::sessions::SessionList, AppError>;
    /// Ends one live session: the actor's own, or any for an admin.
    async fn end_session(&self, actor: &User, session_id: &str) -> Result<(), AppError>;
    /// Ends every live session of a user (the actor's own, or any user's
    /// for an admin); how many were ended.
    async fn end_sessions(&self, actor: &User, user_id: &str) -> Result<u64, AppError>;
    // The second factor.
    /// The user of a sign-in waiting for its second step, while it may
    /// still go on (recent, the user enabled, the step still needed).
    async fn pending_user(&self, pending: &Pending) -> Result<User, AppError>;
    /// The second step: a TOTP code or a recovery code, counted against
    /// the lock-out like a password; right, it opens the session.
    async fn second_factor(
        &self,
        pending: &Pending,
        code: &str,
        peer: &Peer,
    ) -> Result<SignedIn, AppError>;
    /// Opens the session of a pending sign-in that has just enrolled.
    async fn enrolled_sign_in(&self, pending: &Pending, peer: &Peer) -> Result<SignedIn, AppError>;
    async fn mfa_status(&self, user: &User) -> Result<MfaStatus, AppError>;
    /// A new secret for the user to confirm (replacing one not confirmed).
    async fn mfa_begin(&self, user: &User) -> Result<Enrolment, AppError>;
    /// Confirms the enrolment with a current code: the recovery codes,
    /// shown this once.
    async fn mfa_confirm(&self, user: &User, code: &str) -> Result<Vec<String>, AppError>;
    /// New recovery codes for a current code (counted against the
    /// lock-out); the old ones stop working.
    async fn mfa_recovery_codes(
        &self,
        user: &User,
        code: &str,
        peer: &Peer,
    ) -> Result<Vec<String>, AppError>;
    /// An admin removes another user's second factor and ends their
    /// sessions.
    async fn mfa_reset(&self, actor: &User, user_id: &str) -> Result<(), AppError>;
    /// The login page's ways in (passwords only, unless configured).
    fn sign_in_ways(&self) -> crate::types::SignInWays {
        Default::default()
    }
}

pub type SharedBackend = Arc<dyn Backend>;

pub type SharedConsole = Arc<dyn Console>;

pub fn console() -> Result<SharedConsole, AppError> {
    use_context::<SharedConsole>().ok_or_else(|| internal("console missing from context"))
}

/// A caller who passed the guard.
pub struct Caller {
    pub user: User,
    pub session: Session,
    pub backend: SharedBackend,
}

pub fn backend() -> Result<SharedBackend, AppError> {
    use_context::<SharedBackend>().ok_or_else(|| internal("backend missing from context"))
}

pub async fn session() -> Result<Session, AppError> {
    leptos_axum::extract::<Session>()
        .await
        .map_err(|e| internal(&format!("session unavailable: {e}")))
}

/// Where this request comes from: the peer's address and User-Agent.
pub async fn peer() -> Result<Peer, AppError> {
    use axum::extract::ConnectInfo;
    use std::net::SocketAddr;
    let addr = leptos_axum::extract::<ConnectInfo<SocketAddr>>()
        .await
        .map_err(|e| internal(&format!("peer address unavailable: {e}")))?
        .0
        .ip();
    let agent = leptos_axum::extract::<axum::http::HeaderMap>()
        .await
        .ok()
        .and_then(|h| {
            h.get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    Ok(Peer { addr, agent })
}

/// The sign-in of this session waiting for its second factor, if any.
pub async fn pending(session: &Session) -> Result<Option<Pending>, AppError> {
    session
        .get(SESSION_PENDING)
        .await
        .map_err(|e| internal(&format!("session read failed: {e}")))
}

/// Makes this session a full one for `signed`: the pending sign-in (if
/// any) gone, a new cookie id (so a planted id is worthless), the user and
/// the register's session id written.
pub async fn start_session(session: &Session, signed: &SignedIn) -> Result<(), AppError> {
    let written =
        |e: tower_sessions::session::Error| internal(&format!("session write failed: {e}"));
    session
        .remove::<Pending>(SESSION_PENDING)
        .await
        .map_err(written)?;
    session
        .cycle_id()
        .await
        .map_err(|e| internal(&format!("session cycle failed: {e}")))?;
    session
        .insert(SESSION_USER, &signed.user.id)
        .await
        .map_err(written)?;
    session
        .insert(SESSION_ID, &signed.session_id)
        .await
        .map_err(written)?;
    Ok(())
}

/// The signed-in, enabled user of this request, if any: the session must
/// be live in the register (so ending it there, by a person or by a change
/// to its user, ends it here), and its user enabled. A dead session is
/// cleared, so the browser is signed out cleanly.
pub async fn signed_in(
    backend: &SharedBackend,
    session: &Session,
) -> Result<Option<User>, AppError> {
    let read = |e: tower_sessions::session::Error| internal(&format!("session read failed: {e}"));
    let id: Option<String> = session.get(SESSION_USER).await.map_err(read)?;
    let Some(id) = id else { return Ok(None) };
    let register: Option<String> = session.get(SESSION_ID).await.map_err(read)?;
    let live = match register {
        Some(register) => backend.session_user(&register).await?,
        None => None,
    };
    match live {
        Some(Live { user, touched }) if user.id == id => {
            if let Some(seen) = touched {
                session
                    .insert(SESSION_SEEN, seen)
                    .await
                    .map_err(|e| internal(&format!("session write failed: {e}")))?;
            }
            Ok(Some(user))
        }
        _ => {
            session
                .flush()
                .await
                .map_err(|e| internal(&format!("session flush failed: {e}")))?;
            Ok(None)
        }
    }
}

/// The one access check. Every server function that is not part of signing
/// in starts here; without it no server function can reach the backend.
pub async fn guard(allowed: &[Role]) -> Result<Caller, AppError> {
    let backend = backend()?;
    let session = session().await?;
    let user = signed_in(&backend, &session)
        .await?
        .ok_or(AppError::Unauthenticated)?;
    if !allowed.contains(&user.role) {
        return Err(AppError::Forbidden);
    }
    Ok(Caller {
        user,
        session,
        backend,
    })
}

/// The language for this request: the user's preference, then the one chosen
/// in this session, then the browser's `Accept-Language`.
pub async fn request_lang(session: &Session, user: Option<&User>) -> Lang {
    if let Some(lang) = user.and_then(|u| u.lang) {
        return lang;
    }
    if let Ok(Some(lang)) = session.get::<Lang>(SESSION_LANG).await {
        return lang;
    }
    use_context::<Parts>()
        .and_then(|p| {
            p.headers
                .get(header::ACCEPT_LANGUAGE)
                .and_then(|v| v.to_str().ok())
                .map(Lang::from_accept_language)
        })
        .unwrap_or_default()
}

pub async fn session_info() -> Result<SessionInfo, AppError> {
    let backend = backend()?;
    let session = session().await?;
    let user = signed_in(&backend, &session).await?;
    let lang = request_lang(&session, user.as_ref()).await;
    let needs_first_admin = user.is_none() && !backend.has_users().await?;
    let zone = console().map(|c| c.zone()).unwrap_or_default();
    Ok(SessionInfo {
        user,
        lang,
        needs_first_admin,
        zone,
        sign_in: backend.sign_in_ways(),
    })
}

/// The reactive owner a server function runs under and every owner above
/// it, held until `work` is done. Looking a context up (`use_context`,
/// also inside `leptos_axum::extract`) walks up those owners with a read
/// lock on the current one; when a page's render drops an ancestor
/// meanwhile, the walk's own reference to it is the last, and that
/// ancestor's drop then write-locks the current owner under the walk's
/// read lock: the worker thread hangs for good (reactive_graph 0.2.16,
/// `Owner::with_context`). It happened once in the end-to-end tests — a
/// page that never finished loading, a server that never shut down. Held
/// here, no ancestor is dropped inside a walk; they go when `work` is done,
/// with no lock held.
pub async fn with_owners<F: std::future::Future>(work: F) -> F::Output {
    let owners: Vec<Owner> = std::iter::successors(Owner::current(), Owner::parent).collect();
    let out = work.await;
    drop(owners);
    out
}

/// Runs a server function's `work` (under [`with_owners`]) and shapes its
/// HTTP answer: the error's status code for direct callers, and for a plain
/// form post (no JavaScript) a redirect back to the page it came from,
/// carrying the error in `?err=` so the page can show it. A Location
/// already chosen (e.g. after sign-in) is kept.
pub async fn respond<T>(
    work: impl std::future::Future<Output = Result<T, AppError>>,
) -> Result<T, AppError> {
    with_owners(async {
        let result = work.await;
        shape(result)
    })
    .await
}

fn shape<T>(result: Result<T, AppError>) -> Result<T, AppError> {
    let (Some(parts), Some(opts)) = (use_context::<Parts>(), use_context::<ResponseOptions>())
    else {
        return result;
    };
    let location_chosen = opts
        .0
        .read()
        .is_ok_and(|p| p.headers.contains_key(header::LOCATION));
    if let Err(err) = &result {
        // A page already sending the visitor elsewhere (an anonymous one to
        // the login page) keeps its redirect: a resource of the page that
        // failed after it must not turn it into an error status.
        if !location_chosen {
            opts.set_status(StatusCode::from_u16(err.status()).unwrap_or(StatusCode::BAD_REQUEST));
        }
        if let Some(seconds) = err.retry_after() {
            opts.insert_header(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
    }
    let plain_form_post = parts.method == Method::POST
        && parts
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
    if plain_form_post && !location_chosen {
        let back = back_to_referer(&parts, result.as_ref().err());
        if let Ok(value) = HeaderValue::from_str(&back) {
            opts.insert_header(header::LOCATION, value);
            opts.set_status(StatusCode::FOUND);
        }
    }
    result
}

/// The key of the seals on errors in addresses: random per process, so a
/// redirect read by another instance (or after a restart) shows no error
/// rather than one nobody can vouch for.
fn seal_key() -> &'static [u8; 32] {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    KEY.get_or_init(rand::random)
}

fn sealer() -> hmac::Hmac<sha2::Sha256> {
    use hmac::Mac;
    hmac::Hmac::<sha2::Sha256>::new_from_slice(seal_key()).expect("any key length")
}

/// `err` and `errseal` for an address: the error as JSON, and this
/// server's seal on it.
pub fn error_pairs(err: &AppError) -> Option<[(&'static str, String); 2]> {
    use hmac::Mac;
    let json = serde_json::to_string(err).ok()?;
    let mut mac = sealer();
    mac.update(json.as_bytes());
    let seal = hex::encode(mac.finalize().into_bytes());
    Some([(ERROR_PARAM, json), (ERROR_SEAL, seal)])
}

/// [`error_pairs`] as a query string (without `?`).
pub fn error_query(err: &AppError) -> String {
    error_pairs(err)
        .map(|pairs| {
            form_urlencoded::Serializer::new(String::new())
                .extend_pairs(pairs)
                .finish()
        })
        .unwrap_or_default()
}

/// The error of an address, if this server sealed it.
pub fn opened_error(json: &str, seal: &str) -> Option<AppError> {
    use hmac::Mac;
    let seal = hex::decode(seal).ok()?;
    let mut mac = sealer();
    mac.update(json.as_bytes());
    mac.verify_slice(&seal).ok()?;
    serde_json::from_str(json).ok()
}

/// Path and query of the Referer (never another host), with any previous
/// `err` replaced by this one. A path that starts `//` or `/\` would be
/// read by a browser as another host (`//evil.example/…`): its leading
/// slashes are folded into one, so the redirect stays in this console.
fn back_to_referer(parts: &Parts, err: Option<&AppError>) -> String {
    let referer = parts
        .headers
        .get(header::REFERER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<axum::http::Uri>().ok());
    let path = referer
        .as_ref()
        .map(|u| u.path().to_owned())
        .filter(|p| p.starts_with('/'))
        .map(|p| format!("/{}", p.trim_start_matches(['/', '\\'])))
        .unwrap_or_else(|| "/".into());
    let mut query = form_urlencoded::Serializer::new(String::new());
    if let Some(q) = referer.as_ref().and_then(|u| u.query()) {
        for (k, v) in form_urlencoded::parse(q.as_bytes()) {
            if k != ERROR_PARAM && k != ERROR_SEAL {
                query.append_pair(&k, &v);
            }
        }
    }
    if let Some(pairs) = err.and_then(error_pairs) {
        query.extend_pairs(pairs);
    }
    let query = query.finish();
    if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    }
}

/// An internal error: logged here with a trace id the user can quote.
pub fn internal(detail: &str) -> AppError {
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    tracing::error!(%trace_id, detail, "internal error");
    AppError::Internal { trace_id }
}

#[cfg(test)]
mod tests {
    use super::{error_pairs, opened_error, with_owners};
    use crate::error::AppError;

    #[test]
    fn an_error_opens_only_under_its_own_seal() {
        let err = AppError::Invalid {
            detail: "not a day".into(),
        };
        let [(_, json), (_, seal)] = error_pairs(&err).unwrap();
        assert_eq!(opened_error(&json, &seal), Some(err));
        let other = json.replace("not a day", "call 555 0100");
        assert_eq!(opened_error(&other, &seal), None);
        assert_eq!(opened_error(&json, &seal[..62]), None);
        assert_eq!(opened_error(&json, "not hex"), None);
    }
    use leptos::prelude::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll, Waker};

    /// A server function's owners live until it returns: an ancestor the
    /// page's render lets go of while the function waits still answers a
    /// context lookup afterwards (let go of, it would be dropped at once —
    /// or, inside a lookup, hang the thread).
    #[test]
    fn the_owners_above_a_server_function_live_until_it_returns() {
        let root = Owner::new();
        root.with(|| provide_context(7u32));
        let child = root.child();
        let go = Arc::new(AtomicBool::new(false));
        let wait = go.clone();
        let mut work = Box::pin(with_owners(async move {
            std::future::poll_fn(|_| {
                if wait.load(Ordering::SeqCst) {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
            use_context::<u32>()
        }));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(child.with(|| work.as_mut().poll(&mut cx)).is_pending());
        drop(root);
        go.store(true, Ordering::SeqCst);
        assert_eq!(
            child.with(|| work.as_mut().poll(&mut cx)),
            Poll::Ready(Some(7))
        );
    }
}
