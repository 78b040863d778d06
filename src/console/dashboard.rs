//! The daily dashboard: one business day's reconciliation figures (to
//! process, matched, pending, repaired, unknown, by class) for one provider
//! or all, the 30 days' trend before it, the day's callbacks, the open
//! alerts and the providers whose statement of the day is alerted missing.

use super::{Desk, invalid, lists};
use crate::accounts::internal;
use crate::store::{alerts, callbacks};
use app::console::{CallbackFigures, Dashboard, DayFigures, TrendPoint};
use app::error::AppError;
use std::collections::BTreeMap;

/// Days the trend shows, the day itself the last.
const TREND_DAYS: i64 = 30;

impl Desk {
    /// Today in the business time zone, moved by `days`.
    fn business_day(&self, days: i64) -> String {
        let now = jiff::Timestamp::from_microsecond(self.now()).unwrap_or_default();
        let today = now.to_zoned(self.tz().clone()).date();
        today
            .checked_add(jiff::Span::new().days(days))
            .unwrap_or(today)
            .to_string()
    }

    /// `day` (yesterday when blank) for `provider` (all when blank).
    pub async fn dashboard_of(
        &self,
        day: Option<&str>,
        provider: Option<&str>,
    ) -> Result<Dashboard, AppError> {
        let day = day
            .filter(|d| !d.trim().is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| self.business_day(-1));
        let range = self.range(&day)?;
        let provider = provider.filter(|p| !p.trim().is_empty()).map(str::to_owned);
        let first: jiff::civil::Date = day.parse().map_err(|_| invalid("a day is YYYY-MM-DD"))?;
        let first = first
            .checked_sub(jiff::Span::new().days(TREND_DAYS - 1))
            .map_err(|e| invalid(e.to_string()))?
            .to_string();
        let days = crate::recon::recon_days(&self.engine, &first, &day)
            .await
            .map_err(internal)?;
        let mut per_day: BTreeMap<String, DayFigures> = BTreeMap::new();
        // The providers with a completed run of the day itself.
        let reconciled: Vec<String> = days
            .iter()
            .filter(|d| d.business_date == day)
            .map(|d| d.provider.clone())
            .collect();
        for d in days {
            if provider.as_deref().is_some_and(|p| d.provider != p) {
                continue;
            }
            let date = d.business_date.clone();
            let f = &d.figures;
            let e = per_day.entry(date).or_default();
            let n = |k: &str| f[k].as_i64().unwrap_or(0);
            e.to_process += n("to_process");
            e.matched += n("matched");
            e.pending += n("pending");
            e.repaired += n("repaired");
            e.unknown += n("unknown");
            e.runs.push(d.run_id.clone());
            if let Some(classes) = f["classes"].as_object() {
                for (class, count) in classes {
                    let c = count.as_i64().unwrap_or(0);
                    match e.classes.iter_mut().find(|(k, _)| k == class) {
                        Some((_, v)) => *v += c,
                        None => e.classes.push((class.clone(), c)),
                    }
                }
            }
        }
        let figures = per_day.get(&day).cloned().unwrap_or_default();
        let mut trend = Vec::new();
        let mut d: jiff::civil::Date = first.parse().map_err(|_| invalid("bad day"))?;
        for _ in 0..TREND_DAYS {
            let key = d.to_string();
            let f = per_day.get(&key);
            trend.push(TrendPoint {
                day: key,
                matched: f.map(|f| f.matched).unwrap_or(0),
                pending: f.map(|f| f.pending).unwrap_or(0),
                unknown: f.map(|f| f.unknown).unwrap_or(0),
                reconciled: f.is_some(),
            });
            d = d.tomorrow().map_err(|e| invalid(e.to_string()))?;
        }
        let callbacks = self
            .callback_figures(range, provider.as_deref())
            .await
            .map_err(internal)?;
        let db = &self.engine.db;
        let alerts = lists::alerts(db, true, 20).await.map_err(internal)?;
        let open_alerts = alerts::open_count(&db.pool).await.map_err(internal)?;
        // The day's statements alerted missing (and still without a run).
        let mut missing_statements = Vec::new();
        for name in self.providers() {
            if provider.as_deref().is_some_and(|p| p != name) || reconciled.contains(&name) {
                continue;
            }
            let key = crate::recon::missing_key(&name, &day);
            if alerts::raised(&db.pool, &key).await.map_err(internal)? {
                missing_statements.push(name);
            }
        }
        let settled_to_bank = super::bank::settled_on(&self.engine, &day, provider.as_deref())
            .await
            .map_err(internal)?;
        let closes = self
            .closes_of_day(&day)
            .await?
            .into_iter()
            .filter(|c| provider.as_deref().is_none_or(|p| p == c.provider))
            .collect();
        let ageing = self
            .ageing_of(&day, provider.as_deref(), range)
            .await
            .map_err(internal)?;
        // B (issue 28): sinks failing now (not paused ones: nothing is tried).
        let failing_sinks = super::sinks::list(&self.engine)
            .await?
            .into_iter()
            .filter(|s| s.is_failing())
            .collect();
        let refused_24h = self.refused_last_day().await?;
        Ok(Dashboard {
            failing_sinks,
            refused_24h,
            ageing,
            day,
            provider,
            providers: self.providers(),
            timezone: self.tz().iana_name().unwrap_or("UTC").to_owned(),
            figures,
            trend,
            callbacks,
            alerts,
            open_alerts,
            missing_statements,
            settled_to_bank,
            closes,
        })
    }

    /// The day's callbacks: received, duplicates, failed, DEAD, p99 time
    /// from receipt to processed.
    async fn callback_figures(
        &self,
        range: (i64, i64),
        provider: Option<&str>,
    ) -> sqlx::Result<CallbackFigures> {
        let db = &self.engine.db;
        let f = callbacks::figures(db, range, provider).await?;
        let p99_ms = if f.processed > 0 {
            let offset = ((f.processed - 1) as f64 * 0.99).floor() as i64;
            callbacks::processing_time_at(db, range, provider, offset)
                .await?
                .map(|us| us as f64 / 1000.0)
        } else {
            None
        };
        Ok(CallbackFigures {
            received: f.received,
            duplicates: f.duplicates,
            failed: f.failed,
            dead: f.dead,
            p99_ms,
        })
    }
}
