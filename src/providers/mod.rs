//! Providers behind one trait: verify a webhook, parse it into an outcome
//! (or "not a payment event"), answer in the provider's protocol, call the
//! provider to create, query, close and refund payments, and read its
//! statements. One folder per provider — its webhook, its API calls, its
//! bill format and its typed config section — so its quirks stay there;
//! `accounts` turns a configured account into its adapter, `wire` and
//! `keys` are what the adapters share, `standard` is the webhook-only
//! Standard-Webhooks sender, `signing` that standard's signatures (which
//! the sandbox and the outbox use too).

mod account;
mod accounts;
pub mod adyen;
pub mod alipay;
pub mod balance;
pub mod fees;
pub mod keys;
pub mod paypal;
pub mod sandbox;
pub mod signing;
pub mod spool;
pub mod standard;
pub mod stripe;
pub mod wechatpay;
pub mod wire;

pub use account::{Account, Kind};
pub use accounts::{KINDS, ProviderConfig, build, kinds_in_words};

use crate::domain::{
    CallbackId, Money, PaymentNo, PaymentStatus, ProviderName, ProviderRefundId, ProviderTxnId,
    RefundNo, RefundStatus,
};
use http::{HeaderMap, StatusCode};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why a webhook was not believed. Nothing is stored or changed for it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("missing header {0}")]
    MissingHeader(&'static str),
    #[error("malformed signature header: {0}")]
    MalformedHeader(String),
    #[error("timestamp outside the {tolerance_secs} s tolerance")]
    StaleTimestamp { tolerance_secs: i64 },
    #[error("no signature matches")]
    BadSignature,
    /// The certificate that signed is not one Reckon trusts, or could not
    /// be had (PayPal's, fetched from the URL the webhook names).
    #[error("signing certificate: {0}")]
    Certificate(String),
}

/// What a refused webhook's failure probably means, for people: a kind the
/// console filters by and a sentence that names the cause and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    /// timestamp_skew | unknown_serial | retired_secret | body_changed |
    /// body_seen_verified
    pub kind: &'static str,
    pub detail: String,
}

impl Diagnosis {
    /// A signed time `signed` (seconds) more than `tolerance` from the
    /// receipt's `now`: by how much, and which way.
    pub fn skew(header: &str, signed: i64, now: i64, tolerance: i64) -> Option<Diagnosis> {
        let off = signed.saturating_sub(now);
        if off.unsigned_abs() <= tolerance.unsigned_abs() {
            return None;
        }
        let way = if off < 0 { "behind" } else { "ahead of" };
        Some(Diagnosis {
            kind: "timestamp_skew",
            detail: format!(
                "timestamp skew: {header} is {} s {way} the time Reckon received it (tolerance                  {tolerance} s): a clock off on one side, or a request held up or replayed",
                off.unsigned_abs()
            ),
        })
    }
}

/// A verified notification, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notification {
    Payment(PaymentNotice),
    Refund(RefundNotice),
    /// A dispute (chargeback, inquiry) opened, moved or decided: recorded
    /// with its callback, never a move of the payment's state.
    Dispute(DisputeNotice),
    /// A verified event that moves no payment (acknowledged, no effect).
    Ignored {
        callback_id: CallbackId,
        event_type: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentNotice {
    pub callback_id: CallbackId,
    pub payment_no: PaymentNo,
    pub provider_txn_id: Option<ProviderTxnId>,
    /// The provider's own word, kept for the record (`TRADE_SUCCESS`, …).
    pub provider_status: String,
    pub status: PaymentStatus,
    pub money: Money,
    /// A declined attempt on a payment that can still succeed (Stripe's
    /// `payment_intent.payment_failed`): its code and message, for the
    /// payment's timeline.
    pub declined: Option<String>,
}

/// A verified refund notification, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundNotice {
    pub callback_id: CallbackId,
    /// Reckon's refund, when the provider echoes it (out_refund_no,
    /// out_biz_no, metadata).
    pub refund_no: Option<RefundNo>,
    pub provider_refund_id: Option<ProviderRefundId>,
    pub payment_no: Option<PaymentNo>,
    /// The refunded payment's transaction at the provider.
    pub payment_txn_id: Option<ProviderTxnId>,
    pub provider_status: String,
    /// `Pending` while not final (WeChat Pay's ABNORMAL, Stripe's pending).
    pub status: RefundStatus,
    pub money: Money,
    /// The amount is the payment's refunded total so far (Alipay's
    /// `refund_fee`), not this refund's.
    pub cumulative: bool,
}

