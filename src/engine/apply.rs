//! `apply`: the only code that changes a payment's status. Every source of
//! an outcome (callback, status query, replay, manual fix, reconciliation
//! repair) builds an [`Outcome`] and comes here.

use crate::domain::{
    AlertKind, AlertSeverity, Class, Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId,
    Severity,
};
use crate::store::batch::Statements;
use crate::store::{self, Db, DbKind, alerts, outbox, payments, tickets};
use serde::Serialize;
use serde_json::json;

/// Where an outcome came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Callback,
    Query,
    Dispatch,
    Replay,
    ManualFix,
    ReconRepair,
    Merchant,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Callback => "callback",
            Source::Query => "query",
            Source::Dispatch => "dispatch",
            Source::Replay => "replay",
            Source::ManualFix => "manual_fix",
            Source::ReconRepair => "recon_repair",
            Source::Merchant => "merchant",
        }
    }
}

/// A provider's word about one payment, from any source.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub payment_no: PaymentNo,
    pub provider: ProviderName,
    pub provider_txn_id: Option<ProviderTxnId>,
    pub target: PaymentStatus,
    pub money: Money,
    pub source: Source,
    /// What proves it: a callback row id, a query task id, a proposal id.
    pub evidence: String,
    pub trace_id: String,
    /// When the money was taken, if a move to SUCCEEDED is not to take the
    /// time it happens: a manual fix records the provider's own time (its
    /// statement's), so the payment belongs to the business day whose
    /// statement lists it. Every other source says `None`.
    pub paid_at: Option<i64>,
}

/// What `apply` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// The payment moved; its effect and outbox message were written.
    Moved {
        from: PaymentStatus,
        to: PaymentStatus,
    },
    /// Already so, with the same facts: nothing to do.
    Duplicate { status: PaymentStatus },
    /// Not a move the state machine allows from where the payment is.
    OutOfOrder {
        current: PaymentStatus,
        target: PaymentStatus,
    },
    /// The facts disagree (amount, currency, provider, transaction id):
    /// nothing overwritten, a high-severity discrepancy and an alert opened.
    Conflict { reason: String },
    /// The provider reports a success for a payment Reckon holds FAILED or
    /// CLOSED: money taken without an order. State kept; a HIGH
    /// PAID_AFTER_CLOSE ticket and a critical alert opened for two people
    /// to accept or refund it.
    PaidAfterClose { current: PaymentStatus },
    /// No such payment.
    UnknownPayment,
    /// Reconciliation holds the payment until a person decides: nothing
    /// changes (the callback stays stored, to be replayed after release).
    Held { reason: String },
}

impl Applied {
    pub fn class(&self) -> &'static str {
        match self {
            Applied::Moved { .. } => "applied",
            Applied::Duplicate { .. } => "duplicate",
            Applied::OutOfOrder { .. } => "out_of_order",
            Applied::Conflict { .. } => "conflict",
            Applied::PaidAfterClose { .. } => "paid_after_close",
            Applied::UnknownPayment => "unknown_payment",
            Applied::Held { .. } => "held",
        }
    }
}

/// The effect a move produces: unique per payment and type, so it happens once.
fn effect_of(to: PaymentStatus) -> Option<(&'static str, &'static str)> {
    match to {
        PaymentStatus::Succeeded => Some(("ORDER_PAID", "payment.succeeded")),
        PaymentStatus::Failed => Some(("PAYMENT_FAILED", "payment.failed")),
        PaymentStatus::Closed => Some(("PAYMENT_CLOSED", "payment.closed")),
        _ => None,
    }
}

/// One short transaction: the guarded UPDATE, then on one row the effect,
/// outbox message and history; on none, a classification from the row as
/// it now is. `sinks` are the outbox delivery targets.
pub async fn apply(
    db: &Db,
    sinks: &[crate::store::sinks::Route],
    o: &Outcome,
    now: i64,
) -> store::Result<Applied> {
    let mut tx = db.begin_write().await?;
    let applied = apply_in(&mut tx, db.kind, sinks, o, now).await?;
    tx.commit().await?;
    Ok(applied)
}

