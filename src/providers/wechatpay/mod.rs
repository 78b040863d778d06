//! WeChat Pay API v3 notifications: headers `Wechatpay-Timestamp`,
//! `Wechatpay-Nonce`, `Wechatpay-Signature`, `Wechatpay-Serial`; the message
//! `"{timestamp}\n{nonce}\n{body}\n"` signed SHA256withRSA with the platform
//! key the serial names (several may be configured while keys rotate);
//! stale timestamps (300 s) and repeated nonces are refused (the engine
//! keeps seen nonces in the database: across restarts and instances). The body's
//! `resource` (AEAD_AES_256_GCM) is decrypted with the 32-byte APIv3 key.
//! Envelope `id` is the callback id; success is answered 204, failure with
//! `{"code":"FAIL","message":…}`. Assumed mapping: SUCCESS → SUCCEEDED,
//! NOTPAY/USERPAYING → PENDING, CLOSED/REVOKED → CLOSED, PAYERROR → FAILED;
//! REFUND means paid (then refunded: the refund ledger's business).
//!
//! Refunds: `POST /v3/refund/domestic/refunds` with `out_refund_no` =
//! Reckon's refund_no (idempotent at WeChat Pay), queried with
//! `GET /v3/refund/domestic/refunds/{out_refund_no}`; refund notifications
//! (`REFUND.*`, resource `refund`): refund_status SUCCESS → SUCCEEDED,
//! CLOSED → FAILED, ABNORMAL → still pending (not final: the money is stuck
//! and a person must act at WeChat Pay). Refund amounts carry no currency:
//! CNY.
//!
//! Status queries: `GET /v3/pay/transactions/out-trade-no/{no}?mchid=…`,
//! signed `WECHATPAY2-SHA256-RSA2048` with the merchant's API key over
//! `"GET\n{path?query}\n{timestamp}\n{nonce}\n\n"`; the answer is
//! believed only once its `Wechatpay-*` headers verify like a notification's.
//!
//! Bills: `GET /v3/bill/tradebill?bill_date=…&bill_type=ALL&tar_type=GZIP`
//! (and `/v3/bill/fundflowbill?…&account_type=BASIC`), signed and verified
//! alike, name a `download_url` and the SHA1 of the bill; the download is
//! signed by the merchant but not answered signed, so the gunzipped bill
//! must have that SHA1. `NO_STATEMENT_EXIST` / `STATEMENT_CREATING`: not
//! ready yet.

mod api;
mod config;
pub mod fundflow;
pub mod statement;

pub use config::{KIND, WechatPayConfig};