/// A verified dispute notification, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisputeNotice {
    pub callback_id: CallbackId,
    /// The provider's event (`charge.dispute.created`, `CHARGEBACK`, …).
    pub event_type: String,
    /// The provider's id of the dispute: the same on every event of it
    /// (Stripe's `dp_…`, Adyen's dispute pspReference, PayPal's
    /// `PP-D-…`).
    pub dispute_id: String,
    /// Reckon's payment, when the provider echoes it.
    pub payment_no: Option<PaymentNo>,
    /// The disputed payment's transaction at the provider.
    pub payment_txn_id: Option<ProviderTxnId>,
    /// What is disputed.
    pub money: Money,
    pub reason: Option<String>,
    /// The provider's own word for where it stands, kept for the record.
    pub provider_status: String,
    pub status: crate::domain::DisputeStatus,
    /// When the merchant's answer is due (microseconds UTC), if the
    /// provider says.
    pub evidence_due_at: Option<i64>,
    /// When the provider made the event (microseconds UTC): what orders a
    /// dispute's events, whatever order they arrive in.
    pub event_at: i64,
    /// The money the dispute moved on the provider's balance so far, as
    /// this event states it, each by the provider's own id for it.
    pub movements: Vec<DisputeMovement>,
}

/// Money a dispute took from or gave back to the provider balance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisputeMovement {
    /// The provider's id of the movement (Stripe's balance transaction
    /// `txn_…`; for Adyen the event that moved it): counted once.
    pub id: String,
    pub reinstated: bool,
    /// Positive: what was taken (or given back).
    pub money: Money,
    /// The provider's dispute fee on it, in the same currency (positive
    /// for a fee charged, negative for one given back).
    pub fee_minor: i64,
    /// Microseconds UTC.
    pub at: i64,
}

impl Notification {
    /// The business facts, in one canonical text: what decides whether a
    /// callback id seen again is a duplicate (same facts) or a conflict.
    /// Everything else of a body is envelope — timestamps, signatures, an
    /// encryption nonce, retry counters — which providers change on every
    /// redelivery. Each adapter's `parse` says which fields are facts by
    /// what it reads into the notice.
    pub fn facts(&self) -> String {
        fn or_dash<T: AsRef<str>>(v: &Option<T>) -> &str {
            v.as_ref().map_or("-", |t| t.as_ref())
        }
        match self {
            Notification::Payment(n) => format!(
                "payment|{}|{}|{}|{}|{}|{}",
                n.payment_no.as_str(),
                n.provider_txn_id.as_ref().map_or("-", |t| t.as_str()),
                n.status,
                n.money.minor,
                n.money.currency.code(),
                or_dash(&n.declined),
            ),
            Notification::Refund(n) => format!(
                "refund|{}|{}|{}|{}|{}|{}|{}|{}",
                n.refund_no.as_ref().map_or("-", |r| r.as_str()),
                n.provider_refund_id.as_ref().map_or("-", |r| r.as_str()),
                n.payment_no.as_ref().map_or("-", |p| p.as_str()),
                n.payment_txn_id.as_ref().map_or("-", |t| t.as_str()),
                n.status.as_str(),
                n.money.minor,
                n.money.currency.code(),
                if n.cumulative { "total" } else { "this" },
            ),
            Notification::Dispute(n) => format!(
                "dispute|{}|{}|{}|{}|{}|{}|{}|{}|{}",
                n.dispute_id,
                n.payment_txn_id.as_ref().map_or("-", |t| t.as_str()),
                n.status,
                n.money.minor,
                n.money.currency.code(),
                n.evidence_due_at.map_or("-".to_owned(), |d| d.to_string()),
                n.event_at,
                n.movements
                    .iter()
                    .map(|m| format!("{}:{}:{}", m.id, m.money.minor, m.fee_minor))
                    .collect::<Vec<_>>()
                    .join(","),
                n.event_type,
            ),
            Notification::Ignored { event_type, .. } => format!("ignored|{event_type}"),
        }
    }
}

