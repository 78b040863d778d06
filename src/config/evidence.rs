//! The settings that decide money, as one document: the business day's
//! zone and each statement's day, the day's edge (cut windows), the bank
//! side's window, when a missing statement alerts, when a day closes by
//! itself, the fees expected, the SLA hours per class, and where the outbox
//! sends (sinks' names, URLs, event types and schedules — of their secrets
//! only how many are set). Its canonical text (JSON, keys sorted) has a
//! SHA-256 digest, so two hosts' settings or two versions compare by it.
//!
//! The console may change a subset ([`Edits`]); each value is checked by
//! the very function that checks the host's variable, so the console
//! refuses what the host's file would.

use super::values::{self, Text};
use super::{ConfigError, Settings};
use crate::domain::Severity;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// What a settings document says it is.
pub const FORMAT: &str = "reckon.settings.v1";

const MIN_US: i64 = 60_000_000;
const HOUR_US: i64 = 3_600_000_000;

/// The money-deciding settings of `s` as a canonical document.
pub fn document(s: &Settings) -> Value {
    let days: Map<String, Value> = s
        .pulls
        .days
        .iter()
        .map(|(name, d)| {
            (
                name.clone(),
                json!({ "zone": zone_name(&d.zone), "ready_hour": d.ready_hour }),
            )
        })
        .collect();
    let (listed, others) = s.sla.listed();
    let mut sla: Map<String, Value> = listed.map(|(c, h)| (c.to_owned(), h.into())).collect();
    sla.insert("*".into(), others.into());
    let fees: Map<String, Value> = s
        .closing
        .fees
        .iter()
        .map(|(name, f)| {
            (
                name.clone(),
                json!({
                    "rate": f.rate,
                    "fixed_minor": f.fixed_minor,
                    "tolerance_minor": f.tolerance_minor,
                }),
            )
        })
        .collect();
    let sinks: Vec<Value> = s
        .sinks
        .iter()
        .map(|k| {
            json!({
                "name": k.name,
                "url": shown_url(&k.url),
                "event_types": k.event_types,
                "schedule_us": k.schedule,
                "timeout_ms": k.timeout.as_millis() as i64,
                "in_flight": k.in_flight,
                // Never a secret, nor its hash: whether one is set.
                "secrets_set": k.secrets.len(),
            })
        })
        .collect();
    canonical(&json!({
        "format": FORMAT,
        "timezone": zone_name(&s.timezone),
        "statement_days": days,
        "pull_catch_up_days": s.pulls.catch_up_days,
        "statement_missing_hours": s.pulls.missing_after_us / HOUR_US,
        "statement_keep_days": s.pulls.keep_files_days,
        "bank_window_days": s.pulls.bank_window_days,
        "cut_window_minutes": s.pulls.cut_window_us / MIN_US,
        "cut_window_minutes_per_provider": s
            .pulls
            .cut_windows
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v / MIN_US)))
            .collect::<Map<_, _>>(),
        "close_allow_open": allow_open_word(s.closing.auto, s.closing.allow_open),
        "fees": fees,
        "sla_hours": sla,
        "sinks": sinks,
        "outbox_max_attempts": s.outbox_max_attempts,
        "query_schedule_us": s.query_schedule,
        "callback_max_tries": s.callback_max_tries,
        "matching": s.matching.document(),
    }))
}

/// `doc` as a document recorded before some of its sections existed: each
/// section `recorded` lacks, when `doc` has it at its default, left out. So
/// a host that only gained a new section (at its defaults, as an upgrade
/// brings it) has not changed its own values, and a console change in
/// force stays.
pub fn as_recorded(doc: &Value, recorded: &Value) -> Value {
    let defaults = document(&Settings::default());
    let mut out = doc.clone();
    if let (Some(map), Some(old)) = (out.as_object_mut(), recorded.as_object()) {
        map.retain(|k, v| old.contains_key(k) || defaults.get(k) != Some(v));
    }
    out
}

/// The canonical text of a document: keys sorted, no spaces.
pub fn canonical_text(doc: &Value) -> String {
    canonical(doc).to_string()
}

