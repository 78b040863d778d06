//! Fixes under the two-person rule. A proposal records what it intends
//! (before and after), why, the evidence, who and when, and the payment's
//! version ([`propose`], its intent worked out by [`plan`]), and how many
//! distinct approvers it needs under the approval policy then in force
//! (`crate::policy`); *other* supervisors approve it, each approval a row
//! of its own, and the one that completes the count executes it. The database itself refuses a decision by the
//! proposer: the approving UPDATE carries `proposer_id <> approver` and a
//! CHECK constraint backs it; it refuses too a decider whose role is a
//! pending grant, or who created the proposer's account or granted or
//! confirmed their role. Approval executes the fix in the same
//! transaction ([`execute`], one function per kind), through
//! `engine::apply` (source = manual fix) wherever a status moves, so the
//! effect and the outbox message follow as for any outcome. A payment that
//! changed since the proposal makes execution refuse; the proposal goes
//! back to the queue marked stale.

mod execute;
mod plan;
mod propose;

pub use propose::{HostRelease, MATCHER, propose, propose_release_from_host};
pub(crate) use propose::{propose_group_in, propose_item};

use super::{entry, required};
use crate::accounts::{decision_refusal, internal, retrying};
use crate::domain::PaymentStatus::{self, Created, Failed, Pending, Succeeded};
use crate::domain::TicketStatus::{AwaitingApproval, Closed, InProgress};
use crate::domain::{Class, Mover};
use crate::engine::Engine;
use crate::store::approvals::{self, Approver, Count, Subject};
use crate::store::payments::PaymentBrief;
use crate::store::proposals::{self, Decision};
use crate::store::tickets::{Move, TicketRow, insert_note, move_ticket};
use crate::store::{self, audit};
use app::error::AppError;
use app::tickets::{ActionResult, FixKind, Proposal};
use app::types::User;
use serde_json::{Value, json};

/// How long a proposal may wait for its decision.
pub const PROPOSAL_TTL_US: i64 = 72 * 3600 * 1_000_000;

fn not_applicable(detail: impl Into<String>) -> AppError {
    AppError::FixNotApplicable {
        detail: detail.into(),
    }
}

/// Which fixes a ticket may get, from its class and the payment's state.
pub(crate) fn fixes_for(t: &TicketRow, payment: Option<&PaymentBrief>) -> Vec<FixKind> {
    let mut out = Vec::new();
    if t.ticket_status() == Some(Closed) {
        return out;
    }
    let provider_paid = t.provider_status.as_deref() == Some(Succeeded.as_str());
    let local_unpaid = payment.is_none_or(|p| matches!(p.status, Created | Pending | Failed));
    match t.ticket_class() {
        Some(Class::ProviderOnly | Class::StatusLag)
            if provider_paid
                && local_unpaid
                && t.payment_no.is_some()
                && plan::unusable_ids(t).is_none() =>
        {
            out.push(FixKind::Backfill)
        }
        Some(Class::LocalOnly)
            if payment.is_some_and(|p| matches!(p.status, Succeeded | Created | Pending)) =>
        {
            out.push(FixKind::ClosePayment)
        }
        Some(Class::AmountMismatch)
            if payment.is_some()
                && t.provider_amount_minor.is_some_and(|a| a > 0)
                && t.provider_currency == t.local_currency =>
        {
            out.push(FixKind::AcceptAmount)
        }
        Some(Class::OneToMany) => out.push(FixKind::Merge),
        // Money taken for a payment Reckon closed or failed: two people
        // either take it (the order is paid) or give it back in full.
        Some(Class::PaidAfterClose)
            if payment.is_some_and(|p| {
                p.status
                    .may_move(PaymentStatus::Refunding, Mover::LateRefund)
            }) =>
        {
            out.extend([FixKind::AcceptPayment, FixKind::RefundPayment])
        }
        _ => {}
    }
    if payment.is_some_and(|p| p.hold_reason.is_some()) {
        out.push(FixKind::ReleaseHold);
    }
    out
}

/// A payment as a proposal records it.
fn brief_json(p: &PaymentBrief) -> Value {
    json!({
        "payment_no": p.payment_no,
        "order_no": p.order_no,
        "status": p.status,
        "amount_minor": p.amount_minor,
        "currency": p.currency,
        "provider_txn_id": p.provider_txn_id,
        "hold_reason": p.hold_reason,
        "version": p.version,
    })
}

/// The hold a proposal saw on payment `no`, from its `before` (one
/// payment's brief, or a merge's `payments`): `None` when it was not held.
fn hold_seen<'a>(before: &'a Value, no: &str) -> Option<&'a str> {
    let briefs = match before.get("payments").and_then(Value::as_array) {
        Some(all) => all.as_slice(),
        None => std::slice::from_ref(before),
    };
    briefs
        .iter()
        .find(|b| b["payment_no"] == no)
        .and_then(|b| b["hold_reason"].as_str())
}