/// What Reckon asks a provider to refund.
#[derive(Clone, Debug)]
pub struct RefundRequest<'a> {
    pub refund_no: &'a RefundNo,
    pub payment_no: &'a PaymentNo,
    pub payment_txn: Option<&'a ProviderTxnId>,
    /// Set once the provider named the refund.
    pub provider_refund_id: Option<&'a ProviderRefundId>,
    pub money: Money,
    /// The payment's whole amount (WeChat Pay and Alipay want it).
    pub payment_total: Money,
    pub reason: &'a str,
}

/// What a provider says about a refund.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundView {
    pub provider_refund_id: Option<ProviderRefundId>,
    /// `Pending` while the provider has no result yet.
    pub status: RefundStatus,
    pub money: Money,
}

/// A page of a pulled statement.
#[derive(Debug)]
pub struct StatementPage {
    /// Line numbers are the page's own (1…); the run renumbers them.
    pub rows: Vec<crate::statement::StatementRow>,
    pub next_cursor: Option<String>,
    /// On the last page: (what, stated figure).
    pub summary: Option<Vec<(String, i64)>>,
    /// The provider's payouts to the bank the page reported (the bank
    /// side matches them against the bank's statement).
    pub payouts: Vec<PayoutSeen>,
}

/// A payout to the merchant's bank account as a provider reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayoutSeen {
    /// The provider's kind: `stripe`, `wechatpay`, `alipay`, `adyen`.
    pub kind: &'static str,
    /// The provider's id of it (Stripe's `po_…`).
    pub payout_id: String,
    /// What leaves the provider for the bank.
    pub money: Money,
    /// YYYY-MM-DD, the day the provider expects it at the bank.
    pub arrival_on: String,
    /// The text the bank shows with it, when the provider says.
    pub descriptor: Option<String>,
    /// The provider's word for where it stands (`paid`, `in_transit`,
    /// `failed`, …).
    pub status: String,
    /// Made by the provider's schedule: only such a payout names the
    /// transactions it settles ([`StatementPages::payout_net`]).
    pub automatic: bool,
}

/// A day's bill as the provider hands it out through its bill API: the
/// bytes its [`Provider::statement_format`] reads (already gunzipped or
/// unzipped), checked against the provider's own digest and signatures,
/// in a temporary file (removed with this), never whole in memory.
#[derive(Debug)]
pub struct StatementFile {
    /// The file's name, as the provider names it (or as Reckon would).
    pub name: String,
    /// The provider's word for the bill (`ALL`, `trade`, …).
    pub bill_type: String,
    pub body: spool::Spooled,
}

/// What a provider says about a payment when asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderView {
    pub provider_txn_id: Option<ProviderTxnId>,
    /// `None` while the provider has no result yet.
    pub status: Option<PaymentStatus>,
    pub money: Money,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No answer in time: the result is unknown, never a failure.
    #[error("timed out")]
    Timeout,
    /// The connection broke: unknown as well.
    #[error("network: {0}")]
    Network(String),
    /// The provider answered, and refused.
    #[error("refused: {0}")]
    Refused(String),
    /// The provider does not know the payment.
    #[error("unknown to the provider")]
    NotFound,
    /// The provider has no bill for that day yet (WeChat Pay's
    /// `NO_STATEMENT_EXIST`, Alipay's `isp.bill_not_exist`): ask again
    /// later; not a fault of the statement.
    #[error("not ready: {0}")]
    NotReady(String),
    /// The provider says it has no bill for that day because nothing
    /// happened (WeChat Pay's `NO_STATEMENT_EXIST`, Alipay's
    /// `isp.bill_not_exist`, which also stands for "not made yet"):
    /// believed only for a day Reckon has no business of its own.
    #[error("not ready: {0}")]
    NoStatement(String),
}

pub struct CreateRequest<'a> {
    pub payment_no: &'a PaymentNo,
    pub money: Money,
    pub description: Option<&'a str>,
}

/// How Reckon answers a webhook, in the provider's protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Stored (or a duplicate of something stored): stop sending.
    Accepted,
    /// Not believed.
    Unverified(VerifyError),
    /// Believed but unreadable.
    Malformed(String),
    /// Names a payment Reckon does not have.
    UnknownPayment,
    /// Could not be stored: send again later.
    RetryLater,
    /// Refused before reading: the body is larger than Reckon reads.
    TooLarge(String),
    /// Refused before reading: not a content type this provider sends.
    UnsupportedType(String),
}

