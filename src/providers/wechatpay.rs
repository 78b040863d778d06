//! WeChat Pay API v3 notifications: headers `Wechatpay-Timestamp`,
//! `Wechatpay-Nonce`, `Wechatpay-Signature`, `Wechatpay-Serial`; the message
//! `"{timestamp}\n{nonce}\n{body}\n"` signed SHA256withRSA with the platform
//! key the serial names (several may be configured while keys rotate);
//! stale timestamps (300 s) and repeated nonces are refused. The body's
//! `resource` (AEAD_AES_256_GCM) is decrypted with the 32-byte APIv3 key.
//! Envelope `id` is the callback id; success is answered 204, failure with
//! `{"code":"FAIL","message":…}`. Assumed mapping: SUCCESS → SUCCEEDED,
//! NOTPAY/USERPAYING → PENDING, CLOSED/REVOKED → CLOSED, PAYERROR → FAILED;
//! REFUND and refund notifications are acknowledged for the refund ledger
//! (not built yet). Status queries are not built yet either.

use super::{Answer, Notification, PaymentNotice, Provider, VerifyError, header};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId,
};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use axum::Json;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::signature::Verifier;
use serde::Deserialize;
use sha2::Sha256;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

pub const TOLERANCE_SECS: i64 = 300;

pub struct WechatPay {
    name: ProviderName,
    /// Platform certificate serial → its public key.
    platform_keys: BTreeMap<String, VerifyingKey<Sha256>>,
    apiv3_key: [u8; 32],
    /// Nonces seen within the tolerance window (this process).
    seen_nonces: Mutex<HashMap<String, i64>>,
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

impl WechatPay {
    pub fn new(
        name: ProviderName,
        platform_keys: &BTreeMap<String, String>,
        apiv3_key: &str,
    ) -> Result<WechatPay, String> {
        let apiv3_key: [u8; 32] = apiv3_key
            .as_bytes()
            .try_into()
            .map_err(|_| "the APIv3 key is exactly 32 characters".to_string())?;
        let mut keys = BTreeMap::new();
        for (serial, text) in platform_keys {
            let key =
                super::rsa_public_key(text).map_err(|e| format!("platform key {serial}: {e}"))?;
            keys.insert(serial.clone(), VerifyingKey::new(key));
        }
        if keys.is_empty() {
            return Err("at least one platform key (serial → public key) is needed".into());
        }
        Ok(WechatPay {
            name,
            platform_keys: keys,
            apiv3_key,
            seen_nonces: Mutex::new(HashMap::new()),
        })
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

#[async_trait::async_trait]
impl Provider for WechatPay {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/json")
    }

    fn creates_payments(&self) -> bool {
        false
    }

    fn verify(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError> {
        let ts_text = header(headers, "wechatpay-timestamp")?;
        let nonce = header(headers, "wechatpay-nonce")?;
        let signature = header(headers, "wechatpay-signature")?;
        let serial = header(headers, "wechatpay-serial")?;
        let ts: i64 = ts_text.parse().map_err(|_| {
            VerifyError::MalformedHeader("Wechatpay-Timestamp is not a number".into())
        })?;
        if (now_secs - ts).abs() > TOLERANCE_SECS {
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
        // Signed and fresh: a nonce seen before inside the window is a replay.
        let mut seen = self.seen_nonces.lock().unwrap_or_else(|e| e.into_inner());
        seen.retain(|_, at| now_secs - *at <= TOLERANCE_SECS);
        if seen.insert(nonce.to_owned(), now_secs).is_some() {
            return Err(VerifyError::MalformedHeader(
                "repeated Wechatpay-Nonce".into(),
            ));
        }
        Ok(())
    }

    fn parse(&self, _headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let envelope: Envelope =
            serde_json::from_slice(body).map_err(|e| format!("invalid JSON: {e}"))?;
        let callback_id = CallbackId::parse(&envelope.id).map_err(|e| e.to_string())?;
        if !envelope.event_type.starts_with("TRANSACTION.") {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: envelope.event_type,
            });
        }
        let plain = self.decrypt(&envelope.resource)?;
        let t: Transaction =
            serde_json::from_slice(&plain).map_err(|e| format!("unreadable transaction: {e}"))?;
        let status = match t.trade_state.as_str() {
            "SUCCESS" => PaymentStatus::Succeeded,
            "NOTPAY" | "USERPAYING" => PaymentStatus::Pending,
            "CLOSED" | "REVOKED" => PaymentStatus::Closed,
            "PAYERROR" => PaymentStatus::Failed,
            other => {
                return Ok(Notification::Ignored {
                    callback_id,
                    event_type: format!("trade_state {other}"),
                });
            }
        };
        let currency = Currency::parse(&t.amount.currency).map_err(|e| e.to_string())?;
        Ok(Notification::Payment(PaymentNotice {
            callback_id,
            payment_no: PaymentNo::parse(&t.out_trade_no).map_err(|e| e.to_string())?,
            provider_txn_id: t
                .transaction_id
                .as_deref()
                .map(ProviderTxnId::parse)
                .transpose()
                .map_err(|e| e.to_string())?,
            provider_status: t.trade_state,
            status,
            // amount.total is in fen (minor units) already.
            money: Money::new(t.amount.total, currency),
        }))
    }

    fn answer(&self, answer: &Answer) -> Response {
        let (status, message) = match answer {
            Answer::Accepted => return StatusCode::NO_CONTENT.into_response(),
            Answer::Unverified(e) => (StatusCode::UNAUTHORIZED, e.to_string()),
            Answer::Malformed(e) => (StatusCode::BAD_REQUEST, e.clone()),
            Answer::UnknownPayment => (StatusCode::NOT_FOUND, "unknown payment".to_string()),
            Answer::RetryLater => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "try again later".to_string(),
            ),
        };
        (
            status,
            Json(serde_json::json!({ "code": "FAIL", "message": message })),
        )
            .into_response()
    }
}
