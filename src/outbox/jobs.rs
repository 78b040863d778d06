//! Queuing deliveries again: one message (to one sink or all), many by the
//! outbox list's filter, or a sink's DEAD deliveries since a time
//! (recover) — as jobs of the job runner (`crate::jobs`): in the
//! background, cancellable, resumed after a restart. A resend keeps the message id (the `webhook-id`
//! consumers deduplicate on) and resets the delivery: PENDING, attempts 0,
//! due now, unleased. Each queued delivery is audited with its actor in the
//! transaction that queues it.

use crate::accounts::{TxError, internal, retrying};
use crate::context::Context;
use crate::policy::held::{self, Params, Proposer};
use crate::policy::{BULK_RESEND, DELIVERIES};
use crate::store;
use crate::store::lists::After;
use crate::store::outbox_ops::{self as ops, OutboxQuery};
use crate::store::{audit, outbox};
use app::error::AppError;
use app::outbox::{DELIVERY_STATUSES, OutboxFilter, OutboxJob, Resent};
use serde_json::json;
use std::time::Duration;

/// Deliveries a job queues per transaction; a cancel is seen between two.
const CHUNK: i64 = 100;

/// Input the caller must correct.
fn invalid(detail: impl Into<String>) -> AppError {
    AppError::Invalid {
        detail: detail.into(),
    }
}

/// A short pause between chunks: a long job leaves the writer to the
/// day's webhooks.
const CHUNK_PAUSE: Duration = Duration::from_millis(25);

/// A time of a filter: RFC 3339, or a business day (its start; with
/// `end`, the next day's start).
fn instant(ctx: &Context, text: &str, end: bool) -> Result<i64, AppError> {
    if let Ok(ts) = text.parse::<jiff::Timestamp>() {
        return Ok(ts.as_microsecond());
    }
    let (start, next) = crate::recon::day_range(text, &ctx.settings().timezone).map_err(|_| {
        invalid(format!(
            "{text:?} is neither an RFC 3339 time (2026-12-01T00:00:00Z) nor a day (YYYY-MM-DD)"
        ))
    })?;
    Ok(if end { next } else { start })
}

pub fn query(ctx: &Context, f: &OutboxFilter) -> Result<OutboxQuery, AppError> {
    if let Some(s) = f.status.as_deref()
        && !DELIVERY_STATUSES.contains(&s)
    {
        return Err(invalid(format!(
            "status {s:?} is not one of {}",
            DELIVERY_STATUSES.join(", ")
        )));
    }
    let from_at = f
        .from
        .as_deref()
        .map(|t| instant(ctx, t, false))
        .transpose()?;
    let to_at = f.to.as_deref().map(|t| instant(ctx, t, true)).transpose()?;
    Ok(OutboxQuery {
        event_type: f.event_type.clone(),
        sink: f.sink.clone(),
        status: f.status.clone(),
        payment: f.payment.clone(),
        from_at,
        to_at,
        after: After::parse(f.after.as_deref()),
    })
}

/// Queues one delivery again with its audit entry — and, for a job, its
/// item marked worked — in one transaction, so a job resumed after a crash
/// never queues a delivery twice. False when it was pending already
/// (nothing done, nothing audited).
async fn requeue_audited(
    ctx: &Context,
    actor: &str,
    message_id: &str,
    sink: &str,
    job: Option<(&str, i64)>,
) -> Result<bool, AppError> {
    retrying(|| async {
        let now = ctx.now();
        let mut tx = ctx.db.begin_write().await?;
        if let Some((job_id, seq)) = job
            && !ops::claim_item(&mut tx, job_id, seq).await?
        {
            // Another runner of this job queued it: nothing more here.
            tx.rollback().await?;
            return Ok(false);
        }
        let before = ops::delivery_status(&mut *tx, message_id, sink).await?;
        let queued = ops::requeue(&mut tx, message_id, sink, actor, now).await?;
        if queued {
            let (status, attempts) = before.unwrap_or_default();
            audit::append(
                &mut tx,
                &ctx.db.audit,
                &audit::Entry {
                    actor: actor.to_owned(),
                    action: "outbox.resend",
                    object_type: "outbox_message",
                    object_id: message_id.to_owned(),
                    before: Some(json!({ "sink": sink, "status": status, "attempts": attempts })),
                    after: Some(json!({
                        "sink": sink, "status": "PENDING", "attempts": 0, "job": job.map(|j| j.0)
                    })),
                },
                now,
            )
            .await?;
        }
        if let Some((job_id, seq)) = job {
            ops::item_worked(&mut tx, job_id, seq, queued, now).await?;
        }
        tx.commit().await?;
        Ok::<_, TxError>(queued)
    })
    .await
}

