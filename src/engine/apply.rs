//! `apply`: the only code that changes a payment's status. Every source of
//! an outcome (callback, status query, replay, manual fix, reconciliation
//! repair) builds an [`Outcome`] and comes here.

use crate::domain::{Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId};
use crate::store::{self, Db, incidents, outbox, payments};
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
    /// No such payment.
    UnknownPayment,
}

impl Applied {
    pub fn class(&self) -> &'static str {
        match self {
            Applied::Moved { .. } => "applied",
            Applied::Duplicate { .. } => "duplicate",
            Applied::OutOfOrder { .. } => "out_of_order",
            Applied::Conflict { .. } => "conflict",
            Applied::UnknownPayment => "unknown_payment",
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
#[tracing::instrument(skip_all, fields(payment_no = %o.payment_no, target = %o.target, source = o.source.as_str(), trace_id = %o.trace_id))]
pub async fn apply(db: &Db, sinks: &[String], o: &Outcome, now: i64) -> sqlx::Result<Applied> {
    let predecessors = PaymentStatus::apply_predecessors(o.target);
    let mut tx = db.begin_write().await?;
    let moved = if predecessors.is_empty() {
        None
    } else {
        let m = payments::Move {
            payment_no: o.payment_no.as_str(),
            provider: o.provider.as_str(),
            provider_txn_id: o.provider_txn_id.as_ref().map(|t| t.as_str()),
            target: o.target,
            amount_minor: o.money.minor,
            currency: o.money.currency.code(),
        };
        match payments::guarded_move(&mut *tx, &m, &predecessors, now).await {
            Ok(moved) => moved,
            // The transaction id is already bound to another payment.
            Err(e) if store::is_unique_violation(&e) => {
                drop(tx);
                return txn_bound_elsewhere(db, o, now).await;
            }
            Err(e) => return Err(e),
        }
    };

    if let Some(moved) = moved {
        let from: PaymentStatus = moved
            .prev_status
            .parse()
            .map_err(|e: String| sqlx::Error::Decode(e.into()))?;
        if let Some((effect, event)) = effect_of(o.target) {
            payments::insert_effect(&mut *tx, o.payment_no.as_str(), effect, now).await?;
            let message_id = uuid::Uuid::now_v7().to_string();
            let payload = json!({
                "type": event,
                "payment_no": o.payment_no,
                "order_no": moved.order_no,
                "provider": o.provider,
                "provider_txn_id": o.provider_txn_id,
                "status": o.target,
                "amount_minor": o.money.minor,
                "currency": o.money.currency.code(),
                "version": moved.version,
                "occurred_at": now,
                "trace_id": o.trace_id,
            })
            .to_string();
            outbox::insert_event(
                &mut *tx,
                &outbox::NewEvent {
                    message_id: &message_id,
                    aggregate_type: "payment",
                    aggregate_id: o.payment_no.as_str(),
                    event_type: event,
                    payload: &payload,
                    now,
                },
            )
            .await?;
            for sink in sinks {
                outbox::insert_delivery(&mut *tx, &message_id, sink, now).await?;
            }
        }
        payments::insert_history(
            &mut *tx,
            &payments::HistoryEntry {
                payment_no: o.payment_no.as_str(),
                from: from.as_str(),
                to: o.target.as_str(),
                source: o.source.as_str(),
                evidence: &o.evidence,
                trace_id: &o.trace_id,
                at: now,
            },
        )
        .await?;
        tx.commit().await?;
        tracing::info!(%from, to = %o.target, "payment moved");
        return Ok(Applied::Moved { from, to: o.target });
    }

    let Some(current) = payments::get(&mut *tx, o.payment_no.as_str()).await? else {
        tx.commit().await?;
        return Ok(Applied::UnknownPayment);
    };
    let status: PaymentStatus = current
        .status
        .parse()
        .map_err(|e: String| sqlx::Error::Decode(e.into()))?;

    if let Some((class, reason)) = disagreement(&current, o) {
        record_conflict(&mut tx, o, Some(&current), class, &reason, now).await?;
        tx.commit().await?;
        return Ok(Applied::Conflict { reason });
    }
    // Same facts. Already there (or past it on the refund path): a duplicate.
    let already = status == o.target
        || (o.target == PaymentStatus::Succeeded
            && matches!(status, PaymentStatus::Refunding | PaymentStatus::Refunded));
    if already {
        tx.commit().await?;
        return Ok(Applied::Duplicate { status });
    }
    let message = format!(
        "out-of-order {} for payment {}: it is {status}, the state machine does not allow {status} -> {}; state kept",
        o.source.as_str(),
        o.payment_no,
        o.target
    );
    incidents::raise_alert(
        &mut *tx,
        &incidents::NewAlert {
            dedupe_key: &format!("out_of_order:{}:{}:{}", o.payment_no, o.target, o.evidence),
            kind: "out_of_order",
            severity: "warning",
            payment_no: Some(o.payment_no.as_str()),
            message: &message,
            trace_id: Some(&o.trace_id),
            now,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(Applied::OutOfOrder {
        current: status,
        target: o.target,
    })
}

/// Which fact differs between the stored payment and the outcome, if any.
fn disagreement(p: &payments::PaymentRow, o: &Outcome) -> Option<(&'static str, String)> {
    if p.provider != o.provider.as_str() {
        return Some((
            "PROVIDER_MISMATCH",
            format!("provider {} reported payment of {}", o.provider, p.provider),
        ));
    }
    if p.currency != o.money.currency.code() {
        return Some((
            "CURRENCY_MISMATCH",
            format!(
                "currency {} reported, {} expected",
                o.money.currency, p.currency
            ),
        ));
    }
    if p.amount_minor != o.money.minor {
        return Some((
            "AMOUNT_MISMATCH",
            format!(
                "amount {} minor units reported, {} expected",
                o.money.minor, p.amount_minor
            ),
        ));
    }
    match (&p.provider_txn_id, &o.provider_txn_id) {
        (Some(bound), Some(reported)) if bound != reported.as_str() => Some((
            "TXN_MISMATCH",
            format!("transaction {reported} reported, payment is bound to {bound}"),
        )),
        _ => None,
    }
}

async fn txn_bound_elsewhere(db: &Db, o: &Outcome, now: i64) -> sqlx::Result<Applied> {
    let reason = format!(
        "transaction {} is already bound to another payment",
        o.provider_txn_id
            .as_ref()
            .map(|t| t.as_str())
            .unwrap_or("-")
    );
    let mut tx = db.begin_write().await?;
    let current = payments::get(&mut *tx, o.payment_no.as_str()).await?;
    record_conflict(&mut tx, o, current.as_ref(), "ONE_TO_MANY", &reason, now).await?;
    tx.commit().await?;
    Ok(Applied::Conflict { reason })
}

/// A conflict never changes the payment: it opens a high-severity
/// discrepancy and an alert, once per distinct set of facts.
async fn record_conflict(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    o: &Outcome,
    current: Option<&payments::PaymentRow>,
    class: &str,
    reason: &str,
    now: i64,
) -> sqlx::Result<()> {
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
    incidents::open_discrepancy(
        &mut **tx,
        &incidents::NewDiscrepancy {
            dedupe_key: &key,
            class,
            severity: "HIGH",
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
    )
    .await?;
    incidents::raise_alert(
        &mut **tx,
        &incidents::NewAlert {
            dedupe_key: &key,
            kind: "conflict",
            severity: "critical",
            payment_no: Some(o.payment_no.as_str()),
            message: &format!("conflicting outcome for payment {}: {reason}", o.payment_no),
            trace_id: Some(&o.trace_id),
            now,
        },
    )
    .await?;
    Ok(())
}
