//! A run as a preview: a statement read, matched and classified as a run
//! would — under the rules in force or under proposed ones — with nothing
//! written: no run, no ticket, no repair, no hold, no edge, no progress.
//! It answers with the figures and the difference against the last real
//! run of that provider's day; a rule change's preview runs the latest
//! statement of each provider under both rule sets, so its difference is
//! the change's alone.

use super::classify::Applied;
use super::figures::Figures;
use super::import::{Checked, Import, check};
use super::read::{self, Input};
use super::run::{ReconError, Run};
use super::{find_run, kept_file, reconcile_under};
use crate::config::MatchRules;
use crate::engine::Engine;
use crate::statement;
use crate::store::recon_runs::{self, RunRow};
use std::collections::BTreeMap;

/// What a run would find, written nowhere.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Preview {
    pub provider: String,
    pub business_date: String,
    /// The run previewed again, when it is one.
    pub of_run: Option<String>,
    pub statement_rows: i64,
    pub matched: i64,
    /// Statement rows and local records per class, as a run's figures
    /// count them (`MATCHED` among them).
    pub classes: BTreeMap<String, i64>,
    /// The tickets it would open or update, by class, then severity.
    pub tickets: BTreeMap<String, BTreeMap<String, i64>>,
    /// What the keys after the identifiers would do, when anything: per
    /// key (`amount`, `reference`), rows `matched`, `proposed`,
    /// `ambiguous`, `found`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_key: BTreeMap<String, BTreeMap<String, i64>>,
    /// How long it took (milliseconds).
    pub millis: u64,
    /// The difference from the last real run of that provider's day, if
    /// there is one.
    pub against: Option<PreviewAgainst>,
}

/// A preview's difference from another outcome of the same day.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct PreviewAgainst {
    /// The run compared with (for a rule change: the same statement under
    /// the rules in force).
    pub run_id: Option<String>,
    /// The settings' version it ran under.
    pub config_version: Option<i64>,
    /// More rows matched (negative: fewer).
    pub matched_more: i64,
    /// More rows and records per class (zero differences left out).
    pub classes_more: BTreeMap<String, i64>,
    /// More tickets (negative: fewer), when both sides count them.
    pub tickets_more: Option<i64>,
}

impl Preview {
    fn of(provider: &str, date: &str, figures: &Figures) -> Preview {
        Preview {
            provider: provider.to_owned(),
            business_date: date.to_owned(),
            of_run: None,
            statement_rows: figures.statement_rows,
            matched: figures.matched,
            classes: figures
                .classes
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            tickets: figures
                .tickets
                .iter()
                .map(|(c, by)| {
                    (
                        c.to_string(),
                        by.iter().map(|(s, n)| (s.to_string(), *n)).collect(),
                    )
                })
                .collect(),
            by_key: figures
                .by_key
                .iter()
                .map(|(k, by)| {
                    (
                        k.to_string(),
                        by.iter().map(|(w, n)| (w.to_string(), *n)).collect(),
                    )
                })
                .collect(),
            millis: figures.millis.values().copied().max().unwrap_or(0),
            against: None,
        }
    }

    /// The tickets per class and severity (`AMOUNT_MISMATCH LOW`).
    fn by_severity(&self) -> BTreeMap<String, i64> {
        self.tickets
            .iter()
            .flat_map(|(c, by)| by.iter().map(move |(s, n)| (format!("{c} {s}"), *n)))
            .collect()
    }

    /// The tickets in all.
    pub fn ticket_count(&self) -> i64 {
        self.tickets.values().flat_map(|by| by.values()).sum()
    }

    /// This preview's difference from `before`.
    fn against(&self, before: &Preview) -> PreviewAgainst {
        PreviewAgainst {
            run_id: before.of_run.clone(),
            config_version: None,
            matched_more: self.matched - before.matched,
            classes_more: classes_more(&before.classes, &self.classes),
            tickets_more: Some(self.ticket_count() - before.ticket_count()),
        }
    }
}

fn classes_more(
    before: &BTreeMap<String, i64>,
    after: &BTreeMap<String, i64>,
) -> BTreeMap<String, i64> {
    before
        .keys()
        .chain(after.keys())
        .map(|k| {
            let of = |m: &BTreeMap<String, i64>| m.get(k).copied().unwrap_or(0);
            (k.clone(), of(after) - of(before))
        })
        .filter(|(_, d)| *d != 0)
        .collect()
}