/// The SHA-256 (hex) of a document's canonical text.
pub fn digest(doc: &Value) -> String {
    hex::encode(Sha256::digest(canonical_text(doc).as_bytes()))
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&map[k]));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// A sink's URL without what may hide a credential: its user and
/// password, and its query (`?…` says there was one).
fn shown_url(url: &str) -> String {
    let (url, query) = match url.split_once('?') {
        Some((u, _)) => (u, "?…"),
        None => (url, ""),
    };
    let url = match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    };
    format!("{url}{query}")
}

fn zone_name(zone: &jiff::tz::TimeZone) -> String {
    zone.iana_name().unwrap_or("UTC").to_owned()
}

fn allow_open_word(auto: bool, allow_open: Option<Severity>) -> &'static str {
    match (auto, allow_open) {
        (false, _) => "OFF",
        (true, None) => "NONE",
        (true, Some(s)) => s.as_str(),
    }
}

/// The settings the console may change, as text in the host variables'
/// own formats (`RECKON_SLA_HOURS`, `RECKON_CUT_WINDOW_MINUTES`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Edits {
    pub sla_hours: String,
    pub cut_window_minutes: String,
    pub bank_window_days: String,
    pub statement_missing_hours: String,
    pub close_allow_open: String,
    /// `RECKON_MATCH_KEYS`: `txn, payment_no`.
    #[serde(default)]
    pub match_keys: String,
    /// `RECKON_MATCH_WINDOW_HOURS`: `72, account=HOURS`.
    #[serde(default)]
    pub match_window_hours: String,
    /// `RECKON_AMOUNT_TOLERANCE`: `account:CURRENCY=MINOR, …`.
    #[serde(default)]
    pub amount_tolerance: String,
}

/// The console-editable settings, checked.
#[derive(Clone, Debug)]
pub struct Editable {
    sla: crate::domain::Sla,
    cut_window: super::CutWindow,
    bank_window_days: i64,
    statement_missing_hours: i64,
    close_allow_open: Option<Severity>,
    close_auto: bool,
    matching: super::MatchRules,
}

impl Edits {
    /// The editable settings of a document, as text.
    pub fn of(doc: &Value) -> Edits {
        let sla = doc["sla_hours"]
            .as_object()
            .map(|m| {
                let mut items: Vec<String> = m
                    .iter()
                    .filter(|(k, _)| *k != "*")
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                if let Some(others) = m.get("*") {
                    items.push(format!("*={others}"));
                }
                items.join(", ")
            })
            .unwrap_or_default();
        let mut cut = vec![doc["cut_window_minutes"].to_string()];
        if let Some(per) = doc["cut_window_minutes_per_provider"].as_object() {
            cut.extend(per.iter().map(|(k, v)| format!("{k}={v}")));
        }
        let (match_keys, match_window_hours, amount_tolerance) =
            super::MatchRules::texts_of(&doc["matching"]);
        Edits {
            match_keys,
            match_window_hours,
            amount_tolerance,
            sla_hours: sla,
            cut_window_minutes: cut.join(", "),
            bank_window_days: doc["bank_window_days"].to_string(),
            statement_missing_hours: doc["statement_missing_hours"].to_string(),
            close_allow_open: doc["close_allow_open"].as_str().unwrap_or("LOW").to_owned(),
        }
    }

    /// Each value checked as the host's variable is; the first bad one
    /// named by its variable. `is_provider` tells a configured account.
    pub fn check(&self, is_provider: impl Fn(&str) -> bool) -> Result<Editable, ConfigError> {
        let t = |s: &str| Some(Text(s.trim().to_owned()));
        let (close_allow_open, close_auto) = values::closing(t(&self.close_allow_open))?;
        Ok(Editable {
            sla: values::sla_hours(Some(self.sla_hours.clone()))?,
            cut_window: values::cut_window(Some(self.cut_window_minutes.clone()), &is_provider)?,
            bank_window_days: values::bank_window_days(t(&self.bank_window_days))?,
            statement_missing_hours: values::statement_missing_hours(t(
                &self.statement_missing_hours
            ))?,
            close_allow_open,
            close_auto,
            matching: super::match_rules::rules(
                Some(self.match_keys.clone()),
                Some(self.match_window_hours.clone()),
                Some(self.amount_tolerance.clone()),
                &is_provider,
            )?,
        })
    }
}

