//! Refused webhooks' wire types: the list with its filters
//! and counts per reason per hour, one refused webhook with its masked
//! headers, and the dashboard's count of the last 24 hours.

use serde::{Deserialize, Serialize};

/// The list's filters; `after` is the keyset cursor (`received_at.id`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedFilter {
    pub provider: Option<String>,
    /// unverified | malformed | content_type | too_large
    pub kind: Option<String>,
    /// timestamp_skew | unknown_serial | retired_secret | body_changed |
    /// body_seen_verified
    pub diagnosis: Option<String>,
    /// Received from this day on (YYYY-MM-DD, business time zone).
    pub from: Option<String>,
    /// Received up to this day, inclusive.
    pub to: Option<String>,
    pub after: Option<String>,
}

crate::query_filter!(RefusedFilter {
    provider,
    kind,
    diagnosis,
    from,
    to,
    after
});

/// The kinds of refusal, as stored.
pub const REFUSAL_KINDS: &[&str] = &["unverified", "malformed", "content_type", "too_large"];
/// The diagnoses Reckon gives.
pub const DIAGNOSES: &[&str] = &[
    "timestamp_skew",
    "unknown_serial",
    "retired_secret",
    "body_changed",
    "body_seen_verified",
];

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct RefusedSummary {
    pub id: String,
    pub provider: String,
    pub kind: String,
    pub reason: String,
    /// The peer address the server saw.
    pub source_addr: Option<String>,
    pub diagnosis: Option<String>,
    /// The diagnosis for people: the likely cause and what to do.
    pub diagnosis_detail: Option<String>,
    /// What the unverified body claims (not trusted).
    pub payment_no: Option<String>,
    pub body_len: i64,
    pub trace_id: String,
    /// Microseconds since the epoch.
    pub received_at: i64,
}

/// Refusals kept in one hour (its start, microseconds) for one reason: the
/// kind, or the diagnosis where there is one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourCount {
    pub hour: i64,
    pub reason: String,
    pub count: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedPage {
    pub items: Vec<RefusedSummary>,
    /// The cursor of the next page, if there is one.
    pub next: Option<String>,
    /// The last 24 hours, newest hour first.
    pub hourly: Vec<HourCount>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedDetail {
    pub summary: RefusedSummary,
    /// Header name and value, signatures and other secrets shortened.
    pub headers: Vec<(String, String)>,
    /// The body's first bytes, masked as a callback's are.
    pub body: String,
    pub body_hash: String,
}
