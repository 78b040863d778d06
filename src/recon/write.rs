//! Writing what a run found, through the store: its tickets (one per
//! cause; a re-run updates an open one and leaves a closed one closed),
//! the holds and critical alerts some of them bring, a file's rows behind
//! them, and the STATUS_LAG repairs queued for the worker.
//!
//! All of it goes through one write pipeline (`store::pipeline`): each
//! statement is built here while the database runs the ones before it,
//! all on the pipeline's one connection (each of the pool's keeps a page
//! cache of up to 64 MiB, and a run's writes would fill one per commit).
//! The tickets are committed about 5,000 at a time, so callbacks never
//! wait long behind a run; the rows behind them and the repairs go in the
//! last commit (a repair may wait on the provider's answer; none changes
//! what the run found).

use super::matching::ByKey;
use super::run::{Found, ReconError, Run};
use crate::domain::{AlertKind, AlertSeverity, Class};
use crate::engine::Engine;
use crate::statement::StatementRow;
use crate::store::pipeline::{Pipeline, Stopped, op};
use crate::store::recon_reads::PaymentKey;
use crate::store::tickets::{FromRun, RUN_TICKETS_PER_STATEMENT, RunTicket};
use crate::store::{ROWS_PER_STATEMENT, alerts, payments, recon_runs, tasks, tickets};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// Why a run's write could not send its next step.
enum Unsent {
    /// A step could not be built, or what it needed could not be read.
    Failed(ReconError),
    /// The pipeline stopped: its own error says why.
    Stopped,
}

impl From<Stopped> for Unsent {
    fn from(_: Stopped) -> Unsent {
        Unsent::Stopped
    }
}

/// The findings in the order they are written: those whose ticket knows
/// its payment's order (`ready`), then those waiting for the orders of
/// `unordered` to be looked up. Findings of one ticket stay together, in
/// the order they were found (the last one found is the ticket's).
pub(super) struct Findings {
    pub ready: Vec<Found>,
    pub waiting: Vec<Found>,
    pub unordered: Vec<String>,
}

impl Findings {
    /// The order of each ticket's payment, where the finding did not carry
    /// it (the day's payments are held without theirs), from the payments
    /// the rows named (`by_no`); the rest wait for a lookup — which runs
    /// while the tickets that need none are being written.
    pub fn of(mut found: Vec<Found>, by_no: &ByKey) -> Findings {
        for f in &mut found {
            if f.order_no.is_none()
                && let Some(p) = f.payment_no.as_deref().and_then(|no| by_no.get(no))
            {
                f.order_no = p.order.clone();
            }
        }
        let waits: hashbrown::HashSet<(Class, &str)> = found
            .iter()
            .filter(|f| f.order_no.is_none() && f.payment_no.is_some())
            .map(|f| (f.class, f.key.as_str()))
            .collect();
        let flags: Vec<bool> = found
            .iter()
            .map(|f| waits.contains(&(f.class, f.key.as_str())))
            .collect();
        drop(waits);
        let to_wait = flags.iter().filter(|&&wait| wait).count();
        let (mut waiting, mut ready) = (
            Vec::with_capacity(to_wait),
            Vec::with_capacity(found.len() - to_wait),
        );
        for (f, wait) in found.into_iter().zip(flags) {
            if wait {
                waiting.push(f);
            } else {
                ready.push(f);
            }
        }
        let mut unordered: Vec<String> = waiting
            .iter()
            .filter(|f| f.order_no.is_none())
            .filter_map(|f| f.payment_no.clone())
            .collect();
        unordered.sort_unstable();
        unordered.dedup();
        // In the order of their keys: the indexes of `discrepancies` keyed
        // by an identifier (the ticket's key, its payment, its transaction)
        // then fill their pages in order instead of splitting pages all
        // over. A stable sort: a ticket found twice keeps its last finding.
        // By cached keys: (key, place) pairs are sorted and each finding is
        // then moved about once; sorting the findings themselves (some 300
        // bytes each) moved each of them log n times through a scratch
        // buffer of fresh pages.
        let by_key = |f: &Found| (f.class.as_str(), f.key.clone());
        ready.sort_by_cached_key(by_key);
        waiting.sort_by_cached_key(by_key);
        Findings {
            ready,
            waiting,
            unordered,
        }
    }
}

