//! Group commit for callback intake. Each request hands its verified
//! callback to one writer and waits; the writer stores and applies every
//! callback that arrived meanwhile in one transaction (one savepoint each,
//! so one bad callback cannot spoil the others), commits once, then answers
//! them all. A 2xx still means "durable": nobody is answered before the
//! commit. With `synchronous=FULL` every commit waits for the disk;
//! batching turns one fsync per callback into one per batch.

use super::apply::{apply_in, apply_many};
use super::intake::retry_delay;
use super::{Applied, Engine, Outcome};
use crate::store::{alerts, callbacks};
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, Connection};
use tokio::sync::{mpsc, oneshot};

/// At most this many callbacks per commit.
const MAX_BATCH: usize = 256;

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

    /// The writer: forever, take what is queued (up to `MAX_BATCH`) and
    /// write it in one transaction.
    pub(super) async fn write_batches(self, mut rx: mpsc::Receiver<Job>) {
        // The writer keeps its connection between batches (no pool
        // hand-over and health check per batch); a failed batch drops it,
        // in case the connection itself is what broke.
        let mut conn: Option<PoolConnection<Any>> = None;
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
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
            let written = self.write_batch(&mut conn, &incoming).await;
            tracing::debug!(
                size = incoming.len(),
                micros = started.elapsed().as_micros() as u64,
                "intake batch written"
            );
            match written {
                Ok(results) => {
                    for (job, result) in batch.into_iter().zip(results) {
                        let _ = job.reply.send(result);
                    }
                }
                Err(e) => {
                    conn = None;
                    tracing::error!(error = %e, size = batch.len(), "intake batch failed; nothing stored");
                    for job in batch {
                        let _ = job.reply.send(Err(format!("not stored: {e}")));
                    }
                }
            }
        }
    }

    async fn write_batch(
        &self,
        conn: &mut Option<PoolConnection<Any>>,
        batch: &[&Incoming],
    ) -> sqlx::Result<Vec<Result<Ingested, String>>> {
        let now = self.now();
        let conn = match conn {
            Some(c) => c,
            None => conn.insert(self.db.pool.acquire().await?),
        };
        let mut tx = self.db.begin_write_on(conn).await?;
        let mut results: Vec<Option<Result<Ingested, String>>> =
            (0..batch.len()).map(|_| None).collect();

        // The common case for the whole batch in a few multi-row statements:
        // the first callback of each payment (and of each callback id).
        let mut seen_payments = std::collections::HashSet::new();
        let mut seen_ids = std::collections::HashSet::new();
        let fast: Vec<usize> = (0..batch.len())
            .filter(|&i| {
                let c = batch[i];
                // A declined attempt also writes the payment's timeline:
                // one by one.
                c.declined.is_none()
                    && seen_payments.insert(c.outcome.payment_no.as_str())
                    && seen_ids.insert((c.provider.as_str(), c.callback_id.as_str()))
            })
            .collect();
        if fast.len() > 1 {
            let mut sp = Connection::begin(&mut *tx).await?;
            match self.ingest_many(&mut sp, batch, &fast, now).await {
                Ok(done) => {
                    sp.commit().await?;
                    for (i, r) in done {
                        results[i] = Some(Ok(r));
                    }
                }
                Err(e) => {
                    sp.rollback().await?;
                    tracing::warn!(error = %e, "batched intake fell back to one by one");
                }
            }
        }

        // Everything else one by one, each in its own savepoint.
        for (i, incoming) in batch.iter().enumerate() {
            if results[i].is_some() {
                continue;
            }
            let mut sp = Connection::begin(&mut *tx).await?;
            match self.ingest_one(&mut sp, incoming, now).await {
                Ok(done) => {
                    sp.commit().await?;
                    results[i] = Some(Ok(done));
                }
                Err(e) => {
                    sp.rollback().await?;
                    tracing::error!(error = %e, trace_id = %incoming.trace_id, "callback not stored");
                    results[i] = Some(Err(e.to_string()));
                }
            }
        }
        tx.commit().await?;
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err("not processed".into())))
            .collect())
    }

    /// Stores the `fast` callbacks of the batch and applies them together.
    /// Ones already stored are left to the one-by-one path (it classifies
    /// duplicates and conflicts); ones stored now that did not move are
    /// classified here by `apply_in`.
    async fn ingest_many(
        &self,
        conn: &mut AnyConnection,
        batch: &[&Incoming],
        fast: &[usize],
        now: i64,
    ) -> sqlx::Result<Vec<(usize, Ingested)>> {
        let rows: Vec<callbacks::NewCallback> =
            fast.iter().map(|&i| new_row(batch[i], now)).collect();
        let stored: std::collections::HashSet<String> =
            callbacks::insert_many_applied(&mut *conn, &rows)
                .await?
                .into_iter()
                .collect();
        let stored: Vec<usize> = fast
            .iter()
            .copied()
            .filter(|&i| stored.contains(&batch[i].id))
            .collect();
        let outcomes: Vec<&Outcome> = stored.iter().map(|&i| &batch[i].outcome).collect();
        let applied = apply_many(&mut *conn, &self.sink_names, &outcomes, now).await?;
        let mut done = Vec::with_capacity(stored.len());
        for (&i, applied) in stored.iter().zip(applied) {
            let c = batch[i];
            let applied = match applied {
                // Stored as applied: nothing more to write.
                Some(moved) => moved,
                None => {
                    let applied =
                        apply_in(&mut *conn, self.db.kind, &self.sink_names, &c.outcome, now)
                            .await?;
                    self.record(&mut *conn, c, &applied, now).await?;
                    applied
                }
            };
            done.push((i, Ingested::New(applied)));
        }
        Ok(done)
    }

    /// The processing result on the callback row.
    async fn record(
        &self,
        conn: &mut AnyConnection,
        c: &Incoming,
        applied: &Applied,
        now: i64,
    ) -> sqlx::Result<()> {
        match applied {
            Applied::UnknownPayment => {
                // The first try failed: retried later, or DEAD at once when
                // only one try is allowed.
                let next = (1 < self.settings.callback_max_tries).then(|| now + retry_delay(1));
                callbacks::failed(&mut *conn, &c.id, callbacks::UNKNOWN_PAYMENT, next, now).await?;
                if next.is_none() {
                    self.metrics.callback("dead");
                    alerts::raise_alert(
                        &mut *conn,
                        &alerts::NewAlert {
                            dedupe_key: &format!("callback_dead:{}", c.id),
                            kind: "callback_dead",
                            severity: "high",
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
        conn: &mut AnyConnection,
        c: &Incoming,
        now: i64,
    ) -> sqlx::Result<Ingested> {
        if !callbacks::insert_if_absent(&mut *conn, &new_row(c, now)).await? {
            let seen = repeat_of(conn, &c.provider, &c.callback_id, &Delivery::of(c), now).await?;
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
        conn: &mut AnyConnection,
        c: &Incoming,
        first: &callbacks::CallbackRow,
        now: i64,
    ) -> sqlx::Result<Ingested> {
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
    conn: &mut AnyConnection,
    c: &Incoming,
    declined: &str,
    applied: &Applied,
    now: i64,
) -> sqlx::Result<()> {
    let Some(status) = status_after(applied) else {
        return Ok(());
    };
    let evidence = format!("declined attempt: {declined} (callback {})", c.id);
    crate::store::payments::insert_history_many(
        &mut *conn,
        &[crate::store::payments::HistoryEntry {
            payment_no: c.outcome.payment_no.as_str(),
            from: status.as_str(),
            to: status.as_str(),
            source: c.outcome.source.as_str(),
            evidence: &evidence,
            trace_id: &c.trace_id,
            at: now,
        }],
    )
    .await
}

/// A delivery of a callback id, as far as telling repeats apart needs.
pub(super) struct Delivery<'a> {
    pub payload: &'a [u8],
    pub payload_hash: &'a str,
    pub facts: &'a str,
    pub trace_id: &'a str,
}

impl<'a> Delivery<'a> {
    fn of(c: &'a Incoming) -> Delivery<'a> {
        Delivery {
            payload: &c.payload,
            payload_hash: &c.payload_hash,
            facts: &c.facts,
            trace_id: &c.trace_id,
        }
    }
}

/// What a callback id seen before turned out to be.
pub(super) enum Seen {
    /// The same facts: a duplicate of this stored callback.
    Same(Box<callbacks::CallbackRow>),
    /// Other facts: a conflict, alerted; the first is kept.
    Other,
}

/// A callback id seen before: a duplicate when its facts are the stored
/// callback's (providers redeliver with a new timestamp, signature or
/// encryption nonce: bytes are not facts), else a conflict (critical
/// alert; the first callback is kept). Either way the delivery is counted
/// and its bytes kept once. Callbacks stored before facts were recorded
/// are compared by their bytes.
pub(super) async fn repeat_of(
    conn: &mut AnyConnection,
    provider: &str,
    callback_id: &str,
    d: &Delivery<'_>,
    now: i64,
) -> sqlx::Result<Seen> {
    let Some(first) = callbacks::by_callback_id(&mut *conn, provider, callback_id).await? else {
        // The insert met a row that is not there now: never expected.
        return Err(sqlx::Error::RowNotFound);
    };
    let same = match &first.facts {
        Some(facts) => facts == d.facts,
        None => first.payload_hash == d.payload_hash,
    };
    callbacks::redelivered(
        &mut *conn,
        &first.id,
        d.payload,
        d.payload_hash,
        same,
        d.trace_id,
        now,
    )
    .await?;
    if same {
        return Ok(Seen::Same(Box::new(first)));
    }
    let message = format!(
        "callback {callback_id} from {provider} arrived again with different facts ({}); the first one ({}) is kept",
        d.facts,
        first
            .facts
            .as_deref()
            .unwrap_or("stored before facts were recorded")
    );
    alerts::raise_alert(
        &mut *conn,
        &alerts::NewAlert {
            dedupe_key: &format!(
                "callback_conflict:{provider}:{callback_id}:{}",
                d.payload_hash
            ),
            kind: "callback_conflict",
            severity: "critical",
            payment_no: first.payment_no.as_deref(),
            message: &message,
            trace_id: Some(d.trace_id),
            now,
        },
    )
    .await?;
    Ok(Seen::Other)
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
