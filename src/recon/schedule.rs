//! The daily schedule of statement pulls. Each provider that pulls
//! statements has its own day cut and ready time ([`statement_zone`]: WeChat
//! Pay and Alipay cut their bills in China time, ready about 10:00 and
//! 09:00 there; the others in the business zone, from 02:00). Every day in
//! the catch-up window (yesterday's the latest once it is ready) without a
//! completed run is pulled, oldest first; a pull that failed is resumed
//! with backoff (a bill not ready yet, sooner). A statement still missing
//! hours after it should be ready raises one `statement_missing` alert for
//! its provider and day. A day's pull is leased (`statement_pulls`), so two
//! instances on one database never pull one day at once.

use super::run::{ReconError, STALE_US};
use crate::config::StatementDay;
use crate::domain::{AlertKind, AlertSeverity};
use crate::engine::Engine;
use crate::store::recon_runs::RunRow;
use crate::store::statement_pulls::{self, Tried};
use crate::store::{alerts, recon_runs};
use jiff::civil::Date;

/// A failed pull is tried again after this long, doubled with each try up
/// to [`RETRY_MAX_US`] (microseconds).
const RETRY_FAILED_US: i64 = 600_000_000;
/// A bill not ready yet is asked for again sooner.
const RETRY_NOT_READY_US: i64 = 300_000_000;
const RETRY_MAX_US: i64 = 3600 * 1_000_000;
/// A day's lease outlives a long pull; one left by a stopped process
/// expires with the run it left RUNNING (which then resumes).
const LEASE_US: i64 = STALE_US;
/// The alert kind of a statement missing past its ready time.
pub const STATEMENT_MISSING: &str = AlertKind::StatementMissing.as_str();
/// The hour a statement is ready from when the account names none.
const DEFAULT_READY_HOUR: i8 = 2;

/// The zone `provider`'s statement days are cut in: the business days of
/// its runs (WeChat Pay's and Alipay's are China days whatever
/// `RECKON_TIMEZONE` says).
pub fn statement_zone(engine: &Engine, provider: &str) -> jiff::tz::TimeZone {
    statement_day(engine, provider).zone
}

pub(super) fn statement_day(engine: &Engine, provider: &str) -> StatementDay {
    engine
        .settings()
        .pulls
        .days
        .get(provider)
        .cloned()
        .unwrap_or_else(|| StatementDay {
            zone: engine.settings().timezone.clone(),
            ready_hour: DEFAULT_READY_HOUR,
        })
}

/// When the statement of `date` is ready: its ready hour on the day
/// after, in its zone (microseconds).
pub fn ready_at(date: Date, day: &StatementDay) -> Option<i64> {
    let next = date.tomorrow().ok()?;
    let at = next
        .at(day.ready_hour, 0, 0, 0)
        .to_zoned(day.zone.clone())
        .ok()?;
    Some(at.timestamp().as_microsecond())
}

/// The days of `provider` the schedule looks at, at `now`: the catch-up
/// window ending with the latest day whose statement is ready, oldest
/// first.
pub fn window(engine: &Engine, provider: &str, now: i64) -> Vec<Date> {
    let day = statement_day(engine, provider);
    let Ok(ts) = jiff::Timestamp::from_microsecond(now) else {
        return Vec::new();
    };
    let Ok(mut latest) = ts.to_zoned(day.zone.clone()).date().yesterday() else {
        return Vec::new();
    };
    if ready_at(latest, &day).is_none_or(|ready| now < ready) {
        let Ok(before) = latest.yesterday() else {
            return Vec::new();
        };
        latest = before;
    }
    let mut days = Vec::new();
    let mut d = latest;
    for _ in 0..engine.settings().pulls.catch_up_days.max(1) {
        days.push(d);
        let Ok(before) = d.yesterday() else { break };
        d = before;
    }
    days.reverse();
    days
}

