//! The wire types of the console's pages beside triage: the daily
//! dashboard, callbacks and their replay, payments, reconciliation runs,
//! alerts.

use serde::{Deserialize, Serialize};

/// A business day's figures for one provider (or all of them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayFigures {
    pub to_process: i64,
    pub matched: i64,
    pub pending: i64,
    pub repaired: i64,
    /// Tickets of the day still open.
    pub unknown: i64,
    /// Rows and payments per class (MATCHED included).
    pub classes: Vec<(String, i64)>,
    /// The runs these figures come from (the latest completed per provider).
    pub runs: Vec<String>,
    /// Why `to_process` is not matched + pending + repaired + unknown, each
    /// reason with how much of the difference it makes (signed: what it
    /// adds to the four); empty when they add up. See [`DIFFERENCES`].
    pub differences: Vec<(String, i64)>,
}

impl DayFigures {
    /// matched + pending + repaired + unknown.
    pub fn accounted(&self) -> i64 {
        self.matched + self.pending + self.repaired + self.unknown
    }
}

/// The reasons the four figures may not add up to what there was to
/// process, as `DayFigures::differences` names them:
/// - `decided`: tickets of the day closed by a person or by a later
///   statement (neither unknown nor repaired any more);
/// - `duplicate_rows`: a DUPLICATE's rows beyond the one ticket they share;
/// - `fee_tickets`: open FEE_MISMATCH tickets, opened on rows that matched
///   (counted twice: negative);
/// - `awaiting_repair`: open STATUS_LAG tickets whose automatic repair is
///   queued, pending as well as unknown (negative);
/// - `other`: what none of these explains.
pub const DIFFERENCES: &[&str] = &[
    "decided",
    "duplicate_rows",
    "fee_tickets",
    "awaiting_repair",
    "other",
];

/// One currency's money of the day beside the counts, each in major units
/// with its currency ("1234.50 CNY"): gross and net as the statements
/// state them, and the amount of the tickets still open.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DashMoney {
    pub currency: String,
    pub gross: String,
    pub net: String,
    pub unknown: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrendPoint {
    pub day: String,
    pub matched: i64,
    pub pending: i64,
    pub unknown: i64,
    /// False when no completed run covers the day.
    pub reconciled: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallbackFigures {
    pub received: i64,
    /// Redeliveries of a stored callback, and new callbacks whose result
    /// was already applied.
    pub duplicates: i64,
    pub failed: i64,
    pub dead: i64,
    /// Receipt to processed, 99th percentile, milliseconds.
    pub p99_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct AlertRow {
    pub id: String,
    pub kind: String,
    pub severity: String,
    pub payment_no: Option<String>,
    pub message: String,
    pub created_at: i64,
    /// open | acknowledged | resolved (see [`ALERT_STATES`]).
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub state: String,
    pub acknowledged_at: Option<i64>,
    pub acknowledged_by: Option<String>,
    pub ack_comment: Option<String>,
    /// When and why its cause went away ("ticket closed").
    pub resolved_at: Option<i64>,
    pub resolved_reason: Option<String>,
    /// The console's pages of what it is about: its ticket, run, sink,
    /// outbox message, callback.
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub links: Vec<AlertLink>,
}

/// The states an alert is filtered by: open (neither acknowledged nor
/// resolved), acknowledged by a person, resolved (its cause has gone).
pub const ALERT_STATES: &[&str] = &["open", "acknowledged", "resolved"];

/// Alert severities, most severe first.
pub const ALERT_SEVERITIES: &[&str] = &["critical", "high", "warning"];

/// A page an alert links to: `what` is ticket | run | sink | outbox |
/// callback | refused; `label` the id shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertLink {
    pub what: String,
    pub label: String,
    pub href: String,
}

/// The alert list's filter; `after` is the keyset cursor
/// (`created_at.alert_id`), newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertFilter {
    pub kind: Option<String>,
    pub severity: Option<String>,
    /// open | acknowledged | resolved; blank: all.
    pub state: Option<String>,
    pub after: Option<String>,
}

