//! Discrepancy tickets, fix proposals and audit entries as the console
//! shows them. Amounts arrive formatted by the server (it knows each
//! currency's exponent); times are microseconds since the epoch, UTC.

use crate::filter::QueryFilter;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Tickets per page of the list.
pub const PAGE_SIZE: i64 = 50;
/// Largest evidence file kept in the database.
pub const EVIDENCE_FILE_LIMIT: usize = 256 * 1024;

pub const CLASSES: &[&str] = &[
    "PROVIDER_ONLY",
    "LOCAL_ONLY",
    "AMOUNT_MISMATCH",
    "CURRENCY_MISMATCH",
    "ONE_TO_MANY",
    "DUPLICATE",
    "STATUS_LAG",
    "REFUND_MISMATCH",
    "TXN_MISMATCH",
    "PROVIDER_MISMATCH",
    "PAID_AFTER_CLOSE",
    "PAYOUT_MISSING",
    "BANK_ONLY",
    "PAYOUT_AMOUNT_MISMATCH",
    "FEE_MISMATCH",
    "DISPUTE",
    "PAYOUT_LATE",
];
pub const SEVERITIES: &[&str] = &["CRITICAL", "HIGH", "MEDIUM", "LOW"];
/// Ticket states, and ACTIVE: every state but CLOSED.
pub const STATUSES: &[&str] = &[
    "ACTIVE",
    "OPEN",
    "IN_PROGRESS",
    "AWAITING_APPROVAL",
    "CLOSED",
];

/// The list's filters, all optional; `after` is the keyset cursor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketFilter {
    pub class: Option<String>,
    pub severity: Option<String>,
    pub status: Option<String>,
    pub provider: Option<String>,
    pub day: Option<String>,
    pub run: Option<String>,
    pub owner: Option<String>,
    /// payment_no, order no or provider transaction id (exact or prefix)
    pub q: Option<String>,
    /// Open tickets of one age bucket (`0-1`, `2-7`, `8-30`, `31+` days).
    pub age: Option<String>,
    pub after: Option<String>,
}

crate::query_filter!(TicketFilter {
    class,
    severity,
    status,
    provider,
    day,
    run,
    owner,
    q,
    age,
    after
});

impl TicketFilter {
    /// This filter with one key set (or cleared), from the first page.
    pub fn with(&self, key: &str, value: Option<&str>) -> TicketFilter {
        let mut f = self.clone();
        f.after = None;
        if let Some(slot) = f.slot(key) {
            *slot = value.map(str::to_owned);
        }
        f
    }
}

/// Percent-encoding for a query value (no dependency in the browser bundle).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketSummary {
    pub id: String,
    pub class: String,
    pub severity: String,
    pub status: String,
    pub provider: String,
    pub payment_no: Option<String>,
    pub order_no: Option<String>,
    pub provider_txn_id: Option<String>,
    pub business_date: Option<String>,
    pub owner: Option<String>,
    pub local_amount: Option<String>,
    pub provider_amount: Option<String>,
    pub found_at: i64,
    /// Whole days open (open tickets only).
    pub age_days: Option<i64>,
    /// When its class's SLA runs out; `overdue` once it has (open only).
    pub sla_due_at: Option<i64>,
    pub overdue: bool,
}

/// A ticket's place in a filtered queue: the ids before and after it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbours {
    pub previous: Option<String>,
    pub next: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketPage {
    pub items: Vec<TicketSummary>,
    /// Cursor of the next page, when there is one.
    pub next: Option<String>,
    /// Tickets matching the whole filter (all pages).
    pub total: i64,
    /// Matching tickets per status and per class (that filter aside).
    pub by_status: Vec<(String, i64)>,
    pub by_class: Vec<(String, i64)>,
}

/// One side of a ticket: what the statement says, or what Reckon has.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Side {
    pub present: bool,
    pub amount: Option<String>,
    pub currency: Option<String>,
    pub status: Option<String>,
    pub txn: Option<String>,
    pub payment_no: Option<String>,
    pub at: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineItem {
    pub at: i64,
    /// callback | history | effect | outbox | refund | query | action |
    /// note | proposal | alert | dispute
    pub kind: String,
    pub title: String,
    pub detail: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct Note {
    pub id: String,
    pub kind: String,
    pub body: String,
    pub file_name: Option<String>,
    pub file_size: Option<i64>,
    pub author: String,
    pub at: i64,
}

/// A stored callback of the ticket's payment, and whether it may be replayed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackRef {
    pub id: String,
    pub callback_id: String,
    pub verify_result: String,
    pub processing_status: String,
    pub outcome: Option<String>,
    pub received_at: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketDetail {
    pub summary: TicketSummary,
    pub reason: String,
    pub run_id: Option<String>,
    pub statement_file: Option<String>,
    pub range: Option<(i64, i64)>,
    pub line_no: Option<i64>,
    pub trace_id: Option<String>,
    pub conclusion: Option<String>,
    pub closed_at: Option<i64>,
    pub local: Side,
    pub provider: Side,
    /// Names of the fields that differ: amount, currency, status, txn.
    pub differing: Vec<String>,
    pub hold_reason: Option<String>,
    pub timeline: Vec<TimelineItem>,
    pub notes: Vec<Note>,
    pub proposals: Vec<Proposal>,
    pub callbacks: Vec<CallbackRef>,
    /// The fixes a person may propose for this ticket's class and state.
    pub fixes: Vec<FixKind>,
    pub operators: Vec<String>,
}

/// The fixes that need a second person.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FixKind {
    /// The provider reports a payment paid that Reckon lacks or has unpaid.
    Backfill,
    /// Close a payment Reckon has paid that the provider does not know.
    ClosePayment,
    /// Take the provider's amount as final; the difference is recorded.
    AcceptAmount,
    /// One transaction, several payments: keep one, close the others.
    Merge,
    /// Lift reconciliation's hold on the payment.
    ReleaseHold,
    /// A late success of a FAILED or CLOSED payment taken as the truth: the
    /// payment becomes SUCCEEDED and the order is paid.
    AcceptPayment,
    /// A late success of a FAILED or CLOSED payment given back: the whole
    /// amount refunded through the refund ledger; the order stays unpaid.
    RefundPayment,
    /// Several payouts that together are one bank credit, or one payout
    /// paid as several credits: settled together, their tickets closed.
    GroupMatch,
}