/// One pass of the schedule at `now`: returns how many pulls it started
/// or resumed.
pub async fn scheduled_pulls(engine: &Engine, now: i64) -> crate::store::Result<usize> {
    // This pass's own name on the leases it takes.
    let owner = format!("schedule ({})", uuid::Uuid::now_v7());
    let mut started = 0;
    for name in engine
        .providers
        .names()
        .map(str::to_owned)
        .collect::<Vec<_>>()
    {
        if engine
            .providers
            .get(&name)
            .is_some_and(|p| p.statements().is_some())
        {
            started += provider_pulls(engine, &name, now, &owner).await?;
        }
    }
    Ok(started)
}

/// The missing days of one provider pulled, oldest first; each still
/// missing past its alert time alerted.
async fn provider_pulls(
    engine: &Engine,
    provider: &str,
    now: i64,
    owner: &str,
) -> crate::store::Result<usize> {
    let days = window(engine, provider, now);
    let (Some(first), Some(last)) = (days.first(), days.last()) else {
        return Ok(0);
    };
    let pool = &engine.db.pool;
    let done =
        statement_pulls::completed_days(pool, provider, &first.to_string(), &last.to_string())
            .await?;
    let mut started = 0;
    for date in days {
        let date_text = date.to_string();
        if done.contains(&date_text) {
            // The balance bill comes after the trade bill, and may be later.
            super::settlement::settle_if_due(engine, provider, &date_text, now).await?;
            continue;
        }
        let tried = pull_day(engine, provider, &date_text, owner, now).await?;
        if tried.completed {
            super::settlement::settle_if_due(engine, provider, &date_text, now).await?;
        }
        if tried.ran {
            started += 1;
        }
        let completed = tried.completed;
        if !completed {
            alert_if_missing(engine, provider, date, now).await?;
        }
    }
    Ok(started)
}

/// What one day's turn in a pass did.
struct DayTurn {
    /// A pull was started or resumed.
    ran: bool,
    /// The day has a completed run.
    completed: bool,
}

/// One day's pull under its lease (none when the day is leased elsewhere
/// or its next try is not due).
async fn pull_day(
    engine: &Engine,
    provider: &str,
    date: &str,
    owner: &str,
    now: i64,
) -> crate::store::Result<DayTurn> {
    let pool = &engine.db.pool;
    let Some((lease, tries)) = Lease::scheduled(engine, provider, date, owner, now).await? else {
        return Ok(DayTurn {
            ran: false,
            completed: false,
        });
    };
    let attempt = match recon_runs::latest_pull(pool, provider, date).await? {
        None => Attempt::Ran(
            super::pull::start_pull(engine, provider, date, "schedule")
                .await
                .map(|r| r.run_id),
        ),
        Some((run_id, status, last))
            if status == "FAILED"
                || (status == "RUNNING" && last.unwrap_or(0) < now - STALE_US) =>
        {
            Attempt::Ran(
                super::pull::resume_leased(engine, &run_id)
                    .await
                    .map(|r| r.run_id),
            )
        }
        Some((_, status, _)) if status == "COMPLETED" => Attempt::Done,
        // Running elsewhere, past its lease (a pull longer than the lease).
        Some(_) => Attempt::Busy,
    };
    let ran = matches!(attempt, Attempt::Ran(_));
    let run_id = recon_runs::latest_pull(pool, provider, date)
        .await?
        .map(|(id, _, _)| id);
    let (error, done, next_at) = match attempt {
        Attempt::Ran(Ok(run_id)) => {
            tracing::info!(provider, date, run_id, "scheduled statement pull completed");
            (None, true, now)
        }
        Attempt::Done => (None, true, now),
        Attempt::Ran(Err(e)) => {
            let error = e.to_string();
            let not_ready = is_not_ready(&error);
            if not_ready {
                tracing::info!(provider, date, %error, "statement not ready; asked again later");
            } else {
                tracing::warn!(provider, date, %error, "scheduled statement pull failed; resumed later");
                alert_pull_failed(engine, provider, date, &error, now).await?;
            }
            (Some(error), false, now + backoff(tries, not_ready))
        }
        Attempt::Busy => (
            Some("a pull of this day is running".to_owned()),
            false,
            now + RETRY_FAILED_US,
        ),
    };
    let tried = Tried {
        run_id: run_id.as_deref(),
        error: error.as_deref(),
        done,
        next_at: Some(next_at),
        now,
    };
    lease.release(engine, &tried).await?;
    Ok(DayTurn {
        ran,
        completed: done,
    })
}

