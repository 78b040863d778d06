//! Stripe's API as Reckon calls it: PaymentIntents created (one per
//! payment_no: the Idempotency-Key, and the metadata that names Reckon's
//! payment), read by id or searched by that metadata, and canceled; Refunds
//! created (Idempotency-Key = refund_no) and read by id or listed for the
//! intent. A 404 is "not known"; a 5xx, a timeout or a broken connection an
//! unknown result.

use super::{Intent, Stripe, StripeRefund};
use crate::domain::{PaymentNo, ProviderTxnId};
use crate::providers::{CallError, CreateRequest, ProviderView, RefundRequest, RefundView};
use http::StatusCode;

impl Stripe {
    async fn call(&self, req: reqwest::RequestBuilder) -> Result<serde_json::Value, CallError> {
        let res = req
            .bearer_auth(&self.api_key)
            .send()
            .await
            .map_err(crate::providers::wire::call_error)?;
        let status = res.status();
        if status == StatusCode::NOT_FOUND {
            return Err(CallError::NotFound);
        }
        if status.is_server_error() {
            return Err(CallError::Network(format!("Stripe answered {status}")));
        }
        let body: serde_json::Value = res
            .json()
            .await
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))?;
        if !status.is_success() {
            let message = body["error"]["message"]
                .as_str()
                .unwrap_or("refused")
                .to_owned();
            return Err(CallError::Refused(format!("{status}: {message}")));
        }
        Ok(body)
    }

    pub(super) fn refund_view(value: serde_json::Value) -> Result<RefundView, CallError> {
        serde_json::from_value::<StripeRefund>(value)
            .map_err(|e| CallError::Refused(format!("not a Refund: {e}")))?
            .view()
            .map_err(CallError::Refused)
    }

    pub(super) fn intent_view(value: serde_json::Value) -> Result<ProviderView, CallError> {
        serde_json::from_value::<Intent>(value)
            .map_err(|e| CallError::Refused(format!("not a PaymentIntent: {e}")))?
            .view()
            .map_err(CallError::Refused)
    }

    pub(super) async fn create_intent(
        &self,
        req: &CreateRequest<'_>,
    ) -> Result<ProviderView, CallError> {
        let mut form = vec![
            ("amount", req.money.minor.to_string()),
            ("currency", req.money.currency.code().to_ascii_lowercase()),
            ("metadata[payment_no]", req.payment_no.to_string()),
        ];
        if let Some(d) = req.description {
            form.push(("description", d.to_owned()));
        }
        let body = self
            .call(
                self.http
                    .post(format!("{}/v1/payment_intents", self.base_url))
                    // Creating twice with one key is one intent.
                    .header("Idempotency-Key", req.payment_no.as_str())
                    .form(&form),
            )
            .await?;
        Self::intent_view(body)
    }

    pub(super) async fn retrieve_intent(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let body = match txn {
            Some(id) => {
                self.call(
                    self.http
                        .get(format!("{}/v1/payment_intents/{id}", self.base_url)),
                )
                .await?
            }
            None => {
                let query = format!("metadata['payment_no']:'{payment_no}'");
                let found = self
                    .call(
                        self.http
                            .get(format!("{}/v1/payment_intents/search", self.base_url))
                            .query(&[("query", query)]),
                    )
                    .await?;
                found["data"].get(0).cloned().ok_or(CallError::NotFound)?
            }
        };
        Self::intent_view(body)
    }

    pub(super) async fn create_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let intent = match req.payment_txn {
            Some(id) => id.clone(),
            None => self
                .retrieve_intent(req.payment_no, None)
                .await?
                .provider_txn_id
                .ok_or(CallError::NotFound)?,
        };
        let form = [
            ("payment_intent", intent.to_string()),
            ("amount", req.money.minor.to_string()),
            ("metadata[refund_no]", req.refund_no.to_string()),
            ("metadata[payment_no]", req.payment_no.to_string()),
            ("metadata[reason]", req.reason.chars().take(400).collect()),
        ];
        let body = self
            .call(
                self.http
                    .post(format!("{}/v1/refunds", self.base_url))
                    // Asking twice with one key is one refund.
                    .header("Idempotency-Key", req.refund_no.as_str())
                    .form(&form),
            )
            .await?;
        Self::refund_view(body)
    }

    pub(super) async fn retrieve_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        if let Some(id) = req.provider_refund_id {
            let body = self
                .call(self.http.get(format!("{}/v1/refunds/{id}", self.base_url)))
                .await?;
            return Self::refund_view(body);
        }
        let Some(intent) = req.payment_txn else {
            return Err(CallError::NotFound);
        };
        let list = self
            .call(
                self.http
                    .get(format!("{}/v1/refunds", self.base_url))
                    .query(&[("payment_intent", intent.as_str()), ("limit", "100")]),
            )
            .await?;
        let found = list["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["metadata"]["refund_no"] == req.refund_no.as_str())
            .cloned()
            .ok_or(CallError::NotFound)?;
        Self::refund_view(found)
    }

    pub(super) async fn cancel_intent(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<(), CallError> {
        let id = match txn {
            Some(id) => id.clone(),
            None => self
                .retrieve_intent(payment_no, None)
                .await?
                .provider_txn_id
                .ok_or(CallError::NotFound)?,
        };
        self.call(
            self.http
                .post(format!("{}/v1/payment_intents/{id}/cancel", self.base_url)),
        )
        .await
        .map(|_| ())
    }
}
