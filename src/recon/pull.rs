//! Pulling a day's statement through the provider's API: page by page
//! with the cursor kept, or one bill file read as an upload is; resuming a
//! pull that failed; a provider's "no bill for that day". Every pull and
//! resume holds the provider-day's lease ([`super::schedule`]).

use super::read::{self, Input};
use super::run::{ReconError, Run, STALE_US, day_range, new_run_id};
use super::schedule::{self, statement_zone};
use super::{Started, fail, find_run, finish_run, read_into};
use crate::engine::Engine;
use crate::providers::{CallError, Statements};
use crate::statement;
use crate::store::recon_runs::{self, NewRun, RunRow, StagedRow};

/// Pulls the day's statement through the provider's API. Page by page:
/// each page's rows and the cursor after it are written in one
/// transaction, so an interruption loses nothing and repeats nothing: the
/// run FAILS with the cursor kept, and [`resume_run`] goes on from there.
/// A provider that hands out one bill file ([`Statements::Files`]):
/// the file is fetched and read like an upload into the pull's run; a
/// failed fetch FAILS the run with nothing read (`not ready: …` when the
/// provider has no bill yet) and [`resume_run`] fetches it again.
///
/// The pull holds the day's lease, as a scheduled one does: while another
/// pull of the day holds it, none is started ([`ReconError::Busy`]).
pub async fn pull_statement(
    engine: &Engine,
    provider: &str,
    date: &str,
    started_by: &str,
) -> Result<RunRow, ReconError> {
    pullable(engine, provider, date)?;
    let lease = schedule::Lease::by_hand(engine, provider, date, started_by).await?;
    let outcome = start_pull(engine, provider, date, started_by).await;
    lease.release_by_hand(engine, &outcome).await?;
    if outcome.is_ok() {
        super::settlement::after_pull(engine, provider, date).await;
    }
    outcome
}

/// The provider, if it pulls statements and `date` is a day.
fn pullable(
    engine: &Engine,
    provider: &str,
    date: &str,
) -> Result<std::sync::Arc<dyn crate::providers::Provider>, ReconError> {
    let p = engine
        .providers
        .get(provider)
        .cloned()
        .ok_or_else(|| ReconError::Invalid(format!("provider {provider} is not configured")))?;
    if p.statements().is_none() {
        return Err(ReconError::Invalid(format!(
            "provider {provider} has no statement API; upload or import its file"
        )));
    }
    day_range(date, &statement_zone(engine, provider)).map_err(ReconError::Invalid)?;
    Ok(p)
}

/// [`pull_statement`] under a lease its caller holds.
pub(super) async fn start_pull(
    engine: &Engine,
    provider: &str,
    date: &str,
    started_by: &str,
) -> Result<RunRow, ReconError> {
    let p = pullable(engine, provider, date)?;
    super::sweep::sweep_day(engine, provider, date).await;
    let run_id = new_run_id();
    let new = NewRun {
        run_id: &run_id,
        provider,
        business_date: date,
        source: "pull",
        file_name: None,
        started_by,
        now: engine.now(),
        config_version: engine.config_version(),
    };
    super::start_run(engine, &new, None).await?;
    if let Err(e) = super::close::refuse_if_closed(engine, provider, date).await {
        super::fail(engine, &run_id, &e.to_string()).await?;
        return Err(e);
    }
    let Some(Statements::Pages(pages)) = p.statements() else {
        return pull_file(engine, &run_id).await;
    };
    recon_runs::set_bill_type(&engine.db.pool, &run_id, pages.bill_type()).await?;
    continue_pull(engine, &run_id).await
}

