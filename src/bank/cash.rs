//! Expected cash read from the tables: the payouts with their origins
//! and credits, the reconciled days' nets and the bank's credits, handed
//! to [`expected`](super::expected) to decide. The console, the API and
//! the command line show [`expected_cash`]; the matching pass asks
//! [`delays`] which waiting payouts are late.

use super::BankError;
use super::expected::{self, Announced, Arrived, Delay, Key, Paid, SettledDay};
use crate::context::Context;
use crate::store::bank::{self as store, PayoutCash};
use crate::store::recon_runs;
use jiff::civil::Date;
use std::collections::BTreeMap;

/// Days shown before today and after it when none are asked for.
pub const DAYS_BACK: i64 = 7;
pub const DAYS_AHEAD: i64 = 14;
/// The widest span one answer covers.
pub const MAX_SPAN_DAYS: i64 = 92;

/// The day `us` (µs) falls on in the business time zone.
pub(super) fn date_of(ctx: &Context, us: i64) -> Date {
    jiff::Timestamp::from_microsecond(us)
        .unwrap_or_default()
        .to_zoned(ctx.settings().timezone.clone())
        .date()
}

/// Where a payout started: the business day whose statement reported it,
/// or the day it was first seen.
pub(super) fn origin(ctx: &Context, p: &PayoutCash) -> Date {
    p.run_date
        .as_deref()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| date_of(ctx, p.seen_at))
}

/// The payouts paid by a bank credit, as history.
fn history(ctx: &Context, payouts: &[PayoutCash]) -> Vec<Paid> {
    payouts
        .iter()
        .filter(|p| {
            matches!(
                p.state.as_str(),
                "PAYOUT_MATCHED" | "PAYOUT_AMOUNT_MISMATCH"
            )
        })
        .filter_map(|p| {
            Some(Paid {
                key: Key::new(&p.provider, &p.currency),
                origin: origin(ctx, p),
                credited: p.credited_on.as_deref()?.parse().ok()?,
            })
        })
        .collect()
}

/// The first day history counts from on `today`.
pub(super) fn since(today: Date) -> Date {
    expected::plus_days(today, -expected::HISTORY_DAYS)
}

/// Each provider account's and currency's learned delay on `today`, from
/// `payouts` as [`store::payouts_for_cash`] read them.
pub(super) fn delays(ctx: &Context, payouts: &[PayoutCash], today: Date) -> BTreeMap<Key, Delay> {
    expected::learn_all(&history(ctx, payouts), today)
}

/// One provider account's and currency's delay as shown: learned, or how
/// many payouts it has so far.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct DelayShown {
    pub provider: String,
    pub currency: String,
    /// Matched payouts credited in the last 60 days (the latest 60).
    pub samples: i64,
    /// Whether a delay was learned (at least 5 payouts); without one no
    /// unpaid day is placed and no payout is called late.
    pub learned: bool,
    /// Days from a payout's origin to its credit: the usual (median), the
    /// range's end (90th percentile, at least a day past the median) and
    /// the longest seen.
    pub median_days: Option<i64>,
    pub late_after_days: Option<i64>,
    pub max_days: Option<i64>,
}

/// One provider account's cash on a day, as shown.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct CashDay {
    /// YYYY-MM-DD, the bank's booking day.
    pub day: String,
    pub provider: String,
    pub currency: String,
    /// Payouts announced to arrive that day, and their sum in minor units.
    pub payouts: i64,
    pub announced_minor: i64,
    /// Reconciled days not paid out yet, placed at their day plus the
    /// usual delay, and their net.
    pub settled_days: i64,
    pub settled_minor: i64,
    /// announced + settled.
    pub expected_minor: i64,
    /// What the bank booked from the provider that day.
    pub arrived_minor: i64,
}

/// Expected and arrived cash per day, and the delays they rest on.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ExpectedCash {
    /// Today in the business time zone, and the days covered.
    pub today: String,
    pub from: String,
    pub to: String,
    pub delays: Vec<DelayShown>,
    pub days: Vec<CashDay>,
}

/// The days asked for (`YYYY-MM-DD`, each optional), refused when they
/// do not read, run backwards or span more than [`MAX_SPAN_DAYS`].
pub fn span(today: Date, from: Option<&str>, to: Option<&str>) -> Result<(Date, Date), BankError> {
    let read = |name: &str, v: Option<&str>, default: i64| -> Result<Date, BankError> {
        match v.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(expected::plus_days(today, default)),
            Some(v) => v.parse().map_err(|_| {
                BankError::Refused(format!(
                    "{name} {}: expected a day as YYYY-MM-DD",
                    crate::domain::quote(v)
                ))
            }),
        }
    };
    let from = read("from", from, -DAYS_BACK)?;
    let to = read("to", to, DAYS_AHEAD)?;
    if to < from {
        return Err(BankError::Refused(format!("to {to} is before from {from}")));
    }
    if expected::days_from(from, to) >= MAX_SPAN_DAYS {
        return Err(BankError::Refused(format!(
            "from {from} to {to} spans more than {MAX_SPAN_DAYS} days"
        )));
    }
    Ok((from, to))
}

