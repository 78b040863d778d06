//! Proposing a fix: its plan, the proposal row (superseding an older
//! one that was still pending), the ticket AWAITING_APPROVAL, a note and
//! the audit entry — one transaction.

use super::plan::plan;
use super::{PROPOSAL_TTL_US, entry, required};
use crate::accounts::{TxError, retrying};
use crate::domain::TicketStatus::{AwaitingApproval, Closed, InProgress, Open};
use crate::engine::Engine;
use crate::store::audit;
use crate::store::proposals::{self, NewProposal};
use crate::store::tickets::{self, Move, insert_note, move_ticket};
use app::error::AppError;
use app::tickets::FixRequest;
use app::types::User;
use serde_json::json;

/// Proposes `fix`; returns the proposal's id.
pub async fn propose(engine: &Engine, actor: &User, fix: &FixRequest) -> Result<String, AppError> {
    propose_item(engine, actor, fix, None).await
}

/// Proposes `fix`, as an item of bulk proposal `bulk` if one is named: the
/// same plan, checks and proposal row as a single ticket's.
pub(crate) async fn propose_item(
    engine: &Engine,
    actor: &User,
    fix: &FixRequest,
    bulk: Option<&str>,
) -> Result<String, AppError> {
    let reason = required(&fix.reason, "reason")?.to_owned();
    let evidence = required(&fix.evidence, "evidence")?.to_owned();
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let Some(t) = tickets::ticket(&mut *tx, &fix.ticket_id).await? else {
            return Err(TxError::App(AppError::NotFound));
        };
        match t.ticket_status() {
            Some(Closed) => return Err(TxError::App(AppError::TicketClosed)),
            // A stale proposal does not block a fresh one.
            Some(AwaitingApproval)
                if proposals::live_count(&mut *tx, &t.discrepancy_id, now).await? > 0 =>
            {
                return Err(TxError::App(AppError::AlreadyProposed));
            }
            _ => {}
        }
        let plan = plan(&mut tx, &t, fix, now).await?;
        let why = "superseded by a newer proposal";
        proposals::supersede_pending(&mut tx, &t.discrepancy_id, why).await?;
        let id = uuid::Uuid::now_v7().to_string();
        let (before, after) = (plan.before.to_string(), plan.after.to_string());
        proposals::insert(
            &mut tx,
            &NewProposal {
                id: &id,
                ticket_id: &t.discrepancy_id,
                kind: fix.kind.as_str(),
                payment_no: plan.payment_no.as_deref(),
                payment_version: plan.version,
                before_json: &before,
                after_json: &after,
                reason: &reason,
                evidence: &evidence,
                proposer_id: &actor.id,
                proposer_name: &actor.username,
                proposed_at: now,
                expires_at: now + PROPOSAL_TTL_US,
                bulk_id: bulk,
            },
        )
        .await?;
        // A stale proposal's ticket is awaiting already: it stays so.
        let waiting = Move {
            stay: &[AwaitingApproval],
            ..Move::new(AwaitingApproval, &[Open, InProgress], now)
        };
        if move_ticket(&mut tx, &t.discrepancy_id, &waiting).await? == 0 {
            // Closed meanwhile (by another person's conclusion).
            return Err(TxError::App(AppError::TicketClosed));
        }
        let body = format!("{} proposed: {reason} (evidence: {evidence})", fix.kind);
        insert_note(
            &mut tx,
            &t.discrepancy_id,
            "proposal",
            &body,
            None,
            &actor.username,
            now,
        )
        .await?;
        let entry = entry(
            actor,
            "fix.propose",
            ("proposal", &id),
            Some(plan.before.clone()),
            json!({
                "kind": fix.kind,
                "ticket": t.discrepancy_id,
                "intends": plan.after,
                "reason": reason,
                "evidence": evidence,
                "expires_at": now + PROPOSAL_TTL_US,
                "bulk": bulk,
            }),
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(id.clone())
    })
    .await
}