use super::wire::header;
use super::{
    Answer, BillFiles, CallError, Diagnosis, Notification, PaymentNotice, Provider, ProviderView,
    Queries, RefundNotice, RefundRequest, RefundView, Refunds, Reply, StatementFile, Statements,
    VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::{HeaderMap, StatusCode};
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::signature::Verifier;
use secrecy::ExposeSecret;
use serde::Deserialize;
use sha2::Sha256;
use std::collections::BTreeMap;

pub const TOLERANCE_SECS: i64 = 300;

pub struct WechatPay {
    name: ProviderName,
    /// Platform certificate serial → its public key.
    platform_keys: BTreeMap<String, VerifyingKey<Sha256>>,
    apiv3_key: [u8; 32],
    api: Option<Api>,
    http: reqwest::Client,
    /// The longest bill taken, downloaded or gunzipped.
    max_bill_bytes: u64,
}

/// What calling the API needs: where, who, and the key that signs.
struct Api {
    base_url: String,
    mch_id: String,
    cert_serial: String,
    key: SigningKey<Sha256>,
}

#[derive(Deserialize)]
struct Envelope {
    id: String,
    event_type: String,
    resource: Resource,
}

#[derive(Deserialize)]
struct Resource {
    algorithm: String,
    ciphertext: String,
    nonce: String,
    #[serde(default)]
    associated_data: String,
}

#[derive(Deserialize)]
struct Transaction {
    out_trade_no: String,
    transaction_id: Option<String>,
    trade_state: String,
    amount: Amount,
}

#[derive(Deserialize)]
struct Amount {
    total: i64,
    #[serde(default = "cny")]
    currency: String,
}

fn cny() -> String {
    "CNY".into()
}

/// A refund as WeChat Pay shows it (notification resource and API answer).
#[derive(Deserialize)]
struct WxRefund {
    out_refund_no: String,
    refund_id: String,
    #[serde(default)]
    out_trade_no: Option<String>,
    #[serde(default)]
    transaction_id: Option<String>,
    /// `refund_status` in notifications, `status` in API answers.
    #[serde(alias = "status")]
    refund_status: String,
    amount: WxRefundAmount,
}

#[derive(Deserialize)]
struct WxRefundAmount {
    refund: i64,
    #[serde(default = "cny")]
    currency: String,
}

impl WxRefund {
    fn status(&self) -> Result<RefundStatus, String> {
        match self.refund_status.as_str() {
            "SUCCESS" => Ok(RefundStatus::Succeeded),
            "CLOSED" => Ok(RefundStatus::Failed),
            "PROCESSING" | "ABNORMAL" => Ok(RefundStatus::Pending),
            other => Err(format!("unknown refund status {other}")),
        }
    }

    fn money(&self) -> Result<Money, String> {
        let currency = Currency::parse(&self.amount.currency).map_err(|e| e.to_string())?;
        Ok(Money::new(self.amount.refund, currency))
    }

    fn view(&self) -> Result<RefundView, String> {
        Ok(RefundView {
            provider_refund_id: Some(
                ProviderRefundId::parse(&self.refund_id).map_err(|e| e.to_string())?,
            ),
            status: self.status()?,
            money: self.money()?,
        })
    }
}

/// WeChat Pay's trade_state → ours; `None` while there is no result yet.
/// REFUND means it was paid (refunds are the ledger's business).
fn trade_state(word: &str) -> Option<Option<PaymentStatus>> {
    match word {
        "SUCCESS" | "REFUND" => Some(Some(PaymentStatus::Succeeded)),
        "NOTPAY" | "USERPAYING" => Some(None),
        "CLOSED" | "REVOKED" => Some(Some(PaymentStatus::Closed)),
        "PAYERROR" => Some(Some(PaymentStatus::Failed)),
        _ => None,
    }
}

impl Transaction {
    fn money(&self) -> Result<Money, String> {
        // amount.total is in fen (minor units) already.
        let currency = Currency::parse(&self.amount.currency).map_err(|e| e.to_string())?;
        Ok(Money::new(self.amount.total, currency))
    }

    fn txn(&self) -> Result<Option<ProviderTxnId>, String> {
        self.transaction_id
            .as_deref()
            .filter(|t| !t.is_empty())
            .map(ProviderTxnId::parse)
            .transpose()
            .map_err(|e| e.to_string())
    }
}

impl WechatPay {
    pub fn new(name: ProviderName, c: &WechatPayConfig) -> Result<WechatPay, String> {
        let apiv3_key: [u8; 32] = c
            .api_key
            .expose_secret()
            .as_bytes()
            .try_into()
            .map_err(|_| "the APIv3 key is exactly 32 characters".to_string())?;
        let mut keys = BTreeMap::new();
        for (serial, text) in &c.platform_keys {
            let key = super::keys::rsa_public_key(text)
                .map_err(|e| format!("platform key {serial}: {e}"))?;
            keys.insert(serial.clone(), VerifyingKey::new(key));
        }
        if keys.is_empty() {
            return Err("at least one platform key (serial → public key) is needed".into());
        }
        let api = match (
            c.base_url.trim(),
            c.mch_id.as_deref(),
            c.cert_serial.as_deref(),
            c.private_key.as_ref().map(|k| k.expose_secret()),
        ) {
            ("", None, None, None) => None,
            (url, Some(mch_id), Some(serial), Some(pk)) if !url.is_empty() => Some(Api {
                base_url: url.trim_end_matches('/').to_owned(),
                mch_id: mch_id.to_owned(),
                cert_serial: serial.to_owned(),
                key: SigningKey::new(
                    super::keys::rsa_private_key(pk)
                        .map_err(|e| format!("the merchant private key: {e}"))?,
                ),
            }),
            _ => {
                return Err(
                    "status queries need base_url, mch_id, cert_serial and private_key together"
                        .into(),
                );
            }
        };
        Ok(WechatPay {
            name,
            platform_keys: keys,
            apiv3_key,
            api,
            http: super::wire::client(super::wire::timeout(c.timeout_ms)),
            max_bill_bytes: super::spool::limit(c.max_bill_bytes),
        })
    }

    /// Checks `Wechatpay-*` headers over a body (notification or answer);
    /// returns the nonce.
    fn verify_signed<'h>(
        &self,
        headers: &'h HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<&'h str, VerifyError> {
        let ts_text = header(headers, "wechatpay-timestamp")?;
        let nonce = header(headers, "wechatpay-nonce")?;
        let signature = header(headers, "wechatpay-signature")?;
        let serial = header(headers, "wechatpay-serial")?;
        let ts: i64 = ts_text.parse().map_err(|_| {
            VerifyError::MalformedHeader("Wechatpay-Timestamp is not a number".into())
        })?;
        // abs_diff: `now - ts` overflowed for a timestamp near i64::MIN
        // (a panic found writing the fuzz targets).
        if now_secs.abs_diff(ts) > TOLERANCE_SECS.unsigned_abs() {
            return Err(VerifyError::StaleTimestamp {
                tolerance_secs: TOLERANCE_SECS,
            });
        }
        let key = self.platform_keys.get(serial).ok_or_else(|| {
            VerifyError::MalformedHeader(format!("unknown platform serial {serial}"))
        })?;
        let bytes = B64.decode(signature).map_err(|_| {
            VerifyError::MalformedHeader("Wechatpay-Signature is not base64".into())
        })?;
        let signature =
            Signature::try_from(bytes.as_slice()).map_err(|_| VerifyError::BadSignature)?;
        let mut message = Vec::with_capacity(body.len() + 64);
        message.extend_from_slice(format!("{ts_text}\n{nonce}\n").as_bytes());
        message.extend_from_slice(body);
        message.push(b'\n');
        key.verify(&message, &signature)
            .map_err(|_| VerifyError::BadSignature)?;
        Ok(nonce)
    }

    fn decrypt(&self, r: &Resource) -> Result<Vec<u8>, String> {
        if r.algorithm != "AEAD_AES_256_GCM" {
            return Err(format!("unsupported algorithm {}", r.algorithm));
        }
        let ciphertext = B64
            .decode(&r.ciphertext)
            .map_err(|_| "ciphertext is not base64".to_string())?;
        if r.nonce.len() != 12 {
            return Err("the resource nonce must be 12 bytes".into());
        }
        let cipher = Aes256Gcm::new_from_slice(&self.apiv3_key).map_err(|e| e.to_string())?;
        cipher
            .decrypt(
                Nonce::from_slice(r.nonce.as_bytes()),
                Payload {
                    msg: &ciphertext,
                    aad: r.associated_data.as_bytes(),
                },
            )
            .map_err(|_| "the resource does not decrypt with the APIv3 key".to_string())
    }
}

impl Provider for WechatPay {
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
        self.verify_signed(headers, body, now_secs).map(|_| ())
    }

    /// `Wechatpay-Timestamp` off by more than the tolerance, or a
    /// `Wechatpay-Serial` naming a platform certificate or public key id
    /// that is not configured (WeChat Pay switched keys).
    fn diagnose(&self, headers: &HeaderMap, _body: &[u8], now_secs: i64) -> Option<Diagnosis> {
        if let Some(ts) = header(headers, "wechatpay-timestamp")
            .ok()
            .and_then(|t| t.parse::<i64>().ok())
            && let Some(skew) = Diagnosis::skew("Wechatpay-Timestamp", ts, now_secs, TOLERANCE_SECS)
        {
            return Some(skew);
        }
        let serial = header(headers, "wechatpay-serial").ok()?;
        if self.platform_keys.contains_key(serial) {
            return None;
        }
        let known = self
            .platform_keys
            .keys()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ");
        Some(Diagnosis {
            kind: "unknown_serial",
            detail: format!(
                "unknown platform serial: Wechatpay-Serial {serial} is not among the configured \
                 platform certificates or public key ids ({known}): WeChat Pay signs with a new \
                 key — add it to platform_keys"
            ),
        })
    }

    /// Signed and fresh, a nonce seen before inside the window is a
    /// replay: the engine remembers them in the database.
    fn replay_nonce<'h>(&self, headers: &'h HeaderMap) -> Option<&'h str> {
        header(headers, "wechatpay-nonce").ok()
    }

    /// A timestamp may be up to the tolerance ahead or behind, so a signed
    /// request stays fresh for twice the tolerance.
    fn nonce_window_secs(&self) -> i64 {
        2 * TOLERANCE_SECS
    }

    fn parse(&self, _headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let envelope: Envelope =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
        let callback_id = CallbackId::parse(&envelope.id).map_err(|e| e.to_string())?;
        if envelope.event_type.starts_with("REFUND.") {
            let plain = self.decrypt(&envelope.resource)?;
            let r: WxRefund =
                serde_json::from_slice(&plain).map_err(|e| format!("unreadable refund: {e}"))?;
            let id = |v: Option<&String>| v.filter(|s| !s.is_empty()).cloned();
            return Ok(Notification::Refund(RefundNotice {
                callback_id,
                refund_no: Some(RefundNo::parse(&r.out_refund_no).map_err(|e| e.to_string())?),
                provider_refund_id: Some(
                    ProviderRefundId::parse(&r.refund_id).map_err(|e| e.to_string())?,
                ),
                payment_no: id(r.out_trade_no.as_ref())
                    .map(|v| PaymentNo::parse(&v))
                    .transpose()
                    .map_err(|e| e.to_string())?,
                payment_txn_id: id(r.transaction_id.as_ref())
                    .map(|v| ProviderTxnId::parse(&v))
                    .transpose()
                    .map_err(|e| e.to_string())?,
                provider_status: r.refund_status.clone(),
                status: r.status()?,
                money: r.money()?,
                cumulative: false,
            }));
        }
        if !envelope.event_type.starts_with("TRANSACTION.") {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: envelope.event_type,
            });
        }
        let plain = self.decrypt(&envelope.resource)?;
        let t: Transaction =
            serde_json::from_slice(&plain).map_err(|e| format!("unreadable transaction: {e}"))?;
        let status = match trade_state(&t.trade_state) {
            Some(s) if t.trade_state != "REFUND" => s.unwrap_or(PaymentStatus::Pending),
            _ => {
                return Ok(Notification::Ignored {
                    callback_id,
                    event_type: format!("trade_state {}", t.trade_state),
                });
            }
        };
        Ok(Notification::Payment(PaymentNotice {
            callback_id,
            payment_no: PaymentNo::parse(&t.out_trade_no).map_err(|e| e.to_string())?,
            provider_txn_id: t.txn()?,
            money: t.money()?,
            provider_status: t.trade_state,
            status,
            declined: None,
        }))
    }

    // Only with the merchant API's keys: without them, notifications alone.
    fn queries(&self) -> Option<&dyn Queries> {
        self.api.is_some().then_some(self)
    }

    fn refunds(&self) -> Option<&dyn Refunds> {
        self.api.is_some().then_some(self)
    }

    fn statements(&self) -> Option<Statements<'_>> {
        self.api.is_some().then_some(Statements::Files(self))
    }

    fn balance(&self) -> Option<&dyn crate::providers::balance::BalanceBills> {
        self.api.is_some().then_some(self)
    }

    fn answer(&self, answer: &Answer) -> Reply {
        let (status, message) = match answer {
            Answer::Accepted => return Reply::empty(StatusCode::NO_CONTENT),
            Answer::Unverified(e) => (StatusCode::UNAUTHORIZED, e.to_string()),
            Answer::Malformed(e) => (StatusCode::BAD_REQUEST, e.clone()),
            Answer::UnknownPayment => (StatusCode::NOT_FOUND, "unknown payment".to_string()),
            Answer::RetryLater => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "try again later".to_string(),
            ),
            Answer::TooLarge(e) => (StatusCode::PAYLOAD_TOO_LARGE, e.clone()),
            Answer::UnsupportedType(e) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, e.clone()),
        };
        Reply::json(
            status,
            &serde_json::json!({ "code": "FAIL", "message": message }),
        )
    }
}

