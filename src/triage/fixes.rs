//! Fixes under the two-person rule. A proposal records what it intends
//! (before and after), why, the evidence, who and when, and the payment's
//! version; a *different* supervisor approves it. The database itself
//! refuses a decision by the proposer: the approving UPDATE carries
//! `proposer_id <> approver` and a CHECK constraint backs it. Approval
//! executes the fix in the same transaction, through `engine::apply`
//! (source = manual fix) wherever a status moves, so the effect and the
//! outbox message follow as for any outcome. A payment that changed since
//! the proposal makes execution refuse; the proposal goes back to the queue
//! marked stale.

use super::Desk;
use super::reading::{PaymentBrief, fixes_for, payment_brief, proposal, ticket_row};
use super::{insert_note, required};
use crate::accounts::{TxError, internal, retrying};
use crate::domain::{Currency, Money, PaymentNo, PaymentStatus, ProviderTxnId};
use crate::engine::{Applied, Outcome, Source, apply_in, describe, refund_late_success_in};
use crate::store::{self, audit, outbox, payments};
use app::error::AppError;
use app::tickets::{ActionResult, FixKind, FixRequest};
use app::types::User;
use serde_json::{Value, json};
use sqlx::AnyConnection;

/// How long a proposal may wait for its decision.
pub const PROPOSAL_TTL_US: i64 = 72 * 3600 * 1_000_000;

/// What the fix will do, worked out when it is proposed.
struct Plan {
    payment_no: Option<String>,
    version: Option<i64>,
    before: Value,
    after: Value,
}

fn not_applicable(detail: impl Into<String>) -> AppError {
    AppError::FixNotApplicable {
        detail: detail.into(),
    }
}

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

/// The payments a ONE_TO_MANY ticket involves: the one bound to the
/// transaction, and the one the statement row names.
async fn involved(
    conn: &mut AnyConnection,
    t: &super::reading::TicketRow,
) -> sqlx::Result<Vec<PaymentBrief>> {
    let mut nos: Vec<String> = t.payment_no.iter().cloned().collect();
    if let Some(txn) = &t.provider_txn_id
        && let Some(bound) = sqlx::query_scalar::<_, String>(
            "SELECT payment_no FROM payments WHERE provider = $1 AND provider_txn_id = $2",
        )
        .bind(&t.provider)
        .bind(txn)
        .fetch_optional(&mut *conn)
        .await?
    {
        nos.push(bound);
    }
    if let (Some(run), Some(line)) = (&t.run_id, t.line_no)
        && let Some(Some(named)) = sqlx::query_scalar::<_, Option<String>>(
            "SELECT payment_no FROM recon_rows WHERE run_id = $1 AND line_no = $2",
        )
        .bind(run)
        .bind(line)
        .fetch_optional(&mut *conn)
        .await?
    {
        nos.push(named);
    }
    nos.sort();
    nos.dedup();
    let mut out = Vec::new();
    for no in nos {
        if let Some(p) = payment_brief(&mut *conn, &no).await? {
            out.push(p);
        }
    }
    Ok(out)
}