/// `apply` inside the caller's write transaction (`Db::begin_write`), for
/// group commits: many outcomes, one commit. Nothing here commits.
#[tracing::instrument(skip_all, fields(payment_no = %o.payment_no, target = %o.target, source = o.source.as_str(), trace_id = %o.trace_id))]
pub async fn apply_in(
    conn: &mut store::Conn,
    kind: DbKind,
    sinks: &[crate::store::sinks::Route],
    o: &Outcome,
    now: i64,
) -> store::Result<Applied> {
    // Only two people's approval may take a FAILED or CLOSED payment to
    // SUCCEEDED; a provider's word about one opens a ticket below instead.
    let predecessors = if o.source == Source::ManualFix {
        PaymentStatus::manual_fix_predecessors(o.target)
    } else {
        PaymentStatus::apply_predecessors(o.target)
    };
    let moved = if predecessors.is_empty() {
        None
    } else {
        let m = move_of(o);
        // PostgreSQL aborts the whole transaction on a failed statement;
        // a savepoint keeps the unique-key refusal below recoverable.
        let guarded = if kind == DbKind::Postgres {
            let mut sp = store::savepoint(conn).await?;
            let r = payments::guarded_move(&mut *sp, &m, &predecessors, now).await;
            if r.is_ok() {
                sp.commit().await?;
            } else {
                sp.rollback().await?;
            }
            r
        } else {
            payments::guarded_move(&mut *conn, &m, &predecessors, now).await
        };
        match guarded {
            Ok(moved) => moved,
            // The transaction id is already bound to another payment.
            Err(e) if store::is_unique_violation(&e) => {
                let current = payments::get(&mut *conn, o.payment_no.as_str()).await?;
                let reason = format!(
                    "transaction {} is already bound to another payment",
                    o.provider_txn_id
                        .as_ref()
                        .map(|t| t.as_str())
                        .unwrap_or("-")
                );
                record_conflict(conn, o, current.as_ref(), Class::OneToMany, &reason, now).await?;
                return Ok(Applied::Conflict { reason });
            }
            Err(e) => return Err(e),
        }
    };

    if let Some(moved) = moved {
        let from = moved.prev_status;
        finish_moves(
            conn,
            sinks,
            &[(o, from, moved.order_no.as_str(), moved.version)],
            now,
        )
        .await?;
        tracing::info!(%from, to = %o.target, "payment moved");
        return Ok(Applied::Moved { from, to: o.target });
    }

    let Some(current) = payments::get(&mut *conn, o.payment_no.as_str()).await? else {
        return Ok(Applied::UnknownPayment);
    };
    let status = current.status;

    if let Some((class, reason)) = disagreement(&current, o) {
        record_conflict(conn, o, Some(&current), class, &reason, now).await?;
        return Ok(Applied::Conflict { reason });
    }
    // Before the hold: a hold keeps the payment as it is, but money taken
    // without an order is a person's business now, held or not.
    if o.target == PaymentStatus::Succeeded
        && o.source != Source::ManualFix
        && matches!(status, PaymentStatus::Failed | PaymentStatus::Closed)
    {
        record_paid_after_close(conn, o, &current, now).await?;
        return Ok(Applied::PaidAfterClose { current: status });
    }
    if let Some(reason) = &current.hold_reason
        && status != o.target
    {
        tracing::warn!(%reason, "outcome for a held payment: kept for a person");
        return Ok(Applied::Held {
            reason: reason.clone(),
        });
    }
    // Same facts. Already there (or past it on the refund path): a duplicate.
    let already = status == o.target
        || (o.target == PaymentStatus::Succeeded
            && matches!(status, PaymentStatus::Refunding | PaymentStatus::Refunded));
    if already {
        return Ok(Applied::Duplicate { status });
    }
    let message = format!(
        "out-of-order {} for payment {}: it is {status}, the state machine does not allow {status} -> {}; state kept",
        o.source.as_str(),
        o.payment_no,
        o.target
    );
    alerts::raise_alert(
        &mut *conn,
        &alerts::NewAlert {
            dedupe_key: &format!("out_of_order:{}:{}:{}", o.payment_no, o.target, o.evidence),
            kind: AlertKind::OutOfOrder,
            severity: AlertSeverity::Warning,
            payment_no: Some(o.payment_no.as_str()),
            message: &message,
            trace_id: Some(&o.trace_id),
            now,
        },
    )
    .await?;
    Ok(Applied::OutOfOrder {
        current: status,
        target: o.target,
    })
}

/// The outbox message announcing a move.
fn event_json(o: &Outcome, event: &str, order_no: &str, version: i64, now: i64) -> String {
    json!({
        "type": event,
        "payment_no": o.payment_no,
        "order_no": order_no,
        "provider": o.provider,
        "provider_txn_id": o.provider_txn_id,
        "status": o.target,
        "amount_minor": o.money.minor,
        "currency": o.money.currency.code(),
        "version": version,
        "occurred_at": now,
        "trace_id": o.trace_id,
    })
    .to_string()
}