impl Editable {
    /// `s` with these values in place of its own.
    pub fn apply(&self, s: &Settings) -> Settings {
        let mut s = s.clone();
        s.sla = self.sla.clone();
        s.pulls.cut_window_us = self.cut_window.minutes * MIN_US;
        s.pulls.cut_windows = self
            .cut_window
            .per_provider
            .iter()
            .map(|(k, m)| (k.clone(), m * MIN_US))
            .collect::<BTreeMap<_, _>>();
        s.pulls.bank_window_days = self.bank_window_days;
        s.pulls.missing_after_us = self.statement_missing_hours * HOUR_US;
        s.closing.allow_open = self.close_allow_open;
        s.closing.auto = self.close_auto;
        s.matching = self.matching.clone();
        s
    }
}

/// The settings a version's document makes of the host's: its editable
/// values over the host's (the rest is the host's own). A window named for
/// an account this host lacks (another instance's) is harmless: accepted.
pub fn apply_document(host: &Settings, doc: &Value) -> Result<Settings, ConfigError> {
    let editable = Edits::of(doc).check(|_| true)?;
    Ok(editable.apply(host))
}

/// One line of a difference between two documents: the setting's path,
/// its value before and after (absent: `None`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// What differs between two documents, setting by setting (leaf paths such
/// as `sla_hours.LOCAL_ONLY`, `sinks[0].url`).
pub fn diff(before: &Value, after: &Value) -> Vec<Change> {
    let (mut a, mut b) = (BTreeMap::new(), BTreeMap::new());
    flatten("", before, &mut a);
    flatten("", after, &mut b);
    let mut paths: Vec<&String> = a.keys().chain(b.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| Change {
            path: p.clone(),
            before: a.get(p).cloned(),
            after: b.get(p).cloned(),
        })
        .collect()
}

fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&path, v, out);
            }
        }
        Value::Array(items) if items.iter().any(|i| i.is_object()) => {
            for (i, v) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), v, out);
            }
        }
        other => {
            out.insert(prefix.to_owned(), other.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_read_back_as_edits_checks_to_the_same_document() {
        let s = Settings::default();
        let doc = document(&s);
        let edits = Edits::of(&doc);
        let again = edits.check(|_| false).unwrap().apply(&s);
        assert_eq!(digest(&document(&again)), digest(&doc));
    }

    #[test]
    fn an_edit_changes_the_digest_and_shows_in_the_diff() {
        let s = Settings::default();
        let doc = document(&s);
        let mut edits = Edits::of(&doc);
        edits.bank_window_days = "5".into();
        let changed = document(&edits.check(|_| false).unwrap().apply(&s));
        assert_ne!(digest(&changed), digest(&doc));
        assert_eq!(
            diff(&doc, &changed),
            vec![Change {
                path: "bank_window_days".into(),
                before: Some("3".into()),
                after: Some("5".into()),
            }]
        );
    }

    #[test]
    fn a_section_new_at_its_defaults_is_no_change_of_the_host() {
        let s = Settings::default();
        let doc = document(&s);
        let mut older = doc.clone();
        older.as_object_mut().unwrap().remove("matching");
        assert_eq!(digest(&as_recorded(&doc, &older)), digest(&older));
        // Not at its defaults: the host did change it.
        let mut ruled = s.clone();
        ruled.matching.window_us = 3_600_000_000;
        let doc = document(&ruled);
        assert_ne!(digest(&as_recorded(&doc, &older)), digest(&older));
    }

    #[test]
    fn a_sink_url_loses_its_credentials() {
        assert_eq!(
            shown_url("https://u:p@hooks.example/in?token=s"),
            "https://hooks.example/in?…"
        );
        assert_eq!(shown_url("http://127.0.0.1:9/e"), "http://127.0.0.1:9/e");
    }

    #[test]
    fn a_bad_value_is_refused_naming_its_variable() {
        let mut edits = Edits::of(&document(&Settings::default()));
        edits.cut_window_minutes = "30, nobody=5".into();
        let e = edits.check(|_| false).unwrap_err().to_string();
        assert!(e.contains("RECKON_CUT_WINDOW_MINUTES"), "{e}");
        edits.cut_window_minutes = "30".into();
        edits.sla_hours = "LOCAL_ONLY=0".into();
        let e = edits.check(|_| false).unwrap_err().to_string();
        assert!(e.contains("RECKON_SLA_HOURS"), "{e}");
    }
}
