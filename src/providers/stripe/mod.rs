//! Stripe: `Stripe-Signature: t=…,v1=…` over `"{t}.{raw body}"`, HMAC-SHA256
//! keyed with the endpoint secret as-is (`whsec_…` included), hex; any
//! configured secret may match (rotation); 300 s tolerance. Events name the
//! PaymentIntent; Reckon puts its payment_no in the intent's metadata when it
//! creates one, and an event without it is not Reckon's (acknowledged).
//! Mapping, by Stripe's PaymentIntent lifecycle: `succeeded` is the only
//! success and `canceled` the only end without one (→ CLOSED). Everything
//! else is an intent still open → PENDING: `processing`,
//! `requires_action`, `amount_capturable_updated` (requires_capture),
//! `partially_funded`, and `payment_failed` — a declined *attempt*: the
//! intent goes back to `requires_payment_method` and the customer may
//! retry on the same intent, so the decline (its code and message) goes on
//! the payment's timeline and nothing is sent downstream. The status query
//! reads an intent's `status` the same way. `payment_intent.created` says
//! nothing new (acknowledged).
//!
//! Refunds: `POST /v1/refunds` (Idempotency-Key = refund_no, Reckon's
//! refund_no and payment_no in the metadata); `refund.created|updated|failed`
//! events carry each Refund (succeeded → SUCCEEDED, failed/canceled →
//! FAILED, pending/requires_action → pending). `charge.refunded` is the
//! charge's running total and is acknowledged without effect: counting it
//! too would count each refund twice. A refund event without Reckon's
//! refund_no was made elsewhere (the dashboard) and becomes a discrepancy.
//!
//! Disputes: `charge.dispute.created|updated|closed|funds_withdrawn|
//! funds_reinstated` carry the Dispute (`dispute`), read into a dispute
//! notice — its status, evidence due date and the balance transactions of
//! the money taken and given back — that moves no payment.
//!
//! Statements are pulled as the day's balance transactions (`balance`),
//! the day cut in the zone recon reconciles in. Before each pull, the day's
//! events Stripe has not delivered (`GET /v1/events?delivery_success=false`,
//! the kinds above) are taken in as webhooks are (`recon::sweep`).

mod api;
mod balance;
mod config;
mod dispute;
pub mod statement;

pub use config::{KIND, StripeConfig};