crate::query_filter!(AlertFilter {
    kind,
    severity,
    state,
    after
});

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertPage {
    pub items: Vec<AlertRow>,
    pub next: Option<String>,
    /// Every kind ever raised, for the filter.
    pub kinds: Vec<String>,
    /// Open alerts in all.
    pub open: i64,
}

/// What a bulk acknowledgement did: the alerts acknowledged now, and those
/// that were not open any more (acknowledged or resolved meanwhile, or
/// unknown), left as they were.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acknowledged {
    pub acknowledged: Vec<String>,
    pub skipped: Vec<String>,
}

/// What waits for the viewer's decision (a supervisor's): proposals of
/// others — fixes (a bulk proposal counted once) and reopenings of a
/// closed day — with the oldest and the next to expire. Times are shown
/// in the business time zone, zone named.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalQueue {
    pub waiting: i64,
    pub oldest_at: Option<i64>,
    pub oldest: Option<String>,
    pub next_expiry_at: Option<i64>,
    pub next_expiry: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dashboard {
    pub day: String,
    pub provider: Option<String>,
    pub providers: Vec<String>,
    pub timezone: String,
    pub figures: DayFigures,
    /// The 30 days ending with `day`, oldest first.
    pub trend: Vec<TrendPoint>,
    pub callbacks: CallbackFigures,
    /// When these figures were read, in the business time zone, zone
    /// named ("2026-03-05 14:20 Asia/Shanghai").
    pub as_of: String,
    /// The days before and after `day`.
    pub prev_day: String,
    pub next_day: String,
    /// The day's money per currency, beside the counts.
    pub money: Vec<DashMoney>,
    /// What waits for the viewer's decision, for a supervisor.
    pub queue: Option<ApprovalQueue>,
    /// Open alerts by kind, and how many there are in all.
    pub alerts_by_kind: Vec<(String, i64)>,
    pub open_alerts: i64,
    /// Providers whose statement of the day is alerted missing.
    pub missing_statements: Vec<String>,
    /// Payouts matched to the bank arriving on the day.
    pub settled_to_bank: Vec<crate::bank::SettledRow>,
    /// Each provider's money of the day and whether the day is closed.
    pub closes: Vec<DayClose>,
    /// Open tickets by age and SLA; the day's new, persisting, resolved.
    pub ageing: crate::ageing::Ageing,
    /// Outbox sinks whose deliveries keep failing.
    pub failing_sinks: Vec<crate::sinks::SinkRow>,
    /// Refused webhooks kept in the last 24 hours.
    pub refused_24h: i64,
}

/// Callback search; `after` is the keyset cursor (`received_at.id`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackFilter {
    /// payment_no, provider txn id, callback id or trace id (exact)
    pub q: Option<String>,
    pub status: Option<String>,
    pub provider: Option<String>,
    /// YYYY-MM-DD, business time zone
    pub day: Option<String>,
    pub after: Option<String>,
}

crate::query_filter!(CallbackFilter {
    q,
    status,
    provider,
    day,
    after
});

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct CallbackSummary {
    pub id: String,
    pub callback_id: String,
    pub provider: String,
    pub payment_no: Option<String>,
    pub provider_txn_id: Option<String>,
    pub callback_status: String,
    pub verify_result: String,
    pub processing_status: String,
    pub outcome: Option<String>,
    pub retry_count: i64,
    pub duplicates: i64,
    pub trace_id: String,
    pub received_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackPage {
    pub items: Vec<CallbackSummary>,
    pub next: Option<String>,
}

/// What was received, unmasked, for a user with raw access: the stored
/// headers and body as they came (a refused webhook's first bytes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawView {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackDetail {
    pub summary: CallbackSummary,
    /// Header name and (masked) value.
    pub headers: Vec<(String, String)>,
    /// The raw body with secrets and personal data masked.
    pub payload: String,
    pub payload_bytes: i64,
    pub payload_hash: String,
    pub error_message: Option<String>,
    pub next_retry_at: Option<i64>,
    pub processed_at: Option<i64>,
    pub refund_no: Option<String>,
    /// What happened to the payment because of it (history rows citing it).
    pub produced: Vec<String>,
    /// Its processing as received: kept when it was first replayed, so a
    /// replay never rewrites it.
    pub original: CallbackProcessing,
    /// Each replay's own result, oldest first.
    pub replays: Vec<CallbackReplay>,
    pub replayable: bool,
    /// The business facts a redelivery must repeat to be a duplicate.
    pub facts: Option<String>,
    /// How many redeliveries came with exactly its bytes.
    pub identical_redeliveries: i64,
    /// Its redeliveries with other bytes: when, their hash, and whether
    /// their facts were the same (a new envelope) or not (a conflict).
    pub redeliveries: Vec<String>,
}

