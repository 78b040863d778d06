//! Server functions of the outbox page: reading is open to every
//! role; resending, recovering and cancelling to operators and supervisors.

use crate::error::AppError;
use crate::outbox::{OutboxDetail, OutboxFilter, OutboxJob, OutboxPage, Resent};
#[cfg(feature = "ssr")]
use crate::types::Role;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use super::tickets::WORK;
#[cfg(feature = "ssr")]
use crate::filter::QueryFilter;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};

#[server(endpoint = "outbox/list")]
pub async fn list_outbox(#[server(default)] filter: OutboxFilter) -> Result<OutboxPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.outbox(&filter.cleaned()).await
    })
    .await
}

#[server(endpoint = "outbox/show")]
pub async fn show_outbox(id: String) -> Result<OutboxDetail, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.outbox_message(&id).await
    })
    .await
}

/// `sink` empty or absent: every sink of the message.
#[server(endpoint = "outbox/resend")]
pub async fn resend_outbox(id: String, sink: Option<String>) -> Result<Resent, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        let sink = sink.as_deref().map(str::trim).filter(|s| !s.is_empty());
        desk.outbox_resend(&caller.user, &id, sink).await
    })
    .await
}

#[server(endpoint = "outbox/bulk-resend")]
pub async fn bulk_resend_outbox(
    #[server(default)] filter: OutboxFilter,
) -> Result<OutboxJob, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.outbox_bulk_resend(&caller.user, &filter.cleaned())
            .await
    })
    .await
}

#[server(endpoint = "outbox/recover")]
pub async fn recover_outbox(sink: String, since: String) -> Result<OutboxJob, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.outbox_recover(&caller.user, sink.trim(), since.trim())
            .await
    })
    .await
}

#[server(endpoint = "outbox/jobs")]
pub async fn outbox_jobs() -> Result<Vec<OutboxJob>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.outbox_jobs().await
    })
    .await
}

#[server(endpoint = "outbox/jobs/cancel")]
pub async fn cancel_outbox_job(id: String) -> Result<OutboxJob, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.outbox_cancel_job(&caller.user, &id).await
    })
    .await
}
