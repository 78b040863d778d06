//! A payment's amount changed: the provider's amount two people accepted.
//! The payment carries it, the original stays in `payment_adjustments`,
//! history and the outbox say so — one change, in the caller's transaction.

use super::Source;
use crate::store::Conn;
use crate::store::adjustments::{self, NewAdjustment};
use crate::store::payments::{self, PaymentBrief};
use crate::store::{outbox, sinks::Route};
use serde_json::json;

/// The amount of `payment` (as it was read) made `accepted_minor`, on an
/// approved proposal.
pub struct AmountChange<'a> {
    pub payment: &'a PaymentBrief,
    pub accepted_minor: i64,
    pub proposal_id: &'a str,
    pub approved_by: &'a str,
}

/// Changes the amount inside the caller's transaction if the payment is
/// still at the version it was read at; returns whether it was (nothing is
/// written when it was not). Nothing here commits.
pub async fn change_amount_in(
    conn: &mut Conn,
    sinks: &[Route],
    c: &AmountChange<'_>,
    now: i64,
) -> crate::store::Result<bool> {
    let (b, accepted) = (c.payment, c.accepted_minor);
    if !payments::set_amount(conn, &b.payment_no, b.version, accepted, now).await? {
        return Ok(false);
    }
    adjustments::insert(
        conn,
        &NewAdjustment {
            payment_no: &b.payment_no,
            proposal_id: c.proposal_id,
            before_minor: b.amount_minor,
            after_minor: accepted,
            currency: &b.currency,
            at: now,
        },
    )
    .await?;
    let evidence = format!(
        "proposal {}: amount {} → {accepted}",
        c.proposal_id, b.amount_minor
    );
    let trace = uuid::Uuid::new_v4().simple().to_string();
    payments::insert_history_many(
        &mut *conn,
        &[payments::HistoryEntry {
            payment_no: &b.payment_no,
            from: b.status,
            to: b.status,
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
        "approved_by": c.approved_by,
        "occurred_at": now,
    })
    .to_string();
    let id = uuid::Uuid::now_v7().to_string();
    outbox::insert_events_many(
        &mut *conn,
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
    Ok(true)
}