/// A provider's day leased to one holder — a pass of the schedule or a
/// pull by hand — so one day is never pulled twice at once, by one
/// instance or two. Every pull and resume runs under one, taken here.
pub(super) struct Lease {
    provider: String,
    date: String,
    owner: String,
}

impl Lease {
    /// For a pass of the schedule (`owner`): with the tries made before,
    /// or `None` when the day is leased elsewhere, done, or not due.
    async fn scheduled(
        engine: &Engine,
        provider: &str,
        date: &str,
        owner: &str,
        now: i64,
    ) -> crate::store::Result<Option<(Lease, i64)>> {
        let tries = statement_pulls::take(
            &engine.db.pool,
            provider,
            date,
            owner,
            now + LEASE_US,
            now,
            true,
        )
        .await?;
        Ok(tries.map(|tries| (Lease::of(provider, date, owner), tries)))
    }

    /// For a pull or resume by hand (`who` started it): whatever the
    /// schedule's backoff, but refused while another holds the day,
    /// naming the holder and its run.
    pub(super) async fn by_hand(
        engine: &Engine,
        provider: &str,
        date: &str,
        who: &str,
    ) -> Result<Lease, ReconError> {
        let pool = &engine.db.pool;
        let now = engine.now();
        let owner = format!("{who} ({})", uuid::Uuid::now_v7());
        if statement_pulls::take(pool, provider, date, &owner, now + LEASE_US, now, false)
            .await?
            .is_some()
        {
            return Ok(Lease::of(provider, date, &owner));
        }
        // Given back since: the next try finds it free.
        let why = held_by(engine, provider, date, now)
            .await?
            .unwrap_or_else(|| {
                format!(
                    "the {provider} statement of {date} was being pulled a moment ago: try again"
                )
            });
        Err(ReconError::Busy(why))
    }

    fn of(provider: &str, date: &str, owner: &str) -> Lease {
        Lease {
            provider: provider.to_owned(),
            date: date.to_owned(),
            owner: owner.to_owned(),
        }
    }

    /// Given back, saying how the try ended.
    async fn release(self, engine: &Engine, tried: &Tried<'_>) -> crate::store::Result<()> {
        statement_pulls::release(
            &engine.db.pool,
            &self.provider,
            &self.date,
            &self.owner,
            tried,
        )
        .await
    }

    /// A pull by hand's lease given back with its outcome (the schedule's
    /// tries and backoff untouched).
    pub(super) async fn release_by_hand(
        self,
        engine: &Engine,
        outcome: &Result<RunRow, ReconError>,
    ) -> crate::store::Result<()> {
        let latest = recon_runs::latest_pull(&engine.db.pool, &self.provider, &self.date)
            .await?
            .map(|(id, _, _)| id);
        let (run_id, error, done) = match outcome {
            Ok(run) => (Some(run.run_id.clone()), None, run.status == "COMPLETED"),
            Err(e) => (latest, Some(e.to_string()), false),
        };
        let tried = Tried {
            run_id: run_id.as_deref(),
            error: error.as_deref(),
            done,
            next_at: None,
            now: engine.now(),
        };
        self.release(engine, &tried).await
    }
}

