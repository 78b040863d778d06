//! WeChat Pay's API v3 as Reckon calls it: the order query by
//! out_trade_no, domestic refunds (out_refund_no = Reckon's refund_no,
//! idempotent at WeChat Pay) and their query. Each request is signed
//! `WECHATPAY2-SHA256-RSA2048` with the merchant key; an answer is believed
//! only once its `Wechatpay-*` headers verify like a notification's.

use super::{Transaction, WechatPay, WxRefund, trade_state};
use crate::domain::{PaymentNo, ProviderTxnId};
use crate::providers::{CallError, ProviderView, RefundRequest, RefundView};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::StatusCode;
use rsa::signature::{SignatureEncoding, Signer};

impl WechatPay {
    /// A refund API answer: the refund, or why not.
    fn refund_answer(status: StatusCode, body: &[u8]) -> Result<RefundView, CallError> {
        if !status.is_success() {
            let error: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
            let code = error["code"].as_str().unwrap_or_default();
            if status == StatusCode::NOT_FOUND || code == "RESOURCE_NOT_EXISTS" {
                return Err(CallError::NotFound);
            }
            return Err(CallError::Refused(format!(
                "{status} {code}: {}",
                error["message"].as_str().unwrap_or_default()
            )));
        }
        serde_json::from_slice::<WxRefund>(body)
            .map_err(|e| CallError::Refused(format!("unreadable refund: {e}")))?
            .view()
            .map_err(CallError::Refused)
    }

    /// A signed call of the API; the answer's status and verified body.
    async fn request(
        &self,
        method: reqwest::Method,
        path_and_query: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<(StatusCode, Vec<u8>), CallError> {
        let Some(api) = &self.api else {
            return Err(CallError::Refused(format!(
                "{} has no API credentials configured",
                self.name
            )));
        };
        let now = jiff::Timestamp::now().as_second();
        let nonce = uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .to_ascii_uppercase();
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let message = format!("{method}\n{path_and_query}\n{now}\n{nonce}\n{body}\n");
        let signature = B64.encode(api.key.sign(message.as_bytes()).to_bytes());
        let authorization = format!(
            "WECHATPAY2-SHA256-RSA2048 mchid=\"{}\",nonce_str=\"{nonce}\",signature=\"{signature}\",timestamp=\"{now}\",serial_no=\"{}\"",
            api.mch_id, api.cert_serial
        );
        let mut call = self
            .http
            .request(method.clone(), format!("{}{path_and_query}", api.base_url));
        if method != reqwest::Method::GET {
            call = call.header("content-type", "application/json").body(body);
        }
        let res = call
            .header("authorization", authorization)
            .header("accept", "application/json")
            .header("user-agent", concat!("reckon/", env!("CARGO_PKG_VERSION")))
            .send()
            .await
            .map_err(crate::providers::wire::call_error)?;
        let status = res.status();
        let headers = res.headers().clone();
        let body = res
            .bytes()
            .await
            .map_err(crate::providers::wire::call_error)?;
        if status.is_server_error() {
            return Err(CallError::Network(format!("WeChat Pay answered {status}")));
        }
        // An answer that does not verify is nobody's word: unknown.
        self.verify_signed(&headers, &body, now)
            .map_err(|e| CallError::Network(format!("the answer is not WeChat Pay's: {e}")))?;
        Ok((status, body.to_vec()))
    }

    pub(super) async fn domestic_refund(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let mut body = serde_json::json!({
            "out_trade_no": req.payment_no.as_str(),
            "out_refund_no": req.refund_no.as_str(),
            "reason": req.reason.chars().take(80).collect::<String>(),
            "amount": {
                "refund": req.money.minor,
                "total": req.payment_total.minor,
                "currency": req.money.currency.code(),
            },
        });
        if let Some(t) = req.payment_txn {
            body["transaction_id"] = t.as_str().into();
        }
        let (status, answer) = self
            .request(
                reqwest::Method::POST,
                "/v3/refund/domestic/refunds",
                Some(&body),
            )
            .await?;
        Self::refund_answer(status, &answer)
    }

    pub(super) async fn refund_query(
        &self,
        req: &RefundRequest<'_>,
    ) -> Result<RefundView, CallError> {
        let path = format!(
            "/v3/refund/domestic/refunds/{}",
            percent_encoding::utf8_percent_encode(
                req.refund_no.as_str(),
                percent_encoding::NON_ALPHANUMERIC
            )
        );
        let (status, answer) = self.request(reqwest::Method::GET, &path, None).await?;
        Self::refund_answer(status, &answer)
    }

    pub(super) async fn order_query(
        &self,
        payment_no: &PaymentNo,
        _txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let mch_id = self.api.as_ref().map(|a| a.mch_id.as_str()).unwrap_or("");
        let path = format!(
            "/v3/pay/transactions/out-trade-no/{}?mchid={}",
            percent_encoding::utf8_percent_encode(
                payment_no.as_str(),
                percent_encoding::NON_ALPHANUMERIC
            ),
            percent_encoding::utf8_percent_encode(mch_id, percent_encoding::NON_ALPHANUMERIC),
        );
        let (status, body) = self.request(reqwest::Method::GET, &path, None).await?;
        if !status.is_success() {
            let error: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let code = error["code"].as_str().unwrap_or_default();
            if status == StatusCode::NOT_FOUND || code == "ORDER_NOT_EXIST" {
                return Err(CallError::NotFound);
            }
            return Err(CallError::Refused(format!(
                "{status} {code}: {}",
                error["message"].as_str().unwrap_or_default()
            )));
        }
        let t: Transaction = serde_json::from_slice(&body)
            .map_err(|e| CallError::Refused(format!("unreadable transaction: {e}")))?;
        if t.out_trade_no != payment_no.as_str() {
            return Err(CallError::Refused(format!(
                "asked about {payment_no}, told about {}",
                t.out_trade_no
            )));
        }
        let status = trade_state(&t.trade_state)
            .ok_or_else(|| CallError::Refused(format!("unknown trade_state {}", t.trade_state)))?;
        Ok(ProviderView {
            provider_txn_id: t.txn().map_err(CallError::Refused)?,
            status,
            money: t.money().map_err(CallError::Refused)?,
        })
    }
}
