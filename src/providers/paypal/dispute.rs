//! PayPal's dispute webhooks, `CUSTOMER.DISPUTE.CREATED|UPDATED|RESOLVED`,
//! whose `resource` is the dispute as the Disputes v1 API shows it
//! (developer.paypal.com/api/customer-disputes/v1, "Show dispute
//! details"): `dispute_id`, `create_time`, `update_time`,
//! `disputed_transactions[].seller_transaction_id` (the capture Reckon
//! knows the payment by), `reason`, `status` (OPEN,
//! WAITING_FOR_BUYER_RESPONSE, WAITING_FOR_SELLER_RESPONSE, UNDER_REVIEW,
//! RESOLVED, OTHER), `dispute_life_cycle_stage` (INQUIRY, CHARGEBACK,
//! PRE_ARBITRATION, ARBITRATION), `dispute_amount`,
//! `seller_response_due_date` and, once resolved, `dispute_outcome.
//! outcome_code`.

use super::Amount;
use crate::domain::{CallbackId, DisputeStatus, ProviderTxnId};
use crate::providers::DisputeNotice;
use serde::Deserialize;

pub(super) const DISPUTE_EVENTS: [&str; 3] = [
    "CUSTOMER.DISPUTE.CREATED",
    "CUSTOMER.DISPUTE.UPDATED",
    "CUSTOMER.DISPUTE.RESOLVED",
];

#[derive(Deserialize)]
struct Dispute {
    dispute_id: String,
    #[serde(default)]
    update_time: Option<String>,
    #[serde(default)]
    disputed_transactions: Vec<Transaction>,
    #[serde(default)]
    reason: Option<String>,
    status: String,
    #[serde(default)]
    dispute_life_cycle_stage: Option<String>,
    dispute_amount: Amount,
    #[serde(default)]
    seller_response_due_date: Option<String>,
    #[serde(default)]
    dispute_outcome: Option<Outcome>,
}

#[derive(Deserialize)]
struct Transaction {
    #[serde(default)]
    seller_transaction_id: Option<String>,
}

#[derive(Deserialize)]
struct Outcome {
    outcome_code: String,
}

fn micros(text: &str) -> Result<i64, String> {
    text.trim()
        .parse::<jiff::Timestamp>()
        .map(|t| t.as_microsecond())
        .map_err(|e| format!("time {}: {e}", crate::domain::quote(text)))
}

/// Reckon's word for a dispute's `status` and, resolved, its outcome: the
/// merchant keeps the money when the claim is decided for the seller, the
/// buyer cancels it, it is denied, or PayPal pays the buyer itself
/// (RESOLVED_WITH_PAYOUT); loses it when decided for the buyer or accepted.
fn status(d: &Dispute) -> Result<DisputeStatus, String> {
    let inquiry = d.dispute_life_cycle_stage.as_deref() == Some("INQUIRY");
    Ok(match d.status.as_str() {
        "RESOLVED" => {
            let code = d.dispute_outcome.as_ref().map(|o| o.outcome_code.as_str());
            match code {
                Some(
                    "RESOLVED_SELLER_FAVOUR"
                    | "CANCELED_BY_BUYER"
                    | "DENIED"
                    | "RESOLVED_WITH_PAYOUT",
                ) if inquiry => DisputeStatus::InquiryClosed,
                Some(
                    "RESOLVED_SELLER_FAVOUR"
                    | "CANCELED_BY_BUYER"
                    | "DENIED"
                    | "RESOLVED_WITH_PAYOUT",
                ) => DisputeStatus::Won,
                Some("RESOLVED_BUYER_FAVOUR" | "ACCEPTED") => DisputeStatus::Lost,
                other => {
                    return Err(format!(
                        "a resolved dispute with outcome {other:?}: not one Reckon reads"
                    ));
                }
            }
        }
        "UNDER_REVIEW" | "WAITING_FOR_BUYER_RESPONSE" => DisputeStatus::EvidenceSubmitted,
        "OPEN" | "WAITING_FOR_SELLER_RESPONSE" | "OTHER" if inquiry => DisputeStatus::Inquiry,
        "OPEN" | "WAITING_FOR_SELLER_RESPONSE" | "OTHER" => DisputeStatus::Open,
        other => return Err(format!("unknown dispute status {other:?}")),
    })
}

