//! The sandbox provider: Reckon's own test channel. Webhooks are signed
//! Standard-Webhooks style; its API creates, queries and closes payments.
//! The provider itself (run by `reckon sandbox` or in-process for the demo,
//! with chaos knobs) is `crate::sandbox_server`.

mod config;
pub mod statement;

pub use config::{KIND, SandboxConfig};

use super::signing::Secret;
use super::{
    Answer, CallError, CreateRequest, Diagnosis, Notification, PaymentNotice, Payments, Provider,
    ProviderView, Queries, RefundNotice, RefundRequest, RefundView, Refunds, Reply, StatementPages,
    Statements, VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use http::{HeaderMap, StatusCode};
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub const TOLERANCE_SECS: i64 = 300;

pub struct Sandbox {
    name: ProviderName,
    base_url: String,
    secret: Secret,
    http: reqwest::Client,
}

/// The body of a sandbox notification.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Envelope {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub data: PaymentData,
}

/// A payment as the sandbox shows it: in webhooks and in API answers.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PaymentData {
    pub payment_no: String,
    pub txn_id: String,
    /// PENDING, SUCCEEDED, FAILED or CLOSED.
    pub status: String,
    /// Major units, a decimal string ("199.00").
    pub amount: String,
    pub currency: String,
}

/// The body of a sandbox refund notification.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RefundEnvelope {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub data: RefundData,
}

/// A refund as the sandbox shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RefundData {
    /// The merchant's (Reckon's) refund number.
    pub refund_no: String,
    /// The sandbox's own id.
    pub refund_id: String,
    pub payment_no: String,
    /// The refunded payment's transaction.
    pub txn_id: String,
    /// PENDING, SUCCEEDED or FAILED.
    pub status: String,
    /// Major units, a decimal string.
    pub amount: String,
    pub currency: String,
}

impl RefundData {
    fn view(&self) -> Result<RefundView, String> {
        let currency = Currency::parse(&self.currency).map_err(|e| e.to_string())?;
        Ok(RefundView {
            provider_refund_id: Some(
                ProviderRefundId::parse(&self.refund_id).map_err(|e| e.to_string())?,
            ),
            status: refund_status_of(&self.status)?,
            money: Money::parse_major(&self.amount, currency).map_err(|e| e.to_string())?,
        })
    }
}

fn refund_status_of(s: &str) -> Result<RefundStatus, String> {
    match s {
        "PENDING" => Ok(RefundStatus::Pending),
        "SUCCEEDED" => Ok(RefundStatus::Succeeded),
        "FAILED" => Ok(RefundStatus::Failed),
        other => Err(format!("unknown sandbox refund status {other:?}")),
    }
}

impl PaymentData {
    fn view(&self) -> Result<ProviderView, String> {
        let currency = Currency::parse(&self.currency).map_err(|e| e.to_string())?;
        Ok(ProviderView {
            provider_txn_id: Some(ProviderTxnId::parse(&self.txn_id).map_err(|e| e.to_string())?),
            status: Some(status_of(&self.status)?),
            money: Money::parse_major(&self.amount, currency).map_err(|e| e.to_string())?,
        })
    }
}

fn status_of(s: &str) -> Result<PaymentStatus, String> {
    match s {
        "PENDING" => Ok(PaymentStatus::Pending),
        "SUCCEEDED" => Ok(PaymentStatus::Succeeded),
        "FAILED" => Ok(PaymentStatus::Failed),
        "CLOSED" => Ok(PaymentStatus::Closed),
        other => Err(format!("unknown sandbox status {other:?}")),
    }
}

