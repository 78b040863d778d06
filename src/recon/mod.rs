//! Reconciliation, the third witness: a provider's statement for one
//! business day is read (checked against its own summary) and streamed
//! against the day's local payments held in memory; every statement row
//! and every local payment and refund of that day is put in exactly one
//! class of DESIGN.md's table. A file's run keeps the rows behind its
//! tickets in `recon_rows` (the file itself, known by its hash, holds the
//! rest); a pull keeps every row, page by page, so an interrupted pull
//! resumes from its cursor. Classes other than MATCHED become tickets
//! (`discrepancies`), one per cause, updated — never duplicated or
//! reopened — by a re-run. STATUS_LAG is repaired by itself (a stored
//! verified callback replayed, or a status query, through
//! `engine::apply`); nothing automatic changes an amount or a currency.
//!
//! A reader starts here. The entry points below take the engine as an
//! argument (`recon::import_statement(&engine, …)`) rather than being its
//! methods: the engine knows nothing of reconciliation, and reconciliation
//! moves a payment only through `engine::apply`. An import is checked
//! before a run starts ([`import`]); a run is [`read`] (a file, or a
//! pull's pages) and matched as it arrives ([`matching`]) against what
//! Reckon holds ([`local`]); what did not plainly match is classified
//! ([`classify`], pure, the records near the day's cuts included) and
//! written ([`write`]; the edges' states by [`edge`]). The parts share
//! [`run`]'s types and the run's [`figures`], not this file. The worker
//! repairs what it can ([`repair`]) and pulls each day's statements
//! ([`schedule`]).

mod classify;
mod close;
mod daily;
mod edge;
mod fees;
mod figures;
mod files;
mod groups;
mod import;
mod local;
mod matching;
mod preview;
mod pull;
mod pushed;
mod read;
mod repair;
mod results;
mod run;
mod schedule;
mod settlement;
mod sweep;
mod write;

pub use crate::store::closes::{CloseRow, ReopenRow};
pub use crate::store::recon_runs::RunRow;
pub use close::{
    Verified, auto_close, close_by_supervisor, close_ready_days, day_close, decide_reopen,
    disputes_of_day, propose_reopen, report as close_report, verify as verify_close,
};
pub use daily::{DailyReport, ProviderDay, daily_report};
pub use edge::{cut_window, expire_overdue};
pub use files::{expire_files, keep_downloaded, kept_file};
pub use import::{Import, check_import};
pub use preview::{
    Preview, PreviewAgainst, RulesPreview, preview_rules, preview_run, preview_statement,
};
pub use pull::{pull_statement, resume_held, resume_run};
pub use pushed::fetch_pushed_reports;
pub use read::{Input, StatementHash};
pub use repair::{REPAIRS_PER_PASS, run_repairs};
pub use results::{ResultRow, results, results_of};
pub use run::{ReconError, day_range, new_run_id};
pub use schedule::{Schedule, missing_key, scheduled_pulls, schedules, statement_zone};
pub use settlement::settle_day;

use crate::engine::Engine;
use crate::statement;
use crate::store::recon_runs::{self, NewRun};
use crate::store::{match_groups, tickets};
use classify::{Classified, Named};
use figures::{Figures, IN_TRANSIT_FIGURE, MATCHED};
use import::{Checked, check, earlier_run};
use matching::Matcher;
use run::Run;
use serde_json::json;
use std::collections::BTreeMap;

/// One provider's business day: its latest completed run's figures.
#[derive(Clone, Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ReconDay {
    pub business_date: String,
    pub provider: String,
    pub run_id: String,
    /// Counts of the run (`statement_rows`, `matched`, `pending`,
    /// `repaired`, `classes`, …) with `to_process` and `unknown` (open
    /// discrepancies) added.
    #[schema(value_type = Object)]
    pub figures: serde_json::Value,
}

/// A run by its id.
pub async fn find_run(engine: &Engine, run_id: &str) -> crate::store::Result<Option<RunRow>> {
    // Run ids are visible ASCII (`new_run_id`); anything else names no
    // run, and PostgreSQL would refuse a NUL in it as an error.
    if run_id.is_empty() || run_id.len() > 64 || !run_id.bytes().all(|b| b.is_ascii_graphic()) {
        return Ok(None);
    }
    recon_runs::get(&engine.db.pool, run_id).await
}

