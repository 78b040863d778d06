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
