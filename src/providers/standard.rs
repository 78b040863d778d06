//! Any Standard-Webhooks sender (in-house systems, Svix-based platforms):
//! `webhook-id`, `webhook-timestamp`, `webhook-signature` (`v1,<base64>`
//! entries), HMAC-SHA256 over `{id}.{timestamp}.{body}` keyed with the
//! base64 secret after `whsec_`, 300 s either way. A mapping of JSON
//! pointers reads the payment out of the body. Such a sender has no standard
//! API, so Reckon neither creates payments or refunds through it nor queries
//! it: a missing result waits for reconciliation. Events whose type (at
//! `event_type`) starts with `refund_events` are refunds: `refund_no` names
//! Reckon's refund (registered through the merchant API), `txn_id` the
//! sender's refund id, `payment_txn_id` the refunded transaction.

use super::account::{Account, Kind};
use super::signing::Secret;
use super::{
    Answer, Diagnosis, Notification, PaymentNotice, Provider, RefundNotice, Reply, VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use http::{HeaderMap, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

pub const TOLERANCE_SECS: i64 = 300;

/// Where the payment's facts are in the body (RFC 6901 JSON pointers), and
/// what the sender's status words mean.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct Mapping {
    pub payment_no: String,
    pub txn_id: String,
    pub status: String,
    pub amount: String,
    /// `minor` (an integer of minor units) or `major` (a decimal string).
    pub amount_format: String,
    pub currency: String,
    /// Sender status → CREATED/PENDING/SUCCEEDED/FAILED/CLOSED; others are
    /// acknowledged with no effect.
    pub statuses: BTreeMap<String, String>,
    /// Where the event type is, and the prefix that makes an event a refund
    /// (empty: no refund events).
    pub event_type: String,
    pub refund_events: String,
    pub refund_no: String,
    pub payment_txn_id: String,
    /// Sender refund status → PENDING/SUCCEEDED/FAILED.
    pub refund_statuses: BTreeMap<String, String>,
}

impl Default for Mapping {
    fn default() -> Self {
        Mapping {
            payment_no: "/data/payment_no".into(),
            txn_id: "/data/id".into(),
            status: "/data/status".into(),
            amount: "/data/amount".into(),
            amount_format: "minor".into(),
            currency: "/data/currency".into(),
            statuses: [
                ("succeeded", "SUCCEEDED"),
                ("paid", "SUCCEEDED"),
                ("failed", "FAILED"),
                ("pending", "PENDING"),
                ("processing", "PENDING"),
                ("canceled", "CLOSED"),
                ("cancelled", "CLOSED"),
                ("closed", "CLOSED"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            event_type: "/type".into(),
            refund_events: "refund.".into(),
            refund_no: "/data/refund_no".into(),
            payment_txn_id: "/data/payment_txn_id".into(),
            refund_statuses: [
                ("succeeded", "SUCCEEDED"),
                ("failed", "FAILED"),
                ("canceled", "FAILED"),
                ("cancelled", "FAILED"),
                ("pending", "PENDING"),
                ("processing", "PENDING"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        }
    }
}

impl Mapping {
    fn money(&self, value: &serde_json::Value) -> Result<Money, String> {
        let currency = Currency::parse(&text_at(value, &self.currency, "currency")?)
            .map_err(|e| e.to_string())?;
        let amount = text_at(value, &self.amount, "amount")?;
        if self.amount_format == "major" {
            Money::parse_major(&amount, currency).map_err(|e| e.to_string())
        } else {
            Ok(Money::new(
                amount
                    .parse()
                    .map_err(|_| format!("amount {amount:?} is not minor units"))?,
                currency,
            ))
        }
    }

    fn refund(
        &self,
        value: &serde_json::Value,
        callback_id: CallbackId,
    ) -> Result<Notification, String> {
        let sender_status = text_at(value, &self.status, "status")?;
        let Some(ours) = self.refund_statuses.get(&sender_status) else {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: format!("refund status {sender_status}"),
            });
        };
        let status: RefundStatus = ours.parse()?;
        let opt = |pointer: &str| text_at(value, pointer, "").ok().filter(|s| !s.is_empty());
        Ok(Notification::Refund(RefundNotice {
            callback_id,
            refund_no: opt(&self.refund_no)
                .map(|v| RefundNo::parse(&v))
                .transpose()
                .map_err(|e| e.to_string())?,
            provider_refund_id: opt(&self.txn_id)
                .map(|v| ProviderRefundId::parse(&v))
                .transpose()
                .map_err(|e| e.to_string())?,
            payment_no: opt(&self.payment_no)
                .map(|v| PaymentNo::parse(&v))
                .transpose()
                .map_err(|e| e.to_string())?,
            payment_txn_id: opt(&self.payment_txn_id)
                .map(|v| ProviderTxnId::parse(&v))
                .transpose()
                .map_err(|e| e.to_string())?,
            provider_status: sender_status,
            status,
            money: self.money(value)?,
            cumulative: false,
        }))
    }
}

/// A Standard-Webhooks sender's settings (`kind = "standard_webhooks"`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandardConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// Not used: such a sender has no API Reckon calls.
    pub base_url: String,
    /// The `whsec_…` secret.
    #[serde(default)]
    pub secret: SecretString,
    /// Older secrets still accepted while rotating.
    #[serde(default)]
    pub previous_secrets: Vec<SecretString>,
    /// Secrets no longer accepted, kept only to diagnose a sender still
    /// signing with one (a rotation done on one side only).
    #[serde(default)]
    pub retired_secrets: Vec<SecretString>,
    #[serde(default)]
    pub mapping: Mapping,
    /// As for every kind: a webhook that fails verification but names a
    /// payment makes Reckon ask about it (a sender Reckon cannot ask
    /// leaves it to reconciliation).
    #[serde(default)]
    pub query_on_unverified: bool,
}

/// A sender's days are Reckon's; it has no bill Reckon reads and no
/// payouts a bank names.
pub const KIND: Kind = Kind {
    name: "standard_webhooks",
    statement_zone: None,
    ready_hour: 2,
    payout_names: &[],
    bill_format: None,
};

impl StandardConfig {
    /// Every secret, the current one first.
    pub fn secrets(&self) -> impl Iterator<Item = &SecretString> {
        std::iter::once(&self.secret).chain(&self.previous_secrets)
    }
}

impl Account for StandardConfig {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn query_on_unverified(&self) -> bool {
        self.query_on_unverified
    }

    fn check(&self) -> Result<(), &'static str> {
        if self
            .secrets()
            .all(|s| Secret::parse(s.expose_secret()).is_ok())
        {
            Ok(())
        } else {
            Err(super::signing::WHSEC_HINT)
        }
    }

    fn build(
        &self,
        name: ProviderName,
        _day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String> {
        let secrets = self
            .secrets()
            .map(|s| Secret::parse(s.expose_secret()))
            .collect::<Result<Vec<_>, _>>()?;
        let retired = self
            .retired_secrets
            .iter()
            .map(|s| Secret::parse(s.expose_secret()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(
            StandardWebhooks::new(name, secrets, self.mapping.clone()).with_retired(retired),
        ))
    }
}

pub struct StandardWebhooks {
    name: ProviderName,
    secrets: Vec<Secret>,
    /// For diagnosing refusals only.
    retired: Vec<Secret>,
    mapping: Mapping,
}

impl StandardWebhooks {
    pub fn new(name: ProviderName, secrets: Vec<Secret>, mapping: Mapping) -> StandardWebhooks {
        StandardWebhooks {
            name,
            secrets,
            retired: Vec::new(),
            mapping,
        }
    }

    /// Retired secrets, for diagnosing refusals only.
    pub fn with_retired(self, retired: Vec<Secret>) -> StandardWebhooks {
        StandardWebhooks { retired, ..self }
    }
}

fn text_at(body: &serde_json::Value, pointer: &str, what: &str) -> Result<String, String> {
    match body.pointer(pointer) {
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
        _ => Err(format!("no {what} at {pointer}")),
    }
}

impl Provider for StandardWebhooks {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/json")
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError> {
        let mut last = VerifyError::BadSignature;
        for secret in &self.secrets {
            match super::signing::verify_headers(secret, headers, body, now_secs, TOLERANCE_SECS) {
                Ok(()) => return Ok(()),
                Err(VerifyError::BadSignature) => {}
                Err(other) => last = other,
            }
        }
        Err(last)
    }

    /// `webhook-timestamp` off by more than the tolerance, or a signature
    /// only a retired secret made.
    fn diagnose(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Option<Diagnosis> {
        let ts: i64 = super::wire::header(headers, "webhook-timestamp")
            .ok()?
            .parse()
            .ok()?;
        if let Some(skew) = Diagnosis::skew("webhook-timestamp", ts, now_secs, TOLERANCE_SECS) {
            return Some(skew);
        }
        let n = self.retired.iter().position(|secret| {
            super::signing::verify_headers(secret, headers, body, now_secs, TOLERANCE_SECS).is_ok()
        })?;
        Some(Diagnosis {
            kind: "retired_secret",
            detail: format!(
                "signed with a retired secret only (retired_secrets[{n}]): the sender still \
                 signs with the old secret — rotated on one side only. Roll it at the sender, or \
                 accept the old one again (previous_secrets) until it has"
            ),
        })
    }

    fn parse(&self, headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
        let id = headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("missing webhook-id")?;
        let callback_id = CallbackId::parse(id).map_err(|e| e.to_string())?;
        let m = &self.mapping;
        if !m.refund_events.is_empty()
            && text_at(&value, &m.event_type, "event type")
                .is_ok_and(|t| t.starts_with(&m.refund_events))
        {
            return m.refund(&value, callback_id);
        }
        let sender_status = text_at(&value, &m.status, "status")?;
        let Some(ours) = m.statuses.get(&sender_status) else {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: format!("status {sender_status}"),
            });
        };
        let status: PaymentStatus = ours.parse()?;
        let money = m.money(&value)?;
        let txn = text_at(&value, &m.txn_id, "transaction id").ok();
        Ok(Notification::Payment(PaymentNotice {
            callback_id,
            payment_no: PaymentNo::parse(&text_at(&value, &m.payment_no, "payment_no")?)
                .map_err(|e| e.to_string())?,
            provider_txn_id: txn
                .map(|t| ProviderTxnId::parse(&t))
                .transpose()
                .map_err(|e| e.to_string())?,
            provider_status: sender_status,
            status,
            money,
            declined: None,
        }))
    }

    fn answer(&self, answer: &Answer) -> Reply {
        let status = match answer {
            Answer::Accepted => StatusCode::NO_CONTENT,
            Answer::Unverified(_) => StatusCode::UNAUTHORIZED,
            Answer::Malformed(_) => StatusCode::BAD_REQUEST,
            Answer::UnknownPayment => StatusCode::NOT_FOUND,
            Answer::RetryLater => StatusCode::SERVICE_UNAVAILABLE,
            Answer::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Answer::UnsupportedType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        };
        match answer {
            Answer::Accepted => Reply::empty(status),
            _ => Reply::json(status, &serde_json::json!({ "error": answer.reason() })),
        }
    }
}
