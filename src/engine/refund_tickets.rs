//! What a provider's word about a refund opens when it disagrees with the
//! refund Reckon holds: which fact disagrees, the REFUND_MISMATCH ticket
//! and alert, and PAID_AFTER_CLOSE again when the refund of a late success
//! failed. Nothing here moves a refund or a payment.

use super::refund_outcome::RefundOutcome;
use crate::domain::{AlertKind, Class, PaymentStatus, Severity};
use crate::store;
use crate::store::{payments, refunds, tickets};
use serde_json::json;

/// Which fact of the outcome disagrees with the refund Reckon holds.
pub(super) fn disagreement(
    o: &RefundOutcome,
    r: &refunds::RefundRow,
    p: &payments::PaymentRow,
    amount: i64,
    refunded: i64,
    reserved: i64,
) -> Option<String> {
    if o.provider.as_str() != r.provider {
        return Some(format!(
            "provider {} reported a refund of {}",
            o.provider, r.provider
        ));
    }
    if let Some(no) = &o.payment_no
        && no.as_str() != r.payment_no
    {
        return Some(format!(
            "refund {} is of payment {}, not {no}",
            r.refund_no, r.payment_no
        ));
    }
    if let (Some(bound), Some(reported)) = (&p.provider_txn_id, &o.payment_txn_id)
        && bound != reported.as_str()
    {
        return Some(format!(
            "the refunded transaction is {reported}, payment {} is bound to {bound}",
            p.payment_no
        ));
    }
    if let (Some(bound), Some(reported)) = (&r.provider_refund_id, &o.provider_refund_id)
        && bound != reported.as_str()
    {
        return Some(format!(
            "provider refund id {reported} reported, {bound} known"
        ));
    }
    if o.money.currency.code() != r.currency {
        return Some(format!(
            "currency {} reported, {} expected",
            o.money.currency, r.currency
        ));
    }
    if o.cumulative {
        // The payment's refunded total: at least this refund, at most all
        // that is refunded or in flight (this one included).
        let (low, high) = (r.amount_minor, (refunded + reserved).min(amount));
        if o.money.minor < low || o.money.minor > high {
            return Some(format!(
                "refunded total {} reported; between {low} and {high} expected",
                o.money.minor
            ));
        }
    } else if o.money.minor != r.amount_minor {
        return Some(format!(
            "amount {} minor units reported, {} expected",
            o.money.minor, r.amount_minor
        ));
    }
    None
}

/// A new PAID_AFTER_CLOSE ticket (and critical alert) for a payment whose
/// late success was to be refunded, when that refund failed: it offers the
/// same two fixes again.
pub(super) async fn reopen_paid_after_close(
    conn: &mut store::Conn,
    o: &RefundOutcome,
    r: &refunds::RefundRow,
    payment: &payments::PaymentRow,
    status: PaymentStatus,
    now: i64,
) -> store::Result<()> {
    let reason = format!(
        "refund {} of the late success of payment {} failed ({}); the provider still holds the money, Reckon holds the payment {status}",
        r.refund_no,
        r.payment_no,
        o.error.as_deref().unwrap_or("no reason given")
    );
    let details = json!({
        "reason": reason,
        "refund_no": r.refund_no,
        "source": o.source,
        "evidence": o.evidence,
        "reported_status": PaymentStatus::Succeeded,
        "local_status": status,
        "order_no": payment.order_no,
    })
    .to_string();
    tickets::open_with_alert(
        conn,
        &tickets::NewDiscrepancy {
            dedupe_key: &format!("PAID_AFTER_CLOSE:refund-failed:{}", r.refund_no),
            class: Class::PaidAfterClose,
            severity: Severity::High,
            provider: &r.provider,
            payment_no: Some(&r.payment_no),
            provider_txn_id: payment.provider_txn_id.as_deref(),
            trace_id: Some(&o.trace_id),
            local: Some((payment.amount_minor, &payment.currency, status.as_str())),
            provider_side: Some((
                payment.amount_minor,
                &payment.currency,
                PaymentStatus::Succeeded.as_str(),
            )),
            source: o.source.as_str(),
            details: &details,
            now,
        },
        AlertKind::PaidAfterClose,
        &format!("{reason}; a PAID_AFTER_CLOSE ticket is open again: accept or refund it"),
    )
    .await
}

/// A REFUND_MISMATCH discrepancy and an alert, once per set of facts.
pub(super) async fn mismatch(
    conn: &mut store::Conn,
    o: &RefundOutcome,
    r: Option<&refunds::RefundRow>,
    what: &str,
    reason: &str,
    now: i64,
) -> store::Result<()> {
    let refund_key = o
        .refund_no
        .as_ref()
        .map(|n| n.as_str())
        .or(o.provider_refund_id.as_ref().map(|i| i.as_str()))
        .unwrap_or("-");
    let key = format!(
        "REFUND_MISMATCH:{what}:{}:{refund_key}:{}:{}:{}",
        o.provider, o.money.minor, o.money.currency, o.target
    );
    let payment_no = r
        .map(|r| r.payment_no.as_str())
        .or(o.payment_no.as_ref().map(|p| p.as_str()));
    let details = json!({
        "reason": reason,
        "refund_no": r.map(|r| r.refund_no.as_str()).or(o.refund_no.as_ref().map(|n| n.as_str())),
        "provider_refund_id": o.provider_refund_id,
        "reported_status": o.target,
        "cumulative": o.cumulative,
        "source": o.source,
        "evidence": o.evidence,
    })
    .to_string();
    tickets::open_with_alert(
        conn,
        &tickets::NewDiscrepancy {
            dedupe_key: &key,
            class: Class::RefundMismatch,
            severity: Severity::High,
            provider: o.provider.as_str(),
            payment_no,
            provider_txn_id: o.payment_txn_id.as_ref().map(|t| t.as_str()),
            trace_id: Some(&o.trace_id),
            local: r.map(|r| (r.amount_minor, r.currency.as_str(), r.status.as_str())),
            provider_side: Some((o.money.minor, o.money.currency.code(), o.target.as_str())),
            source: o.source.as_str(),
            details: &details,
            now,
        },
        AlertKind::RefundMismatch,
        &format!("refund {refund_key} from {}: {reason}", o.provider),
    )
    .await
}