use super::{
    Answer, CallError, CreateRequest, Diagnosis, Notification, PaymentNotice, Payments, Provider,
    ProviderView, Queries, RefundNotice, RefundRequest, RefundView, Refunds, Reply, StatementPages,
    Statements, Undelivered, VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use hmac::{Hmac, Mac};
use http::HeaderMap;
use serde::Deserialize;
use sha2::Sha256;
use std::time::Duration;

pub const TOLERANCE_SECS: i64 = 300;

pub struct Stripe {
    name: ProviderName,
    base_url: String,
    /// Endpoint secrets, newest first; any may sign.
    secrets: Vec<String>,
    /// Secrets no longer accepted, only to tell a sender still signing with
    /// one (a rotation done on one side only).
    retired: Vec<String>,
    api_key: String,
    http: reqwest::Client,
    /// Where a business day starts and ends for the statement pull.
    day_zone: jiff::tz::TimeZone,
}

#[derive(Deserialize)]
struct Event {
    id: String,
    #[serde(rename = "type")]
    event_type: String,
    /// Unix seconds: when Stripe made the event.
    #[serde(default)]
    created: i64,
    data: EventData,
}

#[derive(Deserialize)]
struct EventData {
    object: serde_json::Value,
}

/// The fields of a PaymentIntent Reckon reads.
#[derive(Deserialize)]
struct Intent {
    id: String,
    amount: i64,
    currency: String,
    status: String,
    #[serde(default)]
    metadata: std::collections::HashMap<String, String>,
    #[serde(default)]
    last_payment_error: Option<PaymentError>,
}

/// `last_payment_error`: why the latest attempt on an intent failed.
#[derive(Deserialize)]
struct PaymentError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    decline_code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

impl PaymentError {
    /// `card_declined (insufficient_funds): Your card has insufficient funds.`
    fn describe(&self) -> String {
        let mut out = self.code.clone().unwrap_or_else(|| "declined".into());
        if let Some(d) = &self.decline_code {
            out.push_str(&format!(" ({d})"));
        }
        if let Some(m) = &self.message {
            out.push_str(": ");
            out.extend(m.chars().take(300));
        }
        out
    }
}

/// Reckon's word for an intent's `status`; shared by events and queries.
fn intent_status(status: &str) -> PaymentStatus {
    match status {
        "succeeded" => PaymentStatus::Succeeded,
        "canceled" => PaymentStatus::Closed,
        // processing, requires_payment_method (a declined attempt too),
        // requires_confirmation, requires_action, requires_capture: open.
        _ => PaymentStatus::Pending,
    }
}

impl Intent {
    fn money(&self) -> Result<Money, String> {
        // Stripe amounts are already in the currency's smallest unit.
        let currency = Currency::parse(&self.currency).map_err(|e| e.to_string())?;
        Ok(Money::new(self.amount, currency))
    }

    fn view(&self) -> Result<ProviderView, String> {
        Ok(ProviderView {
            provider_txn_id: Some(ProviderTxnId::parse(&self.id).map_err(|e| e.to_string())?),
            status: Some(intent_status(&self.status)),
            money: self.money()?,
        })
    }
}

/// The fields of a Refund Reckon reads.
#[derive(Deserialize)]
struct StripeRefund {
    id: String,
    amount: i64,
    currency: String,
    status: String,
    #[serde(default)]
    payment_intent: Option<String>,
    #[serde(default)]
    metadata: std::collections::HashMap<String, String>,
}

impl StripeRefund {
    fn status(&self) -> RefundStatus {
        match self.status.as_str() {
            "succeeded" => RefundStatus::Succeeded,
            "failed" | "canceled" => RefundStatus::Failed,
            _ => RefundStatus::Pending,
        }
    }

    fn money(&self) -> Result<Money, String> {
        let currency = Currency::parse(&self.currency).map_err(|e| e.to_string())?;
        Ok(Money::new(self.amount, currency))
    }

    fn view(&self) -> Result<RefundView, String> {
        Ok(RefundView {
            provider_refund_id: Some(ProviderRefundId::parse(&self.id).map_err(|e| e.to_string())?),
            status: self.status(),
            money: self.money()?,
        })
    }
}

impl Stripe {
    pub fn new(
        name: ProviderName,
        base_url: &str,
        secrets: Vec<String>,
        api_key: String,
        timeout: Duration,
    ) -> Stripe {
        Stripe {
            name,
            base_url: base_url.trim_end_matches('/').to_owned(),
            secrets,
            retired: Vec::new(),
            api_key,
            http: super::wire::client(timeout),
            day_zone: jiff::tz::TimeZone::UTC,
        }
    }

    /// Retired endpoint secrets, for diagnosing refusals only.
    pub fn with_retired_secrets(self, retired: Vec<String>) -> Stripe {
        Stripe { retired, ..self }
    }

    /// Statements pulled for business days cut in `zone` (UTC otherwise).
    pub fn with_day_zone(self, zone: jiff::tz::TimeZone) -> Stripe {
        Stripe {
            day_zone: zone,
            ..self
        }
    }
}

/// `t=…,v1=…,v1=…` → (t, [v1 signatures]).
fn parse_signature_header(header: &str) -> Result<(String, Vec<String>), VerifyError> {
    let mut t = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => t = Some(value.to_owned()),
            Some(("v1", value)) => v1.push(value.to_owned()),
            Some(_) => {}
            None => {
                return Err(VerifyError::MalformedHeader(
                    "Stripe-Signature is not k=v pairs".into(),
                ));
            }
        }
    }
    let t = t.ok_or_else(|| VerifyError::MalformedHeader("Stripe-Signature has no t=".into()))?;
    if v1.is_empty() {
        return Err(VerifyError::MalformedHeader(
            "Stripe-Signature has no v1=".into(),
        ));
    }
    Ok((t, v1))
}

