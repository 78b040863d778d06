//! PayPal (REST: Orders v2, Payments v2, Webhooks v1).
//!
//! Webhooks carry `PAYPAL-TRANSMISSION-ID`, `PAYPAL-TRANSMISSION-TIME`,
//! `PAYPAL-TRANSMISSION-SIG` (base64), `PAYPAL-CERT-URL` and
//! `PAYPAL-AUTH-ALGO` (`SHA256withRSA`). Reckon verifies them itself, as
//! PayPal's "self-verification" and its Java SDK do
//! (`Event.validateReceivedEvent`): the signed text is
//! `"{transmission id}|{transmission time}|{webhook id}|{CRC32 of the raw
//! body, unsigned decimal}"`, the key that of the certificate at
//! PAYPAL-CERT-URL, which is fetched only from PayPal's certificate URLs
//! and checked up to the configured roots (see `cert`). The alternative,
//! posting each webhook back to `/v1/notifications/verify-webhook-signature`,
//! costs a call per webhook and does not work for the simulator's events;
//! it is not used.
//!
//! The merchant creates the order (Reckon registers the payment) with
//! Reckon's payment_no as the purchase unit's `custom_id` — "used to
//! reconcile client transactions with PayPal transactions; appears in
//! transaction and settlement reports" — which PayPal copies onto the
//! capture; a capture without it is not Reckon's (acknowledged). Reckon
//! knows the payment at PayPal by the capture's id.
//! `PAYMENT.CAPTURE.COMPLETED|PENDING|DENIED|DECLINED` carry the capture;
//! its `status` decides, as the status query (`GET
//! /v2/payments/captures/{id}`) reads it: COMPLETED (and PARTIALLY_REFUNDED,
//! REFUNDED: paid, then refunded — the refund ledger's business) →
//! SUCCEEDED, DECLINED/FAILED → FAILED, PENDING → PENDING.
//! `CHECKOUT.ORDER.APPROVED` (not yet captured) moves no payment and is
//! acknowledged; `CUSTOMER.DISPUTE.*` are disputes (`dispute`), moving no
//! payment either.
//!
//! Refunds: `POST /v2/payments/captures/{capture id}/refund`, idempotent on
//! `PayPal-Request-Id` = refund_no, Reckon's refund_no as the refund's
//! `custom_id`; read back with `GET /v2/payments/refunds/{id}`.
//! `PAYMENT.CAPTURE.REFUNDED|REVERSED` carry the Refund (its capture in its
//! `up` link): COMPLETED → SUCCEEDED, FAILED/CANCELLED → FAILED, PENDING →
//! pending. A refund without Reckon's refund_no (the dashboard's, a
//! reversal) becomes a discrepancy.
//!
//! Calls authenticate with an OAuth2 token (`POST /v1/oauth2/token`,
//! client credentials), kept until shortly before it expires.
//!
//! Statements: the Settlement Report (`STL-yyyymmdd…CSV`) from PayPal's
//! SFTP reports, uploaded (see `statement`).
//!
//! Field names and statuses: PayPal's OpenAPI documents
//! (`paypal-rest-api-specifications`: `payments_payment_v2.json` — capture,
//! refund, refund_request — and `notifications_webhooks_v1.json`); the
//! webhook headers and retries: PayPal's "Integrate webhooks" guide.

mod api;
mod cert;
mod config;
mod dispute;
pub mod statement;

pub use config::{KIND, PaypalConfig};

