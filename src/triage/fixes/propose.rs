//! Proposing a fix: its plan, the proposal row (superseding an older
//! one that was still pending), the ticket AWAITING_APPROVAL, a note and
//! the audit entry — one transaction. The command line proposes too, a
//! hold's release, which a supervisor decides in the console.

use super::plan::plan;
use super::{PROPOSAL_TTL_US, entry, required};
use crate::accounts::{Actor, TxError, retrying};
use crate::domain::TicketStatus::{AwaitingApproval, Closed, InProgress, Open};
use crate::engine::Engine;
use crate::policy::{self, changes::in_force};
use crate::store::audit_keys::Keys;
use crate::store::proposals::{self, NewProposal};
use crate::store::tickets::{self, Move, insert_note, move_ticket};
use crate::store::{Tx, audit, payments};
use app::error::AppError;
use app::tickets::{FixKind, FixRequest};
use app::types::{Role, User};
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
        let id = propose_in(
            &mut tx,
            &engine.db.audit,
            actor,
            fix,
            (&reason, &evidence),
            bulk,
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(id)
    })
    .await
}

/// The command line as a proposer: no console user, so nobody created it
/// or granted it a role, and any supervisor may decide what it proposes.
fn host() -> User {
    User {
        id: Actor::cli().name,
        username: Actor::cli().name,
        role: Role::Operator,
        lang: None,
        disabled: false,
        created_at: 0,
        grant: Default::default(),
        view_raw: false,
        mfa: false,
    }
}

/// What a release proposed from the command line became.
pub struct HostRelease {
    pub proposal: String,
    pub ticket: String,
    pub hold_reason: String,
    /// The ticket had been closed with the payment still held: it is
    /// worked again for this decision.
    pub reopened: bool,
}

/// The command line asks for a held payment's release: it proposes a
/// RELEASE_HOLD, as `cli`, on the payment's open ticket — the one of the
/// hold's class first — for a supervisor to approve in the console. With
/// no open ticket, the payment's latest ticket (closed with the payment
/// still held) is reopened for it in the same transaction.
pub async fn propose_release_from_host(
    engine: &Engine,
    payment_no: &str,
    note: &str,
    evidence: &str,
) -> Result<HostRelease, AppError> {
    let reason = required(note, "note")?.to_owned();
    let evidence = required(evidence, "evidence")?.to_owned();
    let actor = host();
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let Some(brief) = payments::brief(&mut *tx, payment_no).await? else {
            return Err(TxError::App(AppError::NotFound));
        };
        let Some(hold_reason) = brief.hold_reason else {
            return Err(TxError::App(AppError::Invalid {
                detail: format!("payment {payment_no} is not held"),
            }));
        };
        let all = tickets::of_payment(&mut *tx, payment_no).await?;
        // A hold's reason starts with the class of the finding that held it.
        let of_hold = |o: &tickets::OfPayment| hold_reason.split(' ').next() == Some(&o.class);
        let open: Vec<_> = all.iter().filter(|o| o.status != Closed.as_str()).collect();
        let (ticket, reopened) = match open.iter().find(|o| of_hold(o)).or(open.first()) {
            Some(t) => (t.discrepancy_id.clone(), false),
            None => {
                let Some(last) = all.iter().rev().find(|o| of_hold(o)).or(all.last()) else {
                    return Err(TxError::App(AppError::Invalid {
                        detail: format!(
                            "payment {payment_no} is held ({hold_reason}) but no ticket names it: \
                             there is nothing to propose its release on"
                        ),
                    }));
                };
                let id = last.discrepancy_id.clone();
                if move_ticket(&mut tx, &id, &Move::new(InProgress, &[Closed], now)).await? == 0 {
                    return Err(TxError::App(AppError::TicketClosed));
                }
                let body = format!(
                    "reopened: the command line proposes releasing the hold on {payment_no} ({hold_reason})"
                );
                insert_note(&mut tx, &id, "reopen", &body, None, &actor.username, now).await?;
                let reopened = entry(
                    &actor,
                    "ticket.reopen",
                    ("ticket", &id),
                    Some(json!({ "status": Closed.as_str() })),
                    json!({ "status": InProgress.as_str(), "why": "release of a hold proposed" }),
                );
                audit::append(&mut tx, &engine.db.audit, &reopened, now).await?;
                (id, true)
            }
        };
        let fix = FixRequest {
            ticket_id: ticket.clone(),
            kind: FixKind::ReleaseHold,
            reason: reason.clone(),
            evidence: evidence.clone(),
            order_no: None,
            keep: None,
        };
        let proposal =
            propose_in(&mut tx, &engine.db.audit, &actor, &fix, (&reason, &evidence), None, now).await?;
        tx.commit().await?;
        Ok(HostRelease {
            proposal,
            ticket,
            hold_reason: hold_reason.clone(),
            reopened,
        })
    })
    .await
}

