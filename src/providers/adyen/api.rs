//! Adyen's APIs as Reckon calls them: the Checkout API's refund
//! (`POST /v71/payments/{pspReference}/refunds`, `X-API-Key`,
//! `Idempotency-Key` = refund_no; request and answer as the Checkout API
//! reference and `PaymentRefundRequest`/`PaymentRefundResponse` of the
//! official libraries have them), and a report's download from the report
//! host. A 5xx, a 429, a timeout or a broken connection is an unknown
//! result; a 401/403 a refusal naming the key.

use super::{Adyen, ReportAuth};
use crate::domain::{Money, ProviderRefundId, RefundStatus};
use crate::providers::{CallError, RefundRequest, RefundView, StatementFile, wire};
use http::StatusCode;
use serde::Deserialize;

/// The Checkout API version Reckon speaks.
const CHECKOUT_VERSION: &str = "v71";

/// `PaymentRefundResponse`: the fields Reckon reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RefundAnswer {
    psp_reference: String,
    status: String,
}

impl Adyen {
    pub(super) async fn create_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        // Adyen refunds a payment by its pspReference, which its
        // AUTHORISATION notification gave.
        let Some(psp) = req.payment_txn else {
            return Err(CallError::NotFound);
        };
        let body = serde_json::json!({
            "merchantAccount": self.merchant_account,
            "amount": { "value": req.money.minor, "currency": req.money.currency.code() },
            "reference": req.refund_no.as_str(),
        });
        let res = self
            .http
            .post(format!(
                "{}/{CHECKOUT_VERSION}/payments/{}/refunds",
                self.base_url,
                urlencoding(psp.as_str())
            ))
            .header("X-API-Key", &self.api_key)
            // Asking twice with one key is one refund.
            .header("Idempotency-Key", req.refund_no.as_str())
            .json(&body)
            .send()
            .await
            .map_err(wire::call_error)?;
        let status = res.status();
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            return Err(CallError::Network(format!("Adyen answered {status}")));
        }
        let text = String::from_utf8_lossy(&wire::answer(res).await?).into_owned();
        let json = serde_json::from_str::<serde_json::Value>(&text);
        if !status.is_success() {
            // Adyen's error answer: {status, errorCode, message, errorType}.
            let message = json
                .as_ref()
                .ok()
                .map(|b| {
                    format!(
                        "{} {}",
                        b["errorCode"].as_str().unwrap_or(""),
                        b["message"].as_str().unwrap_or("refused")
                    )
                })
                .unwrap_or_else(|| "refused".into());
            if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
                return Err(CallError::Refused(format!(
                    "Adyen refused the api_key of provider {} ({status}: {}); set api_key to an API credential of this merchant account with the Checkout webservice role",
                    self.name,
                    message.trim()
                )));
            }
            return Err(CallError::Refused(format!("{status}: {}", message.trim())));
        }
        let answer: RefundAnswer = json
            .and_then(serde_json::from_value)
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))?;
        if answer.status != "received" {
            return Err(CallError::Refused(format!(
                "Adyen answered the refund with status {:?}, not received",
                answer.status
            )));
        }
        Ok(RefundView {
            provider_refund_id: Some(
                ProviderRefundId::parse(&answer.psp_reference)
                    .map_err(|e| CallError::Refused(e.to_string()))?,
            ),
            // Received, not done: the REFUND notification says how it went.
            status: RefundStatus::Pending,
            money: Money::new(req.money.minor, req.money.currency),
        })
    }

    /// A report a REPORT_AVAILABLE notification names (its `reason` is the
    /// URL, its `pspReference` the file name), downloaded with the report
    /// user's credentials — only from the configured report host, under
    /// the account's `max_bill_bytes`.
    pub async fn download_report(
        &self,
        url: &str,
        file_name: &str,
    ) -> Result<StatementFile, CallError> {
        let (Some(base), Some(auth)) = (&self.report_base_url, &self.report_auth) else {
            return Err(CallError::Refused(format!(
                "provider {} has no report_base_url and report credentials: reports are uploaded",
                self.name
            )));
        };
        if !same_origin_below(base, url) {
            return Err(CallError::Refused(format!(
                "the report URL is not under the configured report host {base}: not fetched"
            )));
        }
        let call = self.http.get(url);
        let call = match auth {
            ReportAuth::ApiKey(key) => call.header("X-API-Key", key),
            ReportAuth::Basic(user, password) => call.basic_auth(user, Some(password)),
        };
        let (status, body) = wire::download(call, self.max_bill_bytes, "the report").await?;
        match status {
            s if s.is_success() => Ok(StatementFile {
                name: file_name.to_owned(),
                bill_type: "settlement_detail_report".into(),
                body,
            }),
            StatusCode::NOT_FOUND => Err(CallError::NotReady(format!(
                "Adyen has no report {file_name} (404)"
            ))),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => Err(CallError::Refused(format!(
                "Adyen refused the report credentials of provider {} ({status}): a report user with the Merchant report role",
                self.name
            ))),
            s => Err(CallError::Refused(format!(
                "the report download answered {s}"
            ))),
        }
    }
}

/// Whether `url` is on `base`'s scheme, host and port and under its path:
/// a notification names where to fetch, and only the report host is asked.
fn same_origin_below(base: &str, url: &str) -> bool {
    let (Ok(base), Ok(url)) = (reqwest::Url::parse(base), reqwest::Url::parse(url)) else {
        return false;
    };
    base.scheme() == url.scheme()
        && base.host_str().is_some()
        && base.host_str() == url.host_str()
        && base.port_or_known_default() == url.port_or_known_default()
        && url.username().is_empty()
        && url.password().is_none()
        && {
            let below = base.path().trim_end_matches('/');
            below.is_empty() || url.path() == below || url.path().starts_with(&format!("{below}/"))
        }
}

/// A pspReference in a path: Adyen's are 16 alphanumerics, but nothing a
/// notification said is put in a URL unescaped.
fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::same_origin_below;

    #[test]
    fn only_the_report_host_is_fetched() {
        let base = "https://ca-test.adyen.com";
        assert!(same_origin_below(
            base,
            "https://ca-test.adyen.com/reports/download/MerchantAccount/M/settlement_detail_report_batch_12.csv"
        ));
        for other in [
            "http://ca-test.adyen.com/reports/x.csv",
            "https://ca-test.adyen.com.evil.example/reports/x.csv",
            "https://evil.example/ca-test.adyen.com/x.csv",
            "https://ca-test.adyen.com:8443/reports/x.csv",
            "https://user@ca-test.adyen.com/reports/x.csv",
            "not a url",
        ] {
            assert!(!same_origin_below(base, other), "{other}");
        }
        assert!(!same_origin_below(
            "http://127.0.0.1:1/reports",
            "http://127.0.0.1:1/other/x.csv"
        ));
    }
}
