//! Alipay asynchronous notifications: a form-encoded POST in the charset it
//! names (`charset`, UTF-8 or GBK). To verify: drop `sign` and `sign_type`
//! and empty values, sort by key, join `k=v` with `&`, and check the base64
//! SHA256withRSA (`RSA2`) signature with Alipay's public key over that text
//! in the notification's charset; `app_id` (and `seller_id`, when
//! configured) must be this account's. `notify_id` is the callback id; the
//! answer is exactly `success`. Assumed: a `notify_time` (Beijing time) more
//! than 26 h away is refused — Alipay retries for 25 h.
//!
//! Status queries call the gateway's `alipay.trade.query`: the request's
//! parameters signed with the app's private key the same way (only `sign`
//! left out), the answer's `alipay_trade_query_response` object verified as
//! the exact bytes Alipay sent, against Alipay's public key.
//!
//! Refunds: `alipay.trade.refund` with `out_request_no` = Reckon's refund_no
//! (idempotent at Alipay); `fund_change = Y` means the money moved, anything
//! else is confirmed by `alipay.trade.fastpay.refund.query`
//! (`refund_status = REFUND_SUCCESS`). Refund notifications are the trade's
//! notifications carrying `refund_fee` — the trade's refunded total so far,
//! not this refund's amount — and `out_biz_no` (the refund's
//! out_request_no); the refund ledger checks that total for consistency.

mod config;
pub mod statement;

pub use config::AlipayConfig;