/// `apply` for a batch, inside the caller's transaction, for the common
/// case: every outcome whose guarded move succeeds is finished here (effect,
/// outbox message, history) with multi-row statements — the same guard, the
/// same unique keys. For the others `None` comes back and the caller runs
/// [`apply_in`] for each, which classifies it. Outcomes must name distinct
/// payments. On error nothing is classified and the caller rolls back.
pub async fn apply_many(
    conn: &mut impl Statements,
    sinks: &[crate::store::sinks::Route],
    outcomes: &[&Outcome],
    now: i64,
) -> store::Result<Vec<Option<Applied>>> {
    let mut results: Vec<Option<Applied>> = vec![None; outcomes.len()];
    let mut moved_rows = Vec::new();
    for target in PaymentStatus::ALL {
        let predecessors = PaymentStatus::apply_predecessors(target);
        // An outcome with a time of its own is left to `apply_in`: the
        // batch's statement stamps the moment of the move.
        let idxs: Vec<usize> = (0..outcomes.len())
            .filter(|&i| outcomes[i].target == target && outcomes[i].paid_at.is_none())
            .collect();
        if idxs.is_empty() || predecessors.is_empty() {
            continue;
        }
        let moves: Vec<payments::Move> = idxs.iter().map(|&i| move_of(outcomes[i])).collect();
        for row in
            payments::guarded_move_many(&mut *conn, target, &moves, &predecessors, now).await?
        {
            let Some(&i) = idxs
                .iter()
                .find(|&&i| outcomes[i].payment_no.as_str() == row.payment_no)
            else {
                continue;
            };
            let from = row.prev_status;
            results[i] = Some(Applied::Moved { from, to: target });
            moved_rows.push((i, from, row));
        }
    }
    let moved: Vec<(&Outcome, PaymentStatus, &str, i64)> = moved_rows
        .iter()
        .map(|(i, from, row)| (outcomes[*i], *from, row.order_no.as_str(), row.version))
        .collect();
    finish_moves(conn, sinks, &moved, now).await?;
    Ok(results)
}

/// The guarded move an outcome asks for.
fn move_of(o: &Outcome) -> payments::Move<'_> {
    payments::Move {
        payment_no: o.payment_no.as_str(),
        provider: o.provider.as_str(),
        provider_txn_id: o.provider_txn_id.as_ref().map(|t| t.as_str()),
        target: o.target,
        amount_minor: o.money.minor,
        currency: o.money.currency.code(),
        paid_at: o.paid_at,
    }
}

/// What follows a move, for each payment that moved: its effect (unique per
/// payment and type), its outbox message with a delivery per sink, and its
/// history row — multi-row statements, in the caller's transaction.
async fn finish_moves(
    conn: &mut impl Statements,
    sinks: &[crate::store::sinks::Route],
    moved: &[(&Outcome, PaymentStatus, &str, i64)],
    now: i64,
) -> store::Result<()> {
    let mut effects = Vec::new();
    let mut events = Vec::new();
    for (o, _, order_no, version) in moved {
        if let Some((effect, event)) = effect_of(o.target) {
            effects.push((o.payment_no.as_str(), effect));
            let payload = event_json(o, event, order_no, *version, now);
            events.push((*o, event, uuid::Uuid::now_v7().to_string(), payload));
        }
    }
    payments::insert_effects(&mut *conn, &effects, now).await?;
    let new_events: Vec<outbox::NewEvent> = events
        .iter()
        .map(|(o, event, id, payload)| outbox::NewEvent {
            message_id: id,
            aggregate_type: "payment",
            aggregate_id: o.payment_no.as_str(),
            event_type: event,
            payload,
            now,
        })
        .collect();
    outbox::insert_events_many(&mut *conn, &new_events, sinks).await?;
    let history: Vec<payments::HistoryEntry> = moved
        .iter()
        .map(|(o, from, _, _)| payments::HistoryEntry {
            payment_no: o.payment_no.as_str(),
            from: *from,
            to: o.target,
            source: o.source.as_str(),
            evidence: &o.evidence,
            trace_id: &o.trace_id,
            at: now,
        })
        .collect();
    payments::insert_history_many(&mut *conn, &history).await
}

