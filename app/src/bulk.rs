//! Bulk work as the console shows it: a selection of tickets (ticked, or
//! every one the list's filters match), a bulk proposal (one fix, one item
//! per ticket, each decided under the two-person rule) and the background
//! job that works the items, with its progress.

use crate::tickets::{FixKind, Proposal, TicketFilter};
use serde::{Deserialize, Serialize};

/// Most tickets one bulk action or proposal may take: more is refused with
/// a request to narrow the filter.
pub const BULK_LIMIT: usize = 1000;

/// How long after a bulk close ends its undo is offered: the tickets it
/// closed reopened, as one more job.
pub const UNDO_MINUTES: i64 = 10;

/// What a bulk action works on. `scope` is `ids` (the ticked tickets,
/// `ids` separated by commas, spaces or lines) or `filter` (every ticket
/// the filter matches, on every page) — said explicitly, so an empty
/// selection never means "everything".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    pub scope: String,
    pub ids: String,
    pub filter: TicketFilter,
}

impl Selection {
    /// The ticked ids, trimmed, without repeats, in the order given.
    pub fn id_list(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for id in self.ids.split([',', ' ', '\n', '\r', '\t']) {
            let id = id.trim();
            if !id.is_empty() && !out.iter().any(|o| o == id) {
                out.push(id.to_owned());
            }
        }
        out
    }
}

/// The ticket actions a bulk can do without a second person.
pub const BULK_ACTIONS: &[&str] = &["ASSIGN", "COMMENT", "CLOSE"];

/// A bulk job just started: the job to watch, and the bulk proposal it
/// makes, approves or rejects, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkStarted {
    pub job_id: String,
    pub bulk_id: Option<String>,
    pub total: i64,
}

/// A background job over many tickets or items.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkJob {
    pub id: String,
    /// ASSIGN | COMMENT | CLOSE | PROPOSE | APPROVE | REJECT | REOPEN (a
    /// close undone)
    pub kind: String,
    pub bulk_id: Option<String>,
    pub requested_by: String,
    /// RUNNING | CANCELLING | DONE | CANCELLED | FAILED
    pub status: String,
    pub total: i64,
    pub done: i64,
    pub skipped: i64,
    pub failed: i64,
    /// Not worked yet (left as they were when a job is cancelled).
    pub pending: i64,
    pub error: Option<String>,
    pub started_at: i64,
    pub finished_at: Option<i64>,
    /// Items skipped or failed: (ticket or proposal, SKIPPED | FAILED, why).
    pub exceptions: Vec<(String, String, String)>,
    /// A close job that may still be undone: until when (UTC microseconds).
    pub undo_until: Option<i64>,
    /// A close job undone: the job reopening its tickets.
    pub undone_by: Option<String>,
}

impl BulkJob {
    /// Still working (or about to stop).
    pub fn running(&self) -> bool {
        matches!(self.status.as_str(), "RUNNING" | "CANCELLING")
    }
}

/// One fix proposed for many tickets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkProposal {
    pub id: String,
    pub kind: FixKind,
    pub reason: String,
    pub evidence: String,
    pub proposer_id: String,
    pub proposer: String,
    pub proposed_at: i64,
    pub items: i64,
    /// Waiting and approvable.
    pub pending: i64,
    /// Waiting, but the payment changed since: approving skips them.
    pub stale: i64,
    pub executed: i64,
    pub rejected: i64,
    /// Failed on execution, or superseded.
    pub failed: i64,
}

/// A bulk proposal's page: its items with their own before and after, and
/// its jobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkDetail {
    pub bulk: BulkProposal,
    pub items: Vec<Proposal>,
    pub jobs: Vec<BulkJob>,
}

#[cfg(test)]
mod tests {
    use super::Selection;

    #[test]
    fn ticked_ids_are_split_trimmed_and_deduplicated() {
        let s = Selection {
            scope: "ids".into(),
            ids: " T1,T2\nT1  T3,,".into(),
            ..Selection::default()
        };
        assert_eq!(s.id_list(), ["T1", "T2", "T3"]);
    }
}