/// Whether one of `signatures` (hex) is `secret`'s HMAC of `"{t}.{body}"`.
fn signed_with(secret: &str, t: &str, signatures: &[String], body: &[u8]) -> bool {
    signatures.iter().any(|sig| {
        let Ok(expected) = hex::decode(sig) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
        mac.update(t.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    })
}

impl Provider for Stripe {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    /// A report with only `created` (wall-clock times of the zone it was
    /// run in, which the file does not state) is read in the zone this
    /// account's days are cut in: the day it reconciles.
    fn statement_format(&self) -> Option<crate::statement::Format> {
        Some(statement::FORMAT.in_zone(self.day_zone.clone()))
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/json")
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError> {
        let header = headers
            .get("stripe-signature")
            .ok_or(VerifyError::MissingHeader("Stripe-Signature"))?
            .to_str()
            .map_err(|_| VerifyError::MalformedHeader("Stripe-Signature is not text".into()))?;
        let (t, signatures) = parse_signature_header(header)?;
        let ts: i64 = t
            .parse()
            .map_err(|_| VerifyError::MalformedHeader("t= is not a number".into()))?;
        // abs_diff: `now - ts` overflowed for a timestamp near i64::MIN
        // (a panic found writing the fuzz targets).
        if now_secs.abs_diff(ts) > TOLERANCE_SECS.unsigned_abs() {
            return Err(VerifyError::StaleTimestamp {
                tolerance_secs: TOLERANCE_SECS,
            });
        }
        if self
            .secrets
            .iter()
            .any(|secret| signed_with(secret, &t, &signatures, body))
        {
            Ok(())
        } else {
            Err(VerifyError::BadSignature)
        }
    }

    /// `t=` off by more than the tolerance, or a `v1=` that only a retired
    /// secret made.
    fn diagnose(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Option<Diagnosis> {
        let header = headers.get("stripe-signature")?.to_str().ok()?;
        let (t, signatures) = parse_signature_header(header).ok()?;
        if let Some(skew) = Diagnosis::skew("t=", t.parse().ok()?, now_secs, TOLERANCE_SECS) {
            return Some(skew);
        }
        let current = self
            .secrets
            .iter()
            .any(|secret| signed_with(secret, &t, &signatures, body));
        let n = self
            .retired
            .iter()
            .position(|secret| signed_with(secret, &t, &signatures, body))?;
        (!current).then(|| Diagnosis {
            kind: "retired_secret",
            detail: format!(
                "signed with a retired endpoint secret only (retired_secrets[{n}]): the sender \
                 still signs with the old secret — rotated on one side only. Roll the endpoint \
                 secret at Stripe, or accept the old one again (previous_secrets) until it has"
            ),
        })
    }

    fn parse(&self, _headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let event: Event =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
        let callback_id = CallbackId::parse(&event.id).map_err(|e| e.to_string())?;
        if event.event_type.starts_with("refund.") {
            let refund: StripeRefund = serde_json::from_value(event.data.object)
                .map_err(|e| format!("not a Refund: {e}"))?;
            let id = |s: Option<&String>| s.filter(|v| !v.is_empty()).cloned();
            return Ok(Notification::Refund(RefundNotice {
                callback_id,
                refund_no: id(refund.metadata.get("refund_no"))
                    .map(|v| RefundNo::parse(&v))
                    .transpose()
                    .map_err(|e| e.to_string())?,
                provider_refund_id: Some(
                    ProviderRefundId::parse(&refund.id).map_err(|e| e.to_string())?,
                ),
                payment_no: id(refund.metadata.get("payment_no"))
                    .map(|v| PaymentNo::parse(&v))
                    .transpose()
                    .map_err(|e| e.to_string())?,
                payment_txn_id: refund
                    .payment_intent
                    .as_deref()
                    .map(ProviderTxnId::parse)
                    .transpose()
                    .map_err(|e| e.to_string())?,
                provider_status: refund.status.clone(),
                status: refund.status(),
                money: refund.money()?,
                cumulative: false,
            }));
        }
        if dispute::DISPUTE_EVENTS.contains(&event.event_type.as_str()) {
            return dispute::notice(
                callback_id,
                &event.event_type,
                event.created,
                event.data.object,
            )
            .map(Notification::Dispute);
        }
        // The intent events that say something about the money; the state
        // is the intent's own `status`, read as the status query reads it.
        const INTENT_EVENTS: [&str; 7] = [
            "payment_intent.succeeded",
            "payment_intent.processing",
            "payment_intent.requires_action",
            "payment_intent.amount_capturable_updated",
            "payment_intent.partially_funded",
            "payment_intent.payment_failed",
            "payment_intent.canceled",
        ];
        // charge.refunded: see the module notes.
        if !INTENT_EVENTS.contains(&event.event_type.as_str()) {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: event.event_type,
            });
        }
        let intent: Intent = serde_json::from_value(event.data.object)
            .map_err(|e| format!("not a PaymentIntent: {e}"))?;
        let Some(payment_no) = intent.metadata.get("payment_no") else {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: format!("{} (no payment_no in metadata)", event.event_type),
            });
        };
        Ok(Notification::Payment(PaymentNotice {
            callback_id,
            payment_no: PaymentNo::parse(payment_no).map_err(|e| e.to_string())?,
            provider_txn_id: Some(ProviderTxnId::parse(&intent.id).map_err(|e| e.to_string())?),
            provider_status: intent.status.clone(),
            status: intent_status(&intent.status),
            money: intent.money()?,
            declined: (event.event_type == "payment_intent.payment_failed").then(|| {
                intent
                    .last_payment_error
                    .as_ref()
                    .map_or_else(|| "declined".to_owned(), PaymentError::describe)
            }),
        }))
    }

    fn answer(&self, answer: &Answer) -> Reply {
        Reply::received_or_error(answer)
    }

    fn payments(&self) -> Option<&dyn Payments> {
        Some(self)
    }

    fn queries(&self) -> Option<&dyn Queries> {
        Some(self)
    }

    fn refunds(&self) -> Option<&dyn Refunds> {
        Some(self)
    }

    fn statements(&self) -> Option<Statements<'_>> {
        (!self.api_key.is_empty()).then_some(Statements::Pages(self))
    }

    fn undelivered(&self) -> Option<&dyn Undelivered> {
        (!self.api_key.is_empty()).then_some(self as &dyn Undelivered)
    }
}