use super::{
    Answer, CallError, Notification, PaymentNotice, Provider, ProviderView, RefundNotice,
    RefundRequest, RefundView, Reply, VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId, RefundNo,
    RefundStatus,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::{HeaderMap, StatusCode};
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::signature::{SignatureEncoding, Signer, Verifier};
use secrecy::ExposeSecret;
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::Sha256;
use std::collections::BTreeMap;

/// Alipay retries a notification for 25 hours; older is a replay.
pub const TOLERANCE_SECS: i64 = 26 * 3600;

pub struct Alipay {
    name: ProviderName,
    app_id: String,
    seller_id: Option<String>,
    key: VerifyingKey<Sha256>,
    /// The gateway (`https://openapi.alipay.com/gateway.do`) and the app's
    /// private key: both set, or no status queries.
    gateway: Option<(String, SigningKey<Sha256>)>,
    http: reqwest::Client,
}

impl Alipay {
    pub fn new(name: ProviderName, c: &AlipayConfig) -> Result<Alipay, String> {
        let key = super::keys::rsa_public_key(&c.public_key)
            .map_err(|e| format!("Alipay public key: {e}"))?;
        let private_key = c.private_key.as_ref().map(|k| k.expose_secret());
        let gateway = match (c.base_url.trim(), private_key) {
            ("", None) => None,
            (url, Some(pk)) if !url.is_empty() => {
                let pk =
                    super::keys::rsa_private_key(pk).map_err(|e| format!("the app private key: {e}"))?;
                Some((url.to_owned(), SigningKey::new(pk)))
            }
            _ => {
                return Err(
                    "status queries need both base_url (the gateway) and private_key".into(),
                );
            }
        };
        Ok(Alipay {
            name,
            app_id: c.app_id.clone(),
            seller_id: c.seller_id.clone(),
            key: VerifyingKey::new(key),
            gateway,
            http: super::wire::client(super::wire::timeout(c.timeout_ms)),
        })
    }

    /// Calls a gateway method; returns the verified `{method}_response`
    /// object once its `code` says success.
    async fn call(
        &self,
        method: &str,
        biz_content: serde_json::Value,
    ) -> Result<serde_json::Value, CallError> {
        let Some((gateway, signer)) = &self.gateway else {
            return Err(CallError::Refused(format!(
                "{} has no gateway and private key configured",
                self.name
            )));
        };
        let beijing =
            jiff::Timestamp::now().to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(8)));
        let mut params: BTreeMap<String, String> = [
            ("app_id", self.app_id.clone()),
            ("method", method.to_owned()),
            ("format", "JSON".to_owned()),
            ("charset", "utf-8".to_owned()),
            ("sign_type", "RSA2".to_owned()),
            (
                "timestamp",
                beijing.strftime("%Y-%m-%d %H:%M:%S").to_string(),
            ),
            ("version", "1.0".to_owned()),
            ("biz_content", biz_content.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        // Requests sign every non-empty parameter but `sign` (notifications
        // also leave out `sign_type`).
        let content = params
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        params.insert(
            "sign".into(),
            B64.encode(signer.sign(content.as_bytes()).to_bytes()),
        );
        let res = self
            .http
            .post(gateway)
            .form(&params)
            .send()
            .await
            .map_err(super::wire::call_error)?;
        let status = res.status();
        let bytes = res.bytes().await.map_err(super::wire::call_error)?;
        if !status.is_success() {
            return Err(CallError::Network(format!("the gateway answered {status}")));
        }
        let key = format!("{}_response", method.replace('.', "_"));
        let envelope: BTreeMap<String, &RawValue> = serde_json::from_slice(&bytes)
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))?;
        let raw = envelope
            .get(&key)
            .ok_or_else(|| CallError::Network(format!("the answer has no {key}")))?;
        let answer: serde_json::Value = serde_json::from_str(raw.get())
            .map_err(|e| CallError::Network(format!("unreadable answer: {e}")))?;
        let code = answer["code"].as_str().unwrap_or_default();
        // Alipay signs every answer it produces; gateway-level refusals
        // (bad signature, missing parameters) may come unsigned.
        match envelope
            .get("sign")
            .and_then(|s| serde_json::from_str::<String>(s.get()).ok())
        {
            Some(sign) => {
                let signature = B64
                    .decode(sign.trim())
                    .ok()
                    .and_then(|b| Signature::try_from(b.as_slice()).ok())
                    .ok_or_else(|| CallError::Refused("the answer's sign is malformed".into()))?;
                self.key
                    .verify(raw.get().as_bytes(), &signature)
                    .map_err(|_| {
                        CallError::Refused("the answer's signature does not verify".into())
                    })?;
            }
            None if code == "10000" => {
                return Err(CallError::Refused("the answer is not signed".into()));
            }
            None => {}
        }
        if code == "10000" {
            return Ok(answer);
        }
        let sub_code = answer["sub_code"].as_str().unwrap_or_default();
        if sub_code == "ACQ.TRADE_NOT_EXIST" {
            return Err(CallError::NotFound);
        }
        if code == "20000" || sub_code == "ACQ.SYSTEM_ERROR" {
            return Err(CallError::Network(format!(
                "Alipay is unavailable ({sub_code})"
            )));
        }
        Err(CallError::Refused(format!(
            "{code} {sub_code}: {}",
            answer["sub_msg"]
                .as_str()
                .or(answer["msg"].as_str())
                .unwrap_or_default()
        )))
    }
}

/// Alipay's word for a trade → ours; `None` while the buyer has not paid.
fn status_of(word: &str) -> Option<Option<PaymentStatus>> {
    match word {
        "TRADE_SUCCESS" | "TRADE_FINISHED" => Some(Some(PaymentStatus::Succeeded)),
        "WAIT_BUYER_PAY" => Some(None),
        "TRADE_CLOSED" => Some(Some(PaymentStatus::Closed)),
        _ => None,
    }
}

#[derive(Deserialize)]
struct QueriedTrade {
    out_trade_no: String,
    trade_no: Option<String>,
    trade_status: String,
    total_amount: String,
}