/// The difference from the last real (completed) run of the preview's
/// day, from that run's stored figures.
async fn against_last_run(
    engine: &Engine,
    preview: &Preview,
) -> crate::store::Result<Option<PreviewAgainst>> {
    let Some(run) = last_run(engine, &preview.provider, &preview.business_date).await? else {
        return Ok(None);
    };
    let figures: serde_json::Value = run
        .figures_json
        .as_deref()
        .and_then(|f| serde_json::from_str(f).ok())
        .unwrap_or_default();
    let classes: BTreeMap<String, i64> = figures["classes"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(PreviewAgainst {
        run_id: Some(run.run_id),
        config_version: run.config_version,
        matched_more: preview.matched - figures["matched"].as_i64().unwrap_or(0),
        classes_more: classes_more(&classes, &preview.classes),
        tickets_more: None,
    }))
}

/// The last completed run of a provider's day.
async fn last_run(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> crate::store::Result<Option<RunRow>> {
    Ok(recon_runs::completed_between(&engine.db.pool, date, date)
        .await?
        .into_iter()
        .rfind(|r| r.provider == provider))
}

/// A statement file previewed as [`super::import_statement`] would run it
/// (the same checks, reader and classification), under `rules` (None: the
/// rules in force). A file already reconciled for the day is previewed
/// all the same.
pub async fn preview_statement(
    engine: &Engine,
    mut imp: Import<'_>,
    rules: Option<&MatchRules>,
) -> Result<Preview, ReconError> {
    // Without its hash the checks never answer with the earlier run.
    let known_hash = imp.hash.take();
    let (format, range) = match check(engine, &imp).await? {
        Checked::New(format, range) => (format, range),
        Checked::Earlier(_) => unreachable!("no hash, no earlier run"),
    };
    let how = read::Reading {
        format,
        input: imp.input,
        tolerance: imp.accept_bad_lines,
        known_hash,
        told: Default::default(),
    };
    let run = Run {
        run_id: "PREVIEW",
        provider: imp.provider,
        date: imp.business_date,
        file: imp.file_name,
        range,
    };
    let (read, matcher) =
        read::read_and_match_as(engine, run.run_id, run.provider, range, how, false).await?;
    refuse_incomplete(&read.checks)?;
    let mut preview = classify_dry(engine, &run, matcher, rules).await?;
    preview.against = against_last_run(engine, &preview).await?;
    Ok(preview)
}

/// A statement whose own figures disagree is refused, as its run would be.
fn refuse_incomplete(checks: &[statement::Check]) -> Result<(), ReconError> {
    let off: Vec<String> = checks
        .iter()
        .filter(|c| c.stated != c.read && c.waived.is_none())
        .map(|c| {
            format!(
                "{}: the statement says {}, {} read",
                statement::Check::label(&c.what),
                c.shown(c.stated),
                c.shown(c.read)
            )
        })
        .collect();
    match off.is_empty() {
        true => Ok(()),
        false => Err(ReconError::Refused(format!(
            "incomplete statement — {}",
            off.join("; ")
        ))),
    }
}

async fn classify_dry(
    engine: &Engine,
    run: &Run<'_>,
    matcher: super::matching::Matcher,
    rules: Option<&MatchRules>,
) -> Result<Preview, ReconError> {
    let started = std::time::Instant::now();
    let applied = match rules {
        Some(r) => Applied::of(r, run.provider),
        None => Applied::of(&engine.settings().matching, run.provider),
    };
    let figures = reconcile_under(engine, run, matcher, false, &applied, true).await?;
    let mut preview = Preview::of(run.provider, run.date, &figures);
    preview.millis = preview.millis.max(started.elapsed().as_millis() as u64);
    Ok(preview)
}

/// A completed run previewed again under `rules` (None: those in force):
/// its kept file read again, or a pull's staged rows streamed again.
pub async fn preview_run(
    engine: &Engine,
    run_id: &str,
    rules: Option<&MatchRules>,
) -> Result<Preview, ReconError> {
    let started = std::time::Instant::now();
    let run = find_run(engine, run_id)
        .await?
        .ok_or_else(|| ReconError::Invalid(format!("no run {run_id}")))?;
    if run.status != "COMPLETED" {
        return Err(ReconError::Invalid(format!(
            "run {run_id} is {}: only a completed run is previewed again",
            run.status
        )));
    }
    let mut preview = match kept_file(engine, run_id).await? {
        Some((name, hash, bytes)) => {
            let imp = Import {
                provider: &run.provider,
                business_date: &run.business_date,
                source: &run.source,
                file_name: Some(&name),
                input: Input::Bytes(bytes),
                started_by: "preview",
                // The run read it through, so its skipped lines were
                // accepted once.
                accept_bad_lines: u32::MAX,
                run_id: None,
                hash: Some(hash),
            };
            preview_statement(engine, imp, rules).await?
        }
        None if run.source == "pull" => {
            let range = super::day_range(
                &run.business_date,
                &super::statement_zone(engine, &run.provider),
            )
            .map_err(ReconError::Invalid)?;
            let at = Run {
                run_id,
                provider: &run.provider,
                date: &run.business_date,
                file: None,
                range,
            };
            let matcher = read::match_staged(engine, &at).await?;
            let mut preview = classify_dry(engine, &at, matcher, rules).await?;
            preview.against = against_last_run(engine, &preview).await?;
            preview
        }
        None => {
            return Err(ReconError::Invalid(format!(
                "run {run_id}'s statement file is no longer kept: it cannot be previewed again"
            )));
        }
    };
    preview.of_run = Some(run.run_id);
    preview.millis = started.elapsed().as_millis() as u64;
    Ok(preview)
}

/// A rule change's preview for one provider: its latest completed run's
/// statement under the rules in force and under the proposed ones.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct RulesPreview {
    pub provider: String,
    pub business_date: String,
    pub run_id: String,
    /// Under the rules in force.
    pub matched_now: i64,
    pub tickets_now: i64,
    /// Under the proposed rules.
    pub matched_proposed: i64,
    pub tickets_proposed: i64,
    /// More rows and records per class under the proposed rules (zero
    /// differences left out).
    pub classes_more: BTreeMap<String, i64>,
    /// More tickets per class and severity (`AMOUNT_MISMATCH LOW`) under
    /// the proposed rules (zero differences left out).
    pub tickets_more: BTreeMap<String, i64>,
    /// What the keys after the identifiers would do under the proposed
    /// rules ([`Preview::by_key`]): the amount key's proposals, which no
    /// class count shows, among them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_key_proposed: BTreeMap<String, BTreeMap<String, i64>>,
    /// Why it could not be previewed (a file no longer kept), if so.
    pub error: Option<String>,
}

