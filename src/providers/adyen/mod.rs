//! Adyen: standard notification webhooks, JSON
//! `{"live":"false","notificationItems":[{"NotificationRequestItem":{…}}]}`,
//! each item signed in `additionalData.hmacSignature`: base64 HMAC-SHA256,
//! keyed with the hex HMAC key decoded, over
//! `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success`
//! (a missing field empty) — as the official libraries compute it
//! (`HmacValidator` in `@adyen/api-library`, `src/utils/hmacValidator.ts`).
//! Any configured key may match (rotation). The signature carries no time,
//! so a replayed notification is told by its id alone: `eventCode`,
//! `pspReference` and `success` together (an AUTHORISATION sent again with
//! another outcome is a notification of its own, not a conflict). When the Customer Area sets a basic
//! authentication user for the webhook, every notification must carry it.
//! Reckon reads one item per webhook (integrators document Adyen's list as
//! holding a single item); a body with several is refused whole, so Adyen
//! sends it again, rather than half read.
//! Accepted notifications are answered `[accepted]`, as Adyen asks.
//!
//! Mapping, by Adyen's event codes: AUTHORISATION `success=true` →
//! SUCCEEDED (`false`: the attempt was refused → FAILED); CAPTURE
//! `success=true` → SUCCEEDED; CANCELLATION `success=true` → CLOSED.
//! Reckon's payment_no is the payment's `merchantReference`; Adyen's
//! `pspReference` is its transaction. REFUND `success=true` → the refund
//! SUCCEEDED (`false` FAILED), REFUND_FAILED → FAILED (it may follow a
//! REFUND that succeeded, when the scheme returns it); the refund is its
//! `pspReference`, the payment its `originalReference`, Reckon's refund_no
//! its `merchantReference` (the `reference` Reckon sends). The dispute
//! events (REQUEST_FOR_INFORMATION, NOTIFICATION_OF_CHARGEBACK, CHARGEBACK,
//! INFORMATION_SUPPLIED, CHARGEBACK_REVERSED, SECOND_CHARGEBACK,
//! PREARBITRATION_WON|LOST) are disputes (`dispute_notice`), moving no
//! payment. Every other event (REPORT_AVAILABLE, …) moves no payment:
//! acknowledged.
//!
//! Refunds: Checkout API `POST /v71/payments/{pspReference}/refunds`
//! (`X-API-Key`, `Idempotency-Key` = refund_no); Adyen answers `received`
//! and tells the outcome in a REFUND notification. Adyen has no API to read
//! a payment's or a refund's status (the Checkout API creates and modifies;
//! results come as notifications): `queries()` is `None`, and a refund
//! still pending is asked about by sending the same request again under
//! its idempotency key, which Adyen answers as it did the first time.
//!
//! Statements: the Settlement details report (`statement`), uploaded or
//! imported, or pushed: a REPORT_AVAILABLE notification names a report
//! (`pspReference` its file, `reason` its URL); with `report_base_url` and
//! report credentials configured the intake records it and the statement
//! beat downloads it (`download_report`: from the configured report host
//! only, with the report user's `X-API-Key` or basic authentication, as
//! the reporting docs say) and imports it as an upload. A settlement
//! report is a payout batch, not a calendar day: it is reconciled as the
//! day before the one it was made on (Adyen makes it about two hours after
//! the batch closes), which is right for batches that close daily.

mod api;
mod config;
pub mod statement;

pub use config::{AdyenConfig, KIND};

use super::{
    Answer, CallError, Notification, PaymentNotice, Provider, RefundNotice, RefundRequest,
    RefundView, Refunds, Reply, ReportPush, Reports, StatementFile, VerifyError,
};
use crate::domain::{
    CallbackId, Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId,
    ProviderTxnId, RefundNo, RefundStatus,
};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use http::{HeaderMap, StatusCode};
use serde::Deserialize;
use sha2::Sha256;

/// How report downloads authenticate, as Adyen's reporting docs say: the
/// report user's API key, or its name and password.
#[derive(Clone)]
pub(crate) enum ReportAuth {
    ApiKey(String),
    Basic(String, String),
}