async fn plan(
    conn: &mut AnyConnection,
    t: &super::reading::TicketRow,
    fix: &FixRequest,
) -> Result<Plan, TxError> {
    let payment = match t.payment_no.as_deref() {
        Some(no) => payment_brief(&mut *conn, no).await?,
        None => None,
    };
    if !fixes_for(t, payment.as_ref()).contains(&fix.kind) {
        return Err(TxError::App(not_applicable(format!(
            "{} does not apply to a {} ticket with the payment {}",
            fix.kind,
            t.class,
            payment
                .as_ref()
                .map(|p| p.status.as_str())
                .unwrap_or("absent")
        ))));
    }
    let version = payment.as_ref().map(|p| p.version);
    let before = payment.as_ref().map(brief_json).unwrap_or(Value::Null);
    let plan = |after: Value| Plan {
        payment_no: t.payment_no.clone(),
        version,
        before: before.clone(),
        after,
    };
    Ok(match fix.kind {
        FixKind::Backfill => {
            let (Some(minor), Some(currency)) = (t.provider_amount_minor, &t.provider_currency)
            else {
                return Err(TxError::App(not_applicable(
                    "the statement side has no amount to backfill",
                )));
            };
            let order_no = match &payment {
                Some(p) => p.order_no.clone(),
                None => fix.order_no.clone().ok_or_else(|| AppError::Required {
                    field: "order_no".into(),
                })?,
            };
            if payment.is_none() {
                let paid: Option<String> = sqlx::query_scalar(
                    "SELECT payment_no FROM payments WHERE order_no = $1 \
                       AND status IN ('SUCCEEDED', 'REFUNDING', 'REFUNDED') LIMIT 1",
                )
                .bind(&order_no)
                .fetch_optional(&mut *conn)
                .await?;
                if let Some(paid) = paid {
                    return Err(TxError::App(not_applicable(format!(
                        "order {order_no} is already paid by {paid}"
                    ))));
                }
            }
            plan(json!({
                "payment_no": t.payment_no,
                "order_no": order_no,
                "create": payment.is_none(),
                "status": "SUCCEEDED",
                "amount_minor": minor,
                "currency": currency,
                "provider_txn_id": t.provider_txn_id,
            }))
        }
        FixKind::ClosePayment => plan(json!({ "status": "CLOSED", "hold_reason": null })),
        FixKind::AcceptAmount => {
            let p = payment
                .as_ref()
                .ok_or_else(|| not_applicable("no payment"))?;
            let accepted = t.provider_amount_minor.unwrap_or_default();
            if p.refunded_minor + p.reserved_minor > accepted {
                return Err(TxError::App(not_applicable(
                    "more is refunded or reserved than the provider's amount",
                )));
            }
            let pay = t.provider_status.as_deref() == Some("SUCCEEDED")
                && matches!(p.status.as_str(), "CREATED" | "PENDING");
            plan(json!({
                "amount_minor": accepted,
                "difference_minor": accepted - p.amount_minor,
                "currency": p.currency,
                "status": if pay { "SUCCEEDED" } else { p.status.as_str() },
            }))
        }
        FixKind::Merge => {
            let all = involved(conn, t).await?;
            if all.len() < 2 {
                return Err(TxError::App(not_applicable(
                    "fewer than two payments share this transaction now",
                )));
            }
            let keep = fix
                .keep
                .clone()
                .or_else(|| {
                    all.iter()
                        .find(|p| p.provider_txn_id == t.provider_txn_id)
                        .map(|p| p.payment_no.clone())
                })
                .unwrap_or_else(|| all[0].payment_no.clone());
            if !all.iter().any(|p| p.payment_no == keep) {
                return Err(TxError::App(not_applicable(format!(
                    "{keep} is not one of the payments involved"
                ))));
            }
            if let Some(bound) = all.iter().find(|p| p.provider_txn_id == t.provider_txn_id)
                && bound.payment_no != keep
            {
                return Err(TxError::App(not_applicable(format!(
                    "the transaction is bound to {}: that payment is the one kept",
                    bound.payment_no
                ))));
            }
            let close: Vec<&PaymentBrief> = all.iter().filter(|p| p.payment_no != keep).collect();
            if let Some(paid) = close
                .iter()
                .find(|p| matches!(p.status.as_str(), "SUCCEEDED" | "REFUNDING" | "REFUNDED"))
            {
                return Err(TxError::App(not_applicable(format!(
                    "{} is paid: a merge never closes a paid payment (refund it instead)",
                    paid.payment_no
                ))));
            }
            Plan {
                payment_no: Some(keep.clone()),
                version: all.iter().find(|p| p.payment_no == keep).map(|p| p.version),
                before: json!({ "payments": all.iter().map(brief_json).collect::<Vec<_>>() }),
                after: json!({
                    "keep": keep,
                    "close": close.iter().map(|p| json!({ "payment_no": p.payment_no, "version": p.version })).collect::<Vec<_>>(),
                    "holds_released": true,
                }),
            }
        }
        FixKind::ReleaseHold => plan(json!({ "hold_reason": null })),
        FixKind::AcceptPayment | FixKind::RefundPayment => {
            let p = payment
                .as_ref()
                .ok_or_else(|| not_applicable("no payment"))?;
            let txn = t
                .provider_txn_id
                .clone()
                .or_else(|| p.provider_txn_id.clone());
            if fix.kind == FixKind::AcceptPayment {
                if let Some(paid) =
                    payments::paid_attempt_of(&mut *conn, &p.order_no, &p.payment_no).await?
                {
                    return Err(TxError::App(not_applicable(format!(
                        "order {} is already paid by {paid}: accepting this payment would pay it twice (refund it instead)",
                        p.order_no
                    ))));
                }
                plan(json!({
                    "status": "SUCCEEDED",
                    "provider_txn_id": txn,
                    "effect": "ORDER_PAID",
                }))
            } else {
                plan(json!({
                    "status": "REFUNDING",
                    "then": "REFUNDED when the provider confirms the refund",
                    "refund_minor": p.amount_minor,
                    "currency": p.currency,
                    "provider_txn_id": txn,
                }))
            }
        }
    })
}

