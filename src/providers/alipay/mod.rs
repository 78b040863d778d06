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
//!
//! Bills: `alipay.data.dataservice.bill.downloadurl.query` (`bill_type`
//! trade, `bill_date`), signed and verified like every call, names a
//! `bill_download_url`: a zip of the 业务明细 and its 汇总, GBK; the detail
//! goes to the run once its counts and 商家实收 are the 汇总's.
//! `isp.bill_not_exist`: not ready yet.

pub mod account_log;
mod api;
mod bill;
/// An Alipay trade bill zip's 业务明细, checked against its 汇总 (an upload's too).
pub use bill::detail_of as trade_detail_of;
mod config;
pub mod statement;

pub use config::{AlipayConfig, KIND};

use super::{
    Answer, BillFiles, CallError, Notification, PaymentNotice, Provider, ProviderView, Queries,
    RefundNotice, RefundRequest, RefundView, Refunds, Reply, StatementFile, Statements,
    VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId, RefundNo,
    RefundStatus,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::{HeaderMap, StatusCode};
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::signature::Verifier;
use secrecy::ExposeSecret;
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
    /// The longest bill taken: the zip downloaded, its entries unzipped.
    max_bill_bytes: u64,
}

impl Alipay {
    pub fn new(name: ProviderName, c: &AlipayConfig) -> Result<Alipay, String> {
        let key = super::keys::rsa_public_key(&c.public_key)
            .map_err(|e| format!("Alipay public key: {e}"))?;
        let private_key = c.private_key.as_ref().map(|k| k.expose_secret());
        let gateway = match (c.base_url.trim(), private_key) {
            ("", None) => None,
            (url, Some(pk)) if !url.is_empty() => {
                let pk = super::keys::rsa_private_key(pk)
                    .map_err(|e| format!("the app private key: {e}"))?;
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
            max_bill_bytes: super::spool::limit(c.max_bill_bytes),
        })
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

    // Only through a gateway: without one, notifications alone.
    fn queries(&self) -> Option<&dyn Queries> {
        self.gateway.is_some().then_some(self)
    }

    fn refunds(&self) -> Option<&dyn Refunds> {
        self.gateway.is_some().then_some(self)
    }

    fn statements(&self) -> Option<Statements<'_>> {
        self.gateway.is_some().then_some(Statements::Files(self))
    }

    fn balance(&self) -> Option<&dyn crate::providers::balance::BalanceBills> {
        self.gateway.is_some().then_some(self)
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

#[async_trait::async_trait]
impl Queries for Alipay {
    async fn query_payment(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError> {
        self.trade_query(payment_no, txn).await
    }
}

#[async_trait::async_trait]
impl Refunds for Alipay {
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.trade_refund(req).await
    }

    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.refund_query(req).await
    }
}

#[async_trait::async_trait]
impl crate::providers::balance::BalanceBills for Alipay {
    fn kind(&self) -> &'static str {
        config::KIND.name
    }

    /// The account's 账务明细: where payments, fees, refunds and
    /// withdrawals to the bank move the merchant's money.
    async fn balance_bill(
        &self,
        date: &str,
    ) -> Result<crate::providers::balance::BalanceBill, CallError> {
        self.account_bill(date).await
    }
}

#[async_trait::async_trait]
impl BillFiles for Alipay {
    async fn statement_file(&self, date: &str) -> Result<StatementFile, CallError> {
        self.trade_bill(date).await
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