/// One provider's pull schedule as the runs page shows it.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub provider: String,
    /// The zone its days are cut in, and the hour there its statement is
    /// ready from.
    pub zone: String,
    pub ready_hour: i8,
    /// The last try: when, its run, and its error if it failed.
    pub last_at: Option<i64>,
    pub last_run_id: Option<String>,
    pub last_error: Option<String>,
    /// When the next pull is due: a missing day's next try, else the
    /// ready time of the day under way.
    pub next_at: Option<i64>,
    /// The days of the catch-up window without a completed run.
    pub missing: Vec<String>,
}

/// Every pulling provider's schedule at `now`.
pub async fn schedules(engine: &Engine, now: i64) -> crate::store::Result<Vec<Schedule>> {
    let pool = &engine.db.pool;
    let mut out = Vec::new();
    for name in engine.providers.names() {
        if engine
            .providers
            .get(name)
            .and_then(|p| p.statements())
            .is_none()
        {
            continue;
        }
        let day = statement_day(engine, name);
        let days = window(engine, name, now);
        let (Some(first), Some(last)) = (days.first(), days.last()) else {
            continue;
        };
        let done =
            statement_pulls::completed_days(pool, name, &first.to_string(), &last.to_string())
                .await?;
        let missing: Vec<String> = days
            .iter()
            .map(Date::to_string)
            .filter(|d| !done.contains(d))
            .collect();
        let tried = statement_pulls::of_provider(pool, name, &first.to_string()).await?;
        let last_try = tried
            .iter()
            .filter(|t| t.last_at.is_some())
            .max_by_key(|t| t.last_at);
        let next_at = if missing.is_empty() {
            last.tomorrow().ok().and_then(|d| ready_at(d, &day))
        } else {
            missing
                .iter()
                .map(|d| {
                    tried
                        .iter()
                        .find(|t| &t.business_date == d)
                        .map_or(now, |t| t.next_at.max(now))
                })
                .min()
        };
        out.push(Schedule {
            provider: name.to_owned(),
            zone: day.zone.iana_name().unwrap_or("UTC").to_owned(),
            ready_hour: day.ready_hour,
            last_at: last_try.and_then(|t| t.last_at),
            last_run_id: last_try.and_then(|t| t.last_run_id.clone()),
            last_error: last_try.and_then(|t| t.last_error.clone()),
            next_at,
            missing,
        });
    }
    Ok(out)
}

/// Who holds the day's lease at `now` and its latest pull, said for an
/// operator refused a pull by hand (`None`: nobody holds it).
pub(super) async fn held_by(
    engine: &Engine,
    provider: &str,
    date: &str,
    now: i64,
) -> crate::store::Result<Option<String>> {
    let pool = &engine.db.pool;
    let Some((owner, until)) = statement_pulls::holder(pool, provider, date, now).await? else {
        return Ok(None);
    };
    // The run it is pulling into, or the one it is about to resume.
    let latest = match recon_runs::latest_pull(pool, provider, date).await? {
        Some((run_id, status, _)) => format!(" (the day's latest pull: run {run_id}, {status})"),
        None => String::new(),
    };
    let until = jiff::Timestamp::from_microsecond(until)
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default();
    Ok(Some(format!(
        "the {provider} statement of {date} is being pulled by {owner}{latest}, leased until \
         {until} at the latest: wait for that pull to end, then pull again or resume its run"
    )))
}

/// What became of a day's try.
enum Attempt {
    /// The run's id, or why it stopped.
    Ran(Result<String, ReconError>),
    /// Completed since the pass looked.
    Done,
    /// A pull of the day is running, past its lease.
    Busy,
}

/// A pull that failed because the provider has no bill for the day yet:
/// the pulls say `not ready: …` (wrapped in what the run adds).
fn is_not_ready(error: &str) -> bool {
    error.contains("not ready:")
}

/// The wait before the try after `tries` failed ones.
fn backoff(tries: i64, not_ready: bool) -> i64 {
    let base = if not_ready {
        RETRY_NOT_READY_US
    } else {
        RETRY_FAILED_US
    };
    base.saturating_mul(1 << tries.clamp(0, 10))
        .min(RETRY_MAX_US)
}

