//! Group commit for callback intake. Each request hands its verified
//! callback to one writer and waits; the writer stores and applies every
//! callback that arrived meanwhile in one transaction (one savepoint each,
//! so one bad callback cannot spoil the others), commits once, then answers
//! them all. A 2xx still means "durable": nobody is answered before the
//! commit. With `synchronous=FULL` every commit waits for the disk;
//! batching turns one fsync per callback into one per batch.
//!
//! On SQLite with a file, the batch's common case (the first callback of
//! each payment, which moves it) is written through the writer's own
//! connection ([`Direct`]), the same statements as on the pool's; what is
//! left follows on the pool's connection.

use super::apply::{apply_in, apply_many};
use super::redelivery::{Delivery, Seen, repeat_of};
use super::{Applied, Engine, Outcome, retry_delay};
use crate::domain::{AlertKind, AlertSeverity};
use crate::store;
use crate::store::DbKind;
use crate::store::batch::{Direct, Statements};
use crate::store::{alerts, callbacks};
use std::sync::Arc;
use tokio::sync::{Mutex, mpsc, oneshot};

/// At most this many callbacks per commit.
const MAX_BATCH: usize = 256;

/// Committed batches waiting for the log's sync at most (SQLite).
const UNSYNCED_BATCHES: usize = 8;

/// Intake writers on PostgreSQL, each holding one connection of the pool.
pub(super) const POSTGRES_WRITERS: usize = 4;

/// A writer's hold on the queue while its batch is written.
type Turn<'a> = Option<tokio::sync::MutexGuard<'a, mpsc::Receiver<Job>>>;

/// What a transaction on the pool's connection writes of a batch.
enum OnPool<'f, 't, 'q> {
    /// All of it (PostgreSQL): `fast` by multi-row statements first; the
    /// writer's `turn` is let go before the commit.
    Whole {
        fast: &'f [usize],
        turn: &'t mut Turn<'q>,
    },
    /// What the direct connection left (SQLite); the syncer syncs the log
    /// after the commit.
    Rest,
}

/// A verified callback, owned, ready to store.
pub(super) struct Incoming {
    pub id: String,
    pub callback_id: String,
    pub provider: String,
    pub provider_txn_id: Option<String>,
    pub callback_status: String,
    pub headers_json: String,
    pub payload: Vec<u8>,
    pub payload_hash: String,
    pub trace_id: String,
    pub outcome: Outcome,
    /// `Notification::facts`: what a redelivery must repeat to be one.
    pub facts: String,
    /// A declined attempt, for the payment's timeline.
    pub declined: Option<String>,
}

/// What happened to one callback in its batch.
#[derive(Debug)]
pub(super) enum Ingested {
    /// Stored now and applied.
    New(Applied),
    /// Stored before with the same facts (its envelope may be new).
    Duplicate,
    /// Stored before with the same facts, for a payment Reckon still does
    /// not have: answered as the first delivery was, until it applies.
    StillUnknown,
    /// Stored before with other facts: alert raised, first kept.
    Conflicting,
}

pub(super) struct Job {
    incoming: Incoming,
    reply: oneshot::Sender<Result<Ingested, String>>,
}

pub(super) fn channel() -> (mpsc::Sender<Job>, mpsc::Receiver<Job>) {
    mpsc::channel(MAX_BATCH * 16)
}

impl Engine {
    /// Stores and applies one callback through the group-commit writer.
    pub(super) async fn ingest(&self, incoming: Incoming) -> Result<Ingested, String> {
        let (reply, answer) = oneshot::channel();
        self.ingest
            .send(Job { incoming, reply })
            .await
            .map_err(|_| "the intake writer has stopped".to_string())?;
        answer
            .await
            .map_err(|_| "the intake writer dropped the callback".to_string())?
    }