/// A webhook's answer as it goes on the wire, in the provider's protocol:
/// `web::webhooks` sends it, so nothing below the web layer speaks HTTP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: StatusCode,
    /// `None` for an answer with no body (204).
    pub content_type: Option<&'static str>,
    pub body: Vec<u8>,
}

impl Reply {
    /// The answer as Stripe documents it and PayPal takes it: 200
    /// `{"received":true}`, else the status with `{"error": …}`.
    pub fn received_or_error(answer: &Answer) -> Reply {
        let (status, body) = match answer {
            Answer::Accepted => (StatusCode::OK, serde_json::json!({ "received": true })),
            Answer::Unverified(e) => (
                StatusCode::BAD_REQUEST,
                serde_json::json!({ "error": e.to_string() }),
            ),
            Answer::Malformed(e) => (StatusCode::BAD_REQUEST, serde_json::json!({ "error": e })),
            Answer::UnknownPayment => (
                StatusCode::NOT_FOUND,
                serde_json::json!({ "error": "unknown payment" }),
            ),
            Answer::RetryLater => (
                StatusCode::SERVICE_UNAVAILABLE,
                serde_json::json!({ "error": "try again" }),
            ),
            Answer::TooLarge(e) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                serde_json::json!({ "error": e }),
            ),
            Answer::UnsupportedType(e) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                serde_json::json!({ "error": e }),
            ),
        };
        Reply::json(status, &body)
    }

    /// A compact JSON body.
    pub fn json(status: StatusCode, body: &serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: Some("application/json"),
            body: serde_json::to_vec(body).expect("a JSON value serializes"),
        }
    }

    pub fn text(status: StatusCode, text: &str) -> Reply {
        Reply {
            status,
            content_type: Some("text/plain; charset=utf-8"),
            body: text.as_bytes().to_vec(),
        }
    }

    pub fn empty(status: StatusCode) -> Reply {
        Reply {
            status,
            content_type: None,
            body: Vec::new(),
        }
    }
}

impl Answer {
    /// Why, in words, for a refusal's body.
    pub fn reason(&self) -> String {
        match self {
            Answer::Accepted => "accepted".into(),
            Answer::Unverified(e) => e.to_string(),
            Answer::Malformed(e) | Answer::TooLarge(e) | Answer::UnsupportedType(e) => e.clone(),
            Answer::UnknownPayment => "unknown payment".into(),
            Answer::RetryLater => "try again later".into(),
        }
    }
}

pub trait Provider: Send + Sync + 'static {
    fn name(&self) -> &ProviderName;
    /// Content types its webhooks arrive with.
    fn accepts(&self, content_type: &str) -> bool;
    /// Checks the raw bytes before anything trusts them.
    fn verify(&self, headers: &HeaderMap, body: &[u8], now_secs: i64) -> Result<(), VerifyError>;
    /// For a provider whose verification needs a call (PayPal fetches the
    /// certificate that signed): the engine verifies through it instead of
    /// [`Provider::verify`].
    fn verify_by_call(&self) -> Option<&dyn VerifyByCall> {
        None
    }
    /// The replay nonce of a verified request, for providers that send
    /// one (WeChat Pay's `Wechatpay-Nonce`): the engine refuses one seen
    /// within the tolerance, across restarts and instances.
    fn replay_nonce<'h>(&self, _headers: &'h HeaderMap) -> Option<&'h str> {
        None
    }
    /// How long a nonce must be remembered: the signature's tolerance.
    fn nonce_window_secs(&self) -> i64 {
        300
    }
    /// Reads a verified body.
    fn parse(&self, headers: &HeaderMap, body: &[u8]) -> Result<Notification, String>;
    /// Why a webhook that failed [`Provider::verify`] probably failed, when
    /// its headers tell: a signed time off by more than the tolerance, a key
    /// the provider names that is not configured, a retired secret. Never a
    /// reason to accept it.
    fn diagnose(&self, _headers: &HeaderMap, _body: &[u8], _now_secs: i64) -> Option<Diagnosis> {
        None
    }
    fn answer(&self, answer: &Answer) -> Reply;
    /// The statement format of this provider's daily bill, if Reckon reads
    /// it.
    fn statement_format(&self) -> Option<crate::statement::Format> {
        None
    }
    /// Reckon creates (and closes) payments through it; `None`: the
    /// merchant creates them with the provider itself (the merchant API
    /// still registers them).
    fn payments(&self) -> Option<&dyn Payments> {
        None
    }
    /// Reckon can ask it about a payment; `None`: its payments wait for
    /// callbacks and the statement.
    fn queries(&self) -> Option<&dyn Queries> {
        None
    }
    /// Reckon can ask it to refund; `None`: the merchant refunds at the
    /// provider, whose notification settles the refund.
    fn refunds(&self) -> Option<&dyn Refunds> {
        None
    }
    /// Reckon pulls its daily statement through its API; `None`: its
    /// file is uploaded or imported.
    fn statements(&self) -> Option<Statements<'_>> {
        None
    }
    /// Reckon can list the notifications it failed to deliver; `None`:
    /// its gaps are found by status queries and the statement.
    fn undelivered(&self) -> Option<&dyn Undelivered> {
        None
    }
    /// It says by notification when a report is ready to fetch (Adyen's
    /// REPORT_AVAILABLE); `None`: its files are pulled or uploaded.
    fn reports(&self) -> Option<&dyn Reports> {
        None
    }
    /// Reckon fetches its day's balance bill (the account the money waits
    /// in before the bank) through its API; `None`: its trade bill's net
    /// goes to the bank as payouts the provider reports, or not at all.
    fn balance(&self) -> Option<&dyn balance::BalanceBills> {
        None
    }
}