/// Whether the relay can deliver to `sink` (a configured sink or alert
/// channel).
pub fn configured(ctx: &Context, sink: &str) -> bool {
    ctx.settings().sinks.iter().any(|s| s.name == sink) || ctx.settings().channel(sink).is_some()
}

/// Queues one message again, to `sink` or to every sink it was meant
/// for. Refused: an unknown message (404), an unknown sink or one the
/// message was never meant for (400), nothing to do because every
/// delivery named is pending already (409).
pub async fn resend(
    ctx: &Context,
    actor: &str,
    message_id: &str,
    sink: Option<&str>,
) -> Result<Resent, AppError> {
    let pool = &ctx.db.pool;
    if outbox::event(pool, message_id)
        .await
        .map_err(internal)?
        .is_none()
    {
        return Err(AppError::NotFound);
    }
    let targets: Vec<String> = match sink {
        Some(s) => {
            if !configured(ctx, s) {
                return Err(invalid(format!("sink {s:?} is not configured")));
            }
            if ops::delivery_status(pool, message_id, s)
                .await
                .map_err(internal)?
                .is_none()
            {
                return Err(invalid(format!(
                    "message {message_id} was never meant for sink {s:?}"
                )));
            }
            vec![s.to_owned()]
        }
        None => ops::deliveries(&ctx.db, &[message_id.to_owned()])
            .await
            .map_err(internal)?
            .into_iter()
            .map(|d| d.delivery.sink)
            .collect(),
    };
    if targets.is_empty() {
        return Err(invalid(format!(
            "message {message_id} has no delivery (no sink was configured when it was written)"
        )));
    }
    let mut out = Resent {
        message_id: message_id.to_owned(),
        queued: Vec::new(),
        already_pending: Vec::new(),
    };
    for s in targets {
        if !configured(ctx, &s) {
            return Err(invalid(format!(
                "sink {s:?} is not configured any more; name a configured sink"
            )));
        }
        if requeue_audited(ctx, actor, message_id, &s, None).await? {
            out.queued.push(s);
        } else {
            out.already_pending.push(s);
        }
    }
    if out.queued.is_empty() {
        return Err(AppError::Refused {
            detail: format!(
                "nothing to do: message {message_id} is already pending for {}",
                out.already_pending.join(", ")
            ),
        });
    }
    ctx.wake_workers();
    Ok(out)
}