/// Each provider's latest completed run previewed under the rules in
/// force and under `proposed`: what the change alone would do.
pub async fn preview_rules(
    engine: &Engine,
    proposed: &MatchRules,
) -> Result<Vec<RulesPreview>, ReconError> {
    let mut out = Vec::new();
    let names: Vec<String> = engine.providers.names().map(str::to_owned).collect();
    for provider in names {
        let Some(run) = recon_runs::latest_completed(&engine.db.pool, &provider).await? else {
            continue;
        };
        let mut p = RulesPreview {
            provider,
            business_date: run.business_date.clone(),
            run_id: run.run_id.clone(),
            matched_now: 0,
            tickets_now: 0,
            matched_proposed: 0,
            tickets_proposed: 0,
            classes_more: BTreeMap::new(),
            tickets_more: BTreeMap::new(),
            by_key_proposed: BTreeMap::new(),
            error: None,
        };
        let both = async {
            let now = preview_run(engine, &run.run_id, None).await?;
            let then = preview_run(engine, &run.run_id, Some(proposed)).await?;
            Ok::<_, ReconError>((now, then))
        };
        match both.await {
            Ok((now, then)) => {
                let d = then.against(&now);
                p.matched_now = now.matched;
                p.tickets_now = now.ticket_count();
                p.matched_proposed = then.matched;
                p.tickets_proposed = then.ticket_count();
                p.classes_more = d.classes_more;
                p.tickets_more = classes_more(&now.by_severity(), &then.by_severity());
                p.by_key_proposed = then.by_key;
            }
            Err(ReconError::Store(e)) => return Err(ReconError::Store(e)),
            Err(e) => p.error = Some(e.to_string()),
        }
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::figures::{IN_TRANSIT_FIGURE, MATCHED};
    use super::*;

    #[test]
    fn a_difference_leaves_out_what_did_not_change() {
        let m = |v: &[(&str, i64)]| v.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        assert_eq!(
            classes_more(
                &m(&[(MATCHED, 10), ("AMOUNT_MISMATCH", 2)]),
                &m(&[(MATCHED, 10), (IN_TRANSIT_FIGURE, 1)])
            ),
            m(&[("AMOUNT_MISMATCH", -2), (IN_TRANSIT_FIGURE, 1)])
        );
    }
}