    /// A writer: forever, take what is queued (up to `MAX_BATCH`) and
    /// write it in one transaction. On PostgreSQL several writers share the
    /// queue, each on its own connection: one writes its batch's statements
    /// while the next batch gathers, and earlier ones commit. (Writers that
    /// each took the queue as soon as it was free wrote batches of 3 or 4 and
    /// spent the database's CPU on round trips.) On SQLite (one writer) the commit
    /// does not wait for the disk: the batch goes to [`answer_when_durable`],
    /// which answers it after the log is synced, while the writer goes on
    /// with the next batch.
    ///
    /// `answers` runs the syncer: not the writer's own thread, which its
    /// statements on the direct connection keep busy without a pause.
    pub(super) async fn write_batches(
        self,
        rx: Arc<Mutex<mpsc::Receiver<Job>>>,
        answers: tokio::runtime::Handle,
    ) {
        let file = match self.db.kind {
            DbKind::Sqlite => crate::store::main_file(&self.db).await,
            DbKind::Postgres => None,
        };
        // In memory, or the file unknown: every commit syncs itself.
        let syncer = file.as_ref().map(|path| {
            // Bounded: during a slow sync the writer waits, rather than
            // making ever more commits visible before durable.
            let (tx, committed) = mpsc::channel(UNSYNCED_BATCHES);
            answers.spawn(answer_when_durable(crate::store::wal_of(path), committed));
            tx
        });
        // The writer keeps its connections between batches (no pool
        // hand-over and health check per batch); a failed batch closes it,
        // in case the connection itself is what broke.
        let mut conn: Option<store::PooledConn> = None;
        let mut direct = file.as_deref().map(Direct::new);
        loop {
            let mut queue = rx.lock().await;
            let Some(first) = queue.recv().await else {
                break;
            };
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
            // The queue stays this writer's until its batch's statements are
            // written: the next batch gathers meanwhile, and is taken whole
            // while this one commits (see `write_on_pool`).
            let mut turn = Some(queue);
            // One lock order for every writer: fewer deadlocks on PostgreSQL.
            batch.sort_by(|a, b| {
                a.incoming
                    .outcome
                    .payment_no
                    .cmp(&b.incoming.outcome.payment_no)
            });
            let incoming: Vec<&Incoming> = batch.iter().map(|j| &j.incoming).collect();
            self.metrics.batch(incoming.len());
            let started = std::time::Instant::now();
            // SQLite's writer in turn with the outbox relay's bookkeeping.
            let writer = self.db.write_turn().await;
            let mut written = self
                .write_batch(&mut conn, direct.as_mut(), &incoming, &mut turn)
                .await;
            drop(turn);
            // Two writers' batches that name one payment can deadlock on
            // PostgreSQL; the one it cancels is written again.
            for _ in 0..2 {
                match &written {
                    Err(e) if store::is_cancelled_for_conflict(e) => {
                        tracing::warn!(error = %e, "intake batch written again");
                        written = self
                            .write_batch(&mut conn, direct.as_mut(), &incoming, &mut None)
                            .await;
                    }
                    _ => break,
                }
            }
            drop(writer);
            tracing::debug!(
                size = incoming.len(),
                micros = started.elapsed().as_micros() as u64,
                "intake batch written"
            );
            match written {
                Ok(results) => {
                    let answers: Vec<_> = batch
                        .into_iter()
                        .map(|job| job.reply)
                        .zip(results)
                        .collect();
                    match &syncer {
                        Some(syncer) => {
                            if let Err(unsent) = syncer.send(answers).await {
                                for (reply, _) in unsent.0 {
                                    let _ = reply.send(Err("the intake syncer has stopped".into()));
                                }
                            }
                        }
                        None => {
                            for (reply, result) in answers {
                                let _ = reply.send(result);
                            }
                        }
                    }
                }
                Err(e) => {
                    if let Some(c) = conn.take() {
                        let _ = c.close().await;
                    }
                    tracing::error!(error = %e, size = batch.len(), "intake batch failed; nothing stored");
                    for job in batch {
                        let _ = job.reply.send(Err(format!("not stored: {e}")));
                    }
                }
            }
        }
        // Never handed back to the pool: on SQLite it commits without
        // waiting for the disk.
        if let Some(c) = conn.take() {
            let _ = c.close().await;
        }
    }