use super::wire::header;
use super::{
    Answer, CallError, Notification, PaymentNotice, Provider, ProviderView, Queries, RefundNotice,
    RefundRequest, RefundView, Refunds, Reply, VerifyByCall, VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use base64::Engine;
use http::HeaderMap;
use rsa::pkcs1v15::Signature;
use rsa::signature::Verifier;
use serde::Deserialize;
use std::sync::Mutex;
use std::time::Instant;

pub struct Paypal {
    name: ProviderName,
    base_url: String,
    client_id: String,
    client_secret: String,
    /// The id PayPal gave the webhook subscription: part of what it signs.
    webhook_id: String,
    certs: cert::Certs,
    http: reqwest::Client,
    /// The OAuth2 access token and when to stop using it.
    token: Mutex<Option<(String, Instant)>>,
}

/// `"value": "12.34", "currency_code": "EUR"`.
#[derive(Clone, Deserialize)]
struct Amount {
    value: String,
    currency_code: String,
}

impl Amount {
    fn money(&self) -> Result<Money, String> {
        let currency = Currency::parse(&self.currency_code).map_err(|e| e.to_string())?;
        Money::parse_major(&self.value, currency).map_err(|e| e.to_string())
    }
}

#[derive(Deserialize)]
struct Link {
    href: String,
    rel: String,
}

/// The fields of a Capture Reckon reads.
#[derive(Deserialize)]
struct Capture {
    id: String,
    status: String,
    amount: Amount,
    #[serde(default)]
    custom_id: Option<String>,
}

/// Reckon's word for a capture's `status`; shared by events and queries.
fn capture_status(status: &str) -> PaymentStatus {
    match status {
        "COMPLETED" | "PARTIALLY_REFUNDED" | "REFUNDED" => PaymentStatus::Succeeded,
        "DECLINED" | "FAILED" => PaymentStatus::Failed,
        _ => PaymentStatus::Pending,
    }
}

impl Capture {
    fn view(&self) -> Result<ProviderView, String> {
        Ok(ProviderView {
            provider_txn_id: Some(ProviderTxnId::parse(&self.id).map_err(|e| e.to_string())?),
            status: Some(capture_status(&self.status)),
            money: self.amount.money()?,
        })
    }
}

/// The fields of a Refund Reckon reads.
#[derive(Deserialize)]
struct PaypalRefund {
    id: String,
    status: String,
    #[serde(default)]
    amount: Option<Amount>,
    #[serde(default)]
    custom_id: Option<String>,
    #[serde(default)]
    links: Vec<Link>,
}

impl PaypalRefund {
    fn status(&self) -> RefundStatus {
        match self.status.as_str() {
            "COMPLETED" => RefundStatus::Succeeded,
            "FAILED" | "CANCELLED" => RefundStatus::Failed,
            _ => RefundStatus::Pending,
        }
    }

    /// The refunded capture: the last segment of the `up` link.
    fn capture_id(&self) -> Option<&str> {
        let up = self.links.iter().find(|l| l.rel == "up")?;
        let (path, id) = up.href.trim_end_matches('/').rsplit_once('/')?;
        path.ends_with("/captures").then_some(id)
    }

    /// `asked`: what was asked, for an answer with no amount
    /// (`Prefer: return=minimal`).
    fn view(&self, asked: Option<Money>) -> Result<RefundView, String> {
        let money = match (&self.amount, asked) {
            (Some(a), _) => a.money()?,
            (None, Some(m)) => m,
            (None, None) => return Err("the refund has no amount".into()),
        };
        Ok(RefundView {
            provider_refund_id: Some(ProviderRefundId::parse(&self.id).map_err(|e| e.to_string())?),
            status: self.status(),
            money,
        })
    }
}

#[derive(Deserialize)]
struct Event {
    id: String,
    event_type: String,
    /// When PayPal made the event (RFC 3339).
    #[serde(default)]
    create_time: Option<String>,
    #[serde(default)]
    resource: serde_json::Value,
}

/// The headers a webhook is verified by.
struct Transmission<'h> {
    id: &'h str,
    time: &'h str,
    signature: Vec<u8>,
    cert_url: &'h str,
}

fn transmission(headers: &HeaderMap) -> Result<Transmission<'_>, VerifyError> {
    let algo = header(headers, "paypal-auth-algo")?;
    if algo != "SHA256withRSA" {
        return Err(VerifyError::MalformedHeader(format!(
            "PAYPAL-AUTH-ALGO {algo:?} is not SHA256withRSA"
        )));
    }
    let sig = header(headers, "paypal-transmission-sig")?;
    let signature = base64::engine::general_purpose::STANDARD
        .decode(sig.trim())
        .map_err(|_| {
            VerifyError::MalformedHeader("PAYPAL-TRANSMISSION-SIG is not base64".into())
        })?;
    Ok(Transmission {
        id: header(headers, "paypal-transmission-id")?,
        time: header(headers, "paypal-transmission-time")?,
        signature,
        cert_url: header(headers, "paypal-cert-url")?,
    })
}

