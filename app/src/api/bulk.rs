//! Server functions of bulk work. Starting a bulk action or proposal needs
//! the role one ticket's action needs (operators and supervisors); deciding
//! a bulk proposal, a supervisor who did not propose it; undoing a bulk
//! close, whoever started it or a supervisor. Each starts a background job
//! and answers at once with the job to watch.

use crate::bulk::{BulkDetail, BulkJob, BulkProposal, BulkStarted};
use crate::error::AppError;
use crate::tickets::{FixKind, TicketFilter};
#[cfg(feature = "ssr")]
use crate::types::Role;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use super::tickets::{DECIDE, WORK};
#[cfg(feature = "ssr")]
use crate::bulk::Selection;
#[cfg(feature = "ssr")]
use crate::filter::QueryFilter;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};

/// `action`: ASSIGN (`text` = the owner), COMMENT, CLOSE (`text` = the one
/// conclusion). `scope`: ids (the ticked `ids`) or filter (every ticket
/// `filter` matches).
#[server(endpoint = "bulk/action")]
pub async fn bulk_action(
    action: String,
    text: String,
    scope: String,
    #[server(default)] ids: String,
    #[server(default)] filter: TicketFilter,
) -> Result<BulkStarted, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        let selection = Selection {
            scope,
            ids,
            filter: filter.cleaned(),
        };
        desk.bulk_action(&caller.user, &action, &text, &selection)
            .await
    })
    .await
}

/// The same fix proposed for every selected ticket: one bulk proposal.
#[server(endpoint = "bulk/propose")]
pub async fn bulk_propose(
    kind: FixKind,
    reason: String,
    evidence: String,
    scope: String,
    #[server(default)] ids: String,
    #[server(default)] filter: TicketFilter,
) -> Result<BulkStarted, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        let selection = Selection {
            scope,
            ids,
            filter: filter.cleaned(),
        };
        desk.bulk_propose(&caller.user, kind, &reason, &evidence, &selection)
            .await
    })
    .await
}

/// Approves every waiting item of a bulk proposal (one item alone:
/// `fixes/approve` with its proposal id).
#[server(endpoint = "bulk/approve")]
pub async fn bulk_approve(bulk: String, comment: String) -> Result<BulkStarted, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(DECIDE).await?;
        desk.bulk_decide(&caller.user, &bulk, true, &comment).await
    })
    .await
}

#[server(endpoint = "bulk/reject")]
pub async fn bulk_reject(bulk: String, comment: String) -> Result<BulkStarted, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(DECIDE).await?;
        desk.bulk_decide(&caller.user, &bulk, false, &comment).await
    })
    .await
}

#[server(endpoint = "bulk/proposals")]
pub async fn list_bulk_proposals() -> Result<Vec<BulkProposal>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.bulk_proposals().await
    })
    .await
}

#[server(endpoint = "bulk/show")]
pub async fn show_bulk_proposal(id: String) -> Result<BulkDetail, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.bulk_proposal(&id).await
    })
    .await
}

#[server(endpoint = "bulk/job")]
pub async fn show_bulk_job(id: String) -> Result<BulkJob, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.bulk_job(&id).await
    })
    .await
}

#[server(endpoint = "bulk/jobs")]
pub async fn list_bulk_jobs() -> Result<Vec<BulkJob>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.bulk_jobs().await
    })
    .await
}

/// Stops a running job before its next item (whoever started it, or a
/// supervisor).
#[server(endpoint = "bulk/cancel")]
pub async fn cancel_bulk_job(id: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.bulk_cancel(&caller.user, &id).await
    })
    .await
}

/// Reopens the tickets a bulk close closed, within its undo window
/// (`UNDO_MINUTES` after it ended).
#[server(endpoint = "bulk/undo")]
pub async fn undo_bulk_close(id: String) -> Result<BulkStarted, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.bulk_undo(&caller.user, &id).await
    })
    .await
}
