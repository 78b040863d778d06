//! Reconciliation runs as the console shows them: the list (newest first,
//! keyset pages) with each run's statement checks and each pulling
//! provider's schedule, and resuming a run that did not complete.

use super::{Desk, audit_one, invalid, page};
use crate::accounts::internal;
use crate::statement::Check;
use crate::store::lists::{self as store_lists, After};
use app::console::{PullSchedule, RunPage, RunSummary, SummaryCheck};
use app::error::AppError;
use app::tickets::PAGE_SIZE;
use app::types::User;
use serde_json::json;

#[async_trait::async_trait]
impl app::ssr::Runs for Desk {
    async fn runs(&self, after: Option<&str>) -> Result<RunPage, AppError> {
        let rows = store_lists::runs(&self.engine.db, After::parse(after).as_ref(), PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let items = rows
            .into_iter()
            .map(|r| {
                let classes = r
                    .figures_json
                    .as_deref()
                    .and_then(|f| serde_json::from_str::<serde_json::Value>(f).ok())
                    .and_then(|v| {
                        v["classes"].as_object().map(|o| {
                            o.iter()
                                .map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(0)))
                                .collect()
                        })
                    })
                    .unwrap_or_default();
                RunSummary {
                    classes,
                    file_kept: r.file_kept == 1,
                    checks: summary_checks(r.summary_json.as_deref()),
                    ..r.summary
                }
            })
            .collect();
        let (items, next) = page(items, |r: &RunSummary| format!("{}.{}", r.started_at, r.id));
        let providers = self
            .providers()
            .into_iter()
            .filter(|p| {
                self.engine
                    .providers
                    .get(p)
                    .is_some_and(|p| p.statement_format().is_some())
            })
            .collect();
        let schedules = crate::recon::schedules(&self.engine, self.now())
            .await
            .map_err(internal)?
            .into_iter()
            .map(|s| PullSchedule {
                provider: s.provider,
                zone: s.zone,
                ready_hour: s.ready_hour,
                last_at: s.last_at,
                last_run: s.last_run_id,
                last_error: s.last_error,
                next_at: s.next_at,
                missing: s.missing,
            })
            .collect();
        Ok(RunPage {
            items,
            next,
            providers,
            schedules,
        })
    }

    /// Resumes a run that did not complete, in the background (a pull can
    /// take a while; the runs page shows its progress).
    async fn resume_run(&self, actor: &User, id: &str) -> Result<(), AppError> {
        let engine = &self.engine;
        let status = crate::store::lists::run_status(&engine.db, id)
            .await
            .map_err(internal)?;
        match status.as_deref() {
            None => return Err(AppError::NotFound),
            Some("COMPLETED") => return Err(invalid("the run is complete")),
            Some(_) => {}
        }
        // Said now: the resume below runs after the answer.
        if let Some(why) = crate::recon::resume_held(engine, id)
            .await
            .map_err(internal)?
        {
            return Err(invalid(why));
        }
        audit_one(
            engine,
            &actor.username,
            "recon.resume",
            ("run", id),
            json!({ "status": status }),
        )
        .await?;
        let engine = engine.clone();
        let run = id.to_owned();
        let who = actor.username.clone();
        tokio::spawn(async move {
            if let Err(e) = crate::recon::resume_run(&engine, &run).await {
                tracing::warn!(run_id = %run, by = %who, error = %e, "resume failed");
            }
        });
        Ok(())
    }
}

/// The statement's own figures of a run's summary, each with whether it
/// holds.
fn summary_checks(summary_json: Option<&str>) -> Vec<SummaryCheck> {
    let summary: serde_json::Value = summary_json
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    summary["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let (stated, read) = (
                c["stated"].as_i64().unwrap_or(0),
                c["read"].as_i64().unwrap_or(0),
            );
            let what = c["what"].as_str().unwrap_or_default();
            let currency = c["currency"].as_str();
            // Fees are summed at five places, not in minor units.
            let fee_units = c["fee_units"].as_bool() == Some(true);
            let shown = |figure: i64| match currency {
                Some(code) if fee_units => format!(
                    "{} {code}",
                    app::format::major(figure, crate::domain::Fee::DECIMALS)
                ),
                Some(code) => app::format::money(figure, code),
                None => figure.to_string(),
            };
            SummaryCheck {
                what: what.to_owned(),
                label: Check::label(what).to_owned(),
                stated,
                read,
                stated_text: shown(stated),
                read_text: shown(read),
                holds: stated == read || !c["waived"].is_null(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    /// A fee total is in 1/100,000 of the major unit: shown to its five
    /// places, not read as minor units.
    #[test]
    fn a_fee_total_is_shown_to_five_places_and_amounts_in_minor_units() {
        let json = r#"{"checks":[
            {"what":"手续费总金额","stated":35981,"read":35982,"currency":"CNY","fee_units":true},
            {"what":"应结订单总金额","stated":5997,"read":5997,"currency":"CNY"}]}"#;
        let checks = super::summary_checks(Some(json));
        assert_eq!(
            (checks[0].stated_text.as_str(), checks[0].read_text.as_str()),
            ("0.35981 CNY", "0.35982 CNY")
        );
        assert!(!checks[0].holds);
        assert_eq!(checks[1].stated_text, "59.97 CNY");
    }
}