/// How a callback's processing stood: its status, outcome, error and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackProcessing {
    pub status: String,
    pub outcome: Option<String>,
    pub error: Option<String>,
    pub at: Option<i64>,
}

/// One replay of a stored callback: when, by whom, and what it did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct CallbackReplay {
    pub at: i64,
    pub actor: String,
    /// What it did (`moved`, `duplicate`, `failed`, `refused`, …).
    pub class: String,
    pub detail: String,
    pub error: Option<String>,
    /// The bulk replay it was part of.
    pub job: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct ReplayJob {
    pub id: String,
    pub provider: String,
    pub from_at: i64,
    pub to_at: i64,
    pub requested_by: String,
    pub status: String,
    pub total: i64,
    pub done: i64,
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub classes: Vec<(String, i64)>,
    pub error: Option<String>,
    pub started_at: i64,
    pub finished_at: Option<i64>,
}

/// Payment search; `after` is the keyset cursor (`created_at.payment_no`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentFilter {
    /// payment_no, order no or provider txn id (exact)
    pub q: Option<String>,
    pub status: Option<String>,
    pub provider: Option<String>,
    /// Amount in major units, exact (e.g. 66.60)
    pub amount: Option<String>,
    /// Created on this day (YYYY-MM-DD, business time zone)
    pub day: Option<String>,
    pub after: Option<String>,
}