/// Writes what the run found: the findings' tickets (with their holds and
/// alerts), then — in the last commit — `rows`, the statement rows kept
/// behind them, and a STATUS_LAG repair task for each of `lagging`. Nothing
/// since the last commit is kept if a step fails.
pub(super) async fn write(
    engine: &Engine,
    run: &Run<'_>,
    findings: Findings,
    rows: Option<Vec<&StatementRow>>,
    lagging: &[String],
) -> Result<(), ReconError> {
    let Findings {
        ready,
        mut waiting,
        unordered,
    } = findings;
    let alerts_logged = Arc::default();
    let pipe = Pipeline::start(&engine.db).await?;
    let sent = async {
        let mut batches = 0;
        let nos: Vec<&str> = unordered.iter().map(String::as_str).collect();
        let (sent, orders) = tokio::join!(
            send_tickets(engine, &pipe, run, &alerts_logged, &mut batches, &ready),
            super::local::payments_by(engine, PaymentKey::PaymentNo, run.provider, &nos)
        );
        sent?;
        drop(ready);
        let orders = orders.map_err(Unsent::Failed)?;
        for f in &mut waiting {
            if f.order_no.is_none()
                && let Some(p) = f.payment_no.as_deref().and_then(|no| orders.get(no))
            {
                f.order_no = p.order.clone();
            }
        }
        drop(orders);
        send_tickets(engine, &pipe, run, &alerts_logged, &mut batches, &waiting).await?;
        drop(waiting);
        if let Some(rows) = rows {
            let kind = engine.db.kind;
            for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                let staged: Vec<_> = chunk.iter().map(|r| super::read::staged(r)).collect();
                pipe.send(recon_runs::keep_rows(kind, run.run_id, &staged))
                    .await?;
            }
        }
        let nos = lagging.to_vec();
        let now = engine.now();
        pipe.send(op(move |conn| {
            Box::pin(async move {
                let nos: Vec<&str> = nos.iter().map(String::as_str).collect();
                tasks::schedule_many(conn, tasks::RECON_REPAIR, &nos, now, now).await
            })
        }))
        .await?;
        Ok::<(), Unsent>(())
    }
    .await;
    match sent {
        Ok(()) => Ok(pipe.finish().await?),
        // Dropped unfinished: nothing since the last commit is kept.
        Err(Unsent::Failed(e)) => Err(e),
        // The pipeline's own error says why it stopped.
        Err(Unsent::Stopped) => Err(pipe
            .finish()
            .await
            .err()
            .unwrap_or(crate::store::worker_stopped())
            .into()),
    }
}

/// Amount, currency and status, borrowed.
fn side(s: &Option<(i64, String, String)>) -> Option<(i64, &str, &str)> {
    s.as_ref().map(|(a, c, st)| (*a, c.as_str(), st.as_str()))
}

/// Findings' tickets, holds and alerts, built here and sent to the run's
/// write pipeline, about 1,000 at a time; every fifth such batch of the
/// run (`batches` counts them) commits first.
async fn send_tickets(
    engine: &Engine,
    pipe: &Pipeline,
    run: &Run<'_>,
    alerts_logged: &Arc<AtomicUsize>,
    batches: &mut usize,
    found: &[Found],
) -> Result<(), Unsent> {
    for batch in found.chunks(RUN_TICKETS_PER_STATEMENT * 8) {
        if *batches > 0 && (*batches).is_multiple_of(5) {
            pipe.commit().await?;
        }
        *batches += 1;
        send_batch(engine, pipe, run, alerts_logged, batch).await?;
    }
    Ok(())
}