/// Pulls the rest of a pull's statement page by page, from its saved
/// cursor: each page's rows and the cursor after it in one transaction,
/// so an interruption loses nothing and repeats nothing — the run FAILS
/// with the cursor kept, and a resume goes on from there. Once the last
/// page is in, its summary must agree with the rows staged, and the run
/// is finished.
async fn continue_pull(engine: &Engine, run_id: &str) -> Result<RunRow, ReconError> {
    let pool = &engine.db.pool;
    let (provider, date, mut cursor, mut rows_read) = recon_runs::pull_state(pool, run_id).await?;
    let Some(p) = engine.providers.get(&provider).cloned() else {
        return Err(ReconError::Invalid(format!(
            "provider {provider} is not configured"
        )));
    };
    let mut pages = 0;
    let summary = loop {
        let page = match p.statements() {
            Some(Statements::Pages(pages)) => pages.statement_page(&date, cursor.as_deref()).await,
            _ => Err(CallError::Refused(format!(
                "{} has no statement API Reckon pulls from; upload or import the file",
                p.name()
            ))),
        };
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                let error = format!(
                    "run {run_id}: pull interrupted after {rows_read} rows ({pages} pages this time): {e}; resume continues from the saved cursor"
                );
                fail(engine, run_id, &error).await?;
                return Err(ReconError::Refused(error));
            }
        };
        pages += 1;
        // The bank side's hook: the payouts the page reported (recorded
        // again harmlessly when a resumed pull reads the page twice).
        crate::bank::payouts_seen(engine, &provider, Some(run_id), &page.payouts).await?;
        let mut rows = page.rows;
        for (i, r) in rows.iter_mut().enumerate() {
            r.line_no = rows_read + i as i64 + 1;
        }
        rows_read += rows.len() as i64;
        let staged: Vec<StagedRow> = rows.iter().map(read::staged).collect();
        recon_runs::stage_page(
            &engine.db,
            run_id,
            &staged,
            page.next_cursor.as_deref(),
            rows_read,
            engine.now(),
        )
        .await?;
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break page.summary.unwrap_or_default(),
        }
    };
    let (count, total) = recon_runs::staged_totals(pool, run_id).await?;
    // The pages' totals are of amounts: in the rows' currency, if one.
    let currency = match recon_runs::staged_currencies(pool, run_id)
        .await?
        .as_slice()
    {
        [one] => crate::domain::Currency::parse(one).ok(),
        _ => None,
    };
    let checks: Vec<statement::Check> = summary
        .into_iter()
        .map(|(what, stated)| {
            if what == "rows" {
                statement::Check::new(&what, stated, count)
            } else {
                statement::Check::money(&what, stated, total, currency)
            }
        })
        .collect();
    if checks.is_empty() {
        let error = "the statement's last page carries no summary".to_string();
        fail(engine, run_id, &error).await?;
        return Err(ReconError::Refused(error));
    }
    // (The day was checked when the pull started.)
    let range = match day_range(&date, &statement_zone(engine, &provider)) {
        Ok(range) => range,
        Err(e) => {
            fail(engine, run_id, &e).await?;
            return Err(ReconError::Invalid(e));
        }
    };
    let run = Run {
        run_id,
        provider: &provider,
        date: &date,
        file: None,
        range,
    };
    finish_run(engine, &run, &checks, &[], 0, None).await
}

/// Fetches a pull's bill file and reads it into the run, as an upload is
/// read; a fetch that fails FAILS the run with nothing read.
async fn pull_file(engine: &Engine, run_id: &str) -> Result<RunRow, ReconError> {
    let pool = &engine.db.pool;
    let (provider, date, _, _) = recon_runs::pull_state(pool, run_id).await?;
    let p = engine.providers.get(&provider).cloned();
    let format = p.as_ref().and_then(|p| p.statement_format());
    let (Some(p), Some(format)) = (p, format) else {
        let error =
            format!("provider {provider} is not configured with a bill format Reckon reads");
        fail(engine, run_id, &error).await?;
        return Err(ReconError::Invalid(error));
    };
    // (The day was checked when the pull started.)
    let range = match day_range(&date, &statement_zone(engine, &provider)) {
        Ok(range) => range,
        Err(e) => {
            fail(engine, run_id, &e).await?;
            return Err(ReconError::Invalid(e));
        }
    };
    let file = match p.statements() {
        Some(Statements::Files(files)) => files.statement_file(&date).await,
        _ => Err(CallError::Refused(format!(
            "{} has no bill API Reckon pulls from; upload or import the file",
            p.name()
        ))),
    };
    let file = match file {
        Ok(file) => file,
        Err(CallError::NoStatement(why)) => {
            return no_statement(engine, run_id, &provider, &date, range, &why).await;
        }
        Err(e) => {
            // "not ready: …" first, so whoever schedules pulls can tell a
            // bill not yet made from a fault, and ask again later.
            let error = match e {
                CallError::NotReady(_) => format!("{e}; the pull asks again later (or resume)"),
                e => format!(
                    "the bill could not be fetched: {e}; nothing was read, resume fetches it again"
                ),
            };
            fail(engine, run_id, &error).await?;
            return Err(ReconError::Refused(format!("run {run_id}: {error}")));
        }
    };
    recon_runs::name_file(pool, run_id, &file.name).await?;
    let into = Started {
        run_id,
        provider: &provider,
        date: &date,
        file_name: Some(&file.name),
        range,
    };
    let how = read::Reading {
        format,
        // Read from its temporary file, which goes when the run is done.
        input: Input::File(file.body.path().to_owned()),
        tolerance: 0,
        known_hash: None,
        told: Default::default(),
    };
    let read = read_into(engine, &into, how).await;
    drop(file);
    read
}