#[async_trait::async_trait]
impl Queries for WechatPay {
    async fn query_payment(
        &self,
        payment_no: &PaymentNo,
        _txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        self.order_query(payment_no, _txn).await
    }
}

#[async_trait::async_trait]
impl Refunds for WechatPay {
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.domestic_refund(req).await
    }

    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.refund_query(req).await
    }
}

#[async_trait::async_trait]
impl crate::providers::balance::BalanceBills for WechatPay {
    fn kind(&self) -> &'static str {
        config::KIND.name
    }

    /// The basic account's fund-flow bill: where payments, fees, refunds
    /// and withdrawals to the bank move the merchant's money.
    async fn balance_bill(
        &self,
        date: &str,
    ) -> Result<crate::providers::balance::BalanceBill, CallError> {
        let file = self.fund_flow_bill(date).await?;
        let name = file.name.clone();
        tokio::task::spawn_blocking(move || {
            let bytes = std::fs::read(file.body.path())
                .map_err(|e| CallError::Refused(format!("{name} could not be read back: {e}")))?;
            fundflow::read(&bytes).map_err(|why| {
                CallError::Refused(format!("WeChat Pay's fund-flow bill {name}: {why}"))
            })
        })
        .await
        .map_err(|e| CallError::Refused(format!("reading the fund-flow bill stopped: {e}")))?
    }
}

