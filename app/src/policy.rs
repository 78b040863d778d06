//! The approval policy as the console shows it: the version in force, its
//! rules as text an admin can edit, and the change waiting for approval.

use serde::{Deserialize, Serialize};

/// A policy version: its number (0 is the built-in default), the digest of
/// its body, its rules as text (one line per rule), and who made it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyVersion {
    pub id: String,
    pub version: i64,
    pub digest: String,
    pub text: String,
    pub reason: String,
    /// PENDING | ACTIVE | RETIRED | REJECTED; the default is ACTIVE.
    pub status: String,
    pub proposer: String,
    pub proposer_id: String,
    pub proposed_at: i64,
    pub required: i64,
    /// Who approved so far (or, once active, who approved it).
    pub approved_by: Vec<String>,
    pub decided_by: Option<String>,
    pub active_from: Option<i64>,
}

/// The policy page: the version in force, a change waiting, and the
/// versions that were in force before, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyPage {
    pub active: PolicyVersion,
    pub pending: Option<PolicyVersion>,
    pub history: Vec<PolicyVersion>,
    /// The actions a rule may name, in order.
    pub actions: Vec<String>,
}

/// An action the approval policy holds until others approve it: a sink's
/// pause, a large bulk resend, a user's creation, a token that can write.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldAction {
    pub id: String,
    /// SINK_PAUSE | BULK_RESEND | USER_CREATE | TOKEN_CREATE
    pub action: String,
    /// What it does, in a line.
    pub summary: String,
    pub reason: String,
    /// PENDING | DONE | REJECTED | WITHDRAWN
    pub status: String,
    pub proposer: String,
    pub proposer_id: String,
    pub proposed_at: i64,
    pub required: i64,
    pub approved_by: Vec<String>,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
    /// What ran: a job's id, a user's name, a token's name.
    pub outcome: Option<String>,
}