/// A provider whose API lists the notifications it has not delivered.
#[async_trait::async_trait]
pub trait Undelivered: Send + Sync {
    /// The bodies, as its webhooks carry them, of the payment and refund
    /// notifications created in `[from, to)` (Unix seconds) whose delivery
    /// has not succeeded (failed, or still being retried).
    async fn undelivered(&self, from: i64, to: i64) -> Result<Vec<Vec<u8>>, CallError>;
}

/// A provider whose webhook verification may call out (see
/// [`Provider::verify_by_call`]).
#[async_trait::async_trait]
pub trait VerifyByCall: Send + Sync {
    async fn verify(
        &self,
        headers: &HeaderMap,
        body: &[u8],
        now_secs: i64,
    ) -> Result<(), VerifyError>;
}

/// A report a provider's verified notification says is ready.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportPush {
    /// The file's name, as the provider names it.
    pub file_name: String,
    /// Where the notification says it is.
    pub url: String,
    /// When the provider made it (microseconds UTC), if it says.
    pub made_at: Option<i64>,
}

/// A provider that pushes word of its reports: what a verified body
/// announces, and the report fetched from where it said — only from the
/// account's own report host — as a bill file read like an upload.
#[async_trait::async_trait]
pub trait Reports: Send + Sync {
    /// The report a verified notification announces, if it announces one.
    fn pushed(&self, body: &[u8]) -> Option<ReportPush>;
    async fn fetch(&self, push: &ReportPush) -> Result<StatementFile, CallError>;
    /// The payouts to the bank a fetched report states (the bank side
    /// matches them against the bank's statement).
    fn payouts(&self, file: &StatementFile) -> Result<Vec<PayoutSeen>, String>;
}