impl Sandbox {
    pub fn new(name: ProviderName, base_url: &str, secret: Secret) -> Sandbox {
        Sandbox {
            name,
            base_url: base_url.trim_end_matches('/').to_owned(),
            secret,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(5))
                .build()
                .expect("an HTTP client"),
        }
    }

    /// Calls that give up after `timeout` (an unknown result) instead of 5 s.
    pub fn with_timeout(self, timeout: Duration) -> Sandbox {
        Sandbox {
            http: super::wire::client(timeout),
            ..self
        }
    }

    async fn call<T: serde::de::DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, CallError> {
        let res = req.send().await.map_err(super::wire::call_error)?;
        let status = res.status();
        if status == StatusCode::NOT_FOUND {
            return Err(CallError::NotFound);
        }
        if status.is_server_error() {
            return Err(CallError::Network(format!("sandbox answered {status}")));
        }
        let body = super::wire::answer(res).await;
        if !status.is_success() {
            let text = String::from_utf8_lossy(body.as_deref().unwrap_or_default()).into_owned();
            return Err(CallError::Refused(format!(
                "{status}: {}",
                text.chars().take(200).collect::<String>()
            )));
        }
        serde_json::from_slice::<T>(&body?)
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))
    }
}

impl Provider for Sandbox {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn statement_format(&self) -> Option<crate::statement::Format> {
        Some(statement::FORMAT)
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/json")
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError> {
        super::signing::verify_headers(&self.secret, headers, body, now_secs, TOLERANCE_SECS)
    }

    /// Standard Webhooks' `webhook-timestamp` off by more than the tolerance.
    fn diagnose(&self, headers: &HeaderMap, _body: &[u8], now_secs: i64) -> Option<Diagnosis> {
        let ts: i64 = super::wire::header(headers, "webhook-timestamp")
            .ok()?
            .parse()
            .ok()?;
        Diagnosis::skew("webhook-timestamp", ts, now_secs, TOLERANCE_SECS)
    }

    fn parse(&self, headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let raw: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
        let event_type = raw["type"].as_str().unwrap_or_default();
        if event_type.starts_with("refund.") {
            let env: RefundEnvelope =
                serde_json::from_value(raw).map_err(|e| format!("unreadable refund: {e}"))?;
            let id = headers
                .get("webhook-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or(&env.id);
            let view = env.data.view()?;
            return Ok(Notification::Refund(RefundNotice {
                callback_id: CallbackId::parse(id).map_err(|e| e.to_string())?,
                refund_no: Some(RefundNo::parse(&env.data.refund_no).map_err(|e| e.to_string())?),
                provider_refund_id: view.provider_refund_id,
                payment_no: Some(
                    PaymentNo::parse(&env.data.payment_no).map_err(|e| e.to_string())?,
                ),
                payment_txn_id: Some(
                    ProviderTxnId::parse(&env.data.txn_id).map_err(|e| e.to_string())?,
                ),
                provider_status: env.data.status.clone(),
                status: view.status,
                money: view.money,
                cumulative: false,
            }));
        }
        let env: Envelope =
            serde_json::from_value(raw).map_err(|e| format!("invalid JSON: {e}"))?;
        // The signed id is the notification's identity.
        let id = headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or(&env.id);
        let callback_id = CallbackId::parse(id).map_err(|e| e.to_string())?;
        if !env.event_type.starts_with("payment.") {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: env.event_type,
            });
        }
        let view = env.data.view()?;
        Ok(Notification::Payment(PaymentNotice {
            callback_id,
            payment_no: PaymentNo::parse(&env.data.payment_no).map_err(|e| e.to_string())?,
            provider_txn_id: view.provider_txn_id,
            provider_status: env.data.status.clone(),
            status: view.status.expect("sandbox statuses are final or pending"),
            money: view.money,
            declined: None,
        }))
    }

    fn answer(&self, answer: &Answer) -> Reply {
        let (status, message) = match answer {
            Answer::Accepted => (StatusCode::OK, "accepted".to_string()),
            Answer::Unverified(e) => (StatusCode::UNAUTHORIZED, e.to_string()),
            Answer::Malformed(e) => (StatusCode::BAD_REQUEST, e.clone()),
            Answer::UnknownPayment => (StatusCode::NOT_FOUND, "unknown payment".into()),
            Answer::RetryLater => (StatusCode::SERVICE_UNAVAILABLE, "try again later".into()),
            Answer::TooLarge(e) => (StatusCode::PAYLOAD_TOO_LARGE, e.clone()),
            Answer::UnsupportedType(e) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, e.clone()),
        };
        let key = if status.is_success() {
            "status"
        } else {
            "error"
        };
        Reply::json(status, &serde_json::json!({ key: message }))
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
        Some(Statements::Pages(self))
    }
}