/// The bank's matching pass as a proposer of the groups it finds.
pub const MATCHER: &str = "reckon";

fn matcher() -> User {
    User {
        id: MATCHER.into(),
        username: MATCHER.into(),
        ..host()
    }
}

/// The matching pass proposes a GROUP_MATCH on the anchor's ticket, in the
/// pass's transaction. No person proposed it, so it needs one approver more
/// than the policy asks of a person's proposal: two people decide it, as
/// they would one a person proposed.
pub(crate) async fn propose_group_in(
    tx: &mut Tx<'_>,
    audit: &Keys,
    ticket_id: &str,
    (reason, evidence): (&str, &str),
    now: i64,
) -> Result<String, TxError> {
    let fix = FixRequest {
        ticket_id: ticket_id.to_owned(),
        kind: FixKind::GroupMatch,
        reason: reason.to_owned(),
        evidence: evidence.to_owned(),
        order_no: None,
        keep: None,
    };
    propose_in(tx, audit, &matcher(), &fix, (reason, evidence), None, now).await
}

/// The proposal row, the ticket AWAITING_APPROVAL, its note and the audit
/// entry, in the caller's transaction; the proposal's id.
async fn propose_in(
    tx: &mut Tx<'_>,
    audit: &Keys,
    actor: &User,
    fix: &FixRequest,
    (reason, evidence): (&str, &str),
    bulk: Option<&str>,
    now: i64,
) -> Result<String, TxError> {
    let Some(t) = tickets::ticket(&mut **tx, &fix.ticket_id).await? else {
        return Err(TxError::App(AppError::NotFound));
    };
    match t.ticket_status() {
        Some(Closed) => return Err(TxError::App(AppError::TicketClosed)),
        // A stale proposal does not block a fresh one.
        Some(AwaitingApproval)
            if proposals::live_count(&mut **tx, &t.discrepancy_id, now).await? > 0 =>
        {
            return Err(TxError::App(AppError::AlreadyProposed));
        }
        _ => {}
    }
    let plan = plan(tx, &t, fix, now).await?;
    let why = "superseded by a newer proposal";
    proposals::supersede_pending(tx, &t.discrepancy_id, why).await?;
    let id = uuid::Uuid::now_v7().to_string();
    // The count it needs is fixed now, under the policy in force now.
    let (policy_version, policy) = in_force(tx).await?;
    let amount = policy::amount_of(&plan.before, &plan.after);
    let required = policy.required_for_fix(
        fix.kind,
        amount.as_ref().map(|(m, c)| (*m, c.as_str())),
        bulk.is_some(),
    ) + i64::from(actor.id == MATCHER);
    let (before, after) = (plan.before.to_string(), plan.after.to_string());
    proposals::insert(
        tx,
        &NewProposal {
            id: &id,
            ticket_id: &t.discrepancy_id,
            kind: fix.kind.as_str(),
            payment_no: plan.payment_no.as_deref(),
            payment_version: plan.version,
            before_json: &before,
            after_json: &after,
            reason,
            evidence,
            proposer_id: &actor.id,
            proposer_name: &actor.username,
            proposed_at: now,
            expires_at: now + PROPOSAL_TTL_US,
            bulk_id: bulk,
            required,
            policy_version,
        },
    )
    .await?;
    // A stale proposal's ticket is awaiting already: it stays so.
    let waiting = Move {
        stay: &[AwaitingApproval],
        ..Move::new(AwaitingApproval, &[Open, InProgress], now)
    };
    if move_ticket(tx, &t.discrepancy_id, &waiting).await? == 0 {
        // Closed meanwhile (by another person's conclusion).
        return Err(TxError::App(AppError::TicketClosed));
    }
    let body = format!("{} proposed: {reason} (evidence: {evidence})", fix.kind);
    insert_note(
        tx,
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
            "required_approvals": required,
            "policy_version": policy_version,
        }),
    );
    audit::append(tx, audit, &entry, now).await?;
    Ok(id)
}