/// A provider Reckon creates payments through.
#[async_trait::async_trait]
pub trait Payments: Send + Sync {
    async fn create_payment(&self, req: &CreateRequest<'_>) -> Result<ProviderView, CallError>;
    async fn close_payment(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<(), CallError>;
}

/// A provider Reckon can ask about a payment.
#[async_trait::async_trait]
pub trait Queries: Send + Sync {
    /// `txn` is the provider's id when Reckon knows it.
    async fn query_payment(
        &self,
        payment_no: &PaymentNo,
        txn: Option<&ProviderTxnId>,
    ) -> Result<ProviderView, CallError>;
}

/// A provider Reckon can ask to refund.
#[async_trait::async_trait]
pub trait Refunds: Send + Sync {
    /// Asks for a refund; idempotent on `refund_no` at the provider.
    async fn refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError>;
    async fn query_refund(&self, req: &RefundRequest<'_>) -> Result<RefundView, CallError>;
}

/// How a provider hands out the day's statement through its API.
#[derive(Clone, Copy)]
pub enum Statements<'a> {
    /// Page by page.
    Pages(&'a dyn StatementPages),
    /// As one bill file, read like an uploaded file.
    Files(&'a dyn BillFiles),
}

/// A statement pulled page by page.
#[async_trait::async_trait]
pub trait StatementPages: Send + Sync {
    /// What it pages through, as a run records it read (a bill file's run
    /// records its format and layout instead).
    fn bill_type(&self) -> &'static str;
    /// One page of the day's statement; `None` cursor for the first page.
    /// The last page has no next cursor and carries the statement's
    /// summary checks (stated figures; `read` is filled in by the run).
    async fn statement_page(
        &self,
        date: &str,
        cursor: Option<&str>,
    ) -> Result<StatementPage, CallError>;
    /// The net of the transactions a payout settles (minor units), when
    /// the provider can list them; `None` when it cannot.
    async fn payout_net(&self, _payout_id: &str) -> Result<Option<i64>, CallError> {
        Ok(None)
    }
}

/// A statement pulled as the day's bill file.
#[async_trait::async_trait]
pub trait BillFiles: Send + Sync {
    /// The day's bill through the provider's bill API, checked (answer
    /// signature, download digest) before it is returned; read like an
    /// uploaded file.
    async fn statement_file(&self, date: &str) -> Result<StatementFile, CallError>;
}

/// Every bill format Reckon reads, whichever accounts are configured: an
/// uploaded file is told by them.
pub fn bill_formats() -> Vec<crate::statement::Format> {
    KINDS
        .iter()
        .filter_map(|kind| kind.bill_format.map(|format| format()))
        .collect()
}

/// The configured provider accounts by route name.
#[derive(Clone, Default)]
pub struct Providers(Arc<BTreeMap<String, Arc<dyn Provider>>>);

impl Providers {
    pub fn new(list: Vec<Arc<dyn Provider>>) -> Providers {
        Providers(Arc::new(
            list.into_iter()
                .map(|p| (p.name().as_str().to_owned(), p))
                .collect(),
        ))
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Provider>> {
        self.0.get(name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod bill_format_tests {
    use crate::statement::{fixture, recognise};

    /// Each provider's bills are told by their first lines, with the
    /// layout they are; a bill Reckon reads from no provider is told as
    /// none.
    #[test]
    fn each_bill_is_told_by_its_first_lines() {
        let formats = super::bill_formats();
        let told = |bytes: &[u8]| {
            recognise(
                &formats,
                &bytes[..bytes.len().min(crate::statement::MAX_LINE)],
            )
            .map(|(format, kind)| format.describe(kind))
        };
        for (file, bill) in [
            ("wechatpay_all.csv", "WeChat Pay ALL bill"),
            ("wechatpay_refund.csv", "WeChat Pay REFUND bill"),
            ("wechatpay_success.csv", "WeChat Pay SUCCESS bill"),
            ("alipay_detail_gbk.csv", "Alipay 业务明细 bill"),
            ("alipay_detail_utf8_bom.csv", "Alipay 业务明细 bill"),
            ("stripe_itemized_default.csv", "Stripe itemized report"),
            (
                "stripe_itemized_created_local.csv",
                "Stripe itemized report",
            ),
        ] {
            assert_eq!(told(&fixture(file)).as_deref(), Some(bill), "{file}");
        }
        let sandbox =
            b"kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at\n";
        assert_eq!(told(sandbox).as_deref(), Some("sandbox statement"));
        for file in ["wechatpay_fundflow.csv", "wechatpay_old_all.csv"] {
            assert_eq!(told(&fixture(file)), None, "{file}");
        }
        assert_eq!(told(b"not a bill\n"), None);
        assert_eq!(told(b""), None);
    }
}

#[cfg(test)]
mod diagnosis_tests {
    use super::Diagnosis;

    /// At the tolerance a signed time is fresh; one second past it, the
    /// skew is named with its size and direction.
    #[test]
    fn skew_is_named_past_the_tolerance_only() {
        assert_eq!(Diagnosis::skew("t=", 1_000 - 300, 1_000, 300), None);
        assert_eq!(Diagnosis::skew("t=", 1_000 + 300, 1_000, 300), None);
        let behind = Diagnosis::skew("t=", 1_000 - 301, 1_000, 300).unwrap();
        assert_eq!(behind.kind, "timestamp_skew");
        assert!(behind.detail.contains("301 s behind"), "{}", behind.detail);
        let ahead = Diagnosis::skew("t=", 1_000 + 600, 1_000, 300).unwrap();
        assert!(ahead.detail.contains("600 s ahead of"), "{}", ahead.detail);
        // A timestamp near i64::MIN does not overflow.
        assert!(Diagnosis::skew("t=", i64::MIN, 1_000, 300).is_some());
    }
}