impl Paypal {
    fn new(
        name: ProviderName,
        base_url: &str,
        client_id: String,
        client_secret: String,
        webhook_id: String,
        certs: cert::Certs,
        timeout: std::time::Duration,
    ) -> Paypal {
        Paypal {
            name,
            base_url: base_url.trim_end_matches('/').to_owned(),
            client_id,
            client_secret,
            webhook_id,
            certs,
            http: super::wire::client(timeout),
            token: Mutex::new(None),
        }
    }

    /// What PayPal signs: `id|time|webhook id|crc32(body)`.
    fn signed_text(&self, t: &Transmission<'_>, body: &[u8]) -> String {
        format!(
            "{}|{}|{}|{}",
            t.id,
            t.time,
            self.webhook_id,
            crc32fast::hash(body)
        )
    }

    fn check(
        &self,
        signer: &cert::Signer,
        t: &Transmission<'_>,
        body: &[u8],
        now_secs: i64,
    ) -> Result<(), VerifyError> {
        if !signer.valid_at(now_secs) {
            return Err(VerifyError::Certificate(
                "the signing certificate is expired or not yet valid".into(),
            ));
        }
        let sig =
            Signature::try_from(t.signature.as_slice()).map_err(|_| VerifyError::BadSignature)?;
        signer
            .key
            .verify(self.signed_text(t, body).as_bytes(), &sig)
            .map_err(|_| VerifyError::BadSignature)
    }
}

impl Provider for Paypal {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/json")
    }

    /// With a certificate already fetched and checked only; the engine
    /// verifies through [`Provider::verify_by_call`], which fetches it.
    fn verify(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError> {
        let t = transmission(headers)?;
        self.certs
            .allowed(t.cert_url)
            .map_err(VerifyError::Certificate)?;
        let signer = self.certs.cached(t.cert_url).ok_or_else(|| {
            VerifyError::Certificate("the signing certificate was not fetched yet".into())
        })?;
        self.check(&signer, &t, body, now_secs)
    }

    fn verify_by_call(&self) -> Option<&dyn VerifyByCall> {
        Some(self)
    }

    fn parse(&self, _headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let event: Event =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
        let callback_id = CallbackId::parse(&event.id).map_err(|e| e.to_string())?;
        let ignored = |why: &str| Notification::Ignored {
            callback_id: callback_id.clone(),
            event_type: format!("{}{why}", event.event_type),
        };
        match event.event_type.as_str() {
            "PAYMENT.CAPTURE.COMPLETED"
            | "PAYMENT.CAPTURE.PENDING"
            | "PAYMENT.CAPTURE.DENIED"
            | "PAYMENT.CAPTURE.DECLINED" => {
                let capture: Capture = serde_json::from_value(event.resource)
                    .map_err(|e| format!("not a Capture: {e}"))?;
                let Some(payment_no) = capture.custom_id.as_deref().filter(|c| !c.is_empty())
                else {
                    return Ok(ignored(" (no custom_id)"));
                };
                let status = capture_status(&capture.status);
                Ok(Notification::Payment(PaymentNotice {
                    callback_id,
                    payment_no: PaymentNo::parse(payment_no).map_err(|e| e.to_string())?,
                    provider_txn_id: Some(
                        ProviderTxnId::parse(&capture.id).map_err(|e| e.to_string())?,
                    ),
                    provider_status: capture.status.clone(),
                    status,
                    money: capture.amount.money()?,
                    declined: None,
                }))
            }
            "PAYMENT.CAPTURE.REFUNDED" | "PAYMENT.CAPTURE.REVERSED" => {
                let refund: PaypalRefund = serde_json::from_value(event.resource)
                    .map_err(|e| format!("not a Refund: {e}"))?;
                let money = refund
                    .amount
                    .as_ref()
                    .ok_or("the refund has no amount")?
                    .money()?;
                Ok(Notification::Refund(RefundNotice {
                    callback_id,
                    // Only a refund Reckon asked for carries its refund_no;
                    // anything else there is not one of Reckon's.
                    refund_no: refund
                        .custom_id
                        .as_deref()
                        .and_then(|c| RefundNo::parse(c).ok()),
                    provider_refund_id: Some(
                        ProviderRefundId::parse(&refund.id).map_err(|e| e.to_string())?,
                    ),
                    payment_no: None,
                    payment_txn_id: refund
                        .capture_id()
                        .map(ProviderTxnId::parse)
                        .transpose()
                        .map_err(|e| e.to_string())?,
                    provider_status: refund.status.clone(),
                    status: refund.status(),
                    money,
                    cumulative: false,
                }))
            }
            t if dispute::DISPUTE_EVENTS.contains(&t) => dispute::notice(
                callback_id.clone(),
                t,
                event.create_time.as_deref(),
                event.resource,
            )
            .map(Notification::Dispute),
            _ => Ok(ignored("")),
        }
    }

    /// PayPal redelivers anything not answered 2xx (up to 25 times over
    /// three days).
    fn answer(&self, answer: &Answer) -> Reply {
        Reply::received_or_error(answer)
    }

    fn statement_format(&self) -> Option<crate::statement::Format> {
        Some(statement::FORMAT)
    }

    fn queries(&self) -> Option<&dyn Queries> {
        (!self.client_id.is_empty()).then_some(self as &dyn Queries)
    }

    fn refunds(&self) -> Option<&dyn Refunds> {
        (!self.client_id.is_empty()).then_some(self as &dyn Refunds)
    }
}