    /// Writes one batch; every callback gets its result. On SQLite with a
    /// file (`direct` is then `Some`, and the syncer answers), the common
    /// case is written on the writer's own connection first and committed,
    /// and only what is left goes through the pool's connection, in a second
    /// transaction; the batch is answered after both (and the sync).
    async fn write_batch(
        &self,
        conn: &mut Option<store::PooledConn>,
        direct: Option<&mut Direct>,
        batch: &[&Incoming],
        turn: &mut Turn<'_>,
    ) -> store::Result<Vec<Result<Ingested, String>>> {
        let now = self.now();
        let t0 = std::time::Instant::now();
        let mut results: Vec<Option<Result<Ingested, String>>> =
            (0..batch.len()).map(|_| None).collect();
        let fast = fast_of(batch);
        let Some(direct) = direct else {
            let whole = OnPool::Whole { fast: &fast, turn };
            self.write_on_pool(conn, batch, whole, &mut results, now)
                .await?;
            return Ok(finished(results));
        };
        if !fast.is_empty() {
            let sinks = &self.sink_names;
            match direct.write(async |c| ingest_many(c, sinks, batch, &fast, now).await) {
                Ok(moved) => {
                    self.metrics.batch_written("direct");
                    for (i, applied) in moved {
                        results[i] = Some(Ok(Ingested::New(applied)));
                    }
                }
                Err(e) => {
                    self.metrics.batch_written("fell_back");
                    tracing::warn!(error = %e, "batched intake fell back to one by one");
                }
            }
        }
        let direct_us = t0.elapsed().as_micros() as u64;
        if results.iter().any(Option::is_none) {
            // What the writer's own connection committed stays answered as
            // such whatever happens here.
            if let Err(e) = self
                .write_on_pool(conn, batch, OnPool::Rest, &mut results, now)
                .await
            {
                if let Some(c) = conn.take() {
                    let _ = c.close().await;
                }
                tracing::error!(error = %e, "the rest of an intake batch failed; that rest is not stored");
                for r in results.iter_mut().filter(|r| r.is_none()) {
                    *r = Some(Err(format!("not stored: {e}")));
                }
            }
        }
        tracing::debug!(
            size = batch.len(),
            fast = fast.len(),
            direct_us,
            total_us = t0.elapsed().as_micros() as u64,
            "intake batch phases"
        );
        Ok(finished(results))
    }