/// Reads a statement into a run and reconciles the day. A statement
/// already reconciled for that day (same file hash) is recognised and its
/// run returned unchanged, its `note` saying so; another provider's bill
/// is refused by name before a run starts ([`check_import`]).
///
/// The file is hashed, then read, on a thread of its own, handing its rows
/// over in chunks, while the day's local payments are read; each row is
/// matched as it arrives. Nothing but the run is written until the whole
/// statement was read and its own figures agree; a file already reconciled
/// for the day leaves no run behind.
pub async fn import_statement(engine: &Engine, imp: Import<'_>) -> Result<RunRow, ReconError> {
    let (format, range) = match check(engine, &imp).await? {
        Checked::New(format, range) => (format, range),
        Checked::Earlier(run) => return Ok(*run),
    };
    let pool = &engine.db.pool;
    let run_id = imp.run_id.clone().unwrap_or_else(new_run_id);
    let new = NewRun {
        run_id: &run_id,
        provider: imp.provider,
        business_date: imp.business_date,
        source: imp.source,
        file_name: imp.file_name,
        started_by: imp.started_by,
        now: engine.now(),
        config_version: engine.config_version(),
    };
    start_run(engine, &new, imp.hash.as_deref()).await?;
    tracing::info!(
        run_id,
        provider = imp.provider,
        date = imp.business_date,
        source = imp.source,
        "statement run started"
    );
    // A closed day takes no statement: the run says why (the console shows
    // an upload's run, not its answer).
    if let Err(e) = close::refuse_if_closed(engine, imp.provider, imp.business_date).await {
        fail(engine, &run_id, &e.to_string()).await?;
        return Err(e);
    }
    let into = Started {
        run_id: &run_id,
        provider: imp.provider,
        date: imp.business_date,
        file_name: imp.file_name,
        range,
    };
    let how = read::Reading {
        format,
        input: imp.input,
        tolerance: imp.accept_bad_lines,
        known_hash: imp.hash,
        told: Default::default(),
    };
    let read = read_into(engine, &into, how).await;
    if let Err(ReconError::Store(e)) = &read {
        // A storage error part-way (a lock not had in time) leaves no run
        // RUNNING for an hour: it says why, and the file can be sent again.
        tracing::warn!(run_id, error = %e, "statement run stopped by a storage error");
        let _ = recon_runs::fail_if_running(
            pool,
            &run_id,
            &format!("storage error: {e}"),
            engine.now(),
        )
        .await;
    }
    read
}

/// Starts a run and records who brought which statement in — an upload,
/// an import from the command line or a pull — in one transaction.
pub(crate) async fn start_run(
    engine: &Engine,
    new: &NewRun<'_>,
    hash: Option<&str>,
) -> Result<(), ReconError> {
    let action = match new.source {
        "pull" => "statement.pull",
        "import" => "statement.import",
        _ => "statement.upload",
    };
    let entry = crate::store::audit::Entry {
        actor: new.started_by.to_owned(),
        action,
        object_type: "recon_run",
        object_id: new.run_id.to_owned(),
        before: None,
        after: Some(json!({
            "provider": new.provider,
            "business_date": new.business_date,
            "file_name": new.file_name,
            "statement_hash": hash,
        })),
    };
    let mut tx = engine.db.begin_write().await?;
    recon_runs::start(&mut *tx, new).await?;
    crate::store::audit::append(&mut tx, &engine.db.audit, &entry, new.now).await?;
    tx.commit().await?;
    Ok(())
}

/// The started run a statement file is read into.
struct Started<'a> {
    run_id: &'a str,
    provider: &'a str,
    date: &'a str,
    file_name: Option<&'a str>,
    range: (i64, i64),
}

