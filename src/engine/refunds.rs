//! Refunds: their own rows, their own state machine and a ledger — never a
//! status flip of the payment. A request reserves the amount on the payment
//! with one guarded UPDATE (`amount - refunded - reserved >= requested`),
//! so concurrent partial refunds can never exceed what was paid; the
//! provider is called outside any transaction by the task worker; every
//! provider word about a refund (the call's answer, a status query, a
//! notification) is a [`RefundOutcome`] that goes through
//! [`apply_refund_in`], the only code that moves a refund. It is the refund
//! counterpart of `apply`: a guarded UPDATE, then on one row the payment's
//! reservation, the ledger row, history and outbox message in the same
//! transaction; on none a classification, and facts that disagree open a
//! REFUND_MISMATCH discrepancy and an alert instead of changing anything.

pub use super::refund_outcome::RefundOutcome;
use super::refund_tickets::{disagreement, mismatch, reopen_paid_after_close};
use super::{Engine, Source};
use crate::domain::{
    AlertKind, AlertSeverity, Money, Mover, PaymentNo, PaymentStatus, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use crate::providers::{CallError, RefundRequest, RefundView};
use crate::store;
use crate::store::{alerts, outbox, payments, refunds, tasks, tasks::TaskRow};
use serde_json::json;

/// What `apply_refund` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefundApplied {
    Moved {
        from: RefundStatus,
        to: RefundStatus,
    },
    Duplicate {
        status: RefundStatus,
    },
    OutOfOrder {
        current: RefundStatus,
        target: RefundStatus,
    },
    /// The facts disagree: nothing changed, REFUND_MISMATCH opened.
    Mismatch {
        reason: String,
    },
    /// No such refund here (e.g. made in the provider's own dashboard):
    /// recorded as a discrepancy, never applied.
    Unknown,
}

impl RefundApplied {
    pub fn class(&self) -> &'static str {
        match self {
            RefundApplied::Moved { .. } => "applied",
            RefundApplied::Duplicate { .. } => "duplicate",
            RefundApplied::OutOfOrder { .. } => "out_of_order",
            RefundApplied::Mismatch { .. } => "mismatch",
            RefundApplied::Unknown => "unknown_refund",
        }
    }
}

pub(super) fn decode<T: std::str::FromStr<Err = String>>(s: &str) -> store::Result<T> {
    s.parse().map_err(store::undecodable)
}