/// One alert per provider and day whose statement is still missing the
/// configured hours after it should have been ready.
async fn alert_if_missing(
    engine: &Engine,
    provider: &str,
    date: Date,
    now: i64,
) -> crate::store::Result<()> {
    let day = statement_day(engine, provider);
    let Some(ready) = ready_at(date, &day) else {
        return Ok(());
    };
    if now < ready + engine.settings().pulls.missing_after_us {
        return Ok(());
    }
    let zone = day.zone.iana_name().unwrap_or("UTC");
    let hours = engine.settings().pulls.missing_after_us / 3_600_000_000;
    let message = format!(
        "the {provider} statement of {date} is still missing {hours} hours after it should have \
         been ready ({:02}:00 {zone} the day after): see the runs page for the last pull's error, \
         then pull it (`reckon recon pull --provider {provider} --date {date}`) or upload the bill",
        day.ready_hour
    );
    alerts::raise_alert(
        &engine.db.pool,
        &alerts::NewAlert {
            dedupe_key: &missing_key(provider, &date.to_string()),
            kind: AlertKind::StatementMissing,
            severity: AlertSeverity::High,
            payment_no: None,
            message: &message,
            trace_id: None,
            now,
        },
    )
    .await?;
    Ok(())
}

/// The alert kind of a scheduled pull that failed (not "not ready yet").
pub const STATEMENT_PULL_FAILED: &str = AlertKind::StatementPullFailed.as_str();

/// One alert per provider and statement day whose scheduled pull failed for
/// a reason other than the bill not being ready yet (the provider refusing,
/// erring or unreachable, a bill that does not read): its retries go on with
/// backoff and never end by themselves, so the first real failure is the
/// moment a person should know.
async fn alert_pull_failed(
    engine: &Engine,
    provider: &str,
    date: &str,
    error: &str,
    now: i64,
) -> crate::store::Result<()> {
    let error: String = error.chars().take(300).collect();
    let message = format!(
        "the scheduled pull of the {provider} statement of {date} failed: {error}. It is tried \
         again with backoff; see the runs page, then pull it (`reckon recon pull --provider \
         {provider} --date {date}`) or upload the bill"
    );
    alerts::raise_alert(
        &engine.db.pool,
        &alerts::NewAlert {
            dedupe_key: &format!("{STATEMENT_PULL_FAILED}:{provider}:{date}"),
            kind: AlertKind::StatementPullFailed,
            severity: AlertSeverity::High,
            payment_no: None,
            message: &message,
            trace_id: None,
            now,
        },
    )
    .await?;
    Ok(())
}

/// The dedupe key of a provider's day's missing-statement alert.
pub fn missing_key(provider: &str, date: &str) -> String {
    format!("{STATEMENT_MISSING}:{provider}:{date}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        assert_eq!(backoff(0, true), RETRY_NOT_READY_US);
        assert_eq!(backoff(1, true), 2 * RETRY_NOT_READY_US);
        assert_eq!(backoff(1, false), 2 * RETRY_FAILED_US);
        assert_eq!(backoff(40, false), RETRY_MAX_US);
    }

    #[test]
    fn a_not_ready_bill_is_told_from_a_failure() {
        assert!(is_not_ready("not ready: NO_STATEMENT_EXIST"));
        assert!(is_not_ready(
            "run RUN1: pull interrupted after 0 rows (0 pages this time): not ready: bill not cut"
        ));
        assert!(!is_not_ready("sandbox answered 500"));
    }

    #[test]
    fn a_china_cut_bill_is_ready_at_ten_china_time() {
        let day = StatementDay {
            zone: jiff::tz::TimeZone::get("Asia/Shanghai").unwrap(),
            ready_hour: 10,
        };
        let ready = ready_at("2026-11-30".parse().unwrap(), &day).unwrap();
        let utc = jiff::Timestamp::from_microsecond(ready)
            .unwrap()
            .to_string();
        assert_eq!(utc, "2026-12-01T02:00:00Z");
    }
}