/// One batch of [`send_tickets`]: opens each ticket once per cause (a
/// re-run updates open ones and leaves closed ones closed). LOCAL_ONLY
/// also holds its payment and raises a critical alert; ONE_TO_MANY holds
/// its payments.
async fn send_batch(
    engine: &Engine,
    pipe: &Pipeline,
    run: &Run<'_>,
    alerts_logged: &Arc<AtomicUsize>,
    found: &[Found],
) -> Result<(), Unsent> {
    let Run {
        run_id,
        provider,
        date,
        file,
        range,
    } = *run;
    if found.is_empty() {
        return Ok(());
    }
    let now = engine.now();
    let keyed: Vec<(String, &Found)> = found
        .iter()
        .map(|f| (format!("recon:{provider}:{date}:{}:{}", f.class, f.key), f))
        .collect();
    // One row per ticket and statement: a key found twice (a
    // transaction listed twice) keeps its last finding, as a second
    // upsert would have — PostgreSQL refuses to touch a row twice in
    // one statement.
    let last: hashbrown::HashMap<&str, usize> = keyed
        .iter()
        .enumerate()
        .map(|(i, (key, _))| (key.as_str(), i))
        .collect();
    let rows: Vec<&(String, &Found)> = keyed
        .iter()
        .enumerate()
        .filter(|(i, (key, _))| last[key.as_str()] == *i)
        .map(|(_, row)| row)
        .collect();
    let from = FromRun {
        run_id,
        provider,
        business_date: date,
        statement_file: file,
        range,
        now,
    };
    for chunk in rows.chunks(RUN_TICKETS_PER_STATEMENT) {
        let details: Vec<String> = chunk
            .iter()
            .map(|(_, f)| json!({ "reason": f.reason }).to_string())
            .collect();
        let tickets: Vec<RunTicket> = chunk
            .iter()
            .zip(&details)
            .map(|((key, f), details)| RunTicket {
                dedupe_key: key,
                class: f.class,
                severity: f.severity,
                payment_no: f.payment_no.as_deref(),
                provider_txn_id: f.txn.as_deref(),
                local: side(&f.local),
                provider_side: side(&f.provider_side),
                details,
                order_no: f.order_no.as_deref(),
                line_no: f.line_no,
            })
            .collect();
        pipe.send(tickets::upsert_from_run(engine.db.kind, &from, &tickets))
            .await?;
    }
    // What some findings do besides their ticket: holds (one statement
    // per reason and chunk) and a critical alert for each LOCAL_ONLY.
    let mut holds: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut alerts: Vec<(String, Option<String>, String)> = Vec::new();
    for (key, f) in &keyed {
        if !f.hold.is_empty() {
            holds.push((
                key.clone(),
                format!("{} in {provider}'s statement of {date}", f.class),
                f.hold.clone(),
            ));
        }
        if f.class == Class::LocalOnly {
            alerts.push((
                key.clone(),
                f.payment_no.clone(),
                format!(
                    "payment {} is {} here but absent from {provider}'s statement of {date}: hold fulfilment",
                    f.payment_no.as_deref().unwrap_or("-"),
                    f.local.as_ref().map(|l| l.2.as_str()).unwrap_or("-")
                ),
            ));
        }
    }
    if holds.is_empty() && alerts.is_empty() {
        return Ok(());
    }
    let alerts_logged = alerts_logged.clone();
    let kind = engine.db.kind;
    pipe.send(op(move |conn| {
        Box::pin(async move {
            // A cause whose ticket is closed was decided: a re-run finding
            // it again (the same statement run twice, a corrected one) holds
            // nothing a person released. Its alert, raised once per key,
            // is not raised again either.
            let keys: Vec<&str> = holds.iter().map(|(key, _, _)| key.as_str()).collect();
            let decided = tickets::closed_among(conn, kind, &keys).await?;
            let mut by_reason: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
            for (key, reason, payment_nos) in &holds {
                if !decided.contains(key) {
                    by_reason
                        .entry(reason)
                        .or_default()
                        .extend(payment_nos.iter().map(String::as_str));
                }
            }
            for (reason, nos) in &by_reason {
                payments::hold_many(conn, nos, reason, now).await?;
            }
            let alerts: Vec<alerts::NewAlert> = alerts
                .iter()
                .map(|(key, payment_no, message)| alerts::NewAlert {
                    dedupe_key: key,
                    kind: AlertKind::LocalOnly,
                    severity: AlertSeverity::Critical,
                    payment_no: payment_no.as_deref(),
                    message,
                    trace_id: None,
                    now,
                })
                .collect();
            alerts::raise_alerts(conn, &alerts, &alerts_logged).await
        })
    }))
    .await?;
    Ok(())
}