pub struct Adyen {
    name: ProviderName,
    base_url: String,
    merchant_account: String,
    /// HMAC keys, decoded, newest first; any may sign.
    keys: Vec<Vec<u8>>,
    /// The webhook's basic authentication, when set up.
    basic: Option<(String, String)>,
    api_key: String,
    report_base_url: Option<String>,
    report_auth: Option<ReportAuth>,
    report_zone: Option<jiff::tz::TimeZone>,
    max_bill_bytes: u64,
    http: reqwest::Client,
}

#[derive(Deserialize)]
struct Body {
    #[serde(rename = "notificationItems")]
    items: Vec<Wrapper>,
}

#[derive(Deserialize)]
struct Wrapper {
    #[serde(rename = "NotificationRequestItem")]
    item: Item,
}

/// The fields of a NotificationRequestItem Reckon reads.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Item {
    #[serde(default)]
    additional_data: Option<serde_json::Map<String, serde_json::Value>>,
    amount: Amount,
    event_code: String,
    #[serde(default)]
    event_date: Option<String>,
    #[serde(default)]
    merchant_account_code: Option<String>,
    #[serde(default)]
    merchant_reference: Option<String>,
    #[serde(default)]
    original_reference: Option<String>,
    psp_reference: String,
    #[serde(default)]
    reason: Option<String>,
    /// `"true"` or `"false"`, as text.
    success: Text,
}

#[derive(Deserialize)]
struct Amount {
    currency: String,
    value: i64,
}

/// A field Adyen writes as text that a sender may write as a boolean.
#[derive(Deserialize)]
#[serde(untagged)]
enum Text {
    S(String),
    B(bool),
}

impl Text {
    fn text(&self) -> String {
        match self {
            Text::S(s) => s.clone(),
            Text::B(b) => b.to_string(),
        }
    }
}

impl Item {
    /// The signed text, in the documented order.
    fn signed_text(&self) -> String {
        let or_empty = |v: &Option<String>| v.clone().unwrap_or_default();
        [
            self.psp_reference.clone(),
            or_empty(&self.original_reference),
            or_empty(&self.merchant_account_code),
            or_empty(&self.merchant_reference),
            self.amount.value.to_string(),
            self.amount.currency.clone(),
            self.event_code.clone(),
            self.success.text(),
        ]
        .join(":")
    }

    fn signature(&self) -> Option<&str> {
        self.additional_data
            .as_ref()?
            .get("hmacSignature")?
            .as_str()
    }

    fn succeeded(&self) -> bool {
        self.success.text() == "true"
    }

    fn money(&self) -> Result<Money, String> {
        let currency = Currency::parse(&self.amount.currency).map_err(|e| e.to_string())?;
        Ok(Money::new(self.amount.value, currency))
    }
}

/// An ISO 8601 time with its offset (Adyen's `eventDate`,
/// `defensePeriodEndsAt`: `2020-12-18T10:15:30+01:00`) in microseconds.
fn iso_micros(text: &str) -> Result<i64, String> {
    text.trim()
        .parse::<jiff::Timestamp>()
        .map(|t| t.as_microsecond())
        .map_err(|e| format!("time {}: {e}", crate::domain::quote(text)))
}

