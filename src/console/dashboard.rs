//! The daily dashboard: one business day's reconciliation figures (to
//! process, matched, pending, repaired, unknown, by class) for one provider
//! or all, with the reasons they do not add up when they do not and the
//! day's money beside them, the 30 days' trend before it, the day's
//! callbacks, the open alerts by kind and the providers whose statement of
//! the day is alerted missing; and a supervisor's approval queue.

use super::{Desk, invalid, money_text, zone_of};
use crate::accounts::internal;
use crate::recon::ReconDay;
use crate::store;
use crate::store::{alerts, callbacks, closes, proposals, tickets};
use app::console::{ApprovalQueue, CallbackFigures, DashMoney, Dashboard, DayFigures, TrendPoint};
use app::error::AppError;
use app::ssr::DayCloses as _;
use app::types::User;
use std::collections::BTreeMap;

/// Days the trend shows, the day itself the last.
const TREND_DAYS: i64 = 30;

#[async_trait::async_trait]
impl app::ssr::Overview for Desk {
    fn zone(&self) -> app::format::Zone {
        zone_of(self.tz(), self.now())
    }

    /// `day` (yesterday when blank) for `provider` (all when blank).
    async fn dashboard(
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
        for d in &days {
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
        let mut figures = per_day.get(&day).cloned().unwrap_or_default();
        let of_day: Vec<&ReconDay> = days
            .iter()
            .filter(|d| d.business_date == day)
            .filter(|d| provider.as_deref().is_none_or(|p| d.provider == p))
            .collect();
        figures.differences = self.differences(&figures, &of_day).await?;
        let money = self.day_money(&day, provider.as_deref(), &of_day).await?;
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
        let alerts_by_kind = alerts::open_by_kind(&db.pool).await.map_err(internal)?;
        let open_alerts = alerts_by_kind.iter().map(|(_, n)| n).sum();
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
            .day_closes(&day)
            .await?
            .into_iter()
            .filter(|c| provider.as_deref().is_none_or(|p| p == c.provider))
            .collect();
        let ageing = self
            .ageing_of(&day, provider.as_deref(), range)
            .await
            .map_err(internal)?;
        // Sinks failing now (not paused ones: nothing is tried).
        let failing_sinks = super::sinks::list(&self.engine)
            .await?
            .into_iter()
            .filter(|s| s.is_failing())
            .collect();
        let refused_24h = self.refused_last_day().await?;
        let date: jiff::civil::Date = day.parse().map_err(|_| invalid("bad day"))?;
        let next_day = date
            .tomorrow()
            .map_err(|e| invalid(e.to_string()))?
            .to_string();
        let prev_day = date
            .yesterday()
            .map_err(|e| invalid(e.to_string()))?
            .to_string();
        Ok(Dashboard {
            as_of: self.local_minutes(self.now()),
            prev_day,
            next_day,
            money,
            queue: None,
            alerts_by_kind,
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
            open_alerts,
            missing_statements,
            settled_to_bank,
            closes,
        })
    }

    /// What waits for `viewer`'s decision: fix proposals of others (a
    /// bulk proposal once) and reopenings of closed days proposed by others.
    async fn approval_queue(&self, viewer: &User) -> Result<ApprovalQueue, AppError> {
        let pool = &self.engine.db.pool;
        let now = self.now();
        let (fixes, oldest_fix, next_expiry_at) = proposals::waiting_for(pool, &viewer.id, now)
            .await
            .map_err(internal)?;
        let (reopens, oldest_reopen) = closes::reopens_waiting_for(pool, &viewer.id)
            .await
            .map_err(internal)?;
        let oldest_at = match (oldest_fix, oldest_reopen) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(ApprovalQueue {
            waiting: fixes + reopens,
            oldest_at,
            oldest: oldest_at.map(|t| self.local_minutes(t)),
            next_expiry_at,
            next_expiry: next_expiry_at.map(|t| self.local_minutes(t)),
        })
    }
}

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

    /// Why the day's figures do not add up (`to_process` against the sum
    /// of matched, pending, repaired and unknown), each reason with what it
    /// makes of the difference; empty when they add up. What no reason
    /// explains is `other`.
    async fn differences(
        &self,
        figures: &DayFigures,
        of_day: &[&ReconDay],
    ) -> Result<Vec<(String, i64)>, AppError> {
        let pool = &self.engine.db.pool;
        let (mut decided, mut duplicate_rows, mut fee_tickets, mut awaiting_repair) = (0, 0, 0, 0);
        for d in of_day {
            let t = tickets::day_tickets(pool, &d.provider, &d.business_date)
                .await
                .map_err(internal)?;
            let f = &d.figures;
            let repaired = f["repaired"].as_i64().unwrap_or(0);
            let rows = f["classes"]["DUPLICATE"].as_i64().unwrap_or(0);
            decided += (t.closed - repaired).max(0);
            duplicate_rows += (rows - t.duplicates).max(0);
            fee_tickets -= t.fee_open;
            awaiting_repair -= t.awaiting_repair;
        }
        let mut out: Vec<(String, i64)> = [
            ("decided", decided),
            ("duplicate_rows", duplicate_rows),
            ("fee_tickets", fee_tickets),
            ("awaiting_repair", awaiting_repair),
        ]
        .into_iter()
        .filter(|(_, n)| *n != 0)
        .map(|(k, n)| (k.to_owned(), n))
        .collect();
        let explained: i64 = out.iter().map(|(_, n)| n).sum();
        let other = figures.to_process - figures.accounted() - explained;
        if other != 0 {
            out.push(("other".to_owned(), other));
        }
        Ok(out)
    }

    /// The day's gross and net per currency as the statements of `of_day`
    /// state them, and the amount of the open tickets of the day.
    async fn day_money(
        &self,
        day: &str,
        provider: Option<&str>,
        of_day: &[&ReconDay],
    ) -> Result<Vec<DashMoney>, AppError> {
        let mut sums: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
        for d in of_day {
            if let Some(currencies) = d.figures["fees_and_net"]["currencies"].as_object() {
                for (currency, s) in currencies {
                    let e = sums.entry(currency.clone()).or_default();
                    e.0 += s["gross_minor"].as_i64().unwrap_or(0);
                    e.1 += s["net_minor"].as_i64().unwrap_or(0);
                }
            }
        }
        for name in self.providers() {
            if provider.is_some_and(|p| p != name) {
                continue;
            }
            let open = tickets::open_amounts_of_day(&self.engine.db.pool, &name, day)
                .await
                .map_err(internal)?;
            for (currency, minor) in open {
                sums.entry(currency).or_default().2 += minor;
            }
        }
        Ok(sums
            .into_iter()
            .map(|(currency, (gross, net, unknown))| {
                let text = |minor| money_text(Some(minor), Some(&currency)).unwrap_or_default();
                DashMoney {
                    gross: text(gross),
                    net: text(net),
                    unknown: text(unknown),
                    currency: currency.clone(),
                }
            })
            .collect())
    }

    /// The day's callbacks: received, duplicates, failed, DEAD, p99 time
    /// from receipt to processed.
    async fn callback_figures(
        &self,
        range: (i64, i64),
        provider: Option<&str>,
    ) -> store::Result<CallbackFigures> {
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