/// The dispute a verified CUSTOMER.DISPUTE.* event carries; `event_time`
/// is the event's `create_time`.
pub(super) fn notice(
    callback_id: CallbackId,
    event_type: &str,
    event_time: Option<&str>,
    resource: serde_json::Value,
) -> Result<DisputeNotice, String> {
    let d: Dispute = serde_json::from_value(resource).map_err(|e| format!("not a Dispute: {e}"))?;
    let event_at = micros(
        event_time
            .or(d.update_time.as_deref())
            .ok_or("a dispute event without a time")?,
    )?;
    let txn = d
        .disputed_transactions
        .iter()
        .find_map(|t| t.seller_transaction_id.as_deref().filter(|s| !s.is_empty()));
    Ok(DisputeNotice {
        callback_id,
        event_type: event_type.to_owned(),
        payment_no: None,
        payment_txn_id: txn
            .map(ProviderTxnId::parse)
            .transpose()
            .map_err(|e| e.to_string())?,
        money: d.dispute_amount.money()?,
        reason: d.reason.clone().filter(|r| !r.is_empty()),
        provider_status: match &d.dispute_outcome {
            Some(o) => format!("{} ({})", d.status, o.outcome_code),
            None => d.status.clone(),
        },
        status: status(&d)?,
        evidence_due_at: d
            .seller_response_due_date
            .as_deref()
            .map(micros)
            .transpose()?,
        event_at,
        // PayPal's dispute webhook states no balance movement of its own.
        movements: Vec::new(),
        dispute_id: d.dispute_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dispute(status: &str, stage: &str, outcome: Option<&str>) -> serde_json::Value {
        json!({
            "dispute_id": "PP-D-1", "create_time": "2026-11-01T10:00:00.000Z",
            "update_time": "2026-11-02T10:00:00.000Z",
            "disputed_transactions": [{ "seller_transaction_id": "3GG279541U471931P" }],
            "reason": "MERCHANDISE_OR_SERVICE_NOT_RECEIVED", "status": status,
            "dispute_amount": { "currency_code": "USD", "value": "12.34" },
            "dispute_life_cycle_stage": stage,
            "seller_response_due_date": "2026-11-20T10:00:00.000Z",
            "dispute_outcome": outcome.map(|o| json!({ "outcome_code": o })),
        })
    }

    #[test]
    fn statuses_and_outcomes_read_as_reckon_words() {
        let read = |status: &str, stage: &str, outcome: Option<&str>| {
            notice(
                CallbackId::parse("WH-1").unwrap(),
                "CUSTOMER.DISPUTE.UPDATED",
                Some("2026-11-03T00:00:00Z"),
                dispute(status, stage, outcome),
            )
            .map(|n| n.status)
        };
        assert_eq!(read("OPEN", "CHARGEBACK", None), Ok(DisputeStatus::Open));
        assert_eq!(read("OPEN", "INQUIRY", None), Ok(DisputeStatus::Inquiry));
        assert_eq!(
            read("UNDER_REVIEW", "CHARGEBACK", None),
            Ok(DisputeStatus::EvidenceSubmitted)
        );
        assert_eq!(
            read("RESOLVED", "CHARGEBACK", Some("RESOLVED_SELLER_FAVOUR")),
            Ok(DisputeStatus::Won)
        );
        assert_eq!(
            read("RESOLVED", "CHARGEBACK", Some("RESOLVED_BUYER_FAVOUR")),
            Ok(DisputeStatus::Lost)
        );
        assert_eq!(
            read("RESOLVED", "INQUIRY", Some("CANCELED_BY_BUYER")),
            Ok(DisputeStatus::InquiryClosed)
        );
        assert!(read("RESOLVED", "CHARGEBACK", Some("SOMETHING_NEW")).is_err());
        let n = notice(
            CallbackId::parse("WH-1").unwrap(),
            "CUSTOMER.DISPUTE.CREATED",
            Some("2026-11-03T00:00:00Z"),
            dispute("OPEN", "CHARGEBACK", None),
        )
        .unwrap();
        assert_eq!(n.money.minor, 1234);
        assert_eq!(n.payment_txn_id.unwrap().as_str(), "3GG279541U471931P");
        assert!(n.evidence_due_at.is_some());
    }
}