/// The provider says it made no bill for the day because nothing happened
/// (and said so signed). Believed only once the bill is overdue — its ready
/// time plus the hours after which a missing one is alerted — and when
/// Reckon has no payment or refund of its own that day either: the run
/// COMPLETES as an empty statement. Otherwise the bill may be late, or the
/// two disagree: the run fails as not ready, is asked again, and the
/// missing statement is alerted if it stays so.
async fn no_statement(
    engine: &Engine,
    run_id: &str,
    provider: &str,
    date: &str,
    range: (i64, i64),
    why: &str,
) -> Result<RunRow, ReconError> {
    let pool = &engine.db.pool;
    let wait = |error: String| async move {
        let error = format!("not ready: {why}, {error}; the pull asks again later (or resume)");
        fail(engine, run_id, &error).await?;
        Err(ReconError::Refused(format!("run {run_id}: {error}")))
    };
    let overdue = date
        .parse::<jiff::civil::Date>()
        .ok()
        .and_then(|d| schedule::ready_at(d, &schedule::statement_day(engine, provider)))
        .map(|ready| ready + engine.settings().pulls.missing_after_us);
    match overdue {
        Some(at) if engine.now() >= at => {}
        _ => return wait("before the bill is overdue".into()).await,
    }
    let local = crate::store::recon_reads::count_business_of_day(pool, provider, range).await?;
    if local > 0 {
        return wait(format!(
            "but Reckon has {local} payments or refunds that day"
        ))
        .await;
    }
    let empty = read::StatementHash::default().finish();
    recon_runs::read_through(
        pool,
        run_id,
        0,
        &empty,
        Some("none (no bill: no trade that day)"),
        engine.now(),
    )
    .await?;
    let run = Run {
        run_id,
        provider,
        date,
        file: None,
        range,
    };
    finish_run(engine, &run, &[], &[], 0, None).await
}

/// Goes on with a pull that failed, from its saved cursor (a bill file:
/// fetched again), holding its day's lease as [`pull_statement`] does.
pub async fn resume_run(engine: &Engine, run_id: &str) -> Result<RunRow, ReconError> {
    let run = resumable(engine, run_id).await?;
    let who = format!("a resume of {run_id}");
    let lease = schedule::Lease::by_hand(engine, &run.provider, &run.business_date, &who).await?;
    let outcome = resume_leased(engine, run_id).await;
    lease.release_by_hand(engine, &outcome).await?;
    if outcome.is_ok() {
        super::settlement::after_pull(engine, &run.provider, &run.business_date).await;
    }
    outcome
}

/// Why [`resume_run`] would be refused now for another pull holding the
/// run's day, if it would: the console says so before it resumes in the
/// background.
pub async fn resume_held(engine: &Engine, run_id: &str) -> crate::store::Result<Option<String>> {
    let Some(run) = find_run(engine, run_id).await? else {
        return Ok(None);
    };
    schedule::held_by(engine, &run.provider, &run.business_date, engine.now()).await
}

/// The run `run_id`, if it is a pull that may resume.
async fn resumable(engine: &Engine, run_id: &str) -> Result<RunRow, ReconError> {
    let run = find_run(engine, run_id)
        .await?
        .ok_or_else(|| ReconError::Invalid(format!("no run {run_id}")))?;
    if run.source != "pull" || !matches!(run.status.as_str(), "FAILED" | "RUNNING") {
        return Err(ReconError::Invalid(format!(
            "run {run_id} is a {} run, {}: only a failed pull resumes",
            run.source, run.status
        )));
    }
    Ok(run)
}

/// [`resume_run`] under a lease its caller holds.
pub(super) async fn resume_leased(engine: &Engine, run_id: &str) -> Result<RunRow, ReconError> {
    let run = resumable(engine, run_id).await?;
    // A day closed since the pull failed takes no statement until reopened.
    super::close::refuse_if_closed(engine, &run.provider, &run.business_date).await?;
    // FAILED, or RUNNING without progress for an hour (its process
    // stopped mid-pull).
    let now = engine.now();
    if !recon_runs::resume(&engine.db.pool, run_id, now, now - STALE_US).await? {
        return Err(ReconError::Invalid(format!(
            "run {run_id} is running (it made progress within the hour)"
        )));
    }
    let files = engine
        .providers
        .get(&run.provider)
        .is_some_and(|p| matches!(p.statements(), Some(Statements::Files(_))));
    if files {
        return pull_file(engine, run_id).await;
    }
    continue_pull(engine, run_id).await
}