    /// The callbacks of the batch still without a result, in one
    /// transaction on the pool's connection: on [`OnPool::Whole`] the `fast`
    /// ones first in a few multi-row statements, then the rest one by one,
    /// each in its own savepoint.
    async fn write_on_pool(
        &self,
        conn: &mut Option<store::PooledConn>,
        batch: &[&Incoming],
        part: OnPool<'_, '_, '_>,
        results: &mut [Option<Result<Ingested, String>>],
        now: i64,
    ) -> store::Result<()> {
        let (fast, turn, synced_after) = match part {
            OnPool::Whole { fast, turn } => (Some(fast), Some(turn), false),
            OnPool::Rest => (None, None, true),
        };
        let conn = match conn {
            Some(c) => c,
            None => {
                let mut c = self.db.pool.acquire().await?;
                // Whatever happens to it (an error below, a panic), it is
                // closed, never handed back to the pool with its settings.
                c.close_on_drop();
                if synced_after {
                    // `answer_when_durable` syncs the log before any answer.
                    crate::store::sync_log_yourself(&mut c).await?;
                }
                conn.insert(c)
            }
        };
        let t0 = std::time::Instant::now();
        let mut tx = self.db.begin_write_on(conn).await?;
        let began = t0.elapsed();

        if let Some(fast) = fast.filter(|f| f.len() > 1) {
            let mut sp = store::savepoint(&mut tx).await?;
            match ingest_many(&mut *sp, &self.sink_names, batch, fast, now).await {
                Ok(moved) => {
                    sp.commit().await?;
                    self.metrics.batch_written("pool");
                    for (i, applied) in moved {
                        results[i] = Some(Ok(Ingested::New(applied)));
                    }
                }
                Err(e) => {
                    sp.rollback().await?;
                    self.metrics.batch_written("fell_back");
                    tracing::warn!(error = %e, "batched intake fell back to one by one");
                }
            }
        }

        for (i, incoming) in batch.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            let mut sp = store::savepoint(&mut tx).await?;
            match self.ingest_one(&mut sp, incoming, now).await {
                Ok(done) => {
                    sp.commit().await?;
                    results[i] = Some(Ok(done));
                }
                // Deadlocked with another writer: the whole batch is
                // rolled back and written again (see `write_batches`).
                Err(e) if store::is_cancelled_for_conflict(&e) => return Err(e),
                Err(e) => {
                    sp.rollback().await?;
                    tracing::error!(error = %e, trace_id = %incoming.trace_id, "callback not stored");
                    results[i] = Some(Err(e.to_string()));
                }
            }
        }
        let written = t0.elapsed();
        // The next writer takes what queued meanwhile while this one commits.
        drop(turn.and_then(Option::take));
        tx.commit().await?;
        tracing::debug!(
            size = batch.len(),
            begin_us = began.as_micros() as u64,
            statements_us = (written - began).as_micros() as u64,
            commit_us = (t0.elapsed() - written).as_micros() as u64,
            "intake batch phases on the pool"
        );
        Ok(())
    }

    /// The processing result on the callback row.
    async fn record(
        &self,
        conn: &mut store::Conn,
        c: &Incoming,
        applied: &Applied,
        now: i64,
    ) -> store::Result<()> {
        match applied {
            Applied::UnknownPayment => {
                // The first try failed: retried later, or DEAD at once when
                // only one try is allowed.
                let next = (1 < self.settings().callback_max_tries).then(|| now + retry_delay(1));
                callbacks::failed(&mut *conn, &c.id, callbacks::UNKNOWN_PAYMENT, next, now).await?;
                if next.is_none() {
                    self.metrics.callback("dead");
                    alerts::raise_alert(
                        &mut *conn,
                        &alerts::NewAlert {
                            dedupe_key: &format!("callback_dead:{}", c.id),
                            kind: AlertKind::CallbackDead,
                            severity: AlertSeverity::High,
                            payment_no: Some(c.outcome.payment_no.as_str()),
                            message: &format!(
                                "callback {} is DEAD after 1 try: unknown payment",
                                c.id
                            ),
                            trace_id: Some(&c.trace_id),
                            now,
                        },
                    )
                    .await?;
                }
                Ok(())
            }
            other => callbacks::succeeded(&mut *conn, &c.id, other.class(), now).await,
        }
    }

    async fn ingest_one(
        &self,
        conn: &mut store::Conn,
        c: &Incoming,
        now: i64,
    ) -> store::Result<Ingested> {
        if !callbacks::insert_if_absent(&mut *conn, &new_row(c, now)).await? {
            let seen = repeat_of(conn, &c.provider, &c.callback_id, &delivery(c), now).await?;
            return match seen {
                Seen::Same(first) if first.outcome.as_deref() == Some("unknown_payment") => {
                    self.apply_again(conn, c, &first, now).await
                }
                Seen::Same(_) => Ok(Ingested::Duplicate),
                Seen::Other => Ok(Ingested::Conflicting),
            };
        }
        let applied = apply_in(&mut *conn, self.db.kind, &self.sink_names, &c.outcome, now).await?;
        self.record(&mut *conn, c, &applied, now).await?;
        if let Some(declined) = &c.declined {
            record_decline(conn, c, declined, &applied, now).await?;
        }
        Ok(Ingested::New(applied))
    }

    /// A redelivery of a stored callback whose payment was unknown: the
    /// payment may exist now (the merchant's create raced the provider),
    /// so the stored callback is applied again at once. Still unknown, it
    /// is answered as the first delivery was, and left to the retry worker.
    async fn apply_again(
        &self,
        conn: &mut store::Conn,
        c: &Incoming,
        first: &callbacks::CallbackRow,
        now: i64,
    ) -> store::Result<Ingested> {
        let mut outcome = c.outcome.clone();
        outcome.evidence = first.id.clone();
        outcome.trace_id = first.trace_id.clone();
        let applied = apply_in(&mut *conn, self.db.kind, &self.sink_names, &outcome, now).await?;
        if matches!(applied, Applied::UnknownPayment) {
            return Ok(Ingested::StillUnknown);
        }
        callbacks::succeeded(&mut *conn, &first.id, applied.class(), now).await?;
        Ok(Ingested::New(applied))
    }
}