pub fn new_job_id() -> String {
    format!("OBJ{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase()
}

/// Starts queuing again every not-pending delivery the list's filter
/// matches (only its sink's and status's, when it names them).
///
/// A resend the approval policy holds (above its number of deliveries)
/// waits for approval instead; `by` None is the server's host, never held.
pub async fn start_resend(
    ctx: &Context,
    actor: &str,
    by: Option<&Proposer>,
    filter: &OutboxFilter,
    run: Run,
) -> Result<OutboxJob, AppError> {
    let mut filter = filter.clone();
    filter.after = None;
    // Everything ever sent, again, is never what a person meant.
    if filter == OutboxFilter::default() {
        return Err(invalid(
            "name at least one filter (status, sink, event type, payment or a time range)",
        ));
    }
    if let Some(s) = filter.sink.as_deref()
        && !configured(ctx, s)
    {
        return Err(invalid(format!("sink {s:?} is not configured")));
    }
    let q = query(ctx, &filter)?;
    let items = ops::resendable(&ctx.db, &q).await.map_err(internal)?;
    let deliveries = i64::try_from(items.len()).unwrap_or(i64::MAX);
    if let Some(by) = by
        && let Some(need) =
            held::needed(&ctx.db, BULK_RESEND, Some((deliveries, DELIVERIES))).await?
    {
        let summary = format!(
            "resend {deliveries} deliveries matching {}",
            serde_json::to_string(&filter).unwrap_or_default()
        );
        let object = serde_json::to_string(&filter).unwrap_or_default();
        let params = Params::BulkResend { filter, deliveries };
        let reason = "bulk resend";
        return Err(held::hold(&ctx.db, by, &object, &summary, reason, &params, need).await);
    }
    let params = serde_json::to_value(&filter).unwrap_or_default();
    start(ctx, actor, "RESEND", params, items, run).await
}

/// Starts queuing again every DEAD delivery to `sink` whose last attempt
/// was at or after `since` (RFC 3339 or a day).
pub async fn start_recover(
    ctx: &Context,
    actor: &str,
    sink: &str,
    since: &str,
    run: Run,
) -> Result<OutboxJob, AppError> {
    if !configured(ctx, sink) {
        return Err(invalid(format!("sink {sink:?} is not configured")));
    }
    let since_at = instant(ctx, since, false)?;
    let items = ops::dead_since(&ctx.db.pool, sink, since_at)
        .await
        .map_err(internal)?;
    start(
        ctx,
        actor,
        "RECOVER",
        json!({ "sink": sink, "since": since }),
        items,
        run,
    )
    .await
}

/// Where a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// On its own task; the caller watches its progress.
    Background,
    /// In the caller's task, to its end (the command line waits).
    ToTheEnd,
}

/// Writes the job with its items and its audit entry, then runs it.
async fn start(
    ctx: &Context,
    actor: &str,
    kind: &'static str,
    params: serde_json::Value,
    items: Vec<(String, String)>,
    run: Run,
) -> Result<OutboxJob, AppError> {
    let job_id = new_job_id();
    retrying(|| async {
        let now = ctx.now();
        let mut tx = ctx.db.begin_write().await?;
        write_job(
            &mut tx, ctx, actor, kind, &job_id, &params, &items, None, now,
        )
        .await?;
        tx.commit().await?;
        Ok::<_, TxError>(())
    })
    .await?;
    run_job(ctx, &job_id, run).await
}

/// Runs a job written by [`write_job`] once its transaction committed.
pub async fn run_job(ctx: &Context, job_id: &str, run: Run) -> Result<OutboxJob, AppError> {
    match run {
        Run::Background => crate::jobs::spawn::<Requeue>(ctx, job_id),
        Run::ToTheEnd => crate::jobs::run_here::<Requeue>(ctx, job_id).await?,
    }
    job(ctx, job_id).await
}

/// Writes job `job_id` (queuing `items` again) with its audit entry in the
/// caller's transaction — `approved_by`, when approvers let it run.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn write_job(
    tx: &mut store::Tx<'_>,
    ctx: &Context,
    actor: &str,
    kind: &str,
    job_id: &str,
    params: &serde_json::Value,
    items: &[(String, String)],
    approved_by: Option<&[String]>,
    now: i64,
) -> Result<(), TxError> {
    let params_json = params.to_string();
    ops::insert_job(
        tx,
        &ops::NewJob {
            job_id,
            kind,
            params_json: &params_json,
            requested_by: actor,
            now,
        },
        items,
    )
    .await?;
    let mut after = json!({ "params": params, "deliveries": items.len() });
    if let Some(names) = approved_by {
        after["approved_by"] = json!(names);
    }
    audit::append(
        tx,
        &ctx.db.audit,
        &audit::Entry {
            actor: actor.to_owned(),
            action: if kind == "RECOVER" {
                "outbox.recover"
            } else {
                "outbox.bulk_resend"
            },
            object_type: "outbox_job",
            object_id: job_id.to_owned(),
            before: None,
            after: Some(after),
        },
        now,
    )
    .await?;
    Ok(())
}