/// Each reconciled day's net per currency, by its latest completed run.
async fn settled_days(ctx: &Context, from: Date, to: Date) -> Result<Vec<SettledDay>, BankError> {
    let runs =
        recon_runs::completed_between(&ctx.db.pool, &from.to_string(), &to.to_string()).await?;
    // Ordered by day, provider and start: the last of each pair wins.
    let mut latest: BTreeMap<(String, String), &recon_runs::RunRow> = BTreeMap::new();
    for r in &runs {
        latest.insert((r.provider.clone(), r.business_date.clone()), r);
    }
    let mut out = Vec::new();
    for ((provider, date), run) in latest {
        let Ok(day) = date.parse::<Date>() else {
            continue;
        };
        let figures: serde_json::Value = run
            .figures_json
            .as_deref()
            .and_then(|f| serde_json::from_str(f).ok())
            .unwrap_or_default();
        if let Some(currencies) = figures["fees_and_net"]["currencies"].as_object() {
            for (currency, sums) in currencies {
                out.push(SettledDay {
                    key: Key::new(&provider, currency),
                    day,
                    net_minor: sums["net_minor"].as_i64().unwrap_or(0),
                });
            }
        }
    }
    Ok(out)
}

/// The cash expected at the bank and arrived, per day from `from` to `to`
/// (by default a week back and two ahead), per provider account and
/// currency: payouts announced for the day, plus the net of reconciled
/// days no payout has taken yet placed at their day + the usual delay.
pub async fn expected_cash(
    ctx: &Context,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<ExpectedCash, BankError> {
    let today = date_of(ctx, ctx.now());
    let (from, to) = span(today, from, to)?;
    let pool = &ctx.db.pool;
    let reach = since(today).min(from);
    let payouts = store::payouts_for_cash(pool, &reach.to_string()).await?;
    let learned = delays(ctx, &payouts, today);
    let mut latest: BTreeMap<Key, Date> = BTreeMap::new();
    let mut announced = Vec::new();
    for p in &payouts {
        let key = Key::new(&p.provider, &p.currency);
        let o = origin(ctx, p);
        latest
            .entry(key.clone())
            .and_modify(|d| *d = (*d).max(o))
            .or_insert(o);
        if let Ok(arrival) = p.arrival_on.parse::<Date>() {
            announced.push(Announced {
                key,
                arrival,
                amount_minor: p.amount_minor,
            });
        }
    }
    let settled = settled_days(
        ctx,
        expected::plus_days(today, -expected::HISTORY_DAYS),
        today,
    )
    .await?;
    let unpaid = expected::unpaid(&settled, &latest);
    let mut arrived = Vec::new();
    let mut accounts: BTreeMap<String, String> = BTreeMap::new();
    for (day, provider, kind, currency, minor) in
        store::credits_by_day(pool, &from.to_string(), &to.to_string()).await?
    {
        let provider = match provider {
            Some(p) => p,
            // A credit no payout claims is its kind's account's.
            None => match accounts.get(&kind) {
                Some(a) => a.clone(),
                None => {
                    let a = store::account_of_kind(pool, &kind)
                        .await?
                        .unwrap_or_else(|| kind.clone());
                    accounts.insert(kind.clone(), a.clone());
                    a
                }
            },
        };
        let Ok(day) = day.parse::<Date>() else {
            continue;
        };
        arrived.push(Arrived {
            key: Key::new(&provider, &currency),
            day,
            amount_minor: minor,
        });
    }
    let days = expected::expected_cash(&announced, &unpaid, &arrived, &learned, from, to)
        .into_iter()
        .map(|d| CashDay {
            day: d.day,
            provider: d.provider,
            currency: d.currency,
            payouts: d.payouts,
            announced_minor: d.announced_minor,
            settled_days: d.settled_days,
            settled_minor: d.settled_minor,
            expected_minor: d.expected_minor,
            arrived_minor: d.arrived_minor,
        })
        .collect();
    // Every key with history in the window, learned or not yet.
    let mut counts: BTreeMap<Key, i64> = BTreeMap::new();
    for p in history(ctx, &payouts)
        .into_iter()
        .filter(|p| p.credited >= since(today) && p.credited <= today)
    {
        *counts.entry(p.key).or_default() += 1;
    }
    let delays = counts
        .into_iter()
        .map(|(key, n)| {
            let d = learned.get(&key);
            DelayShown {
                samples: d.map_or(n, |d| d.samples as i64),
                learned: d.is_some(),
                median_days: d.map(|d| d.median_days),
                late_after_days: d.map(|d| d.late_after_days),
                max_days: d.map(|d| d.max_days),
                provider: key.provider,
                currency: key.currency,
            }
        })
        .collect();
    Ok(ExpectedCash {
        today: today.to_string(),
        from: from.to_string(),
        to: to.to_string(),
        delays,
        days,
    })
}