/// Moves a refund inside the caller's write transaction. Nothing here
/// commits.
#[tracing::instrument(skip_all, fields(refund_no = ?o.refund_no.as_ref().map(|r| r.as_str()), target = %o.target, source = o.source.as_str(), trace_id = %o.trace_id))]
pub async fn apply_refund_in(
    conn: &mut store::Conn,
    sinks: &[crate::store::sinks::Route],
    o: &RefundOutcome,
    now: i64,
) -> store::Result<RefundApplied> {
    let mut found = match &o.refund_no {
        Some(no) => refunds::get(&mut *conn, no.as_str()).await?,
        None => None,
    };
    if found.is_none()
        && let Some(id) = &o.provider_refund_id
    {
        found = refunds::by_provider_id(&mut *conn, o.provider.as_str(), id.as_str()).await?;
    }
    let Some(r) = found else {
        let reason = "the provider reports a refund Reckon did not request".to_string();
        // Name the payment on the ticket when the provider only named its
        // transaction.
        let mut o = o.clone();
        if o.payment_no.is_none()
            && let Some(txn) = &o.payment_txn_id
            && let Some(p) =
                refunds::payment_of_txn(&mut *conn, o.provider.as_str(), txn.as_str()).await?
        {
            o.payment_no = PaymentNo::parse(&p).ok();
        }
        mismatch(conn, &o, None, "unknown", &reason, now).await?;
        return Ok(RefundApplied::Unknown);
    };
    let payment = payments::get(&mut *conn, &r.payment_no)
        .await?
        .ok_or_else(|| store::inconsistent(format!("refund {} has no payment", r.refund_no)))?;
    let (amount, refunded, reserved) = refunds::balance(&mut *conn, &r.payment_no)
        .await?
        .map(|b| (b.amount_minor, b.refunded_minor, b.reserved_minor))
        .unwrap_or_default();
    if let Some(reason) = disagreement(o, &r, &payment, amount, refunded, reserved) {
        mismatch(conn, o, Some(&r), "mismatch", &reason, now).await?;
        return Ok(RefundApplied::Mismatch { reason });
    }
    let from: RefundStatus = decode(&r.status)?;
    let txn = o.provider_refund_id.as_ref().map(|t| t.as_str());
    let moved = refunds::guarded_move(
        &mut *conn,
        &r.refund_no,
        o.target,
        txn,
        o.error.as_deref(),
        now,
    )
    .await?;
    if !moved {
        let current: RefundStatus = match refunds::get(&mut *conn, &r.refund_no).await? {
            Some(now_row) => decode(&now_row.status)?,
            None => from,
        };
        if let Some(id) = txn {
            refunds::set_provider_id(&mut *conn, &r.refund_no, id, now).await?;
        }
        if current == o.target {
            return Ok(RefundApplied::Duplicate { status: current });
        }
        if current.is_final() && o.target.is_final() {
            let reason = format!(
                "the provider now says {} for refund {}, which is {current}; kept {current}",
                o.target, r.refund_no
            );
            mismatch(conn, o, Some(&r), "contradiction", &reason, now).await?;
            return Ok(RefundApplied::Mismatch { reason });
        }
        return Ok(RefundApplied::OutOfOrder {
            current,
            target: o.target,
        });
    }
    if o.target.is_final() {
        let succeeded = o.target == RefundStatus::Succeeded;
        let (p_from, p_to) =
            refunds::settle_reservation(&mut *conn, &r.payment_no, r.amount_minor, succeeded, now)
                .await?
                .ok_or_else(|| {
                    store::inconsistent(format!(
                        "payment {} holds no reservation for refund {}",
                        r.payment_no, r.refund_no
                    ))
                })?;
        if !succeeded && p_to.may_move(PaymentStatus::Refunding, Mover::LateRefund) {
            // The refund of a late success failed: the provider still holds
            // money for an order Reckon never paid. A person decides again.
            reopen_paid_after_close(conn, o, &r, &payment, p_to, now).await?;
        }
        if p_from != p_to {
            payments::insert_history_many(
                &mut *conn,
                &[payments::HistoryEntry {
                    payment_no: &r.payment_no,
                    from: p_from,
                    to: p_to,
                    source: o.source.as_str(),
                    evidence: &r.refund_no,
                    trace_id: &o.trace_id,
                    at: now,
                }],
            )
            .await?;
        }
        if succeeded {
            refunds::insert_ledger(
                &mut *conn,
                &refunds::LedgerEntry {
                    refund_no: &r.refund_no,
                    payment_no: &r.payment_no,
                    amount_minor: r.amount_minor,
                    currency: &r.currency,
                    source: o.source.as_str(),
                    evidence: &o.evidence,
                    now,
                },
            )
            .await?;
        }
        let event = if succeeded {
            "refund.succeeded"
        } else {
            "refund.failed"
        };
        let payload = json!({
            "type": event,
            "refund_no": r.refund_no,
            "payment_no": r.payment_no,
            "order_no": payment.order_no,
            "provider": r.provider,
            "provider_refund_id": txn.or(r.provider_refund_id.as_deref()),
            "amount_minor": r.amount_minor,
            "currency": r.currency,
            "status": o.target,
            "payment_status": p_to,
            "reason": o.error,
            "occurred_at": now,
            "trace_id": o.trace_id,
        })
        .to_string();
        let message_id = uuid::Uuid::now_v7().to_string();
        outbox::insert_events_many(
            &mut *conn,
            &[outbox::NewEvent {
                message_id: &message_id,
                aggregate_type: "refund",
                aggregate_id: &r.payment_no,
                event_type: event,
                payload: &payload,
                now,
            }],
            sinks,
        )
        .await?;
    }
    tracing::info!(%from, to = %o.target, "refund moved");
    Ok(RefundApplied::Moved { from, to: o.target })
}