#[async_trait::async_trait]
impl VerifyByCall for Paypal {
    async fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<(), VerifyError> {
        let t = transmission(headers)?;
        let signer = self
            .certs
            .signer(t.cert_url, now_secs)
            .await
            .map_err(|e| match e {
                cert::FetchError::Refused(why) => VerifyError::Certificate(why),
                cert::FetchError::Unavailable(why) => VerifyError::Certificate(format!(
                    "the signing certificate could not be fetched ({why}); PayPal will redeliver"
                )),
            })?;
        self.check(&signer, &t, body, now_secs)
    }
}

#[async_trait::async_trait]
impl Queries for Paypal {
    async fn query_payment(
        &self,
        _payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        // PayPal finds a capture by its id only, not by custom_id.
        let Some(txn) = txn else {
            return Err(CallError::Refused(
                "no capture id known yet: PayPal is asked about a capture by its id; the payment waits for its webhook or the settlement report".into(),
            ));
        };
        self.get_capture(txn).await
    }
}

#[async_trait::async_trait]
impl Refunds for Paypal {
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.refund_capture(req).await
    }

    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        match req.provider_refund_id {
            Some(id) => self.get_refund(id, req.money).await,
            // Asked again under the same PayPal-Request-Id, PayPal answers
            // with the refund it made for it.
            None => self.refund_capture(req).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each capture event the adapter reads, as the event and as the status
    /// query of the same capture read it: the two paths agree.
    #[test]
    fn captures_read_alike_by_event_and_query() {
        for (status, want) in [
            ("COMPLETED", PaymentStatus::Succeeded),
            ("PARTIALLY_REFUNDED", PaymentStatus::Succeeded),
            ("DECLINED", PaymentStatus::Failed),
            ("FAILED", PaymentStatus::Failed),
            ("PENDING", PaymentStatus::Pending),
        ] {
            let capture: Capture = serde_json::from_value(serde_json::json!({
                "id": "2GG279541U471931P", "status": status, "custom_id": "PAY1",
                "amount": {"currency_code": "USD", "value": "10.99"}
            }))
            .unwrap();
            let view = capture.view().unwrap();
            assert_eq!(view.status, Some(want), "{status}");
            assert_eq!(view.money.minor, 1099);
        }
    }

    #[test]
    fn a_refund_names_its_capture_by_its_up_link() {
        let refund: PaypalRefund = serde_json::from_value(serde_json::json!({
            "id": "1JU08902781691411", "status": "COMPLETED",
            "amount": {"currency_code": "USD", "value": "10.99"},
            "links": [
                {"href": "https://api.paypal.com/v2/payments/refunds/1JU08902781691411", "rel": "self", "method": "GET"},
                {"href": "https://api.paypal.com/v2/payments/captures/2GG279541U471931P", "rel": "up", "method": "GET"}
            ]
        }))
        .unwrap();
        assert_eq!(refund.capture_id(), Some("2GG279541U471931P"));
        assert_eq!(refund.status(), RefundStatus::Succeeded);
    }

    /// The CRC32 PayPal means is the IEEE one (`java.util.zip.CRC32`),
    /// written as an unsigned decimal.
    #[test]
    fn the_body_checksum_is_crc32_ieee_unsigned() {
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32fast::hash(b"123456789").to_string(), "3421780262");
    }
}