impl FixKind {
    pub const ALL: [FixKind; 8] = [
        FixKind::Backfill,
        FixKind::ClosePayment,
        FixKind::AcceptAmount,
        FixKind::Merge,
        FixKind::ReleaseHold,
        FixKind::AcceptPayment,
        FixKind::RefundPayment,
        FixKind::GroupMatch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FixKind::Backfill => "BACKFILL",
            FixKind::ClosePayment => "CLOSE_PAYMENT",
            FixKind::AcceptAmount => "ACCEPT_AMOUNT",
            FixKind::Merge => "MERGE",
            FixKind::ReleaseHold => "RELEASE_HOLD",
            FixKind::AcceptPayment => "ACCEPT_PAYMENT",
            FixKind::RefundPayment => "REFUND_PAYMENT",
            FixKind::GroupMatch => "GROUP_MATCH",
        }
    }
}

impl fmt::Display for FixKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FixKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FixKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown fix `{s}`"))
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub id: String,
    pub ticket_id: String,
    pub ticket_class: String,
    pub kind: FixKind,
    pub payment_no: Option<String>,
    /// Pretty JSON of what it changes: before and after.
    pub before: String,
    pub after: String,
    pub reason: String,
    pub evidence: String,
    pub proposer_id: String,
    pub proposer: String,
    pub proposed_at: i64,
    pub expires_at: i64,
    /// PENDING | EXECUTED | REJECTED | FAILED | SUPERSEDED
    pub status: String,
    /// Past its expiry when read (still PENDING in the table).
    pub expired: bool,
    pub stale_reason: Option<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
    pub decision_comment: Option<String>,
    pub result: Option<String>,
    /// How many distinct approvers it needs (fixed when it was proposed).
    #[serde(default = "one")]
    pub required: i64,
    /// Who approved it so far, in order.
    #[serde(default)]
    pub approved_by: Vec<String>,
    /// What people said about it before it was decided, oldest first.
    #[serde(default)]
    pub comments: Vec<ProposalComment>,
}

fn one() -> i64 {
    1
}

/// A comment on a proposal (also a note on its ticket).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalComment {
    pub at: i64,
    pub author: String,
    pub text: String,
}

/// A fix as proposed on a ticket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixRequest {
    pub ticket_id: String,
    pub kind: FixKind,
    pub reason: String,
    pub evidence: String,
    /// BACKFILL of a payment Reckon does not have: the order it belongs to.
    pub order_no: Option<String>,
    /// MERGE: the payment that keeps the transaction.
    pub keep: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    /// `type` or `type:id`
    pub object: Option<String>,
    /// YYYY-MM-DD, business days in the business zone, inclusive
    pub from: Option<String>,
    pub to: Option<String>,
    /// Keyset cursor: entries before this sequence number.
    pub before: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct AuditEntry {
    pub seq: i64,
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub object_type: String,
    pub object_id: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub hash: String,
    /// The console page of the entry's object, where it has one.
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub link: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub items: Vec<AuditEntry>,
    pub next: Option<i64>,
}

/// What a low-risk action or an approval did, for the page to show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    /// applied | duplicate | out_of_order | conflict | held | unknown_payment |
    /// executed | pending | …
    pub class: String,
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_round_trip_through_the_query() {
        let f = TicketFilter::from_pairs([
            ("class", "PROVIDER_ONLY"),
            ("q", "PAY 1&2"),
            ("status", ""),
            ("junk", "x"),
        ]);
        assert_eq!(f.class.as_deref(), Some("PROVIDER_ONLY"));
        assert_eq!(f.status, None);
        let q = f.query_with_after(Some("3.9.abc"));
        assert_eq!(q, "class=PROVIDER_ONLY&q=PAY%201%262&after=3.9.abc");
        assert_eq!(
            f.with("class", None).query_with_after(None),
            "q=PAY%201%262"
        );
    }

    #[test]
    fn fix_kinds_round_trip() {
        for k in FixKind::ALL {
            assert_eq!(k.as_str().parse::<FixKind>().unwrap(), k);
        }
        assert!("DELETE".parse::<FixKind>().is_err());
    }
}