/// Why a payment is not as a proposal saw it, if it is not: its version or
/// its hold (a row of its own, which does not move the version).
fn changed_since(
    no: &str,
    (version, held): (i64, Option<&str>),
    (version_then, held_then): (i64, Option<&str>),
) -> Option<String> {
    let hold = |h: Option<&str>| h.map_or("not held".to_owned(), |r| format!("held ({r})"));
    if version != version_then {
        Some(format!(
            "payment {no} is at version {version}, the proposal saw {version_then}"
        ))
    } else if held != held_then {
        Some(format!(
            "payment {no} is {} now, the proposal saw it {}",
            hold(held),
            hold(held_then)
        ))
    } else {
        None
    }
}

/// Why an approval did not execute.
enum NotExecuted {
    /// The payment changed since the proposal.
    Stale(String),
    /// The engine refused (a conflict, a held payment, a state it cannot
    /// reach): recorded, the proposal fails.
    Failed(String),
    Db(store::Error),
}

impl From<store::Error> for NotExecuted {
    fn from(e: store::Error) -> Self {
        NotExecuted::Db(e)
    }
}

/// Why a conditional deciding UPDATE matched nothing.
async fn refusal(engine: &Engine, actor: &User, id: &str, now: i64) -> AppError {
    match proposals::get(&engine.db.pool, id, now).await {
        Err(e) => internal(e),
        Ok(None) => AppError::NotFound,
        Ok(Some(p)) if p.proposer_id == actor.id => AppError::OwnProposal,
        Ok(Some(p)) if p.status != "PENDING" => AppError::ProposalDecided,
        Ok(Some(p)) if p.approved_by.contains(&actor.username) => AppError::AlreadyApproved,
        Ok(Some(p)) => match decision_refusal(&engine.db.pool, &actor.id, &p.proposer_id).await {
            Err(e) => e,
            Ok(Some(why)) => why,
            Ok(None) => refusal_of_proposal(p, now),
        },
    }
}

/// Why a pending proposal could not be decided, by someone who may decide it.
fn refusal_of_proposal(p: Proposal, now: i64) -> AppError {
    match p {
        p if p.stale_reason.is_some() => AppError::ProposalStale {
            reason: p.stale_reason.unwrap_or_default(),
        },
        p if p.expires_at <= now => AppError::ProposalExpired,
        _ => AppError::TicketClosed,
    }
}

/// A ticket whose proposal was rejected or failed is worked again.
fn back_to_work(now: i64) -> Move<'static> {
    Move::new(InProgress, &[AwaitingApproval], now)
}

/// Approves a proposal: the approval is recorded, and the approval that
/// completes the count the proposal needs executes it, in the same
/// transaction. An approval short of the count is recorded and audited,
/// and the proposal waits for the next approver.
pub async fn approve(
    engine: &Engine,
    actor: &User,
    id: &str,
    comment: &str,
) -> Result<ActionResult, AppError> {
    let comment = required(comment, "comment")?;
    let now = engine.now();
    let busy = || AppError::Refused {
        detail: "the database was busy with another decision on this proposal; look again".into(),
    };
    let mut tx = engine.db.begin_write().await.map_err(internal)?;
    let approver = Approver {
        id: &actor.id,
        name: &actor.username,
        at: now,
        comment,
    };
    let count = match approvals::approve(&mut tx, Subject::Fix, id, &approver).await {
        Ok(Some(count)) => count,
        Ok(None) => {
            drop(tx);
            let why = refusal(engine, actor, id, now).await;
            tracing::warn!(proposal = id, by = %actor.username, refusal = %why, "approval refused");
            return Err(why);
        }
        // The same approver twice at once: the other one counted.
        Err(e) if store::is_unique_violation(&e) => return Err(AppError::AlreadyApproved),
        // Another decision holds the proposal right now: its outcome
        // decides; nothing was done here.
        Err(e) if store::is_retryable(&e) => return Err(busy()),
        Err(e) => return Err(internal(e)),
    };
    if !count.reached() {
        return approved_partly(engine, tx, actor, id, comment, count, now).await;
    }
    let decision = Decision {
        by_id: &actor.id,
        by_name: &actor.username,
        at: now,
        comment,
    };
    let decided = match proposals::approve(&mut tx, id, &decision).await {
        Ok(rows) => rows,
        Err(e) => {
            drop(tx);
            if store::is_retryable(&e) {
                return Err(busy());
            }
            return Err(internal(e));
        }
    };
    if decided == 0 {
        drop(tx);
        let why = refusal(engine, actor, id, now).await;
        tracing::warn!(proposal = id, by = %actor.username, refusal = %why, "approval refused");
        return Err(why);
    }
    let p = proposals::get(&mut *tx, id, now)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let result = match execute::execute(engine, &mut tx, actor, &p, comment, now).await {
        Ok(r) => r,
        Err(NotExecuted::Db(e)) => return Err(internal(e)),
        Err(NotExecuted::Stale(reason)) => {
            drop(tx);
            record_not_executed(engine, actor, &p, comment, true, &reason).await?;
            return Err(AppError::ProposalStale { reason });
        }
        Err(NotExecuted::Failed(detail)) => {
            drop(tx);
            record_not_executed(engine, actor, &p, comment, false, &detail).await?;
            return Err(AppError::Refused { detail });
        }
    };
    tx.commit().await.map_err(internal)?;
    engine.wake_workers();
    tracing::info!(proposal = id, kind = %p.kind, by = %actor.username, "fix executed");
    Ok(result)
}