/// The callbacks the multi-row statements can take: the first of each
/// payment (and of each callback id) in the batch. A declined attempt also
/// writes the payment's timeline: one by one.
fn fast_of(batch: &[&Incoming]) -> Vec<usize> {
    let mut seen_payments = std::collections::HashSet::new();
    let mut seen_ids = std::collections::HashSet::new();
    (0..batch.len())
        .filter(|&i| {
            let c = batch[i];
            c.declined.is_none()
                && seen_payments.insert(c.outcome.payment_no.as_str())
                && seen_ids.insert((c.provider.as_str(), c.callback_id.as_str()))
        })
        .collect()
}

fn finished(results: Vec<Option<Result<Ingested, String>>>) -> Vec<Result<Ingested, String>> {
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("not processed".into())))
        .collect()
}

/// Stores the `fast` callbacks of the batch and applies them together;
/// returns those that moved. Ones already stored are left to the one-by-one
/// path (it classifies duplicates and conflicts), and so are ones stored
/// here that did not move: taken back, to be stored and classified there.
async fn ingest_many(
    conn: &mut impl Statements,
    sinks: &[crate::store::sinks::Route],
    batch: &[&Incoming],
    fast: &[usize],
    now: i64,
) -> store::Result<Vec<(usize, Applied)>> {
    let rows: Vec<callbacks::NewCallback> = fast.iter().map(|&i| new_row(batch[i], now)).collect();
    let stored: std::collections::HashSet<String> = callbacks::insert_many_applied(conn, &rows)
        .await?
        .into_iter()
        .collect();
    let stored: Vec<usize> = fast
        .iter()
        .copied()
        .filter(|&i| stored.contains(&batch[i].id))
        .collect();
    let outcomes: Vec<&Outcome> = stored.iter().map(|&i| &batch[i].outcome).collect();
    let applied = apply_many(conn, sinks, &outcomes, now).await?;
    let mut moved = Vec::with_capacity(stored.len());
    let mut back = Vec::new();
    for (&i, applied) in stored.iter().zip(applied) {
        match applied {
            Some(applied) => moved.push((i, applied)),
            None => back.push(batch[i].id.as_str()),
        }
    }
    callbacks::take_back(conn, &back).await?;
    Ok(moved)
}

/// A payment's status once `applied`, when it says.
fn status_after(applied: &Applied) -> Option<crate::domain::PaymentStatus> {
    match applied {
        Applied::Moved { to, .. } => Some(*to),
        Applied::Duplicate { status } => Some(*status),
        Applied::OutOfOrder { current, .. } | Applied::PaidAfterClose { current } => Some(*current),
        Applied::Conflict { .. } | Applied::UnknownPayment | Applied::Held { .. } => None,
    }
}

/// A declined attempt on the payment's timeline: a history row that keeps
/// the status (the intent may still succeed), with the decline as evidence.
async fn record_decline(
    conn: &mut store::Conn,
    c: &Incoming,
    declined: &str,
    applied: &Applied,
    now: i64,
) -> store::Result<()> {
    let Some(status) = status_after(applied) else {
        return Ok(());
    };
    let evidence = format!("declined attempt: {declined} (callback {})", c.id);
    crate::store::payments::insert_history_many(
        &mut *conn,
        &[crate::store::payments::HistoryEntry {
            payment_no: c.outcome.payment_no.as_str(),
            from: status,
            to: status,
            source: c.outcome.source.as_str(),
            evidence: &evidence,
            trace_id: &c.trace_id,
            at: now,
        }],
    )
    .await
}