pub async fn propose(desk: &Desk, actor: &User, fix: &FixRequest) -> Result<String, AppError> {
    let reason = required(&fix.reason, "reason")?.to_owned();
    let evidence = required(&fix.evidence, "evidence")?.to_owned();
    retrying(|| async {
        let now = desk.now();
        let mut tx = desk.engine.db.begin_write().await?;
        let Some(t) = ticket_row(&mut *tx, &fix.ticket_id).await? else {
            return Err(TxError::App(AppError::NotFound));
        };
        match t.status.as_str() {
            "CLOSED" => return Err(TxError::App(AppError::TicketClosed)),
            "AWAITING_APPROVAL" => {
                // A stale proposal does not block a fresh one.
                let live: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM fix_proposals WHERE discrepancy_id = $1 AND status = 'PENDING' \
                       AND stale_reason IS NULL AND expires_at > $2",
                )
                .bind(&t.discrepancy_id)
                .bind(now)
                .fetch_one(&mut *tx)
                .await?;
                if live > 0 {
                    return Err(TxError::App(AppError::AlreadyProposed));
                }
            }
            _ => {}
        }
        let plan = plan(&mut tx, &t, fix).await?;
        sqlx::query(
            "UPDATE fix_proposals SET status = 'SUPERSEDED', result = 'superseded by a newer proposal' \
             WHERE discrepancy_id = $1 AND status = 'PENDING'",
        )
        .bind(&t.discrepancy_id)
        .execute(&mut *tx)
        .await?;
        let id = uuid::Uuid::now_v7().to_string();
        sqlx::query(
            "INSERT INTO fix_proposals (proposal_id, discrepancy_id, kind, payment_no, payment_version, before_json, \
               after_json, reason, evidence, proposer_id, proposer_name, proposed_at, expires_at, status) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'PENDING')",
        )
        .bind(&id)
        .bind(&t.discrepancy_id)
        .bind(fix.kind.as_str())
        .bind(plan.payment_no.as_deref())
        .bind(plan.version)
        .bind(plan.before.to_string())
        .bind(plan.after.to_string())
        .bind(&reason)
        .bind(&evidence)
        .bind(&actor.id)
        .bind(&actor.username)
        .bind(now)
        .bind(now + PROPOSAL_TTL_US)
        .execute(&mut *tx)
        .await?;
        let waiting = sqlx::query(
            "UPDATE discrepancies SET status = 'AWAITING_APPROVAL', updated_at = $1 \
             WHERE discrepancy_id = $2 AND status <> 'CLOSED'",
        )
        .bind(now)
        .bind(&t.discrepancy_id)
        .execute(&mut *tx)
        .await?;
        if waiting.rows_affected() == 0 {
            // Closed meanwhile (by another person's conclusion).
            return Err(TxError::App(AppError::TicketClosed));
        }
        insert_note(
            &mut tx,
            &t.discrepancy_id,
            "proposal",
            &format!("{} proposed: {reason} (evidence: {evidence})", fix.kind),
            None,
            &actor.username,
            now,
        )
        .await?;
        audit::append(
            &mut tx,
            &desk.engine.db.audit,
            &audit::Entry {
                actor: actor.username.clone(),
                action: "fix.propose",
                object_type: "proposal",
                object_id: id.clone(),
                before: Some(plan.before.clone()),
                after: Some(json!({
                    "kind": fix.kind,
                    "ticket": t.discrepancy_id,
                    "intends": plan.after,
                    "reason": reason,
                    "evidence": evidence,
                    "expires_at": now + PROPOSAL_TTL_US,
                })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(id.clone())
    })
    .await
}

/// Why an approval did not execute.
enum NotExecuted {
    /// The payment changed since the proposal.
    Stale(String),
    /// The engine refused (a conflict, a held payment, a state it cannot
    /// reach): recorded, the proposal fails.
    Failed(String),
    Db(sqlx::Error),
}

impl From<sqlx::Error> for NotExecuted {
    fn from(e: sqlx::Error) -> Self {
        NotExecuted::Db(e)
    }
}

/// Why a conditional approving UPDATE matched nothing.
async fn refusal(desk: &Desk, actor: &User, id: &str, now: i64) -> AppError {
    match proposal(&desk.engine.db.pool, id, now).await {
        Err(e) => internal(e),
        Ok(None) => AppError::NotFound,
        Ok(Some(p)) if p.proposer_id == actor.id => AppError::OwnProposal,
        Ok(Some(p)) if p.status != "PENDING" => AppError::ProposalDecided,
        Ok(Some(p)) if p.stale_reason.is_some() => AppError::ProposalStale {
            reason: p.stale_reason.unwrap_or_default(),
        },
        Ok(Some(p)) if p.expires_at <= now => AppError::ProposalExpired,
        Ok(Some(_)) => AppError::TicketClosed,
    }
}

pub async fn approve(
    desk: &Desk,
    actor: &User,
    id: &str,
    comment: &str,
) -> Result<ActionResult, AppError> {
    let comment = required(comment, "comment")?;
    let now = desk.now();
    let mut tx = desk.engine.db.begin_write().await.map_err(internal)?;
    // The decision: one conditional statement. The proposer never matches
    // (and the CHECK constraint refuses it even if this line changed); a
    // decided, stale or expired proposal never matches; of two approvers
    // at once, the second finds it decided.
    let decided = sqlx::query(
        "UPDATE fix_proposals SET status = 'EXECUTED', decided_by_id = $1, decided_by_name = $2, \
           decided_at = $3, decision_comment = $4 \
         WHERE proposal_id = $5 AND status = 'PENDING' AND stale_reason IS NULL AND expires_at > $3 \
           AND proposer_id <> $1 AND EXISTS (SELECT 1 FROM discrepancies d \
             WHERE d.discrepancy_id = fix_proposals.discrepancy_id AND d.status <> 'CLOSED')",
    )
    .bind(&actor.id)
    .bind(&actor.username)
    .bind(now)
    .bind(comment)
    .bind(id)
    .execute(&mut *tx)
    .await;
    let decided = match decided {
        Ok(d) => d.rows_affected(),
        Err(e) => {
            drop(tx);
            if store::is_retryable(&e) {
                // Another decision holds the proposal right now: its
                // outcome decides; nothing was done here.
                return Err(AppError::Refused {
                    detail:
                        "the database was busy with another decision on this proposal; look again"
                            .into(),
                });
            }
            return Err(internal(e));
        }
    };
    if decided == 0 {
        drop(tx);
        let why = refusal(desk, actor, id, now).await;
        tracing::warn!(proposal = id, by = %actor.username, refusal = %why, "approval refused");
        return Err(why);
    }
    let p = proposal(&mut *tx, id, now)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let result = match execute(desk, &mut tx, actor, &p, comment, now).await {
        Ok(r) => r,
        Err(NotExecuted::Db(e)) => return Err(internal(e)),
        Err(NotExecuted::Stale(reason)) => {
            drop(tx);
            record_not_executed(desk, actor, &p, comment, true, &reason).await?;
            return Err(AppError::ProposalStale { reason });
        }
        Err(NotExecuted::Failed(detail)) => {
            drop(tx);
            record_not_executed(desk, actor, &p, comment, false, &detail).await?;
            return Err(AppError::Refused { detail });
        }
    };
    tx.commit().await.map_err(internal)?;
    desk.engine.wake_workers();
    tracing::info!(proposal = id, kind = %p.kind, by = %actor.username, "fix executed");
    Ok(result)
}

/// A stale proposal goes back to the queue marked stale; a failed one is
/// closed as FAILED. Either way the ticket is worked again, and the audit
/// log says so.
async fn record_not_executed(
    desk: &Desk,
    actor: &User,
    p: &app::tickets::Proposal,
    comment: &str,
    stale: bool,
    why: &str,
) -> Result<(), AppError> {
    retrying(|| async {
        let now = desk.now();
        let mut tx = desk.engine.db.begin_write().await?;
        if stale {
            sqlx::query(
                "UPDATE fix_proposals SET stale_reason = $1 WHERE proposal_id = $2 AND status = 'PENDING'",
            )
            .bind(why)
            .bind(&p.id)
            .execute(&mut *tx)
            .await?;
        } else {
            sqlx::query(
                "UPDATE fix_proposals SET status = 'FAILED', result = $1, decided_by_id = $2, decided_by_name = $3, \
                   decided_at = $4, decision_comment = $5 WHERE proposal_id = $6 AND status = 'PENDING'",
            )
            .bind(why)
            .bind(&actor.id)
            .bind(&actor.username)
            .bind(now)
            .bind(comment)
            .bind(&p.id)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "UPDATE discrepancies SET status = 'IN_PROGRESS', updated_at = $1 \
                 WHERE discrepancy_id = $2 AND status = 'AWAITING_APPROVAL'",
            )
            .bind(now)
            .bind(&p.ticket_id)
            .execute(&mut *tx)
            .await?;
        }
        insert_note(
            &mut tx,
            &p.ticket_id,
            "action",
            &format!(
                "{} {}: {why}",
                p.kind,
                if stale { "not executed, stale" } else { "failed" }
            ),
            None,
            &actor.username,
            now,
        )
        .await?;
        audit::append(
            &mut tx,
            &desk.engine.db.audit,
            &audit::Entry {
                actor: actor.username.clone(),
                action: "fix.fail",
                object_type: "proposal",
                object_id: p.id.clone(),
                before: None,
                after: Some(json!({ "stale": stale, "why": why, "comment": comment })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

/// The approval's audit entry, the fix itself, the ticket closed: all in
/// the approving transaction.
async fn execute(
    desk: &Desk,
    tx: &mut AnyConnection,
    actor: &User,
    p: &app::tickets::Proposal,
    comment: &str,
    now: i64,
) -> Result<ActionResult, NotExecuted> {
    audit::append(
        &mut *tx,
        &desk.engine.db.audit,
        &audit::Entry {
            actor: actor.username.clone(),
            action: "fix.approve",
            object_type: "proposal",
            object_id: p.id.clone(),
            before: Some(json!({ "status": "PENDING", "proposer": p.proposer })),
            after: Some(json!({ "status": "APPROVED", "comment": comment })),
        },
        now,
    )
    .await?;
    let (version, before, after): (Option<i64>, Value, Value) = sqlx::query_as::<
        _,
        (Option<i64>, String, String),
    >(
        "SELECT payment_version, before_json, after_json FROM fix_proposals WHERE proposal_id = $1",
    )
    .bind(&p.id)
    .fetch_one(&mut *tx)
    .await
    .map(|(v, b, a)| {
        let json = |t: &str| serde_json::from_str(t).unwrap_or(Value::Null);
        (v, json(&b), json(&a))
    })?;
    // The payment as it was proposed, or refuse: a conditional statement
    // that also locks the row (PostgreSQL) for the rest of the transaction.
    // Its version and its hold (a row of its own, which does not move the
    // version) as the proposal saw them.
    if let Some(no) = &p.payment_no {
        match version {
            Some(v) => {
                let held_then = hold_seen(&before, no);
                let same = sqlx::query(
                    "UPDATE payments SET version = version WHERE payment_no = $1 AND version = $2 \
                       AND (SELECT reason FROM payment_holds WHERE payment_no = $1) IS NOT DISTINCT FROM $3",
                )
                .bind(no)
                .bind(v)
                .bind(held_then)
                .execute(&mut *tx)
                .await?;
                if same.rows_affected() == 0 {
                    let current: Option<(i64, Option<String>)> = sqlx::query_as(&format!(
                        "SELECT version, {} FROM payments WHERE payment_no = $1",
                        payments::HOLD_REASON
                    ))
                    .bind(no)
                    .fetch_optional(&mut *tx)
                    .await?;
                    return Err(NotExecuted::Stale(match current {
                        Some((n, held)) => changed_since(no, (n, held.as_deref()), (v, held_then))
                            .unwrap_or_else(|| format!("payment {no} changed since the proposal")),
                        None => format!("payment {no} no longer exists"),
                    }));
                }
            }
            None => {
                if payments::get(&mut *tx, no).await?.is_some() {
                    return Err(NotExecuted::Stale(format!(
                        "payment {no} exists now; the proposal was to create it"
                    )));
                }
            }
        }
    }
    let sinks = desk.engine.sink_names();
    let evidence = format!("proposal {}", p.id);
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let outcome_for =
        |b: &PaymentBrief, target: PaymentStatus, minor: i64| -> Result<Outcome, NotExecuted> {
            let currency =
                Currency::parse(&b.currency).map_err(|e| NotExecuted::Failed(e.to_string()))?;
            Ok(Outcome {
                payment_no: PaymentNo::parse(&b.payment_no)
                    .map_err(|e| NotExecuted::Failed(e.to_string()))?,
                provider: crate::domain::ProviderName::parse(&b.provider)
                    .map_err(|e| NotExecuted::Failed(e.to_string()))?,
                provider_txn_id: b
                    .provider_txn_id
                    .as_deref()
                    .and_then(|t| ProviderTxnId::parse(t).ok()),
                target,
                money: Money::new(minor, currency),
                source: Source::ManualFix,
                evidence: evidence.clone(),
                trace_id: trace_id.clone(),
            })
        };
    let expect_moved = |a: Applied| -> Result<String, NotExecuted> {
        match a {
            Applied::Moved { .. } => Ok(describe(&a)),
            other => Err(NotExecuted::Failed(describe(&other))),
        }
    };
    let mut done: Vec<String> = Vec::new();
    match p.kind {
        FixKind::Backfill => {
            let no = p.payment_no.clone().unwrap_or_default();
            let minor = after["amount_minor"].as_i64().unwrap_or_default();
            let currency = after["currency"].as_str().unwrap_or_default().to_owned();
            let txn = after["provider_txn_id"].as_str().map(str::to_owned);
            let ticket = ticket_row(&mut *tx, &p.ticket_id)
                .await?
                .ok_or_else(|| NotExecuted::Failed("ticket vanished".into()))?;
            if version.is_none() {
                let order_no = after["order_no"].as_str().unwrap_or_default().to_owned();
                let (attempt_no,): (i64,) = sqlx::query_as(
                    "SELECT COALESCE(MAX(attempt_no), 0) + 1 FROM payments WHERE order_no = $1",
                )
                .bind(&order_no)
                .fetch_one(&mut *tx)
                .await?;
                payments::insert(
                    &mut *tx,
                    &payments::NewPayment {
                        payment_no: &no,
                        order_no: &order_no,
                        attempt_no,
                        provider: &ticket.provider,
                        amount_minor: minor,
                        currency: &currency,
                        description: Some("backfilled from the provider's statement"),
                        created_by: &format!("fix:{}", p.id),
                        now,
                    },
                )
                .await?;
                sqlx::query("UPDATE discrepancies SET order_no = $1 WHERE discrepancy_id = $2")
                    .bind(&order_no)
                    .bind(&p.ticket_id)
                    .execute(&mut *tx)
                    .await?;
                done.push(format!("created payment {no} for order {order_no}"));
            }
            let b = payment_brief(&mut *tx, &no)
                .await?
                .ok_or_else(|| NotExecuted::Failed("payment missing".into()))?;
            if b.status == "FAILED" {
                // FAILED → PENDING → SUCCEEDED: two steps the state machine
                // allows, each through apply.
                let mut o = outcome_for(&b, PaymentStatus::Pending, minor)?;
                o.provider_txn_id = txn.as_deref().and_then(|t| ProviderTxnId::parse(t).ok());
                let a = apply_in(&mut *tx, desk.engine.db.kind, &sinks, &o, now).await?;
                done.push(expect_moved(a)?);
            }
            let mut o = outcome_for(&b, PaymentStatus::Succeeded, minor)?;
            o.provider_txn_id = txn.as_deref().and_then(|t| ProviderTxnId::parse(t).ok());
            let a = apply_in(&mut *tx, desk.engine.db.kind, &sinks, &o, now).await?;
            done.push(expect_moved(a)?);
        }
        FixKind::ClosePayment => {
            let no = p.payment_no.clone().unwrap_or_default();
            if let Some(reason) = payments::release(&mut *tx, &no, now).await? {
                done.push(format!("hold released ({reason})"));
            }
            let b = payment_brief(&mut *tx, &no)
                .await?
                .ok_or_else(|| NotExecuted::Failed("payment missing".into()))?;
            let o = outcome_for(&b, PaymentStatus::Closed, b.amount_minor)?;
            let a = apply_in(&mut *tx, desk.engine.db.kind, &sinks, &o, now).await?;
            done.push(expect_moved(a)?);
        }
        FixKind::AcceptAmount => {
            let no = p.payment_no.clone().unwrap_or_default();
            let b = payment_brief(&mut *tx, &no)
                .await?
                .ok_or_else(|| NotExecuted::Failed("payment missing".into()))?;
            let accepted = after["amount_minor"].as_i64().unwrap_or_default();
            adjust_amount(tx, &sinks, p, &b, accepted, actor, now).await?;
            done.push(format!(
                "amount {} → {} {} (difference {}) recorded",
                b.amount_minor,
                accepted,
                b.currency,
                accepted - b.amount_minor
            ));
            if after["status"] == "SUCCEEDED" && matches!(b.status.as_str(), "CREATED" | "PENDING")
            {
                let o = outcome_for(&b, PaymentStatus::Succeeded, accepted)?;
                let a = apply_in(&mut *tx, desk.engine.db.kind, &sinks, &o, now).await?;
                done.push(expect_moved(a)?);
            }
        }
        FixKind::Merge => {
            let keep = after["keep"].as_str().unwrap_or_default().to_owned();
            if let Some(reason) = payments::release(&mut *tx, &keep, now).await? {
                done.push(format!("{keep}: hold released ({reason})"));
            }
            for c in after["close"].as_array().cloned().unwrap_or_default() {
                let no = c["payment_no"].as_str().unwrap_or_default();
                let v = c["version"].as_i64();
                let b = payment_brief(&mut *tx, no)
                    .await?
                    .ok_or_else(|| NotExecuted::Failed(format!("payment {no} missing")))?;
                let Some(v) = v else {
                    return Err(NotExecuted::Stale(format!(
                        "payment {no}: the proposal recorded no version of it"
                    )));
                };
                if let Some(why) = changed_since(
                    no,
                    (b.version, b.hold_reason.as_deref()),
                    (v, hold_seen(&before, no)),
                ) {
                    return Err(NotExecuted::Stale(why));
                }
                if let Some(reason) = payments::release(&mut *tx, no, now).await? {
                    done.push(format!("{no}: hold released ({reason})"));
                }
                if b.status != "CLOSED" {
                    let o = outcome_for(&b, PaymentStatus::Closed, b.amount_minor)?;
                    let a = apply_in(&mut *tx, desk.engine.db.kind, &sinks, &o, now).await?;
                    done.push(format!("{no}: {}", expect_moved(a)?));
                }
            }
        }
        FixKind::ReleaseHold => {
            let no = p.payment_no.clone().unwrap_or_default();
            match payments::release(&mut *tx, &no, now).await? {
                Some(reason) => done.push(format!("hold released ({reason})")),
                None => return Err(NotExecuted::Failed(format!("payment {no} is not held"))),
            }
        }
        FixKind::AcceptPayment => {
            // FAILED or CLOSED → SUCCEEDED in one apply: a manual fix is the
            // only source allowed that move (`manual_fix_predecessors`).
            let no = p.payment_no.clone().unwrap_or_default();
            let b = payment_brief(&mut *tx, &no)
                .await?
                .ok_or_else(|| NotExecuted::Failed("payment missing".into()))?;
            // Another attempt may have been paid since the proposal.
            if let Some(paid) = payments::paid_attempt_of(&mut *tx, &b.order_no, &no).await? {
                return Err(NotExecuted::Failed(format!(
                    "order {} is paid by {paid} now: accepting {no} would pay it twice",
                    b.order_no
                )));
            }
            let mut o = outcome_for(&b, PaymentStatus::Succeeded, b.amount_minor)?;
            if let Some(txn) = after["provider_txn_id"].as_str() {
                o.provider_txn_id = ProviderTxnId::parse(txn).ok();
            }
            let a = apply_in(&mut *tx, desk.engine.db.kind, &sinks, &o, now).await?;
            done.push(expect_moved(a)?);
        }
        FixKind::RefundPayment => {
            // Refunded as any refund is (reservation, provider task, ledger)
            // rather than flipped: the provider holds the money, so only its
            // confirmation may say it is given back.
            let no = p.payment_no.clone().unwrap_or_default();
            let payment = payments::get(&mut *tx, &no)
                .await?
                .ok_or_else(|| NotExecuted::Failed("payment missing".into()))?;
            if desk.engine.providers.get(&payment.provider).is_none() {
                // Nobody would ask for the money back: the refund would wait forever.
                return Err(NotExecuted::Failed(format!(
                    "provider {} is not configured",
                    payment.provider
                )));
            }
            let txn = after["provider_txn_id"].as_str();
            let Some((refund_no, prev)) =
                refund_late_success_in(&mut *tx, &payment, txn, &p.id, &trace_id, now).await?
            else {
                return Err(NotExecuted::Failed(format!(
                    "payment {no} is {} (held: {}); only a FAILED or CLOSED payment with nothing refunded can refund its late success",
                    payment.status,
                    payment.hold_reason.as_deref().unwrap_or("no")
                )));
            };
            done.push(format!(
                "refund {refund_no} of {} {} requested from the provider; payment {prev} → REFUNDING",
                payment.amount_minor, payment.currency
            ));
        }
    }
    let summary = done.join("; ");
    sqlx::query("UPDATE fix_proposals SET result = $1 WHERE proposal_id = $2")
        .bind(&summary)
        .bind(&p.id)
        .execute(&mut *tx)
        .await?;
    audit::append(
        &mut *tx,
        &desk.engine.db.audit,
        &audit::Entry {
            actor: actor.username.clone(),
            action: "fix.execute",
            object_type: "payment",
            object_id: p.payment_no.clone().unwrap_or_default(),
            before: serde_json::from_str(&p.before).ok(),
            after: Some(
                json!({ "proposal": p.id, "kind": p.kind, "intended": after, "done": done }),
            ),
        },
        now,
    )
    .await?;
    let conclusion = format!(
        "{} executed ({}); approved by {}: {comment}",
        p.kind, summary, actor.username
    );
    sqlx::query(
        "UPDATE discrepancies SET status = 'CLOSED', conclusion = $1, closed_at = $2, updated_at = $2 \
         WHERE discrepancy_id = $3",
    )
    .bind(&conclusion)
    .bind(now)
    .bind(&p.ticket_id)
    .execute(&mut *tx)
    .await?;
    insert_note(
        &mut *tx,
        &p.ticket_id,
        "conclusion",
        &conclusion,
        None,
        &actor.username,
        now,
    )
    .await?;
    audit::append(
        &mut *tx,
        &desk.engine.db.audit,
        &audit::Entry {
            actor: actor.username.clone(),
            action: "ticket.close",
            object_type: "ticket",
            object_id: p.ticket_id.clone(),
            before: Some(json!({ "status": "AWAITING_APPROVAL" })),
            after: Some(json!({ "status": "CLOSED", "conclusion": conclusion })),
        },
        now,
    )
    .await?;
    Ok(ActionResult {
        class: "executed".into(),
        detail: summary,
    })
}

/// The provider's amount made final: the payment carries it, the original
/// stays in `payment_adjustments`, history and the outbox say so.
async fn adjust_amount(
    tx: &mut AnyConnection,
    sinks: &[String],
    p: &app::tickets::Proposal,
    b: &PaymentBrief,
    accepted: i64,
    actor: &User,
    now: i64,
) -> Result<(), NotExecuted> {
    let changed = sqlx::query(
        "UPDATE payments SET amount_minor = $1, version = version + 1, updated_at = $2 \
         WHERE payment_no = $3 AND version = $4",
    )
    .bind(accepted)
    .bind(now)
    .bind(&b.payment_no)
    .bind(b.version)
    .execute(&mut *tx)
    .await?;
    if changed.rows_affected() == 0 {
        return Err(NotExecuted::Stale(format!(
            "payment {} changed",
            b.payment_no
        )));
    }
    sqlx::query(
        "INSERT INTO payment_adjustments (adjustment_id, payment_no, proposal_id, before_minor, after_minor, \
           difference_minor, currency, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(&b.payment_no)
    .bind(&p.id)
    .bind(b.amount_minor)
    .bind(accepted)
    .bind(accepted - b.amount_minor)
    .bind(&b.currency)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let evidence = format!("proposal {}: amount {} → {accepted}", p.id, b.amount_minor);
    let trace = uuid::Uuid::new_v4().simple().to_string();
    payments::insert_history_many(
        &mut *tx,
        &[payments::HistoryEntry {
            payment_no: &b.payment_no,
            from: &b.status,
            to: &b.status,
            source: Source::ManualFix.as_str(),
            evidence: &evidence,
            trace_id: &trace,
            at: now,
        }],
    )
    .await?;
    let payload = json!({
        "type": "payment.amount_adjusted",
        "payment_no": b.payment_no,
        "order_no": b.order_no,
        "provider": b.provider,
        "before_minor": b.amount_minor,
        "amount_minor": accepted,
        "difference_minor": accepted - b.amount_minor,
        "currency": b.currency,
        "approved_by": actor.username,
        "occurred_at": now,
    })
    .to_string();
    let id = uuid::Uuid::now_v7().to_string();
    outbox::insert_events_many(
        &mut *tx,
        &[outbox::NewEvent {
            message_id: &id,
            aggregate_type: "payment",
            aggregate_id: &b.payment_no,
            event_type: "payment.amount_adjusted",
            payload: &payload,
            now,
        }],
        sinks,
    )
    .await?;
    Ok(())
}

pub async fn reject(desk: &Desk, actor: &User, id: &str, comment: &str) -> Result<(), AppError> {
    let comment = required(comment, "comment")?;
    let result = retrying(|| async {
        let now = desk.now();
        let mut tx = desk.engine.db.begin_write().await?;
        let done = sqlx::query(
            "UPDATE fix_proposals SET status = 'REJECTED', decided_by_id = $1, decided_by_name = $2, \
               decided_at = $3, decision_comment = $4 \
             WHERE proposal_id = $5 AND status = 'PENDING' AND proposer_id <> $1",
        )
        .bind(&actor.id)
        .bind(&actor.username)
        .bind(now)
        .bind(comment)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
        let ticket: String =
            sqlx::query_scalar("SELECT discrepancy_id FROM fix_proposals WHERE proposal_id = $1")
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
        sqlx::query(
            "UPDATE discrepancies SET status = 'IN_PROGRESS', updated_at = $1 \
             WHERE discrepancy_id = $2 AND status = 'AWAITING_APPROVAL'",
        )
        .bind(now)
        .bind(&ticket)
        .execute(&mut *tx)
        .await?;
        insert_note(&mut tx, &ticket, "action", &format!("proposal rejected: {comment}"), None, &actor.username, now)
            .await?;
        audit::append(
            &mut tx,
            &desk.engine.db.audit,
            &audit::Entry {
                actor: actor.username.clone(),
                action: "fix.reject",
                object_type: "proposal",
                object_id: id.to_owned(),
                before: Some(json!({ "status": "PENDING" })),
                after: Some(json!({ "status": "REJECTED", "comment": comment })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    })
    .await?;
    if result {
        Ok(())
    } else {
        Err(refusal(desk, actor, id, desk.now()).await)
    }
}
