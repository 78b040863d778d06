//! Console sessions: a user's own, and for an admin any user's — listed,
//! and ended one by one or all at once.

use crate::error::AppError;
use crate::sessions::SessionList;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::ssr::{self, guard, respond};
#[cfg(feature = "ssr")]
use crate::types::Role;

/// The live sessions of `user_id` (blank: the caller's own), the one this
/// call came from marked.
#[server(endpoint = "sessions/list")]
pub async fn list_sessions(user_id: Option<String>) -> Result<SessionList, AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        let user_id = user_id
            .filter(|id| !id.trim().is_empty())
            .unwrap_or_else(|| caller.user.id.clone());
        let mut list = caller.backend.sessions(&caller.user, &user_id).await?;
        let current: Option<String> = caller
            .session
            .get(ssr::SESSION_ID)
            .await
            .map_err(|e| ssr::internal(&format!("session read failed: {e}")))?;
        for row in &mut list.items {
            row.current = current.as_deref() == Some(row.id.as_str());
        }
        Ok(list)
    })
    .await
}

/// Ends one session: the caller's own, or anyone's for an admin.
#[server(endpoint = "sessions/end")]
pub async fn end_session(session_id: String) -> Result<(), AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        caller
            .backend
            .end_session(&caller.user, session_id.trim())
            .await
    })
    .await
}

/// Ends every session of a user: the caller's own, or anyone's for an
/// admin. How many were ended.
#[server(endpoint = "sessions/end-all")]
pub async fn end_all_sessions(user_id: String) -> Result<u64, AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        caller
            .backend
            .end_sessions(&caller.user, user_id.trim())
            .await
    })
    .await
}

/// The caller changes their own password, giving the current one first.
/// Every session of theirs ends, this one too: a password someone else
/// learnt stops working everywhere at once. Back to the sign-in page.
#[server(endpoint = "account/password")]
pub async fn change_password(
    current: String,
    password: String,
    repeat: String,
) -> Result<(), AppError> {
    respond(async {
        let caller = guard(Role::ALL).await?;
        if password != repeat {
            return Err(AppError::Invalid {
                detail: "the new password and its repetition differ".into(),
            });
        }
        let peer = ssr::peer().await?;
        caller
            .backend
            .change_password(&caller.user, &current, &password, &peer)
            .await?;
        leptos_axum::redirect("/login");
        Ok(())
    })
    .await
}