/// The refund of a late success two people approved (PAID_AFTER_CLOSE):
/// the whole amount of the FAILED or CLOSED payment reserved, the
/// provider's transaction bound, the refund recorded (REQUESTED) with its
/// task, in the caller's transaction — the task worker then asks the
/// provider and [`apply_refund_in`] settles it as any refund (REFUNDED, one
/// ledger row). The payment never passes through SUCCEEDED, so no
/// ORDER_PAID effect and no `payment.succeeded` message. Keyed on the
/// proposal, so one approval makes one refund. Returns the refund number
/// and the payment's status before, or `None` when the guard refused.
pub async fn refund_late_success_in(
    conn: &mut store::Conn,
    payment: &payments::PaymentRow,
    provider_txn_id: Option<&str>,
    proposal_id: &str,
    trace_id: &str,
    now: i64,
) -> store::Result<Option<(String, PaymentStatus)>> {
    let Some(prev) =
        refunds::reserve_late_success(&mut *conn, &payment.payment_no, provider_txn_id, now)
            .await?
    else {
        return Ok(None);
    };
    let refund_no = format!("RFD{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
    let evidence = format!("proposal {proposal_id}");
    refunds::insert(
        &mut *conn,
        &refunds::NewRefund {
            refund_no: &refund_no,
            payment_no: &payment.payment_no,
            provider: &payment.provider,
            amount_minor: payment.amount_minor,
            currency: &payment.currency,
            idem_scope: "fix",
            idem_key: proposal_id,
            reason: &format!("late success of a {prev} payment given back ({evidence})"),
            requested_by: &format!("fix:{proposal_id}"),
            now,
        },
    )
    .await?;
    payments::insert_history_many(
        &mut *conn,
        &[payments::HistoryEntry {
            payment_no: &payment.payment_no,
            from: prev,
            to: PaymentStatus::Refunding,
            source: Source::ManualFix.as_str(),
            evidence: &evidence,
            trace_id,
            at: now,
        }],
    )
    .await?;
    tasks::schedule_refund(
        &mut *conn,
        tasks::REFUND,
        &payment.payment_no,
        &refund_no,
        now,
        now,
    )
    .await?;
    Ok(Some((refund_no, prev)))
}

impl Engine {
    /// `apply_refund_in` in its own transaction, counted.
    pub async fn apply_refund(&self, o: &RefundOutcome) -> store::Result<RefundApplied> {
        let mut tx = self.db.begin_write().await?;
        let applied = apply_refund_in(&mut tx, &self.sink_names, o, self.now()).await?;
        tx.commit().await?;
        self.count_refund(&applied);
        Ok(applied)
    }

    pub(super) fn count_refund(&self, applied: &RefundApplied) {
        self.metrics.refund(match applied {
            RefundApplied::Moved { to, .. } => match to {
                RefundStatus::Succeeded => "succeeded",
                RefundStatus::Failed => "failed",
                _ => "pending",
            },
            other => other.class(),
        });
        if matches!(applied, RefundApplied::Moved { .. }) {
            self.wake.notify_one();
        }
    }

    /// A refund task: ask the provider to refund, or ask how a refund went.
    /// The clock is read when the task ends, not when its batch began.
    pub(super) async fn run_refund_task(&self, task: &TaskRow) -> store::Result<()> {
        let pool = &self.db.pool;
        let done = |note: Option<String>| async move {
            tasks::close(pool, &task.task_id, "DONE", note.as_deref(), self.now()).await
        };
        let Some(refund_no) = task.refund_no.as_deref() else {
            return done(Some("no refund named".into())).await;
        };
        let Some(r) = refunds::get(pool, refund_no).await? else {
            return done(Some("refund missing".into())).await;
        };
        let status: RefundStatus = decode(&r.status)?;
        if status.is_final() || (task.kind == tasks::REFUND && status != RefundStatus::Requested) {
            return done(None).await;
        }
        let (Some(p), Some(provider)) = (
            payments::get(pool, &r.payment_no).await?,
            self.providers.get(&r.provider).cloned(),
        ) else {
            return done(Some("payment or provider missing".into())).await;
        };
        let currency = crate::domain::Currency::parse(&r.currency)
            .map_err(|e| store::undecodable(e.to_string()))?;
        let ids = (
            RefundNo::parse(&r.refund_no),
            PaymentNo::parse(&r.payment_no),
        );
        let (Ok(refund_no), Ok(payment_no)) = ids else {
            return done(Some("unreadable identifiers".into())).await;
        };
        let payment_txn = p
            .provider_txn_id
            .as_deref()
            .and_then(|t| ProviderTxnId::parse(t).ok());
        let provider_refund_id = r
            .provider_refund_id
            .as_deref()
            .and_then(|t| ProviderRefundId::parse(t).ok());
        let req = RefundRequest {
            refund_no: &refund_no,
            payment_no: &payment_no,
            payment_txn: payment_txn.as_ref(),
            provider_refund_id: provider_refund_id.as_ref(),
            money: Money::new(r.amount_minor, currency),
            payment_total: Money::new(p.amount_minor, currency),
            reason: &r.reason,
        };
        let trace_id = format!("task-{}", task.task_id);
        let outcome = |view: &RefundView, source: Source, error: Option<String>| RefundOutcome {
            provider: provider.name().clone(),
            refund_no: Some(refund_no.clone()),
            provider_refund_id: view.provider_refund_id.clone(),
            payment_no: Some(payment_no.clone()),
            payment_txn_id: None,
            target: view.status,
            money: view.money,
            cumulative: false,
            source,
            evidence: task.task_id.clone(),
            trace_id: trace_id.clone(),
            error,
        };
        let unknown = RefundView {
            provider_refund_id: None,
            status: RefundStatus::Pending,
            money: req.money,
        };
        let refused = |reason: String| {
            let view = RefundView {
                status: RefundStatus::Failed,
                ..unknown.clone()
            };
            (view, Some(reason))
        };

        let Some(refunds) = provider.refunds() else {
            // The merchant refunds at the provider itself (a webhook-only
            // sender); its notification settles the refund.
            let view = RefundView {
                provider_refund_id: None,
                status: RefundStatus::Pending,
                money: req.money,
            };
            self.apply_refund(&outcome(&view, Source::Dispatch, None))
                .await?;
            return done(Some(
                "the merchant refunds at the provider; awaiting its notification".into(),
            ))
            .await;
        };
        // Only the provider's explicit refusal of a refund call fails the
        // refund; anything a query says short of a result, or any doubt
        // about who answered, leaves it pending.
        let (answer, refund_call) = if task.kind == tasks::REFUND {
            (refunds.refund(&req).await, true)
        } else {
            match refunds.query_refund(&req).await {
                // The request never reached the provider (it timed out on
                // the way): ask again — refunds are idempotent on refund_no.
                Err(CallError::NotFound) => (refunds.refund(&req).await, true),
                other => (other, false),
            }
        };
        let now = self.now();
        let (view, error) = match answer {
            Ok(view) => (view, None),
            Err(CallError::Refused(reason)) if refund_call => refused(reason),
            Err(CallError::NotFound) if refund_call => {
                refused("the provider does not know the payment".into())
            }
            // Unknown: never a failure. Ask later.
            Err(e) => (unknown.clone(), Some(e.to_string())),
        };
        let source = if task.kind == tasks::REFUND {
            Source::Dispatch
        } else {
            Source::Query
        };
        let applied = self
            .apply_refund(&outcome(&view, source, error.clone()))
            .await?;
        if view.status.is_final() || matches!(applied, RefundApplied::Mismatch { .. }) {
            return done(error).await;
        }
        // Still pending: the refund query schedule (the status-query one).
        let attempt = if task.kind == tasks::REFUND {
            0
        } else {
            usize::try_from(task.attempts + 1).unwrap_or(usize::MAX)
        };
        match self.settings().query_schedule.get(attempt) {
            Some(delay) if task.kind == tasks::REFUND => {
                tasks::schedule_refund(
                    pool,
                    tasks::REFUND_QUERY,
                    &r.payment_no,
                    &r.refund_no,
                    now + delay,
                    now,
                )
                .await?;
                done(error).await
            }
            Some(delay) => {
                tasks::retry_at(pool, &task.task_id, now + delay, error.as_deref(), now).await
            }
            None => {
                alerts::raise_alert(
                    pool,
                    &alerts::NewAlert {
                        dedupe_key: &format!("refund_queries_exhausted:{}", r.refund_no),
                        kind: AlertKind::RefundQueriesExhausted,
                        severity: AlertSeverity::High,
                        payment_no: Some(&r.payment_no),
                        message: &format!(
                            "refund {} of payment {} still has no result after {} queries; a person must look",
                            r.refund_no,
                            r.payment_no,
                            task.attempts + 1
                        ),
                        trace_id: Some(&trace_id),
                        now,
                    },
                )
                .await?;
                tasks::close(pool, &task.task_id, "EXHAUSTED", error.as_deref(), now).await
            }
        }
    }
}