/// A dispute event of Adyen's (docs.adyen.com "Dispute webhooks" and the
/// Webhooks API explorer's event pages): `pspReference` is the dispute's,
/// the same on all its events, `originalReference` the disputed payment,
/// `additionalData.defensePeriodEndsAt` the answer's due time,
/// `chargebackReasonCode` the scheme's reason. REQUEST_FOR_INFORMATION
/// takes no money (an inquiry); NOTIFICATION_OF_CHARGEBACK opens the
/// defence period; CHARGEBACK deducts the amount, CHARGEBACK_REVERSED gives
/// it back (won), SECOND_CHARGEBACK deducts it again (lost, final);
/// INFORMATION_SUPPLIED is the defence sent; PREARBITRATION_WON|LOST decide.
/// `None`: not a dispute event.
fn dispute_notice(
    item: &Item,
    callback_id: &CallbackId,
) -> Result<Option<super::DisputeNotice>, String> {
    use crate::domain::DisputeStatus as S;
    // (status, the balance moved: None, Some(false) taken, Some(true) given back)
    let (status, moved) = match item.event_code.as_str() {
        "REQUEST_FOR_INFORMATION" => (S::Inquiry, None),
        "NOTIFICATION_OF_CHARGEBACK" => (S::Open, None),
        "CHARGEBACK" => (S::Open, Some(false)),
        "INFORMATION_SUPPLIED" => (S::EvidenceSubmitted, None),
        "CHARGEBACK_REVERSED" => (S::Won, Some(true)),
        "SECOND_CHARGEBACK" => (S::Lost, Some(false)),
        "PREARBITRATION_WON" => (S::Won, None),
        "PREARBITRATION_LOST" => (S::Lost, None),
        _ => return Ok(None),
    };
    let extra = |key: &str| {
        item.additional_data
            .as_ref()
            .and_then(|d| d.get(key))
            .and_then(|v| v.as_str())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    fn present(v: &Option<String>) -> Option<&str> {
        v.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
    let event_at = iso_micros(
        item.event_date
            .as_deref()
            .ok_or("a dispute notification without its eventDate")?,
    )?;
    let money = item.money()?;
    let movements = moved
        .map(|reinstated| super::DisputeMovement {
            id: format!("{}:{}", item.event_code, item.psp_reference),
            reinstated,
            money,
            // Adyen books its chargeback fee in the settlement report, not
            // on the notification.
            fee_minor: 0,
            at: event_at,
        })
        .into_iter()
        .collect();
    Ok(Some(super::DisputeNotice {
        callback_id: callback_id.clone(),
        event_type: item.event_code.clone(),
        dispute_id: item.psp_reference.clone(),
        payment_no: present(&item.merchant_reference).and_then(|r| PaymentNo::parse(r).ok()),
        payment_txn_id: present(&item.original_reference)
            .map(ProviderTxnId::parse)
            .transpose()
            .map_err(|e| e.to_string())?,
        money,
        reason: extra("chargebackReasonCode")
            .map(|c| format!("reason code {c}"))
            .or_else(|| present(&item.reason).map(|r| r.chars().take(200).collect())),
        provider_status: match extra("disputeStatus") {
            Some(d) => format!("{} ({d})", item.event_code),
            None => item.event_code.clone(),
        },
        status,
        evidence_due_at: extra("defensePeriodEndsAt").map(iso_micros).transpose()?,
        event_at,
        movements,
    }))
}

/// Whether `signature` (base64) is `key`'s HMAC of `text`.
fn signed_with(key: &[u8], text: &str, signature: &str) -> bool {
    let Ok(expected) = base64::engine::general_purpose::STANDARD.decode(signature) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    mac.update(text.as_bytes());
    mac.verify_slice(&expected).is_ok()
}

fn body(bytes: &[u8]) -> Result<Body, String> {
    serde_json::from_slice(bytes).map_err(|e| format!("not an Adyen notification: {e}"))
}

impl Adyen {
    /// The webhook's basic authentication, when one is set up.
    fn check_basic(&self, headers: &HeaderMap) -> Result<(), VerifyError> {
        let Some((user, password)) = &self.basic else {
            return Ok(());
        };
        let header = headers
            .get(http::header::AUTHORIZATION)
            .ok_or(VerifyError::MissingHeader("Authorization"))?
            .to_str()
            .map_err(|_| VerifyError::MalformedHeader("Authorization is not text".into()))?;
        let given = header
            .strip_prefix("Basic ")
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .ok_or_else(|| VerifyError::MalformedHeader("Authorization is not Basic".into()))?;
        let wanted = format!("{user}:{password}");
        // Compared as MACs are, in constant time.
        let mut mac = Hmac::<Sha256>::new_from_slice(b"basic").expect("any key length");
        mac.update(wanted.as_bytes());
        let wanted = mac.finalize().into_bytes();
        let mut mac = Hmac::<Sha256>::new_from_slice(b"basic").expect("any key length");
        mac.update(&given);
        if mac.verify_slice(&wanted).is_ok() {
            Ok(())
        } else {
            Err(VerifyError::BadSignature)
        }
    }
}

impl Provider for Adyen {
    fn name(&self) -> &ProviderName {
        &self.name
    }

    fn accepts(&self, content_type: &str) -> bool {
        content_type.starts_with("application/json")
    }

    /// The report's rows whose `TimeZone` Reckon cannot place are read in
    /// the account's `report_time_zone`.
    fn statement_format(&self) -> Option<crate::statement::Format> {
        Some(match &self.report_zone {
            Some(zone) => statement::FORMAT.in_zone(zone.clone()),
            None => statement::FORMAT,
        })
    }

    fn verify(&self, headers: &HeaderMap, body_bytes: &[u8], _now: i64) -> Result<(), VerifyError> {
        self.check_basic(headers)?;
        let body = body(body_bytes).map_err(VerifyError::MalformedHeader)?;
        if body.items.is_empty() {
            return Err(VerifyError::MalformedHeader(
                "the notification has no notificationItems".into(),
            ));
        }
        // Every item must be signed by one of the keys.
        for w in &body.items {
            let signature = w
                .item
                .signature()
                .ok_or(VerifyError::MissingHeader("additionalData.hmacSignature"))?;
            let text = w.item.signed_text();
            if !self.keys.iter().any(|k| signed_with(k, &text, signature)) {
                return Err(VerifyError::BadSignature);
            }
        }
        Ok(())
    }

    fn parse(&self, _headers: &HeaderMap, bytes: &[u8]) -> Result<Notification, String> {
        let body = body(bytes)?;
        let [Wrapper { item }] = body.items.as_slice() else {
            return Err(format!(
                "{} notification items in one webhook; Reckon reads one a webhook",
                body.items.len()
            ));
        };
        let success = item.success.text();
        let callback_id = CallbackId::parse(&format!(
            "{}:{}:{success}",
            item.event_code, item.psp_reference
        ))
        .map_err(|e| e.to_string())?;
        let present =
            |v: &Option<String>| v.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
        let ok = item.succeeded();
        let status = match (item.event_code.as_str(), ok) {
            ("AUTHORISATION", true) | ("CAPTURE", true) => Some(PaymentStatus::Succeeded),
            ("AUTHORISATION", false) => Some(PaymentStatus::Failed),
            ("CANCELLATION", true) => Some(PaymentStatus::Closed),
            _ => None,
        };
        if let Some(status) = status {
            let Some(payment_no) = present(&item.merchant_reference) else {
                return Ok(Notification::Ignored {
                    callback_id,
                    event_type: format!("{} (no merchantReference)", item.event_code),
                });
            };
            // A modification's own pspReference is not the payment's.
            let txn = if item.event_code == "AUTHORISATION" {
                Some(item.psp_reference.clone())
            } else {
                present(&item.original_reference)
            };
            return Ok(Notification::Payment(PaymentNotice {
                callback_id,
                payment_no: PaymentNo::parse(&payment_no).map_err(|e| e.to_string())?,
                provider_txn_id: txn
                    .map(|t| ProviderTxnId::parse(&t))
                    .transpose()
                    .map_err(|e| e.to_string())?,
                provider_status: format!("{} success={success}", item.event_code),
                status,
                money: item.money()?,
                declined: None,
            }));
        }
        if let Some(dispute) = dispute_notice(item, &callback_id)? {
            return Ok(Notification::Dispute(dispute));
        }
        let refund = match item.event_code.as_str() {
            "REFUND" if ok => Some(RefundStatus::Succeeded),
            "REFUND" | "REFUND_FAILED" => Some(RefundStatus::Failed),
            _ => None,
        };
        let Some(refund) = refund else {
            return Ok(Notification::Ignored {
                callback_id,
                event_type: item.event_code.clone(),
            });
        };
        Ok(Notification::Refund(RefundNotice {
            callback_id,
            refund_no: present(&item.merchant_reference)
                .map(|r| RefundNo::parse(&r))
                .transpose()
                .map_err(|e| e.to_string())?,
            provider_refund_id: Some(
                ProviderRefundId::parse(&item.psp_reference).map_err(|e| e.to_string())?,
            ),
            payment_no: None,
            payment_txn_id: present(&item.original_reference)
                .map(|t| ProviderTxnId::parse(&t))
                .transpose()
                .map_err(|e| e.to_string())?,
            provider_status: format!(
                "{} success={success}{}",
                item.event_code,
                present(&item.reason)
                    .map(|r| format!(" ({})", r.chars().take(200).collect::<String>()))
                    .unwrap_or_default()
            ),
            status: refund,
            money: item.money()?,
            cumulative: false,
        }))
    }

    /// `[accepted]` for what Reckon keeps (Adyen's required answer); any
    /// other answer makes Adyen send the notification again later.
    fn answer(&self, answer: &Answer) -> Reply {
        let status = match answer {
            Answer::Accepted => return Reply::text(StatusCode::OK, "[accepted]"),
            Answer::Unverified(VerifyError::MissingHeader("Authorization")) => {
                StatusCode::UNAUTHORIZED
            }
            Answer::Unverified(_) | Answer::Malformed(_) => StatusCode::BAD_REQUEST,
            Answer::UnknownPayment => StatusCode::NOT_FOUND,
            Answer::RetryLater => StatusCode::SERVICE_UNAVAILABLE,
            Answer::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Answer::UnsupportedType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        };
        Reply::json(status, &serde_json::json!({ "error": answer.reason() }))
    }

    fn refunds(&self) -> Option<&dyn Refunds> {
        (!self.api_key.is_empty()).then_some(self as &dyn Refunds)
    }

    /// With a report host and report credentials configured.
    fn reports(&self) -> Option<&dyn Reports> {
        (self.report_base_url.is_some() && self.report_auth.is_some())
            .then_some(self as &dyn Reports)
    }
}

#[async_trait::async_trait]
impl Reports for Adyen {
    /// REPORT_AVAILABLE, `success` true: the file's name is its
    /// `pspReference`, its URL the `reason` (Adyen's reporting docs,
    /// "Get reports automatically").
    fn pushed(&self, bytes: &[u8]) -> Option<ReportPush> {
        let body = body(bytes).ok()?;
        let [Wrapper { item }] = body.items.as_slice() else {
            return None;
        };
        if item.event_code != "REPORT_AVAILABLE" || !item.succeeded() {
            return None;
        }
        Some(ReportPush {
            file_name: item.psp_reference.clone(),
            url: item.reason.clone()?,
            made_at: item
                .event_date
                .as_deref()
                .and_then(|d| d.parse::<jiff::Timestamp>().ok())
                .map(|t| t.as_microsecond()),
        })
    }

    async fn fetch(&self, push: &ReportPush) -> Result<StatementFile, CallError> {
        self.download_report(&push.url, &push.file_name).await
    }

    fn payouts(&self, file: &StatementFile) -> Result<Vec<super::PayoutSeen>, String> {
        let reader = file
            .body
            .open()
            .map_err(|e| format!("the report cannot be read again: {e}"))?;
        statement::payouts(reader)
    }
}

#[async_trait::async_trait]
impl Refunds for Adyen {
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.create_refund(req).await
    }

    /// No refund status API: the same request again, under its
    /// idempotency key, says whether Adyen received it (see the module notes).
    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError> {
        self.create_refund(req).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Adyen's HMAC documentation and the official
    /// libraries' tests: this item under this key signs to this value.
    #[test]
    fn the_documented_example_signs_as_the_official_libraries_do() {
        let item: Item = serde_json::from_value(serde_json::json!({
            "pspReference": "7914073381342284",
            "merchantAccountCode": "TestMerchant",
            "merchantReference": "TestPayment-1407325143704",
            "amount": { "value": 1130, "currency": "EUR" },
            "eventCode": "AUTHORISATION",
            "success": "true"
        }))
        .unwrap();
        assert_eq!(
            item.signed_text(),
            "7914073381342284::TestMerchant:TestPayment-1407325143704:1130:EUR:AUTHORISATION:true"
        );
        let key = hex::decode("44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056")
            .unwrap();
        assert!(signed_with(
            &key,
            &item.signed_text(),
            "coqCmt/IZ4E3CzPvMY8zTjQVL5hYJUiBRg8UU+iCWo0="
        ));
        assert!(!signed_with(&key, &item.signed_text(), "AAAA"));
    }

    fn adyen(basic: Option<&str>) -> Adyen {
        let config = AdyenConfig {
            name: "adyen".into(),
            hmac_key: "00FF".into(),
            basic_user: basic.map(str::to_owned),
            basic_password: "s3cret".into(),
            report_base_url: Some("https://ca-test.adyen.com".into()),
            report_api_key: "AQE_report".into(),
            ..AdyenConfig::default()
        };
        Adyen::from_config(&config, ProviderName::parse("adyen").unwrap()).unwrap()
    }

    /// A key that is not hex, or a report host without the report user's
    /// credentials, is refused when the settings are read.
    #[test]
    fn settings_that_cannot_work_are_named() {
        use crate::providers::Account;
        let good = AdyenConfig {
            name: "adyen".into(),
            hmac_key: "00FF".into(),
            ..AdyenConfig::default()
        };
        assert_eq!(good.check(), Ok(()));
        let not_hex = AdyenConfig {
            hmac_key: "whsec_x".into(),
            ..good.clone()
        };
        assert!(not_hex.check().unwrap_err().contains("hex"));
        let half = AdyenConfig {
            report_base_url: Some("https://ca-test.adyen.com".into()),
            ..good.clone()
        };
        assert!(half.check().unwrap_err().contains("report_api_key"));
        let whole = AdyenConfig {
            report_api_key: "AQE_report".into(),
            ..half
        };
        assert_eq!(whole.check(), Ok(()));
    }

    /// With a basic-authentication user set up, a notification without it,
    /// or with another password, is not believed, whatever it signs.
    #[test]
    fn the_webhooks_basic_authentication_is_required_once_set_up() {
        let basic = |user_password: &str| {
            let mut h = HeaderMap::new();
            let value = base64::engine::general_purpose::STANDARD.encode(user_password);
            h.insert("authorization", format!("Basic {value}").parse().unwrap());
            h
        };
        let a = adyen(Some("reckon"));
        assert_eq!(
            a.check_basic(&HeaderMap::new()),
            Err(VerifyError::MissingHeader("Authorization"))
        );
        assert_eq!(
            a.check_basic(&basic("reckon:wrong")),
            Err(VerifyError::BadSignature)
        );
        assert_eq!(a.check_basic(&basic("reckon:s3cret")), Ok(()));
        assert_eq!(adyen(None).check_basic(&HeaderMap::new()), Ok(()));
    }

    /// The REPORT_AVAILABLE example of Adyen's reporting docs: the file is
    /// the pspReference, its URL the reason.
    #[test]
    fn a_report_available_notification_names_the_file_and_where_it_is() {
        let body = serde_json::json!({"live": "false", "notificationItems": [{"NotificationRequestItem": {
            "amount": {"currency": "EUR", "value": 0}, "eventCode": "REPORT_AVAILABLE",
            "eventDate": "2018-04-18T10:03:08+02:00", "merchantAccountCode": "TestMerchant",
            "merchantReference": "", "pspReference": "settlement_detail_report_batch_12.csv",
            "reason": "https://ca-test.adyen.com/reports/download/MerchantAccount/TestMerchant/settlement_detail_report_batch_12.csv",
            "success": "true"}}]})
        .to_string();
        let a = adyen(None);
        assert_eq!(
            a.pushed(body.as_bytes()),
            Some(ReportPush {
                file_name: "settlement_detail_report_batch_12.csv".into(),
                url: "https://ca-test.adyen.com/reports/download/MerchantAccount/TestMerchant/settlement_detail_report_batch_12.csv".into(),
                made_at: Some(1_524_038_588_000_000),
            })
        );
        assert!(matches!(
            a.parse(&HeaderMap::new(), body.as_bytes()),
            Ok(Notification::Ignored { .. })
        ));
        let failed = body.replace("\"success\":\"true\"", "\"success\":\"false\"");
        assert_eq!(a.pushed(failed.as_bytes()), None);
    }
}
