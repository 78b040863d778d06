//! The second factor: the sign-in's second step (a code, or enrolment
//! first when the role needs one), a user's own enrolment and recovery
//! codes, and an admin's reset of another user's.

use crate::error::AppError;
use crate::mfa::{Enrolment, MfaPage, MfaStatus, SecondStep};
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::mfa::Pending;
#[cfg(feature = "ssr")]
use crate::ssr::{self, guard, respond};
#[cfg(feature = "ssr")]
use crate::types::{Role, User};
#[cfg(feature = "ssr")]
use tower_sessions::Session;

/// Where the second step goes: the code, or enrolment first.
#[cfg(feature = "ssr")]
fn step_path(enrol: bool) -> &'static str {
    if enrol { "/login/enrol" } else { "/login/code" }
}

/// A right password of a user with (or needing) a second factor: the
/// session holds the pending sign-in and no user, so every guard still
/// refuses it; the browser goes to the second step.
#[cfg(feature = "ssr")]
pub(crate) async fn await_second_step(
    session: &Session,
    pending: &Pending,
) -> Result<(), AppError> {
    let written =
        |e: tower_sessions::session::Error| ssr::internal(&format!("session write failed: {e}"));
    // Whatever this browser was signed in as before, it is not now.
    session
        .remove::<String>(ssr::SESSION_USER)
        .await
        .map_err(written)?;
    session
        .remove::<String>(ssr::SESSION_ID)
        .await
        .map_err(written)?;
    session
        .cycle_id()
        .await
        .map_err(|e| ssr::internal(&format!("session cycle failed: {e}")))?;
    session
        .insert(ssr::SESSION_PENDING, pending)
        .await
        .map_err(written)?;
    leptos_axum::redirect(step_path(pending.enrol));
    Ok(())
}

/// The pending sign-in of this session and its user, if it may go on;
/// a stale one is forgotten.
#[cfg(feature = "ssr")]
async fn pending_sign_in(session: &Session) -> Result<Option<(Pending, User)>, AppError> {
    let backend = ssr::backend()?;
    let Some(pending) = ssr::pending(session).await? else {
        return Ok(None);
    };
    match backend.pending_user(&pending).await {
        Ok(user) => Ok(Some((pending, user))),
        Err(AppError::Unauthenticated) => {
            session
                .remove::<Pending>(ssr::SESSION_PENDING)
                .await
                .map_err(|e| ssr::internal(&format!("session write failed: {e}")))?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// The sign-in waiting in this browser for its second step, if any.
#[server(endpoint = "mfa/step")]
pub async fn sign_in_step() -> Result<Option<SecondStep>, AppError> {
    respond(async {
        let session = ssr::session().await?;
        Ok(pending_sign_in(&session)
            .await?
            .map(|(pending, user)| SecondStep {
                username: user.username,
                enrol: pending.enrol,
            }))
    })
    .await
}

/// The second step: a code from the authenticator app, or a recovery
/// code. Right, the session is opened and the browser goes home.
#[server(endpoint = "mfa/verify")]
pub async fn verify_code(code: String) -> Result<(), AppError> {
    respond(async {
        let backend = ssr::backend()?;
        let session = ssr::session().await?;
        let (pending, _) = pending_sign_in(&session)
            .await?
            .filter(|(p, _)| !p.enrol)
            .ok_or(AppError::Unauthenticated)?;
        let peer = ssr::peer().await?;
        let signed = backend.second_factor(&pending, &code, &peer).await?;
        ssr::start_session(&session, &signed).await?;
        leptos_axum::redirect("/");
        Ok(())
    })
    .await
}

/// Who is enrolling: a signed-in user, or a sign-in waiting to enrol.
#[cfg(feature = "ssr")]
async fn enrolling() -> Result<(User, Option<Pending>), AppError> {
    let backend = ssr::backend()?;
    let session = ssr::session().await?;
    if let Some(user) = ssr::signed_in(&backend, &session).await? {
        return Ok((user, None));
    }
    match pending_sign_in(&session).await? {
        Some((pending, user)) if pending.enrol => Ok((user, Some(pending))),
        _ => Err(AppError::Unauthenticated),
    }
}

/// The signed-in user's own second factor.
#[server(endpoint = "mfa/status")]
pub async fn own_mfa_status() -> Result<MfaStatus, AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        caller.backend.mfa_status(&caller.user).await
    })
    .await
}

/// The signed-in user's own page: their state, and a new secret to enrol
/// with when they have no second factor.
#[server(endpoint = "mfa/mine")]
pub async fn my_second_factor() -> Result<MfaPage, AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        let status = caller.backend.mfa_status(&caller.user).await?;
        let enrolment = if status.enrolled {
            None
        } else {
            Some(caller.backend.mfa_begin(&caller.user).await?)
        };
        Ok(MfaPage { status, enrolment })
    })
    .await
}

/// A new secret to enrol with (shown until confirmed).
#[server(endpoint = "mfa/begin")]
pub async fn begin_enrolment() -> Result<Enrolment, AppError> {
    respond(async {
        let (user, _) = enrolling().await?;
        ssr::backend()?.mfa_begin(&user).await
    })
    .await
}

/// Confirms the enrolment with a current code: the recovery codes, shown
/// this once. A sign-in that was waiting to enrol is signed in.
#[server(endpoint = "mfa/confirm")]
pub async fn confirm_enrolment(code: String) -> Result<Vec<String>, AppError> {
    respond(async {
        let (user, pending) = enrolling().await?;
        let backend = ssr::backend()?;
        let codes = backend.mfa_confirm(&user, &code).await?;
        if let Some(pending) = pending {
            let peer = ssr::peer().await?;
            let signed = backend.enrolled_sign_in(&pending, &peer).await?;
            ssr::start_session(&ssr::session().await?, &signed).await?;
        }
        Ok(codes)
    })
    .await
}

/// New recovery codes for a current code; the old ones stop working.
#[server(endpoint = "mfa/recovery")]
pub async fn new_recovery_codes(code: String) -> Result<Vec<String>, AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        let peer = ssr::peer().await?;
        caller
            .backend
            .mfa_recovery_codes(&caller.user, &code, &peer)
            .await
    })
    .await
}

/// An admin removes another user's second factor; their sessions end, and
/// they enrol again at their next sign-in if their role needs one.
#[server(endpoint = "users/mfa-reset")]
pub async fn reset_mfa(user_id: String) -> Result<(), AppError> {
    respond(async {
        let caller = guard(&[Role::Admin]).await?;
        caller.backend.mfa_reset(&caller.user, user_id.trim()).await
    })
    .await
}
