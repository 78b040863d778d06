//! An alert's words: its kind (what happened) and its severity (how loud
//! it is sent). Stored as the text `as_str` gives; the console lists the
//! same kinds (`app::codes::ALERT_KINDS`), checked against these by a test.

use std::fmt;
use std::str::FromStr;

/// What an alert is about; its dedupe key starts with the kind's word
/// where the kind names its subject there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlertKind {
    AuditTampered,
    CallbackConflict,
    CallbackDead,
    Conflict,
    EventsUndelivered,
    LocalOnly,
    OutOfOrder,
    OutboxDead,
    PaidAfterClose,
    QueriesExhausted,
    RefundMismatch,
    RefundQueriesExhausted,
    SinkFailing,
    SlaOverdue,
    StatementMissing,
    StatementPullFailed,
    WebhooksRefusedSpike,
}

impl AlertKind {
    pub const ALL: [AlertKind; 17] = [
        AlertKind::AuditTampered,
        AlertKind::CallbackConflict,
        AlertKind::CallbackDead,
        AlertKind::Conflict,
        AlertKind::EventsUndelivered,
        AlertKind::LocalOnly,
        AlertKind::OutOfOrder,
        AlertKind::OutboxDead,
        AlertKind::PaidAfterClose,
        AlertKind::QueriesExhausted,
        AlertKind::RefundMismatch,
        AlertKind::RefundQueriesExhausted,
        AlertKind::SinkFailing,
        AlertKind::SlaOverdue,
        AlertKind::StatementMissing,
        AlertKind::StatementPullFailed,
        AlertKind::WebhooksRefusedSpike,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            AlertKind::AuditTampered => "audit_tampered",
            AlertKind::CallbackConflict => "callback_conflict",
            AlertKind::CallbackDead => "callback_dead",
            AlertKind::Conflict => "conflict",
            AlertKind::EventsUndelivered => "events_undelivered",
            AlertKind::LocalOnly => "local_only",
            AlertKind::OutOfOrder => "out_of_order",
            AlertKind::OutboxDead => "outbox_dead",
            AlertKind::PaidAfterClose => "paid_after_close",
            AlertKind::QueriesExhausted => "queries_exhausted",
            AlertKind::RefundMismatch => "refund_mismatch",
            AlertKind::RefundQueriesExhausted => "refund_queries_exhausted",
            AlertKind::SinkFailing => "sink_failing",
            AlertKind::SlaOverdue => "sla_overdue",
            AlertKind::StatementMissing => "statement_missing",
            AlertKind::StatementPullFailed => "statement_pull_failed",
            AlertKind::WebhooksRefusedSpike => "webhooks_refused_spike",
        }
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AlertKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown alert kind {s:?}"))
    }
}

/// How loud an alert is. Alerts are raised WARNING, HIGH or CRITICAL; a
/// channel's `min_severity` may also name INFO, LOW or MEDIUM. Written in
/// lower case, read in any case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlertSeverity {
    Info,
    Low,
    Warning,
    Medium,
    High,
    Critical,
}

impl AlertSeverity {
    pub const ALL: [AlertSeverity; 6] = [
        AlertSeverity::Info,
        AlertSeverity::Low,
        AlertSeverity::Warning,
        AlertSeverity::Medium,
        AlertSeverity::High,
        AlertSeverity::Critical,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            AlertSeverity::Info => "info",
            AlertSeverity::Low => "low",
            AlertSeverity::Warning => "warning",
            AlertSeverity::Medium => "medium",
            AlertSeverity::High => "high",
            AlertSeverity::Critical => "critical",
        }
    }

    /// 0 for INFO up to 4 for CRITICAL; WARNING and MEDIUM are one rank.
    pub const fn rank(self) -> u8 {
        match self {
            AlertSeverity::Info => 0,
            AlertSeverity::Low => 1,
            AlertSeverity::Warning | AlertSeverity::Medium => 2,
            AlertSeverity::High => 3,
            AlertSeverity::Critical => 4,
        }
    }

    /// The rank of a stored word; a word no channel knows ranks as a
    /// warning, so a new word is sent rather than lost.
    pub fn rank_of(word: &str) -> u8 {
        word.parse::<AlertSeverity>()
            .unwrap_or(AlertSeverity::Warning)
            .rank()
    }
}

impl fmt::Display for AlertSeverity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AlertSeverity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|w| w.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown alert severity {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_as_themselves() {
        for k in AlertKind::ALL {
            assert_eq!(k.as_str().parse::<AlertKind>(), Ok(k));
        }
        for s in AlertSeverity::ALL {
            assert_eq!(s.as_str().parse::<AlertSeverity>(), Ok(s));
            assert_eq!(s.as_str().to_uppercase().parse::<AlertSeverity>(), Ok(s));
        }
        assert_eq!(" High ".parse::<AlertSeverity>(), Ok(AlertSeverity::High));
        assert!("loud".parse::<AlertSeverity>().is_err());
        assert!("sla".parse::<AlertKind>().is_err());
    }

    #[test]
    fn severities_rank_as_channels_filter_them() {
        let ranks: Vec<u8> = AlertSeverity::ALL.iter().map(|s| s.rank()).collect();
        assert_eq!(ranks, [0, 1, 2, 2, 3, 4]);
        assert_eq!(AlertSeverity::rank_of("CRITICAL"), 4);
        assert_eq!(AlertSeverity::rank_of("whatever"), 2);
    }

    /// The console lists the same kinds and severities the server raises.
    #[test]
    fn the_console_lists_the_same_words() {
        let kinds: Vec<&str> = AlertKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(kinds, app::codes::ALERT_KINDS);
        for s in app::console::ALERT_SEVERITIES {
            let severity: AlertSeverity = s.parse().unwrap();
            assert_eq!(severity.as_str(), *s);
        }
    }
}