#[async_trait::async_trait]
impl BillFiles for WechatPay {
    async fn statement_file(&self, date: &str) -> Result<StatementFile, CallError> {
        self.trade_bill(date).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Wechatpay-Timestamp` near i64::MIN overflowed `now - ts`
    /// (fuzz/corpus/wechatpay/crash-min-timestamp): it is stale.
    #[test]
    fn a_timestamp_at_the_ends_of_i64_is_stale_not_a_panic() {
        use rsa::pkcs8::EncodePublicKey;
        let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 512).unwrap();
        let pem = key
            .to_public_key()
            .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap();
        let wechat = WechatPay::new(
            ProviderName::parse("wechat").unwrap(),
            &WechatPayConfig {
                name: "wechat".into(),
                platform_keys: BTreeMap::from([("S1".to_owned(), pem)]),
                api_key: "0123456789abcdef0123456789ABCDEF".into(),
                timeout_ms: Some(1000),
                ..WechatPayConfig::default()
            },
        )
        .unwrap();
        for ts in [i64::MIN, i64::MIN + 1, -9_223_372_035_058_779_008, i64::MAX] {
            let mut headers = HeaderMap::new();
            headers.insert("wechatpay-timestamp", ts.to_string().parse().unwrap());
            headers.insert("wechatpay-nonce", "n".parse().unwrap());
            headers.insert("wechatpay-serial", "S1".parse().unwrap());
            headers.insert("wechatpay-signature", "AA==".parse().unwrap());
            assert_eq!(
                wechat.verify(&headers, b"{}", 1_795_996_800),
                Err(VerifyError::StaleTimestamp {
                    tolerance_secs: TOLERANCE_SECS
                }),
                "{ts}"
            );
        }
    }
}
