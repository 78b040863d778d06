//! Server functions of the daily close: the day's closes (every role), and
//! closing a day or reopening it (supervisors; a reopening proposed by one
//! is decided by another — the database refuses the proposer).

use crate::console::DayClose;
use crate::error::AppError;
#[cfg(feature = "ssr")]
use crate::types::Role;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};

#[server(endpoint = "closes/list")]
pub async fn day_closes(day: String) -> Result<Vec<DayClose>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.day_closes(&day).await
    })
    .await
}

/// `what`: close (with a reason), propose_reopen (with a reason),
/// approve_reopen or reject_reopen.
#[server(endpoint = "closes/act")]
pub async fn act_on_day(
    what: String,
    provider: String,
    day: String,
    reason: Option<String>,
) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(&[Role::Supervisor]).await?;
        desk.day_close_action(
            &caller.user,
            &what,
            &provider,
            &day,
            reason.as_deref().unwrap_or(""),
        )
        .await
    })
    .await
}