/// A job and its progress.
pub async fn job(ctx: &Context, job_id: &str) -> Result<OutboxJob, AppError> {
    let row = ops::job(&ctx.db.pool, job_id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    Ok(job_view(row))
}

/// The 20 most recent jobs.
pub async fn jobs(ctx: &Context) -> Result<Vec<OutboxJob>, AppError> {
    Ok(ops::recent_jobs(&ctx.db.pool)
        .await
        .map_err(internal)?
        .into_iter()
        .map(job_view)
        .collect())
}

fn job_view(r: ops::JobRow) -> OutboxJob {
    OutboxJob {
        pending: (r.total - r.done - r.skipped).max(0),
        job_id: r.job_id,
        kind: r.kind,
        params: r.params_json,
        requested_by: r.requested_by,
        status: r.status,
        total: r.total,
        done: r.done,
        skipped: r.skipped,
        error: r.error,
        started_at: r.started_at,
        finished_at: r.finished_at,
    }
}

/// Asks a running job to stop before its next chunk; audited.
pub async fn cancel(ctx: &Context, actor: &str, job_id: &str) -> Result<OutboxJob, AppError> {
    let Some(row) = ops::job(&ctx.db.pool, job_id).await.map_err(internal)? else {
        return Err(AppError::NotFound);
    };
    let asked = retrying(|| async {
        let now = ctx.now();
        let mut tx = ctx.db.begin_write().await?;
        if !ops::request_cancel(&mut *tx, job_id, now).await? {
            return Ok::<_, TxError>(false);
        }
        audit::append(
            &mut tx,
            &ctx.db.audit,
            &audit::Entry {
                actor: actor.to_owned(),
                action: "outbox.cancel_job",
                object_type: "outbox_job",
                object_id: job_id.to_owned(),
                before: Some(json!({ "status": "RUNNING" })),
                after: Some(json!({ "status": "CANCELLING" })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    })
    .await?;
    if !asked {
        return Err(AppError::Refused {
            detail: format!("the job is {}, not running", row.status),
        });
    }
    job(ctx, job_id).await
}

/// A resend or recover job as the runner works it: its items in chunks
/// of [`CHUNK`], each queued again in its own audited transaction.
pub struct Requeue {
    job_id: String,
    kind: String,
    requested_by: String,
}

impl crate::jobs::Kind for Requeue {
    type Ctx = Context;
    type Item = (i64, String, String);
    const NAME: &'static str = "outbox";
    const PAUSE: Duration = CHUNK_PAUSE;

    async fn load(ctx: &Context, job_id: &str) -> Result<Self, AppError> {
        let row = ops::job(&ctx.db.pool, job_id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        Ok(Requeue {
            job_id: row.job_id,
            kind: row.kind,
            requested_by: row.requested_by,
        })
    }

    async fn running(&mut self, ctx: &Context) -> Result<bool, AppError> {
        let status = ops::job_status(&ctx.db.pool, &self.job_id)
            .await
            .map_err(internal)?;
        Ok(status.as_deref() == Some("RUNNING"))
    }

    async fn next_chunk(&mut self, ctx: &Context) -> Result<Vec<Self::Item>, AppError> {
        ops::next_items(&ctx.db.pool, &self.job_id, CHUNK)
            .await
            .map_err(internal)
    }

    async fn work_item(
        &mut self,
        ctx: &Context,
        (seq, message_id, sink): Self::Item,
    ) -> Result<(), AppError> {
        requeue_audited(
            ctx,
            &self.requested_by,
            &message_id,
            &sink,
            Some((&self.job_id, seq)),
        )
        .await?;
        Ok(())
    }

    async fn touch(&mut self, ctx: &Context) -> Result<(), AppError> {
        ops::touch_job(&ctx.db.pool, &self.job_id, ctx.now())
            .await
            .map_err(internal)?;
        ctx.wake_workers();
        Ok(())
    }

    async fn finish(&mut self, ctx: &Context) -> Result<(), AppError> {
        ops::finish_job(&ctx.db.pool, &self.job_id, ctx.now())
            .await
            .map_err(internal)?;
        tracing::info!(job = self.job_id, kind = self.kind, "outbox job ended");
        Ok(())
    }

    async fn fail(ctx: &Context, job_id: &str, error: &str) -> store::Result<()> {
        ops::fail_job(&ctx.db.pool, job_id, error, ctx.now()).await
    }

    async fn silent(ctx: &Context, silent_us: i64) -> store::Result<Vec<String>> {
        ops::unfinished(&ctx.db.pool, ctx.now() - silent_us).await
    }
}