#[async_trait::async_trait]
impl Undelivered for Stripe {
    async fn undelivered(&self, from: i64, to: i64) -> Result<Vec<Vec<u8>>, CallError> {
        self.undelivered_events(from, to).await
    }
}

#[async_trait::async_trait]
impl Payments for Stripe {
    async fn create_payment(&self, req: &CreateRequest<'_>) -> Result<ProviderView, CallError> {
        self.create_intent(req).await
    }

    async fn close_payment(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<(), CallError> {
        self.cancel_intent(payment_no, txn).await
    }
}

#[async_trait::async_trait]
impl Queries for Stripe {
    async fn query_payment(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        self.retrieve_intent(payment_no, txn).await
    }
}

#[async_trait::async_trait]
impl Refunds for Stripe {
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.create_refund(req).await
    }

    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.retrieve_refund(req).await
    }
}

#[async_trait::async_trait]
impl StatementPages for Stripe {
    fn bill_type(&self) -> &'static str {
        "stripe balance transactions"
    }

    async fn statement_page(
        &self,
        date: &str,
        cursor: Option<&str>,
    ) -> Result<super::StatementPage, CallError> {
        self.balance_page(date, cursor).await
    }

    async fn payout_net(&self, payout_id: &str) -> Result<Option<i64>, CallError> {
        self.settled_by(payout_id).await.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripe() -> Stripe {
        Stripe::new(
            ProviderName::parse("stripe").unwrap(),
            "http://127.0.0.1:9",
            vec!["whsec_x".into()],
            "sk_test".into(),
            Duration::from_secs(1),
        )
    }

    /// An uploaded report without `created_utc` is read on the clocks of
    /// the account's day zone, not refused and not taken for UTC.
    #[test]
    fn a_report_without_created_utc_is_read_in_the_accounts_day_zone() {
        use crate::statement::{fixture, read_all};
        let file = fixture("stripe_itemized_created_local.csv");
        let zone = jiff::tz::TimeZone::get("America/Los_Angeles").unwrap();
        let format = stripe().with_day_zone(zone).statement_format().unwrap();
        let (rows, _) = read_all(format, &file).unwrap();
        // 2026-11-30 23:30 in Los Angeles (PST, UTC-8) is 07:30 the next day.
        assert_eq!(
            rows[0].occurred_at,
            Some(
                jiff::Timestamp::from_second(1_796_110_200)
                    .unwrap()
                    .as_microsecond()
            )
        );
    }

    /// A `t=` near i64::MIN overflowed `now - t` (fuzz/corpus/stripe/
    /// crash-min-timestamp); in a release build `now - 2^63` even passed as
    /// fresh (the wrapped difference is i64::MIN, whose abs() stays negative).
    #[test]
    fn a_timestamp_at_the_ends_of_i64_is_stale_not_a_panic() {
        for t in [i64::MIN, i64::MIN + 1, -9_223_372_035_058_779_008, i64::MAX] {
            let mut headers = HeaderMap::new();
            let value = format!("t={t},v1=00");
            headers.insert("stripe-signature", value.parse().unwrap());
            assert_eq!(
                stripe().verify(&headers, b"{}", 1_795_996_800),
                Err(VerifyError::StaleTimestamp {
                    tolerance_secs: TOLERANCE_SECS
                }),
                "{t}"
            );
        }
    }

    fn event(kind: &str, status: &str) -> Vec<u8> {
        serde_json::json!({
            "id": "evt_1", "object": "event", "type": kind, "pending_webhooks": 1,
            "data": { "object": {
                "id": "pi_1", "object": "payment_intent", "amount": 100, "currency": "usd",
                "status": status, "metadata": { "payment_no": "PAY1" },
                "last_payment_error": if kind == "payment_intent.payment_failed" {
                    serde_json::json!({ "code": "card_declined", "decline_code": "generic_decline", "message": "Declined." })
                } else { serde_json::Value::Null }
            }}
        })
        .to_string()
        .into_bytes()
    }

    /// Each intent event the adapter reads, as the event and as the status
    /// query of the same intent read it: the two paths agree.
    #[test]
    fn events_and_status_queries_read_an_intent_alike() {
        let s = stripe();
        for (kind, status, want) in [
            (
                "payment_intent.succeeded",
                "succeeded",
                PaymentStatus::Succeeded,
            ),
            (
                "payment_intent.processing",
                "processing",
                PaymentStatus::Pending,
            ),
            (
                "payment_intent.requires_action",
                "requires_action",
                PaymentStatus::Pending,
            ),
            (
                "payment_intent.amount_capturable_updated",
                "requires_capture",
                PaymentStatus::Pending,
            ),
            (
                "payment_intent.partially_funded",
                "requires_payment_method",
                PaymentStatus::Pending,
            ),
            (
                "payment_intent.payment_failed",
                "requires_payment_method",
                PaymentStatus::Pending,
            ),
            ("payment_intent.canceled", "canceled", PaymentStatus::Closed),
        ] {
            let body = event(kind, status);
            let Ok(Notification::Payment(n)) = s.parse(&HeaderMap::new(), &body) else {
                panic!("{kind} is a payment event");
            };
            assert_eq!(n.status, want, "{kind}");
            let object =
                serde_json::from_slice::<serde_json::Value>(&body).unwrap()["data"]["object"]
                    .clone();
            assert_eq!(
                Stripe::intent_view(object).unwrap().status,
                Some(want),
                "{status}"
            );
            assert_eq!(
                n.declined.as_deref(),
                (kind == "payment_intent.payment_failed")
                    .then_some("card_declined (generic_decline): Declined."),
                "{kind}"
            );
        }
        for kind in [
            "payment_intent.created",
            "charge.refunded",
            "customer.created",
        ] {
            assert!(matches!(
                s.parse(&HeaderMap::new(), &event(kind, "requires_payment_method")),
                Ok(Notification::Ignored { .. })
            ));
        }
    }

    #[test]
    fn signature_headers_parse() {
        let (t, v) =
            parse_signature_header("t=1492774577,v1=5257a869,v0=6ffbb59b,v1=abcd").unwrap();
        assert_eq!(t, "1492774577");
        assert_eq!(v, ["5257a869", "abcd"]);
        assert!(parse_signature_header("v1=abc").is_err());
        assert!(parse_signature_header("t=1").is_err());
        assert!(parse_signature_header("garbage").is_err());
    }
}