/// The form's pairs, percent-decoded and read in the charset it declares.
/// Returns the pairs and the encoding.
pub fn decode_form(
    body: &[u8],
) -> Result<(BTreeMap<String, String>, &'static encoding_rs::Encoding), String> {
    let raw: Vec<(Vec<u8>, Vec<u8>)> = body
        .split(|b| *b == b'&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = match pair.iter().position(|b| *b == b'=') {
                Some(i) => (&pair[..i], &pair[i + 1..]),
                None => (pair, &pair[pair.len()..]),
            };
            let dec = |s: &[u8]| -> Vec<u8> {
                let plus: Vec<u8> = s
                    .iter()
                    .map(|b| if *b == b'+' { b' ' } else { *b })
                    .collect();
                percent_encoding::percent_decode(&plus).collect()
            };
            (dec(k), dec(v))
        })
        .collect();
    let charset = raw
        .iter()
        .find(|(k, _)| k == b"charset")
        .map(|(_, v)| String::from_utf8_lossy(v).to_string())
        .unwrap_or_else(|| "utf-8".into());
    let encoding = encoding_rs::Encoding::for_label(charset.trim().as_bytes())
        .ok_or_else(|| format!("unknown charset {charset:?}"))?;
    let mut map = BTreeMap::new();
    for (k, v) in raw {
        let (k, _, bad_k) = encoding.decode(&k);
        let (v, _, bad_v) = encoding.decode(&v);
        if bad_k || bad_v {
            return Err(format!("field {k} is not valid {}", encoding.name()));
        }
        map.insert(k.into_owned(), v.into_owned());
    }
    Ok((map, encoding))
}