/// Reads a statement file into a started run and reconciles the day, or
/// FAILS the run saying why. An upload and a pulled bill alike come this
/// way: the same reader, summary checks and same-file-same-day rule.
async fn read_into(
    engine: &Engine,
    into: &Started<'_>,
    mut how: read::Reading,
) -> Result<RunRow, ReconError> {
    let pool = &engine.db.pool;
    let run_id = into.run_id;
    // The original file is kept once the run is known to be new: compressed
    // while the findings are written (the read has the cores to itself) and
    // stored after the write, past the run's peak of memory.
    let (input, original) = how.input.share();
    how.input = input;
    let told = how.told.clone();
    let (read, matcher) =
        match read::read_and_match(engine, run_id, into.provider, into.range, how).await {
            Ok(read) => read,
            Err(e) => {
                // A bill refused part-way still says which it was.
                if let Some(bill_type) = told.get() {
                    recon_runs::set_bill_type(pool, run_id, bill_type).await?;
                }
                fail(engine, run_id, &e.to_string()).await?;
                return Err(e);
            }
        };
    // The same file, already reconciled for that day: that run, and
    // nothing of this one.
    if let Some(run) = earlier_run(engine, into.provider, into.date, &read.hash).await? {
        recon_runs::discard(pool, run_id).await?;
        return Ok(run);
    }
    recon_runs::read_through(
        pool,
        run_id,
        read.rows,
        &read.hash,
        told.get().map(String::as_str),
        engine.now(),
    )
    .await?;
    let kept = files::compress(original);
    let run = Run {
        run_id,
        provider: into.provider,
        date: into.date,
        file: into.file_name,
        range: into.range,
    };
    let finished = finish_run(
        engine,
        &run,
        &read.checks,
        &read.skipped,
        read.skipped_more,
        Some(matcher),
    )
    .await;
    files::keep(engine, run_id, into.file_name, kept).await;
    finished
}

/// Per business day and provider: the latest completed run's figures,
/// with the tickets still open now.
pub async fn recon_days(
    engine: &Engine,
    from: &str,
    to: &str,
) -> crate::store::Result<Vec<ReconDay>> {
    let pool = &engine.db.pool;
    let mut latest: BTreeMap<(String, String), RunRow> = BTreeMap::new();
    for r in recon_runs::completed_between(pool, from, to).await? {
        latest.insert((r.business_date.clone(), r.provider.clone()), r);
    }
    let mut days = Vec::new();
    for ((date, provider), run) in latest {
        let open = tickets::count_open_of_day(pool, &provider, &date).await?;
        let mut figures: serde_json::Value = run
            .figures_json
            .as_deref()
            .and_then(|f| serde_json::from_str(f).ok())
            .unwrap_or_default();
        let to_process = figures["statement_rows"].as_i64().unwrap_or(0)
            + figures["local_without_row"].as_i64().unwrap_or(0);
        figures["to_process"] = to_process.into();
        figures["unknown"] = open.into();
        // In transit as of now: a neighbouring statement may have decided
        // since the run (each one decided is no longer pending).
        let stored = figures["in_transit"].as_i64().unwrap_or(0);
        let now_in_transit =
            crate::store::recon_edges::count_in_transit(pool, &provider, &date).await?;
        if stored != now_in_transit {
            figures["pending"] = (figures["pending"].as_i64().unwrap_or(0) - stored
                + now_in_transit)
                .max(0)
                .into();
            figures["in_transit"] = now_in_transit.into();
            // Those a neighbouring statement carried since are matched
            // there (those it did not are tickets of the day: unknown).
            let arrived = crate::store::recon_edges::count_arrived(pool, &provider, &date).await?
                - figures["edge_matched"].as_i64().unwrap_or(0);
            if arrived > 0 {
                figures["matched"] = (figures["matched"].as_i64().unwrap_or(0) + arrived).into();
                if let Some(classes) = figures["classes"].as_object_mut() {
                    let before = classes.get(MATCHED).and_then(|v| v.as_i64()).unwrap_or(0);
                    classes.insert(MATCHED.into(), (before + arrived).into());
                }
            }
            if let Some(classes) = figures["classes"].as_object_mut() {
                if now_in_transit > 0 {
                    classes.insert(IN_TRANSIT_FIGURE.into(), now_in_transit.into());
                } else {
                    classes.remove(IN_TRANSIT_FIGURE);
                }
            }
        }
        days.push(ReconDay {
            business_date: date,
            provider,
            run_id: run.run_id,
            figures,
        });
    }
    Ok(days)
}

/// The run FAILED, saying why.
async fn fail(engine: &Engine, run_id: &str, error: &str) -> crate::store::Result<()> {
    recon_runs::fail(&engine.db.pool, run_id, error, engine.now()).await
}