/// Which fact differs between the stored payment and the outcome, if any.
fn disagreement(p: &payments::PaymentRow, o: &Outcome) -> Option<(Class, String)> {
    if p.provider != o.provider.as_str() {
        return Some((
            Class::ProviderMismatch,
            format!("provider {} reported payment of {}", o.provider, p.provider),
        ));
    }
    if p.currency != o.money.currency.code() {
        return Some((
            Class::CurrencyMismatch,
            format!(
                "currency {} reported, {} expected",
                o.money.currency, p.currency
            ),
        ));
    }
    if p.amount_minor != o.money.minor {
        return Some((
            Class::AmountMismatch,
            format!(
                "amount {} minor units reported, {} expected",
                o.money.minor, p.amount_minor
            ),
        ));
    }
    match (&p.provider_txn_id, &o.provider_txn_id) {
        (Some(bound), Some(reported)) if bound != reported.as_str() => Some((
            Class::TxnMismatch,
            format!("transaction {reported} reported, payment is bound to {bound}"),
        )),
        _ => None,
    }
}

/// A conflict never changes the payment: it opens a high-severity
/// discrepancy and an alert, once per distinct set of facts.
async fn record_conflict(
    conn: &mut store::Conn,
    o: &Outcome,
    current: Option<&payments::PaymentRow>,
    class: Class,
    reason: &str,
    now: i64,
) -> store::Result<()> {
    let txn = o.provider_txn_id.as_ref().map(|t| t.as_str());
    let key = format!(
        "{class}:{}:{}:{}:{}:{}",
        o.payment_no,
        txn.unwrap_or("-"),
        o.money.minor,
        o.money.currency,
        o.target
    );
    let details = json!({
        "reason": reason,
        "source": o.source,
        "evidence": o.evidence,
        "reported_status": o.target,
    })
    .to_string();
    tickets::open_with_alert(
        conn,
        &tickets::NewDiscrepancy {
            dedupe_key: &key,
            class,
            severity: Severity::High,
            provider: o.provider.as_str(),
            payment_no: Some(o.payment_no.as_str()),
            provider_txn_id: txn,
            trace_id: Some(&o.trace_id),
            local: current.map(|c| (c.amount_minor, c.currency.as_str(), c.status.as_str())),
            provider_side: Some((o.money.minor, o.money.currency.code(), o.target.as_str())),
            source: o.source.as_str(),
            details: &details,
            now,
        },
        AlertKind::Conflict,
        &format!("conflicting outcome for payment {}: {reason}", o.payment_no),
    )
    .await
}

/// A verified success for a payment Reckon holds FAILED or CLOSED: the
/// payment is kept as it is (nothing automatic moves it to SUCCEEDED), a
/// HIGH PAID_AFTER_CLOSE ticket with both sides' facts and a critical alert
/// are opened, once per payment and transaction however often the
/// provider repeats itself (the evidence is the first report's).
async fn record_paid_after_close(
    conn: &mut store::Conn,
    o: &Outcome,
    current: &payments::PaymentRow,
    now: i64,
) -> store::Result<()> {
    let txn = o
        .provider_txn_id
        .as_ref()
        .map(|t| t.as_str())
        .or(current.provider_txn_id.as_deref());
    let key = format!(
        "PAID_AFTER_CLOSE:{}:{}:{}:{}",
        o.payment_no,
        txn.unwrap_or("-"),
        o.money.minor,
        o.money.currency
    );
    let reason = format!(
        "the provider reports payment {} SUCCEEDED, Reckon holds it {}: money taken without an order",
        o.payment_no, current.status
    );
    let details = json!({
        "reason": reason,
        "source": o.source,
        "evidence": o.evidence,
        "reported_status": o.target,
        "local_status": current.status,
        "order_no": current.order_no,
    })
    .to_string();
    tickets::open_with_alert(
        conn,
        &tickets::NewDiscrepancy {
            dedupe_key: &key,
            class: Class::PaidAfterClose,
            severity: Severity::High,
            provider: o.provider.as_str(),
            payment_no: Some(o.payment_no.as_str()),
            provider_txn_id: txn,
            trace_id: Some(&o.trace_id),
            local: Some((
                current.amount_minor,
                current.currency.as_str(),
                current.status.as_str(),
            )),
            provider_side: Some((o.money.minor, o.money.currency.code(), o.target.as_str())),
            source: o.source.as_str(),
            details: &details,
            now,
        },
        AlertKind::PaidAfterClose,
        &format!("{reason}; a PAID_AFTER_CLOSE ticket is open: accept or refund it"),
    )
    .await
}