#[async_trait::async_trait]
impl Payments for Sandbox {
    async fn create_payment(&self, req: &CreateRequest<'_>) -> Result<ProviderView, CallError> {
        let body = serde_json::json!({
            "payment_no": req.payment_no,
            "amount": req.money.major_string(),
            "currency": req.money.currency.code(),
            "description": req.description,
        });
        let data: PaymentData = self
            .call(
                self.http
                    .post(format!("{}/v1/payments", self.base_url))
                    .json(&body),
            )
            .await?;
        data.view().map_err(CallError::Refused)
    }

    async fn close_payment(
        &self,
        payment_no: &PaymentNo,
        _txn: Option<&ProviderTxnId>,
    ) -> Result<(), CallError> {
        self.call::<PaymentData>(
            self.http
                .post(format!("{}/v1/payments/{payment_no}/close", self.base_url)),
        )
        .await
        .map(|_| ())
    }
}

#[async_trait::async_trait]
impl Queries for Sandbox {
    async fn query_payment(
        &self,
        payment_no: &PaymentNo,
        _txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let data: PaymentData = self
            .call(
                self.http
                    .get(format!("{}/v1/payments/{payment_no}", self.base_url)),
            )
            .await?;
        data.view().map_err(CallError::Refused)
    }
}

#[async_trait::async_trait]
impl Refunds for Sandbox {
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        let body = serde_json::json!({
            "refund_no": req.refund_no,
            "payment_no": req.payment_no,
            "amount": req.money.major_string(),
            "currency": req.money.currency.code(),
            "reason": req.reason,
        });
        let data: RefundData = self
            .call(
                self.http
                    .post(format!("{}/v1/refunds", self.base_url))
                    .json(&body),
            )
            .await?;
        data.view().map_err(CallError::Refused)
    }

    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        let data: RefundData = self
            .call(
                self.http
                    .get(format!("{}/v1/refunds/{}", self.base_url, req.refund_no)),
            )
            .await?;
        data.view().map_err(CallError::Refused)
    }
}

#[async_trait::async_trait]
impl StatementPages for Sandbox {
    fn bill_type(&self) -> &'static str {
        "sandbox statement pages"
    }

    async fn statement_page(
        &self,
        date: &str,
        cursor: Option<&str>,
    ) -> Result<super::StatementPage, CallError> {
        let mut req = self
            .http
            .get(format!("{}/v1/statements/{date}", self.base_url));
        if let Some(c) = cursor {
            req = req.query(&[("cursor", c)]);
        }
        let page: serde_json::Value = self.call(req).await?;
        let mut rows = Vec::new();
        for (i, r) in page["rows"].as_array().into_iter().flatten().enumerate() {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            let fields: Vec<String> = [
                "kind",
                "txn_id",
                "payment_no",
                "refund_id",
                "refund_no",
                "status",
                "amount",
                "currency",
                "occurred_at",
            ]
            .iter()
            .map(|k| field(k))
            .collect();
            rows.push(
                statement::row(&fields, i as i64 + 1)
                    .map_err(|e| CallError::Refused(format!("statement row {}: {e}", i + 1)))?,
            );
        }
        let summary = page.get("summary").filter(|s| !s.is_null()).map(|s| {
            vec![
                ("rows".to_string(), s["rows"].as_i64().unwrap_or(-1)),
                (
                    "total_minor".to_string(),
                    s["total_minor"].as_i64().unwrap_or(-1),
                ),
            ]
        });
        Ok(super::StatementPage {
            rows,
            next_cursor: page["next_cursor"].as_str().map(str::to_owned),
            summary,
            payouts: Vec::new(),
        })
    }
}