/// The statement is all read: its own figures must agree, then the day is
/// reconciled and the run completed. `matched` is the statement already
/// streamed against the day (a file); without it (a pull) the rows staged
/// page by page are.
async fn finish_run(
    engine: &Engine,
    run: &Run<'_>,
    checks: &[statement::Check],
    skipped: &[statement::ParseError],
    skipped_more: u64,
    matched: Option<Matcher>,
) -> Result<RunRow, ReconError> {
    let (pool, run_id) = (&engine.db.pool, run.run_id);
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
    let skipped: Vec<serde_json::Value> = skipped
        .iter()
        .map(|e| json!({ "line": e.line, "reason": e.reason }))
        .collect();
    let mut summary = json!({ "checks": checks, "skipped": skipped });
    if skipped_more > 0 {
        summary["skipped_more"] = skipped_more.into();
    }
    recon_runs::set_summary(pool, run_id, &summary.to_string()).await?;
    if !off.is_empty() {
        let error = format!("incomplete statement — {}", off.join("; "));
        fail(engine, run_id, &error).await?;
        return Err(ReconError::Refused(error));
    }
    recon_runs::matching(pool, run_id, engine.now()).await?;
    let keep_rows = matched.is_some();
    let figures = match matched {
        Some(m) => Ok(m),
        None => read::match_staged(engine, run).await,
    };
    let figures = match figures {
        Ok(m) => reconcile(engine, run, m, keep_rows).await,
        Err(e) => Err(e),
    };
    let figures = match figures {
        Ok(figures) => figures,
        Err(e) => {
            // Not left RUNNING: the run says why it stopped (a storage
            // error may keep it from saying so; then it goes stale).
            let _ = fail(engine, run_id, &e.to_string()).await;
            return Err(e);
        }
    };
    // Each phase's time, so a run that took long says where.
    tracing::info!(run_id, provider = run.provider, date = run.date, millis = ?figures.millis, "statement run completed");
    let figures = serde_json::to_string(&figures).unwrap_or_default();
    recon_runs::complete(pool, run_id, &figures, engine.now()).await?;
    // A day the run leaves without tickets that matter closes now (the
    // periodic pass closes it once its repairs are done otherwise).
    if let Err(e) = close::auto_close(engine, run.provider, run.date).await {
        tracing::warn!(run_id, error = %e, "the day could not be closed after its run");
    }
    Ok(find_run(engine, run_id)
        .await?
        .expect("the run was just written"))
}

/// Classifies every row and every local payment and refund of the day,
/// writes the tickets (and, for a file, the rows behind them), queues the
/// STATUS_LAG repairs for the worker, returns the figures.
async fn reconcile(
    engine: &Engine,
    run: &Run<'_>,
    matched: Matcher,
    keep_rows: bool,
) -> Result<Figures, ReconError> {
    let rules = classify::Applied::of(&engine.settings().matching, run.provider);
    reconcile_under(engine, run, matched, keep_rows, &rules, false).await
}