/// What telling a repeat apart reads of an incoming callback.
fn delivery(c: &Incoming) -> Delivery<'_> {
    Delivery {
        payload: &c.payload,
        payload_hash: &c.payload_hash,
        facts: &c.facts,
        trace_id: &c.trace_id,
    }
}

fn new_row(c: &Incoming, now: i64) -> callbacks::NewCallback<'_> {
    callbacks::NewCallback {
        id: &c.id,
        callback_id: &c.callback_id,
        provider: &c.provider,
        payment_no: Some(c.outcome.payment_no.as_str()),
        provider_txn_id: c.provider_txn_id.as_deref(),
        callback_status: &c.callback_status,
        headers_json: &c.headers_json,
        payload: &c.payload,
        payload_hash: &c.payload_hash,
        verify_result: "VERIFIED",
        trace_id: &c.trace_id,
        received_at: now,
        facts: &c.facts,
    }
}

/// A batch's answers, sent once it is durable.
type Answers = Vec<(
    oneshot::Sender<Result<Ingested, String>>,
    Result<Ingested, String>,
)>;

/// Answers committed batches once the write-ahead log holding them is on
/// disk: one `fdatasync` for every batch committed while the one before
/// ran. A commit is in the log before the writer hands its batch here, so
/// a sync that starts afterwards covers it; this is the sync `synchronous
/// = FULL` makes inside the commit, moved off the writer's path.
async fn answer_when_durable(wal: std::path::PathBuf, mut committed: mpsc::Receiver<Answers>) {
    // A failed sync is final: Linux may have dropped the pages it could
    // not write and a later sync then succeeds without them, so no answer
    // after it may say "stored" until a restart (as PostgreSQL panics).
    let mut broken: Option<String> = None;
    while let Some(first) = committed.recv().await {
        let mut ready = vec![first];
        while let Ok(more) = committed.try_recv() {
            ready.push(more);
        }
        if broken.is_none()
            && let Err(e) = crate::store::sync_wal(wal.clone()).await
        {
            tracing::error!(error = %e, "the write-ahead log could not be synced: callbacks are answered \"try again\" until Reckon is restarted");
            broken = Some(e.to_string());
        }
        for (reply, result) in ready.into_iter().flatten() {
            let _ = reply.send(match &broken {
                None => result,
                Some(e) => Err(format!("stored, but not confirmed on disk: {e}")),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Ingested, answer_when_durable};
    use tokio::sync::{mpsc, oneshot};

    /// A batch is answered as written once its log is synced, and "not
    /// confirmed" when the sync fails: never a 2xx for an unsynced write.
    #[tokio::test]
    async fn batches_are_answered_after_the_log_syncs_and_refused_when_it_cannot() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("reckon.db-wal");
        std::fs::write(&wal, b"frames").unwrap();
        for (path, synced) in [(wal, true), (dir.path().join("gone-wal"), false)] {
            let (tx, rx) = mpsc::channel(8);
            let syncer = tokio::spawn(answer_when_durable(path, rx));
            let (reply, answer) = oneshot::channel();
            let (reply2, answer2) = oneshot::channel();
            tx.send(vec![(reply, Ok(Ingested::Duplicate))])
                .await
                .unwrap();
            tx.send(vec![(reply2, Err("not stored: busy".into()))])
                .await
                .unwrap();
            let first = answer.await.unwrap();
            assert_eq!(first.is_ok(), synced, "{first:?}");
            if !synced {
                assert!(first.unwrap_err().contains("not confirmed on disk"));
            }
            assert!(answer2.await.unwrap().is_err());
            drop(tx);
            syncer.await.unwrap();
        }
    }
}
