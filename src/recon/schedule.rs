//! The daily schedule of statement pulls: once a business day is over
//! (plus two hours, for the provider's statement to be ready), yesterday's
//! statement is pulled from every provider with a statement API; a failed
//! pull is resumed every ten minutes, one left RUNNING by a stopped
//! process after an hour.

use super::STALE_US;
use crate::engine::Engine;
use crate::store::recon_runs;

/// A failed pull is tried again after this long (microseconds).
const RETRY_FAILED_US: i64 = 600_000_000;

/// One pass of the schedule at `now`: returns how many runs it started or
/// resumed.
pub async fn scheduled_pulls(engine: &Engine, now: i64) -> sqlx::Result<usize> {
    let tz = &engine.settings.timezone;
    let Ok(ts) = jiff::Timestamp::from_microsecond(now) else {
        return Ok(0);
    };
    let local = ts.to_zoned(tz.clone());
    if local.hour() < 2 {
        return Ok(0);
    }
    let Ok(yesterday) = local.date().yesterday() else {
        return Ok(0);
    };
    let date = yesterday.to_string();
    let mut started = 0;
    for name in engine
        .providers
        .names()
        .map(str::to_owned)
        .collect::<Vec<_>>()
    {
        let Some(p) = engine.providers.get(&name) else {
            continue;
        };
        if !p.pulls_statements() {
            continue;
        }
        let latest = recon_runs::latest_pull(&engine.db.pool, &name, &date).await?;
        let result = match latest {
            None => Some(super::pull_statement(engine, &name, &date, "schedule").await),
            Some((run_id, status, last))
                if (status == "FAILED" && last.unwrap_or(0) < now - RETRY_FAILED_US)
                    || (status == "RUNNING" && last.unwrap_or(0) < now - STALE_US) =>
            {
                Some(super::resume_run(engine, &run_id).await)
            }
            _ => None,
        };
        match result {
            None => {}
            Some(Ok(run)) => {
                started += 1;
                tracing::info!(provider = %name, %date, run_id = %run.run_id, "scheduled statement pull completed");
            }
            Some(Err(e)) => {
                started += 1;
                tracing::warn!(provider = %name, %date, error = %e, "scheduled statement pull failed; resumed later");
            }
        }
    }
    Ok(started)
}