/// What Alipay signs: every non-empty field but `sign` and `sign_type`,
/// sorted by key, `k=v` joined with `&`.
pub fn signed_content(fields: &BTreeMap<String, String>) -> String {
    fields
        .iter()
        .filter(|(k, v)| k.as_str() != "sign" && k.as_str() != "sign_type" && !v.is_empty())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// `notify_time` (Beijing time, `yyyy-MM-dd HH:mm:ss`) as UTC seconds.
fn notify_seconds(text: &str) -> Option<i64> {
    let dt: jiff::civil::DateTime = text.trim().replace(' ', "T").parse().ok()?;
    let zoned = dt
        .to_zoned(jiff::tz::TimeZone::fixed(jiff::tz::offset(8)))
        .ok()?;
    Some(zoned.timestamp().as_second())
}

#[async_trait::async_trait]
impl Provider for Alipay {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn statement_format(&self) -> Option<crate::statement::Format> {
        Some(statement::FORMAT)
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/x-www-form-urlencoded")
    }

    fn creates_payments(&self) -> bool {
        false
    }

    fn verify(&self, _headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError> {
        let (fields, encoding) = decode_form(body).map_err(VerifyError::MalformedHeader)?;
        if fields.get("sign_type").map(String::as_str) != Some("RSA2") {
            return Err(VerifyError::MalformedHeader(
                "sign_type must be RSA2".into(),
            ));
        }
        let sign = fields
            .get("sign")
            .ok_or(VerifyError::MissingHeader("sign"))?;
        let bytes = B64
            .decode(sign.trim())
            .map_err(|_| VerifyError::MalformedHeader("sign is not base64".into()))?;
        let signature =
            Signature::try_from(bytes.as_slice()).map_err(|_| VerifyError::BadSignature)?;
        let content = signed_content(&fields);
        let (encoded, _, _) = encoding.encode(&content);
        self.key
            .verify(&encoded, &signature)
            .map_err(|_| VerifyError::BadSignature)?;
        // Signed, so these are Alipay's word: now check it is for us.
        if fields.get("app_id") != Some(&self.app_id)
            || self
                .seller_id
                .as_ref()
                .is_some_and(|s| fields.get("seller_id") != Some(s))
        {
            return Err(VerifyError::BadSignature);
        }
        let sent = fields
            .get("notify_time")
            .and_then(|t| notify_seconds(t))
            .ok_or_else(|| {
                VerifyError::MalformedHeader("notify_time missing or malformed".into())
            })?;
        // As the other adapters: no `now - sent` that can overflow.
        if now_secs.abs_diff(sent) > TOLERANCE_SECS.unsigned_abs() {
            return Err(VerifyError::StaleTimestamp {
                tolerance_secs: TOLERANCE_SECS,
            });
        }
        Ok(())
    }

    fn parse(&self, _headers: &HeaderMap, body: &[u8]) -> Result<Notification, String> {
        let (fields, _) = decode_form(body)?;
        let get = |k: &str| {
            fields
                .get(k)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("no {k}"))
        };
        let callback_id = CallbackId::parse(get("notify_id")?).map_err(|e| e.to_string())?;
        let trade_status = get("trade_status")?.clone();
        let cny = Currency::parse("CNY").expect("CNY is known");
        if fields.get("refund_fee").is_some_and(|v| !v.is_empty()) {
            return Ok(Notification::Refund(RefundNotice {
                callback_id,
                refund_no: fields
                    .get("out_biz_no")
                    .filter(|v| !v.is_empty())
                    .map(|v| RefundNo::parse(v))
                    .transpose()
                    .map_err(|e| e.to_string())?,
                provider_refund_id: None,
                payment_no: Some(
                    PaymentNo::parse(get("out_trade_no")?).map_err(|e| e.to_string())?,
                ),
                payment_txn_id: Some(
                    ProviderTxnId::parse(get("trade_no")?).map_err(|e| e.to_string())?,
                ),
                provider_status: trade_status,
                // Alipay notifies refunds once the money has moved.
                status: RefundStatus::Succeeded,
                money: Money::parse_major(get("refund_fee")?, cny)
                    .map_err(|e| format!("refund_fee: {e}"))?,
                cumulative: true,
            }));
        }
        let Some(status) = status_of(&trade_status) else {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: trade_status,
            });
        };
        let status = status.unwrap_or(PaymentStatus::Pending);
        Ok(Notification::Payment(PaymentNotice {
            callback_id,
            payment_no: PaymentNo::parse(get("out_trade_no")?).map_err(|e| e.to_string())?,
            provider_txn_id: Some(
                ProviderTxnId::parse(get("trade_no")?).map_err(|e| e.to_string())?,
            ),
            provider_status: trade_status,
            status,
            money: Money::parse_major(get("total_amount")?, cny).map_err(|e| e.to_string())?,
            declined: None,
        }))
    }

    fn queries_payments(&self) -> bool {
        self.gateway.is_some()
    }

    async fn query_payment(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        let mut biz = serde_json::json!({ "out_trade_no": payment_no.as_str() });
        if let Some(t) = txn {
            biz["trade_no"] = t.as_str().into();
        }
        let answer = self.call("alipay.trade.query", biz).await?;
        let trade: QueriedTrade = serde_json::from_value(answer)
            .map_err(|e| CallError::Refused(format!("unreadable trade: {e}")))?;
        if trade.out_trade_no != payment_no.as_str() {
            return Err(CallError::Refused(format!(
                "asked about {payment_no}, told about {}",
                trade.out_trade_no
            )));
        }
        let status = status_of(&trade.trade_status).ok_or_else(|| {
            CallError::Refused(format!("unknown trade_status {}", trade.trade_status))
        })?;
        let cny = Currency::parse("CNY").expect("CNY is known");
        Ok(ProviderView {
            provider_txn_id: trade
                .trade_no
                .as_deref()
                .filter(|t| !t.is_empty())
                .map(ProviderTxnId::parse)
                .transpose()
                .map_err(|e| CallError::Refused(e.to_string()))?,
            status,
            money: Money::parse_major(&trade.total_amount, cny)
                .map_err(|e| CallError::Refused(format!("total_amount: {e}")))?,
        })
    }

    fn refunds(&self) -> bool {
        self.gateway.is_some()
    }

    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        let mut biz = serde_json::json!({
            "out_trade_no": req.payment_no.as_str(),
            "refund_amount": req.money.major_string(),
            "out_request_no": req.refund_no.as_str(),
            "refund_reason": req.reason.chars().take(256).collect::<String>(),
        });
        if let Some(t) = req.payment_txn {
            biz["trade_no"] = t.as_str().into();
        }
        let answer = self.call("alipay.trade.refund", biz).await?;
        // fund_change = Y: the money moved now. Otherwise (a repeat of an
        // earlier request, say) the refund query says how it stands.
        let status = if answer["fund_change"] == "Y" {
            RefundStatus::Succeeded
        } else {
            RefundStatus::Pending
        };
        Ok(RefundView {
            provider_refund_id: None,
            status,
            money: req.money,
        })
    }

    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        let mut biz = serde_json::json!({
            "out_trade_no": req.payment_no.as_str(),
            "out_request_no": req.refund_no.as_str(),
        });
        if let Some(t) = req.payment_txn {
            biz["trade_no"] = t.as_str().into();
        }
        let answer = self.call("alipay.trade.fastpay.refund.query", biz).await?;
        // An empty answer: Alipay has no such refund request.
        let Some(amount) = answer["refund_amount"].as_str().filter(|a| !a.is_empty()) else {
            return Err(CallError::NotFound);
        };
        if answer["out_request_no"]
            .as_str()
            .is_some_and(|n| n != req.refund_no.as_str())
        {
            return Err(CallError::Refused("told about another refund".into()));
        }
        let cny = Currency::parse("CNY").expect("CNY is known");
        Ok(RefundView {
            provider_refund_id: None,
            status: if answer["refund_status"] == "REFUND_SUCCESS" {
                RefundStatus::Succeeded
            } else {
                RefundStatus::Pending
            },
            money: Money::parse_major(amount, cny)
                .map_err(|e| CallError::Refused(format!("refund_amount: {e}")))?,
        })
    }

    fn answer(&self, answer: &Answer) -> Reply {
        // Alipay stops retrying only on exactly `success`.
        let (status, text) = match answer {
            Answer::Accepted => (StatusCode::OK, "success"),
            Answer::RetryLater => (StatusCode::SERVICE_UNAVAILABLE, "fail"),
            Answer::UnknownPayment => (StatusCode::NOT_FOUND, "fail"),
            Answer::Unverified(_) | Answer::Malformed(_) => (StatusCode::BAD_REQUEST, "fail"),
            Answer::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "fail"),
            Answer::UnsupportedType(_) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, "fail"),
        };
        Reply::text(status, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signed_text_drops_sign_and_empty_values_and_sorts() {
        let fields: BTreeMap<String, String> = [
            ("trade_no", "2026"),
            ("sign", "abc"),
            ("app_id", "2021"),
            ("sign_type", "RSA2"),
            ("body", ""),
            ("out_trade_no", "PAY1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(
            signed_content(&fields),
            "app_id=2021&out_trade_no=PAY1&trade_no=2026"
        );
    }

    #[test]
    fn gbk_forms_decode_by_their_charset() {
        // "支付" in GBK is D6 A7 B8 B6.
        let (fields, enc) = decode_form(b"charset=gbk&subject=%D6%A7%B8%B6&x=a+b").unwrap();
        assert_eq!(enc, encoding_rs::GBK);
        assert_eq!(fields["subject"], "支付");
        assert_eq!(fields["x"], "a b");
        assert!(
            decode_form(b"charset=utf-8&subject=%D6").is_err(),
            "not UTF-8"
        );
        assert!(decode_form(b"charset=klingon&a=b").is_err());
    }

    #[test]
    fn notify_time_is_beijing_time() {
        assert_eq!(notify_seconds("2026-11-30 08:00:00"), Some(1_795_996_800));
        assert_eq!(notify_seconds("yesterday"), None);
    }
}