/// An approval that leaves the proposal short of its count: recorded,
/// noted on the ticket and audited; the proposal waits.
async fn approved_partly(
    engine: &Engine,
    mut tx: store::Tx<'static>,
    actor: &User,
    id: &str,
    comment: &str,
    count: Count,
    now: i64,
) -> Result<ActionResult, AppError> {
    let (approvals, required) = (count.approvals, count.required);
    let ticket = proposals::ticket_of(&mut *tx, id).await.map_err(internal)?;
    let body = format!(
        "approved by {} ({approvals} of {required} approvals): {comment}",
        actor.username
    );
    insert_note(
        &mut tx,
        &ticket,
        "action",
        &body,
        None,
        &actor.username,
        now,
    )
    .await
    .map_err(internal)?;
    let entry = entry(
        actor,
        "fix.approval",
        ("proposal", id),
        None,
        json!({ "approvals": approvals, "required_approvals": required, "comment": comment }),
    );
    audit::append(&mut tx, &engine.db.audit, &entry, now)
        .await
        .map_err(internal)?;
    tx.commit().await.map_err(internal)?;
    tracing::info!(proposal = id, by = %actor.username, approvals, required, "fix approved, waiting for more");
    Ok(ActionResult {
        class: "approved".into(),
        detail: format!("{approvals} of {required} approvals: waiting for another approver"),
    })
}

/// A stale proposal goes back to the queue marked stale; a failed one is
/// closed as FAILED. Either way the ticket is worked again, and the audit
/// log says so.
async fn record_not_executed(
    engine: &Engine,
    actor: &User,
    p: &Proposal,
    comment: &str,
    stale: bool,
    why: &str,
) -> Result<(), AppError> {
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        if stale {
            proposals::mark_stale(&mut tx, &p.id, why).await?;
        } else {
            let decision = Decision {
                by_id: &actor.id,
                by_name: &actor.username,
                at: now,
                comment,
            };
            proposals::fail(&mut tx, &p.id, why, &decision).await?;
            move_ticket(&mut tx, &p.ticket_id, &back_to_work(now)).await?;
        }
        let outcome = if stale {
            "not executed, stale"
        } else {
            "failed"
        };
        let body = format!("{} {outcome}: {why}", p.kind);
        insert_note(
            &mut tx,
            &p.ticket_id,
            "action",
            &body,
            None,
            &actor.username,
            now,
        )
        .await?;
        let entry = entry(
            actor,
            "fix.fail",
            ("proposal", &p.id),
            None,
            json!({ "stale": stale, "why": why, "comment": comment }),
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

/// Rejects a proposal (never one's own); the ticket is worked again.
pub async fn reject(
    engine: &Engine,
    actor: &User,
    id: &str,
    comment: &str,
) -> Result<(), AppError> {
    let comment = required(comment, "comment")?;
    let rejected = retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let decision = Decision {
            by_id: &actor.id,
            by_name: &actor.username,
            at: now,
            comment,
        };
        if proposals::reject(&mut tx, id, &decision).await? == 0 {
            return Ok(false);
        }
        let ticket = proposals::ticket_of(&mut *tx, id).await?;
        move_ticket(&mut tx, &ticket, &back_to_work(now)).await?;
        let body = format!("proposal rejected: {comment}");
        insert_note(
            &mut tx,
            &ticket,
            "action",
            &body,
            None,
            &actor.username,
            now,
        )
        .await?;
        let entry = entry(
            actor,
            "fix.reject",
            ("proposal", id),
            Some(json!({ "status": "PENDING" })),
            json!({ "status": "REJECTED", "comment": comment }),
        );
        audit::append(&mut tx, &engine.db.audit, &entry, now).await?;
        tx.commit().await?;
        Ok(true)
    })
    .await?;
    if rejected {
        Ok(())
    } else {
        Err(refusal(engine, actor, id, engine.now()).await)
    }
}