crate::query_filter!(PaymentFilter {
    q,
    status,
    provider,
    amount,
    day,
    after
});

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct PaymentSummary {
    pub payment_no: String,
    pub order_no: String,
    pub provider: String,
    pub provider_txn_id: Option<String>,
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub amount: String,
    pub status: String,
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub held: bool,
    pub created_at: i64,
    pub paid_at: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentPage {
    pub items: Vec<PaymentSummary>,
    pub next: Option<String>,
}

/// One line of a payment's record: when, what, detail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub at: i64,
    pub what: String,
    pub detail: String,
    /// A console page this line links to, if any.
    pub link: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentView {
    pub summary: PaymentSummary,
    pub hold_reason: Option<String>,
    pub refunded: String,
    pub version: i64,
    pub history: Vec<Line>,
    pub callbacks: Vec<CallbackSummary>,
    pub effects: Vec<Line>,
    pub outbox: Vec<Line>,
    pub refunds: Vec<Line>,
    pub ledger: Vec<Line>,
    pub queries: Vec<Line>,
    pub discrepancies: Vec<Line>,
    pub adjustments: Vec<Line>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct RunSummary {
    pub id: String,
    pub provider: String,
    pub business_date: String,
    pub source: String,
    pub file_name: Option<String>,
    pub status: String,
    pub phase: Option<String>,
    pub cursor: Option<String>,
    pub rows_read: i64,
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub classes: Vec<(String, i64)>,
    pub error: Option<String>,
    pub started_by: String,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// SHA-256 of the statement file (a file's run).
    pub file_hash: Option<String>,
    /// What the run read: the bill format and the layout the file was
    /// (`wechatpay trade bill (REFUND)`), or the API a pull paged through.
    pub bill_type: Option<String>,
    /// The version of the money-deciding settings the run used.
    pub config_version: Option<i64>,
    /// The statement file is kept and downloads from `/runs/{id}/file`.
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub file_kept: bool,
    /// The statement's own figures against what was read.
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub checks: Vec<SummaryCheck>,
}

/// A figure the statement states about itself, and what was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryCheck {
    /// The figure as the statement names it (`total_minor`).
    pub what: String,
    /// Its name for a person (`total`).
    pub label: String,
    pub stated: i64,
    pub read: i64,
    /// Both figures as a person reads them: amounts in major units with
    /// their currency (`99,898.84 CNY`), counts as they are.
    pub stated_text: String,
    pub read_text: String,
    /// They agree, or the difference was accepted (skipped lines).
    pub holds: bool,
}

/// One provider's daily statement pulls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullSchedule {
    pub provider: String,
    /// The zone its days are cut in and the hour there its statement is
    /// ready from.
    pub zone: String,
    pub ready_hour: i8,
    pub last_at: Option<i64>,
    pub last_run: Option<String>,
    pub last_error: Option<String>,
    pub next_at: Option<i64>,
    /// Days of the catch-up window without a completed run.
    pub missing: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunPage {
    pub items: Vec<RunSummary>,
    pub next: Option<String>,
    /// Providers whose statements can be uploaded.
    pub providers: Vec<String>,
    /// Each pulling provider's schedule.
    pub schedules: Vec<PullSchedule>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::QueryFilter;

    #[test]
    fn filters_read_and_write_their_query() {
        let f = CallbackFilter::from_pairs([("status", "DEAD"), ("q", " evt 1 "), ("x", "y")]);
        assert_eq!(f.status.as_deref(), Some("DEAD"));
        assert_eq!(
            f.query_with_after(Some("5.a")),
            "q=evt%201&status=DEAD&after=5.a"
        );
        let p = PaymentFilter::from_pairs([("amount", "66.60"), ("day", "")]);
        assert_eq!(p.query_with_after(None), "amount=66.60");
    }
}

// ---- Fees and net; closing the day ---------------------------------

/// One provider's business day: its money as the statement states it, and
/// its close.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayClose {
    pub provider: String,
    pub business_date: String,
    /// A completed run exists (a day is closed only on one).
    pub has_run: bool,
    /// Gross, refunds, fees and net per currency, formatted.
    pub money: Vec<DayMoney>,
    /// Fee rows beyond the expected rate.
    pub fee_mismatches: i64,
    /// OPEN (never closed), CLOSED or REOPENED.
    pub state: String,
    /// The latest close record, if any.
    pub close: Option<CloseInfo>,
    /// A proposal to reopen the day, waiting for a second supervisor.
    pub reopen: Option<ReopenInfo>,
    /// The balance side (WeChat Pay's fund-flow bill, Alipay's 账务明细)
    /// against the statement's net, for a provider that has one.
    #[serde(default)]
    pub settlement: Option<DaySettlement>,
    /// Disputes' money on the day, per currency, formatted: what they took
    /// from and gave back to the balance, their fees, and the disputes
    /// open at the day's end.
    #[serde(default)]
    pub disputes: Vec<DayDisputes>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayDisputes {
    pub currency: String,
    pub withdrawn: String,
    pub reinstated: String,
    pub fees: String,
    pub open_count: i64,
    pub open_amount: String,
}

/// A day's balance bill against its trade bill's net.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaySettlement {
    /// WAITING (no balance bill yet), REFUSED (it did not read), AGREED or
    /// DIFFERS.
    pub state: String,
    /// Per currency, formatted.
    pub lines: Vec<SettlementLine>,
    /// Why it waits or was refused.
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettlementLine {
    pub currency: String,
    /// What the day's payments, fees and refunds moved the balance by.
    pub balance_net: String,
    /// Sent to the bank that day.
    pub withdrawn: String,
    /// Balance less the statement's net.
    pub difference: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayMoney {
    pub currency: String,
    pub gross: String,
    pub refunds: String,
    pub fees: String,
    pub net: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloseInfo {
    pub seq: i64,
    /// auto | supervisor
    pub how: String,
    pub closed_by: String,
    pub reason: Option<String>,
    pub closed_at: i64,
    /// The record's hash (its first 12 hex digits are shown).
    pub hash: String,
    pub reopened_by: Option<String>,
    pub reopened_at: Option<i64>,
    /// The version of the money-deciding settings in force at the close.
    pub config_version: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReopenInfo {
    pub proposer_id: String,
    pub proposer: String,
    pub reason: String,
    pub proposed_at: i64,
    /// How many distinct approvers it needs, and who approved so far.
    #[serde(default)]
    pub required: i64,
    #[serde(default)]
    pub approved_by: Vec<String>,
}