/// [`reconcile`] under `rules`; `dry`, nothing is written: the figures
/// and the tickets found are all it leaves.
async fn reconcile_under(
    engine: &Engine,
    run: &Run<'_>,
    matched: Matcher,
    keep_rows: bool,
    rules: &classify::Applied,
    dry: bool,
) -> Result<Figures, ReconError> {
    let (run_id, provider) = (run.run_id, run.provider);
    let phase = std::time::Instant::now();
    let Matcher {
        day,
        exceptions,
        refunds,
        payment_rows,
        started,
        early,
        fees,
        ..
    } = matched;
    let mut figures = Figures::default();
    let millis = |since: std::time::Instant| since.elapsed().as_millis() as u64;
    if let Some(started) = started {
        figures.millis.insert("read_and_match", millis(started));
    }

    // 1. What the database says about the payments the exceptions name,
    // and about the day's records near its cuts.
    let named = Named::of(&exceptions);
    let (by_txn, by_no) =
        local::named_payments(engine, provider, &named, &exceptions, early).await?;
    let by_ref = match rules.by_reference {
        true => local::by_reference(engine, provider, &exceptions).await?,
        false => Default::default(),
    };
    let (mut edges, mut day) = edge::load(engine, run, day).await?;
    // Classifying reads the day's payments by their place: their index by
    // transaction id (12 bytes a payment) goes before the run's peak.
    day.drop_index();
    crate::release_freed_memory();

    // 2. The payment rows that did not plainly match, and every payment of
    // the day, each in exactly one class.
    let (txns, nos) = match_groups::approved_of_day(&engine.db.pool, provider, run.date).await?;
    let approved = classify::Approved {
        txns: txns.into_iter().collect(),
        nos: nos.into_iter().collect(),
    };
    let Classified {
        mut found,
        lagging,
        unlisted,
    } = classify::payments_under(
        &day,
        &exceptions,
        &named,
        (&by_txn, &by_no, &by_ref),
        &mut edges,
        &mut figures,
        rules,
        &approved,
    );
    debug_assert_eq!(
        figures.statement_rows, payment_rows,
        "every payment row in exactly one class"
    );
    // 2b. The amount key, when on: rows no identifier found against the
    // day's unlisted payments of their amount.
    let (amount_groups, by_amount, unlisted) = match rules.by_amount {
        true => {
            pair_by_amount(
                engine,
                run,
                &day,
                (&exceptions, unlisted),
                &mut found,
                &mut figures,
                rules,
            )
            .await?
        }
        false => (Vec::new(), Default::default(), unlisted),
    };
    // The grouped search's candidates, named while the day is at hand, and
    // only when a row may be several of them (a row the amount key had
    // candidates for is its, not the grouped search's).
    let mut anchors = classify::groups::anchors(&found, &exceptions);
    if !by_amount.is_empty() {
        anchors.retain(|a| !by_amount.contains(&a.line_no));
    }
    let unlisted: Vec<String> = match anchors.is_empty() {
        true => Vec::new(),
        false => unlisted.iter().map(|&i| day.no_of(i).to_owned()).collect(),
    };
    // The day's payments are not handed back to the system: since
    // SQLite allocates through mimalloc too, the write's page cache
    // reuses them.
    drop(day);
    tracing::debug!(run_id, millis = millis(phase), "payments classified");

    // 3. The refund rows against the refund ledger, both ways.
    let (ledger, day_refunds) = local::refund_ledger(engine, provider, run.range, &refunds).await?;
    let disputes = local::known_disputes(engine, provider, &refunds).await?;
    classify::refunds(
        &refunds,
        &ledger,
        &disputes,
        day_refunds,
        &mut edges,
        &mut figures,
        &mut found,
    );
    // The neighbours' records near the cut this statement carries.
    let carried = classify::edge::carried(&edges, &exceptions, &by_txn, &by_no, &refunds, &ledger);
    drop(ledger);
    let (fee_figures, fee_found) = fees.finish();
    figures.fees_and_net = fee_figures;
    found.extend(fee_found);

    for f in &found {
        *figures
            .tickets
            .entry(f.class.as_str())
            .or_default()
            .entry(f.severity.as_str())
            .or_default() += 1;
    }
    if dry {
        figures.millis.insert("classify", millis(phase));
        return Ok(figures);
    }
    // 3b. Rows that are several of the day's unlisted payments together.
    let mut row_groups = row_groups(engine, run, anchors, unlisted, rules).await?;
    row_groups.extend(amount_groups);
    // 4. The tickets' orders, and the order they are written in.
    let findings = write::Findings::of(found, &by_no);
    drop((by_no, by_txn));
    figures.millis.insert("classify", millis(phase));

    // 5. What the run found, written; for a file, with the rows behind
    // it (a pull staged all of its rows).
    let phase = std::time::Instant::now();
    let rows = keep_rows.then(|| {
        exceptions
            .iter()
            .map(|(r, _)| r)
            .chain(refunds.iter())
            .collect()
    });
    write::write(engine, run, findings, rows, &lagging).await?;
    // Then the day's edges, which may close or open tickets of the
    // neighbouring days.
    let settled = edge::settle(engine, run, &edges, &carried).await?;
    groups::record(engine, run, &row_groups, rules.window_us).await?;
    figures.edge_arrived = settled.arrived;
    figures.edge_missing = settled.missing;
    if !lagging.is_empty() {
        engine.wake.notify_one();
    }
    figures.millis.insert("write", millis(phase));
    tracing::debug!(run_id, millis = millis(phase), "tickets written");
    figures.pending += lagging.len() as i64;
    figures.unknown = tickets::count_open_of_day_apart(&engine.db, provider, run.date).await?;
    Ok(figures)
}

