//! Server functions of the sinks page: reading is open
//! to every role; pausing, resuming and "retry now" to operators and
//! supervisors.

use crate::error::AppError;
use crate::sinks::{RetriedNow, SinkRow};
#[cfg(feature = "ssr")]
use crate::types::Role;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use super::tickets::WORK;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};

#[server(endpoint = "sinks/list")]
pub async fn list_sinks() -> Result<Vec<SinkRow>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.sinks().await
    })
    .await
}

/// `pause`: true pauses, false resumes; a reason either way.
#[server(endpoint = "sinks/pause")]
pub async fn pause_sink(name: String, reason: String, pause: bool) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.set_sink_paused(&caller.user, &name, &reason, pause)
            .await
    })
    .await
}

/// A sink's deliveries waiting for a later retry made due now.
#[server(endpoint = "sinks/retry")]
pub async fn retry_sink(name: String, reason: String) -> Result<RetriedNow, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.retry_sink_now(&caller.user, &name, &reason).await
    })
    .await
}
