//! Server functions of triage, fixes and the audit log. Reading is open to
//! every role; working a ticket to operators and supervisors; deciding a
//! fix to supervisors only (and never their own — the database refuses).

use crate::error::AppError;
use crate::tickets::{
    ActionResult, AuditFilter, AuditPage, FixKind, Proposal, TicketDetail, TicketFilter, TicketPage,
};
#[cfg(feature = "ssr")]
use crate::types::Role;
use leptos::prelude::*;

#[cfg(feature = "ssr")]
use crate::filter::QueryFilter;
#[cfg(feature = "ssr")]
use crate::ssr::{console, guard, respond};

#[cfg(feature = "ssr")]
pub const WORK: &[Role] = &[Role::Operator, Role::Supervisor];
#[cfg(feature = "ssr")]
pub const DECIDE: &[Role] = &[Role::Supervisor];
#[cfg(feature = "ssr")]
pub const AUDIT: &[Role] = &[Role::Supervisor, Role::Admin];

#[server(endpoint = "tickets/list")]
pub async fn list_tickets(#[server(default)] filter: TicketFilter) -> Result<TicketPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.tickets(&filter.cleaned()).await
    })
    .await
}

#[server(endpoint = "tickets/show")]
pub async fn show_ticket(id: String) -> Result<TicketDetail, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.ticket(&id).await
    })
    .await
}

/// The previous and next ticket of `id` in the queue `filter` lists (its
/// cursor ignored), for working a queue from the ticket page.
#[server(endpoint = "tickets/neighbours")]
pub async fn ticket_neighbours(
    id: String,
    filter: TicketFilter,
) -> Result<crate::tickets::Neighbours, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        let mut filter = filter.cleaned();
        filter.after = None;
        desk.ticket_neighbours(&id, &filter).await
    })
    .await
}

#[server(endpoint = "tickets/assign")]
pub async fn assign_ticket(id: String, owner: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.assign(&caller.user, &id, &owner).await
    })
    .await
}

#[server(endpoint = "tickets/comment")]
pub async fn comment_ticket(id: String, text: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.comment(&caller.user, &id, &text).await
    })
    .await
}

#[server(endpoint = "tickets/evidence")]
pub async fn add_evidence(id: String, kind: String, text: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.add_evidence(&caller.user, &id, &kind, &text).await
    })
    .await
}

#[server(endpoint = "tickets/conclude")]
pub async fn conclude_ticket(id: String, conclusion: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.conclude(&caller.user, &id, &conclusion).await
    })
    .await
}

#[server(endpoint = "tickets/requery")]
pub async fn requery_ticket(id: String) -> Result<ActionResult, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.requery(&caller.user, &id).await
    })
    .await
}

#[server(endpoint = "tickets/replay")]
pub async fn replay_for_ticket(id: String, callback: String) -> Result<ActionResult, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.replay(&caller.user, &id, &callback).await
    })
    .await
}

#[server(endpoint = "fixes/propose")]
pub async fn propose_fix(
    id: String,
    kind: FixKind,
    reason: String,
    evidence: String,
    order_no: Option<String>,
    keep: Option<String>,
) -> Result<String, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        let nonempty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let fix = crate::tickets::FixRequest {
            ticket_id: id,
            kind,
            reason,
            evidence,
            order_no: nonempty(order_no),
            keep: nonempty(keep),
        };
        desk.propose(&caller.user, &fix).await
    })
    .await
}

/// `status`: PENDING (the queue) or ALL (the most recent, any state).
#[server(endpoint = "fixes/list")]
pub async fn list_proposals(status: String) -> Result<Vec<Proposal>, AppError> {
    respond(async {
        let desk = console()?;
        guard(Role::ALL).await?;
        desk.proposals(&status).await
    })
    .await
}

/// A comment on a proposal, kept on its card and its ticket, deciding
/// nothing.
#[server(endpoint = "fixes/comment")]
pub async fn comment_proposal(
    proposal: String,
    text: String,
) -> Result<crate::tickets::ProposalComment, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(WORK).await?;
        desk.comment_proposal(&caller.user, &proposal, &text).await
    })
    .await
}

#[server(endpoint = "fixes/approve")]
pub async fn approve_fix(proposal: String, comment: String) -> Result<ActionResult, AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(DECIDE).await?;
        desk.approve(&caller.user, &proposal, &comment).await
    })
    .await
}

#[server(endpoint = "fixes/reject")]
pub async fn reject_fix(proposal: String, comment: String) -> Result<(), AppError> {
    respond(async {
        let desk = console()?;
        let caller = guard(DECIDE).await?;
        desk.reject(&caller.user, &proposal, &comment).await
    })
    .await
}

#[server(endpoint = "audit/list")]
pub async fn list_audit(#[server(default)] filter: AuditFilter) -> Result<AuditPage, AppError> {
    respond(async {
        let desk = console()?;
        guard(AUDIT).await?;
        desk.audit(&filter).await
    })
    .await
}