/// The amount key of a run ([`classify::amounts`]): the SUCCEEDED
/// PROVIDER_ONLY rows against the day's `unlisted` payments of their
/// currency and amount, whose creation times and bindings are read from
/// the database (only theirs: the day's payments are held without). The
/// findings are settled into `found` and `figures`; returned are the
/// pairs to propose, the lines of the rows the key had candidates for, and
/// the unlisted payments it left.
#[allow(clippy::type_complexity)]
async fn pair_by_amount(
    engine: &Engine,
    run: &Run<'_>,
    day: &matching::DayPayments,
    (exceptions, unlisted): (&[(statement::StatementRow, Option<u32>)], Vec<u32>),
    found: &mut Vec<run::Found>,
    figures: &mut Figures,
    rules: &classify::Applied,
) -> Result<
    (
        Vec<classify::groups::RowGroup>,
        hashbrown::HashSet<i64>,
        Vec<u32>,
    ),
    ReconError,
> {
    let anchors: Vec<classify::groups::RowAnchor> = classify::groups::anchors(found, exceptions)
        .into_iter()
        .filter(|a| a.class == crate::domain::Class::ProviderOnly)
        .collect();
    if anchors.is_empty() || unlisted.is_empty() {
        return Ok((Vec::new(), Default::default(), unlisted));
    }
    let amounts: hashbrown::HashSet<(&str, i64)> = anchors
        .iter()
        .map(|a| (a.currency.as_str(), a.amount))
        .collect();
    let of_amount: Vec<u32> = unlisted
        .iter()
        .copied()
        .filter(|&i| {
            let (amount, currency) = day.money_of(i);
            amounts.contains(&(currency, amount))
        })
        .collect();
    let nos: Vec<&str> = of_amount.iter().map(|&i| day.no_of(i)).collect();
    let stored = local::payments_by(
        engine,
        crate::store::recon_reads::PaymentKey::PaymentNo,
        run.provider,
        &nos,
    )
    .await?;
    // As the day was classified (its status), with when each was made and
    // the transaction it is bound to now.
    let candidates: Vec<matching::Pay> = of_amount
        .iter()
        .filter_map(|&i| {
            let now = stored.get(day.no_of(i))?;
            Some(matching::Pay {
                created: now.created,
                txn: now.txn.clone(),
                order: now.order.clone(),
                ..day.pay(i)
            })
        })
        .collect();
    let pairs = classify::amounts::pair(&anchors, &candidates, rules.window_us);
    let lines: hashbrown::HashSet<i64> = pairs.iter().map(|(r, _)| r.line_no).collect();
    let taken: hashbrown::HashSet<String> = pairs
        .iter()
        .filter_map(|(_, b)| match b {
            classify::amounts::ByAmount::Paired(p) => Some(p.no.clone()),
            _ => None,
        })
        .collect();
    let groups = classify::amounts::settle(pairs, rules.window_us, found, figures);
    let unlisted = unlisted
        .into_iter()
        .filter(|&i| !taken.contains(day.no_of(i)))
        .collect();
    Ok((groups, lines, unlisted))
}

/// The grouped search of a run: the day's `unlisted` payments (but those
/// in a group already waiting for approval) as the database has them,
/// against the `anchors`, the rows Reckon has no payment for. Looked up
/// only when there is such a row.
async fn row_groups(
    engine: &Engine,
    run: &Run<'_>,
    anchors: Vec<classify::groups::RowAnchor>,
    unlisted: Vec<String>,
    rules: &classify::Applied,
) -> Result<Vec<classify::groups::RowGroup>, ReconError> {
    if anchors.is_empty() || unlisted.len() < 2 {
        return Ok(Vec::new());
    }
    let waiting: hashbrown::HashSet<String> = match_groups::waiting_keys(&engine.db.pool)
        .await?
        .into_iter()
        .collect();
    let nos: Vec<&str> = unlisted
        .iter()
        .filter(|no| !waiting.contains(&groups::payment_key(run, no)))
        .map(String::as_str)
        .collect();
    let by_no = local::payments_by(
        engine,
        crate::store::recon_reads::PaymentKey::PaymentNo,
        run.provider,
        &nos,
    )
    .await?;
    let mut candidates: Vec<matching::Pay> = by_no.into_values().collect();
    candidates.sort_by(|a, b| a.no.cmp(&b.no));
    Ok(classify::groups::payments_to_rows(
        &anchors,
        &candidates,
        rules,
    ))
}
