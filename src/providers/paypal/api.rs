//! PayPal's REST API as Reckon calls it: an OAuth2 access token (client
//! credentials, `POST /v1/oauth2/token`, Basic auth with the client id and
//! secret), kept until a minute before its `expires_in`; a capture read
//! by id (`GET /v2/payments/captures/{id}`); a capture refunded
//! (`POST /v2/payments/captures/{id}/refund`, `PayPal-Request-Id` =
//! refund_no, `Prefer: return=representation`) and a refund read by id
//! (`GET /v2/payments/refunds/{id}`). A 404 is "not known"; a 5xx, a 429,
//! a timeout or a broken connection an unknown result; a 401/403 a refusal
//! naming the credentials (and the token is asked for again next time).

use super::{Capture, Paypal, PaypalRefund};
use crate::domain::{Money, ProviderRefundId, ProviderTxnId};
use crate::providers::wire::{answer, call_error};
use crate::providers::{CallError, ProviderView, RefundRequest, RefundView};
use http::StatusCode;
use std::time::{Duration, Instant};

#[derive(serde::Deserialize)]
struct Token {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl Paypal {
    async fn access_token(&self) -> Result<String, CallError> {
        if let Some((token, until)) = self.token.lock().expect("token").clone()
            && Instant::now() < until
        {
            return Ok(token);
        }
        let res = self
            .http
            .post(format!("{}/v1/oauth2/token", self.base_url))
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .map_err(call_error)?;
        let status = res.status();
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::Network(format!(
                "PayPal's token answered {status}"
            )));
        }
        let body = answer(res).await?;
        if !status.is_success() {
            return Err(CallError::Refused(format!(
                "PayPal refused the client_id and client_secret of provider {} ({status}: {})",
                self.name,
                String::from_utf8_lossy(&body)
                    .chars()
                    .take(300)
                    .collect::<String>()
            )));
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|e| CallError::Network(format!("unreadable token answer: {e}")))?;
        let life = token.expires_in.unwrap_or(0).saturating_sub(60);
        *self.token.lock().expect("token") = Some((
            token.access_token.clone(),
            Instant::now() + Duration::from_secs(life),
        ));
        Ok(token.access_token)
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> Result<serde_json::Value, CallError> {
        let token = self.access_token().await?;
        let res = req.bearer_auth(token).send().await.map_err(call_error)?;
        let status = res.status();
        if status == StatusCode::NOT_FOUND {
            return Err(CallError::NotFound);
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::Network(format!("PayPal answered {status}")));
        }
        let text = String::from_utf8_lossy(&answer(res).await?).into_owned();
        let body = serde_json::from_str::<serde_json::Value>(&text);
        if !status.is_success() {
            // PayPal's error: `name`, `message`, `details[].issue`.
            let b = body.as_ref().ok();
            let name = b.and_then(|b| b["name"].as_str()).unwrap_or("refused");
            let issue = b
                .and_then(|b| b["details"][0]["issue"].as_str())
                .map(|i| format!(" ({i})"))
                .unwrap_or_default();
            let message = b.and_then(|b| b["message"].as_str()).unwrap_or("");
            if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                *self.token.lock().expect("token") = None;
                return Err(CallError::Refused(format!(
                    "PayPal refused the credentials of provider {} ({status}: {name}{issue})",
                    self.name
                )));
            }
            return Err(CallError::Refused(format!(
                "{status}: {name}{issue} {message}"
            )));
        }
        body.map_err(|e| CallError::Network(format!("unreadable answer: {e}")))
    }

    pub(super) async fn get_capture(&self, id: &ProviderTxnId) -> Result<ProviderView, CallError> {
        let body = self
            .call(self.http.get(format!(
                "{}/v2/payments/captures/{}",
                self.base_url,
                segment(id.as_str())
            )))
            .await?;
        let capture: Capture = serde_json::from_value(body)
            .map_err(|e| CallError::Network(format!("not a Capture: {e}")))?;
        capture.view().map_err(CallError::Network)
    }

    pub(super) async fn refund_capture(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let Some(capture) = req.payment_txn else {
            return Err(CallError::Refused(
                "no capture id known for this payment: PayPal refunds a capture by its id".into(),
            ));
        };
        let body = serde_json::json!({
            "amount": {
                "value": req.money.major_string(),
                "currency_code": req.money.currency.code(),
            },
            "custom_id": req.refund_no.as_str(),
            "note_to_payer": req.reason.chars().take(255).collect::<String>(),
        });
        let answer = self
            .call(
                self.http
                    .post(format!(
                        "{}/v2/payments/captures/{}/refund",
                        self.base_url,
                        segment(capture.as_str())
                    ))
                    .header("PayPal-Request-Id", req.refund_no.as_str())
                    .header("Prefer", "return=representation")
                    .json(&body),
            )
            .await?;
        refund_view(answer, req.money)
    }

    pub(super) async fn get_refund(
        &self,
        id: &ProviderRefundId,
        asked: Money,
    ) -> Result<RefundView, CallError> {
        let answer = self
            .call(self.http.get(format!(
                "{}/v2/payments/refunds/{}",
                self.base_url,
                segment(id.as_str())
            )))
            .await?;
        refund_view(answer, asked)
    }
}

fn refund_view(value: serde_json::Value, asked: Money) -> Result<RefundView, CallError> {
    let refund: PaypalRefund = serde_json::from_value(value)
        .map_err(|e| CallError::Network(format!("not a Refund: {e}")))?;
    refund.view(Some(asked)).map_err(CallError::Network)
}

/// An id as one path segment.
fn segment(id: &str) -> String {
    percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC).to_string()
}
