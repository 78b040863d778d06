//! The settings that decide money, as the Settings page shows them: the
//! version in force, its history with who proposed and approved each and
//! what each changed, a change waiting for its second person, and the
//! console-editable values in the host variables' own formats.

use serde::{Deserialize, Serialize};

/// One setting that differs between a version and the one before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingChange {
    /// Its path in the settings document (`sla_hours.LOCAL_ONLY`).
    pub setting: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A version, or a console proposal (no number until approved).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsVersion {
    pub id: String,
    pub version: Option<i64>,
    /// PENDING | ADOPTED | REJECTED
    pub status: String,
    /// host | console
    pub source: String,
    pub digest: String,
    pub reason: Option<String>,
    pub proposed_by: String,
    pub proposed_by_id: Option<String>,
    /// Who approved (or rejected) it.
    pub decided_by: Option<String>,
    /// Who approved it so far, in order.
    pub approved_by: Vec<String>,
    /// How many approvers it needs (fixed when proposed).
    pub required: i64,
    pub created_at: i64,
    pub decided_at: Option<i64>,
    /// What it changed against the version before it (a proposal: the
    /// version it changes).
    pub changes: Vec<SettingChange>,
    /// A change of the matching rules: what it would do, previewed on
    /// each provider's latest statement when proposed.
    #[serde(default)]
    pub preview: Vec<RulePreview>,
}

/// One provider's latest statement under the matching rules in force and
/// under the proposed ones, with nothing written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulePreview {
    pub provider: String,
    pub business_date: String,
    pub run_id: String,
    pub matched_now: i64,
    pub tickets_now: i64,
    pub matched_proposed: i64,
    pub tickets_proposed: i64,
    /// More rows and records per class under the proposed rules.
    pub classes_more: std::collections::BTreeMap<String, i64>,
    /// More tickets per class and severity (`AMOUNT_MISMATCH LOW`).
    #[serde(default)]
    pub tickets_more: std::collections::BTreeMap<String, i64>,
    /// Under the proposed rules, what the keys after the identifiers did
    /// (`amount`: rows `matched`, `proposed`, `ambiguous`; `reference`:
    /// rows `found`); left out when nothing.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub by_key_proposed:
        std::collections::BTreeMap<String, std::collections::BTreeMap<String, i64>>,
    /// Why it could not be previewed, if so.
    pub error: Option<String>,
}

/// The console-editable settings, as text in the host variables' formats.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditableSettings {
    /// `RECKON_SLA_HOURS`: `CLASS=HOURS, …, *=HOURS`.
    pub sla_hours: String,
    /// `RECKON_CUT_WINDOW_MINUTES`: `30, account=MINUTES`.
    pub cut_window_minutes: String,
    /// `RECKON_BANK_WINDOW_DAYS`.
    pub bank_window_days: String,
    /// `RECKON_STATEMENT_MISSING_HOURS`.
    pub statement_missing_hours: String,
    /// `RECKON_CLOSE_ALLOW_OPEN`: OFF, NONE, LOW, MEDIUM, HIGH or CRITICAL.
    pub close_allow_open: String,
    /// `RECKON_MATCH_KEYS`: `txn, payment_no` (None in a proposal: as in
    /// force).
    #[serde(default)]
    pub match_keys: Option<String>,
    /// `RECKON_MATCH_WINDOW_HOURS`: `72, account=HOURS`.
    #[serde(default)]
    pub match_window_hours: Option<String>,
    /// `RECKON_AMOUNT_TOLERANCE`: `account:CURRENCY=MINOR, …`.
    #[serde(default)]
    pub amount_tolerance: Option<String>,
}

/// The Settings page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsView {
    /// The version this instance uses now.
    pub in_force: Option<i64>,
    /// The settings document in force, pretty-printed.
    pub document: String,
    pub editable: EditableSettings,
    pub pending: Option<SettingsVersion>,
    /// Newest first.
    pub history: Vec<SettingsVersion>,
    /// People other than the proposer who approve a change proposed now.
    pub approvals_needed: i64,
}
