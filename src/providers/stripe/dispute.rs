//! Stripe's dispute events: `charge.dispute.created|updated|closed|
//! funds_withdrawn|funds_reinstated`, each carrying the Dispute object
//! (fields as stripe-node's `types/Disputes.d.ts` and the API reference's
//! "The Dispute object" give them: `id`, `amount`, `currency`, `charge`,
//! `payment_intent`, `reason`, `status`, `evidence_details.due_by` — Unix
//! seconds, 0 or null when no answer is possible —, and
//! `balance_transactions`: zero, one or two balance transactions, the funds
//! withdrawn (`reporting_category` `dispute`, a negative `amount`, the
//! dispute fee in `fee`) and reinstated (`dispute_reversal`)).

use super::super::{DisputeMovement, DisputeNotice};
use crate::domain::{CallbackId, Currency, DisputeStatus, Money, ProviderTxnId};
use serde::Deserialize;

/// The events that carry a Dispute.
pub(super) const DISPUTE_EVENTS: [&str; 5] = [
    "charge.dispute.created",
    "charge.dispute.updated",
    "charge.dispute.closed",
    "charge.dispute.funds_withdrawn",
    "charge.dispute.funds_reinstated",
];

#[derive(Deserialize)]
struct Dispute {
    id: String,
    amount: i64,
    currency: String,
    #[serde(default)]
    charge: serde_json::Value,
    #[serde(default)]
    payment_intent: serde_json::Value,
    #[serde(default)]
    reason: Option<String>,
    status: String,
    #[serde(default)]
    evidence_details: Option<EvidenceDetails>,
    #[serde(default)]
    balance_transactions: Vec<Movement>,
}

#[derive(Deserialize)]
struct EvidenceDetails {
    #[serde(default)]
    due_by: Option<i64>,
}

/// A balance transaction of the dispute's.
#[derive(Deserialize)]
struct Movement {
    id: String,
    amount: i64,
    currency: String,
    #[serde(default)]
    fee: i64,
    created: i64,
    #[serde(default)]
    reporting_category: Option<String>,
}

/// Reckon's word for a Dispute's `status`.
pub(super) fn status(word: &str) -> Result<DisputeStatus, String> {
    Ok(match word {
        "warning_needs_response" | "warning_under_review" => DisputeStatus::Inquiry,
        "warning_closed" => DisputeStatus::InquiryClosed,
        "needs_response" => DisputeStatus::Open,
        "under_review" => DisputeStatus::EvidenceSubmitted,
        "won" => DisputeStatus::Won,
        "lost" => DisputeStatus::Lost,
        other => return Err(format!("unknown dispute status {other:?}")),
    })
}

fn id_of(v: &serde_json::Value) -> Option<&str> {
    v.as_str()
        .or_else(|| v["id"].as_str())
        .filter(|s| !s.is_empty())
}

/// A dispute event's Dispute, read; `event_at` is the event's `created`
/// (seconds).
pub(super) fn notice(
    callback_id: CallbackId,
    event_type: &str,
    event_at: i64,
    object: serde_json::Value,
) -> Result<DisputeNotice, String> {
    let d: Dispute = serde_json::from_value(object).map_err(|e| format!("not a Dispute: {e}"))?;
    let currency = Currency::parse(&d.currency).map_err(|e| e.to_string())?;
    // Reckon's Stripe payments are known by their PaymentIntent; a charge
    // made without one is named by the charge.
    let txn = id_of(&d.payment_intent).or_else(|| id_of(&d.charge));
    let movements = d
        .balance_transactions
        .iter()
        .map(|m| {
            let currency = Currency::parse(&m.currency).map_err(|e| format!("{}: {e}", m.id))?;
            let reinstated = match m.reporting_category.as_deref() {
                Some("dispute_reversal") => true,
                Some("dispute") => false,
                _ => m.amount > 0,
            };
            Ok(DisputeMovement {
                id: m.id.clone(),
                reinstated,
                money: Money::new(m.amount.saturating_abs(), currency),
                // A reinstatement gives the fee back (a negative fee).
                fee_minor: m.fee,
                at: m.created.saturating_mul(1_000_000),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(DisputeNotice {
        callback_id,
        event_type: event_type.to_owned(),
        dispute_id: d.id,
        payment_no: None,
        payment_txn_id: txn
            .map(ProviderTxnId::parse)
            .transpose()
            .map_err(|e| e.to_string())?,
        money: Money::new(d.amount, currency),
        reason: d.reason.filter(|r| !r.is_empty()),
        provider_status: d.status.clone(),
        status: status(&d.status)?,
        evidence_due_at: d
            .evidence_details
            .and_then(|e| e.due_by)
            .filter(|&s| s > 0)
            .map(|s| s.saturating_mul(1_000_000)),
        event_at: event_at.saturating_mul(1_000_000),
        movements,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every documented status has its word; an undocumented one is an
    /// error, not a guess.
    #[test]
    fn each_documented_status_is_read() {
        for (word, want) in [
            ("warning_needs_response", DisputeStatus::Inquiry),
            ("warning_under_review", DisputeStatus::Inquiry),
            ("warning_closed", DisputeStatus::InquiryClosed),
            ("needs_response", DisputeStatus::Open),
            ("under_review", DisputeStatus::EvidenceSubmitted),
            ("won", DisputeStatus::Won),
            ("lost", DisputeStatus::Lost),
        ] {
            assert_eq!(status(word), Ok(want), "{word}");
        }
        assert!(status("charge_refunded").is_err());
    }

    /// The funds withdrawn and reinstated are read with their fees, the
    /// due date at microseconds, the PaymentIntent as the transaction.
    #[test]
    fn a_dispute_is_read_with_its_balance_transactions() {
        let object = json!({
            "id": "dp_1", "object": "dispute", "amount": 4200, "currency": "eur",
            "charge": "ch_1", "payment_intent": "pi_1", "reason": "fraudulent",
            "status": "won", "evidence_details": { "due_by": 1_800_000_000, "has_evidence": true },
            "balance_transactions": [
                { "id": "txn_w", "object": "balance_transaction", "amount": -4200, "currency": "eur",
                  "fee": 1500, "created": 1_799_000_000, "reporting_category": "dispute", "type": "adjustment" },
                { "id": "txn_r", "object": "balance_transaction", "amount": 4200, "currency": "eur",
                  "fee": -1500, "created": 1_799_500_000, "reporting_category": "dispute_reversal", "type": "adjustment" }
            ]
        });
        let n = notice(
            CallbackId::parse("evt_1").unwrap(),
            "charge.dispute.closed",
            1_799_600_000,
            object,
        )
        .unwrap();
        assert_eq!(n.dispute_id, "dp_1");
        assert_eq!(n.payment_txn_id.unwrap().as_str(), "pi_1");
        assert_eq!(n.status, DisputeStatus::Won);
        assert_eq!(n.evidence_due_at, Some(1_800_000_000_000_000));
        assert_eq!(n.event_at, 1_799_600_000_000_000);
        assert_eq!(n.movements.len(), 2);
        assert!(!n.movements[0].reinstated && n.movements[1].reinstated);
        assert_eq!(
            (n.movements[0].money.minor, n.movements[0].fee_minor),
            (4200, 1500)
        );
        assert_eq!(n.movements[1].fee_minor, -1500);
    }
}
