//! Sinks as endpoints: which event types a sink wants, its signatures (both
//! secrets during a rotation), its retry schedule, its run of failures —
//! one `sink_failing` alert per failing spell, over when it delivers again
//! — and pausing or resuming one (a reason required, audited in the same
//! transaction; the relay finds a paused sink's deliveries not leased, and
//! a resumed sink's waiting deliveries are due at once) — and "retry now":
//! an active sink's deliveries waiting for a later retry made due at once.

use crate::accounts::{TxError, retrying};
use crate::config::Sink;
use crate::context::Context;
use crate::domain::{AlertKind, AlertSeverity};
use crate::policy::SINK_PAUSE;
use crate::policy::held::{self, Params, Proposer};
use crate::store;
use crate::store::{alerts, audit, sinks};
use app::error::AppError;
use app::sinks::RetriedNow;
use serde_json::json;

/// When a sink's failures make it failing (a setting's shape).
pub use crate::config::Failing;

impl Sink {
    pub fn route(&self) -> sinks::Route {
        sinks::Route {
            name: self.name.clone(),
            event_types: self.event_types.clone(),
        }
    }

    /// When to try again after `attempts` attempts in all have failed:
    /// the schedule's step for that attempt, or None (DEAD) past its end.
    pub fn next_attempt(&self, attempts: i64, now: i64) -> Option<i64> {
        let step = usize::try_from(attempts.checked_sub(1)?).ok()?;
        self.schedule.get(step).map(|delay| now + delay)
    }

    /// `webhook-signature`: one `v1,…` entry per secret, space-separated,
    /// so a receiver holding either secret of a rotation verifies.
    pub fn signature(&self, id: &str, ts: i64, body: &[u8]) -> String {
        self.secrets
            .iter()
            .map(|s| s.sign(id, ts, body))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Failed attempts were counted (`in_a_row` since `since`): the
/// spell's first time past the rule raises one `sink_failing` alert.
pub(crate) async fn sink_failing_check(
    ctx: &Context,
    sink: &str,
    error: &str,
    in_a_row: i64,
    since: i64,
    now: i64,
) -> store::Result<()> {
    let pool = &ctx.db.pool;
    let rule = ctx.settings().sink_failing;
    if (in_a_row >= rule.attempts || now - since >= rule.after_us)
        && sinks::mark_failing(pool, sink, now).await?
    {
        alerts::raise_alert(
            pool,
            &alerts::NewAlert {
                dedupe_key: &format!("sink_failing:{sink}:{since}"),
                kind: AlertKind::SinkFailing,
                severity: AlertSeverity::High,
                payment_no: None,
                message: &format!(
                    "outbox sink {sink} is failing: {in_a_row} attempts failed in a row since {}; last: {error}",
                    jiff::Timestamp::from_microsecond(since).unwrap_or_default()
                ),
                trace_id: None,
                now,
            },
        )
        .await?;
    }
    Ok(())
}

/// Pauses (`pause`) or resumes a configured sink, audited with `actor`
/// and the reason. Doing what is already done is refused, so the audit
/// log holds only changes.
/// A pause the approval policy holds waits for approval instead (the
/// `Held` answer names it); `by` None is the server's host, never held.
pub async fn set_paused(
    ctx: &Context,
    actor: &str,
    by: Option<&Proposer>,
    name: &str,
    reason: &str,
    pause: bool,
) -> Result<(), AppError> {
    if !ctx.settings().sinks.iter().any(|s| s.name == name) {
        return Err(AppError::NotFound);
    }
    let reason = crate::triage::required(reason, "reason")?;
    if pause
        && let Some(by) = by
        && let Some(need) = held::needed(&ctx.db, SINK_PAUSE, None).await?
    {
        let params = Params::SinkPause {
            sink: name.to_owned(),
            reason: reason.to_owned(),
        };
        let summary = format!("pause sink {name}");
        return Err(held::hold(&ctx.db, by, name, &summary, reason, &params, need).await);
    }
    retrying(|| async {
        let now = ctx.now();
        let mut tx = ctx.db.begin_write().await?;
        let by = pause.then_some((actor, reason));
        if !sinks::set_paused(&mut tx, name, by, now).await? {
            return Err(TxError::App(AppError::Invalid {
                detail: format!(
                    "sink {name} is already {}",
                    if pause { "paused" } else { "active" }
                ),
            }));
        }
        audit::append(
            &mut tx,
            &ctx.db.audit,
            &audit::Entry {
                actor: actor.to_owned(),
                action: if pause { "sink.pause" } else { "sink.resume" },
                object_type: "sink",
                object_id: name.to_owned(),
                before: Some(json!({ "paused": !pause })),
                after: Some(json!({ "paused": pause, "reason": reason })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    })
    .await?;
    if !pause {
        ctx.wake.outbox.notify_one();
    }
    tracing::info!(
        sink = name,
        by = actor,
        reason,
        paused = pause,
        "outbox sink {}",
        if pause { "paused" } else { "resumed" }
    );
    Ok(())
}

/// Makes every pending delivery to `name` that waits for a later retry
/// due now, audited with `actor` and the reason, and wakes the relay. A
/// paused sink is refused (resuming it makes them due anyway); with
/// nothing waiting, nothing changes and nothing is audited.
pub async fn retry_now(
    ctx: &Context,
    actor: &str,
    name: &str,
    reason: &str,
) -> Result<RetriedNow, AppError> {
    if !ctx.settings().sinks.iter().any(|s| s.name == name) {
        return Err(AppError::NotFound);
    }
    let reason = crate::triage::required(reason, "reason")?;
    let made_due = retrying(|| async {
        let now = ctx.now();
        let mut tx = ctx.db.begin_write().await?;
        if sinks::is_paused(&mut tx, name).await? {
            return Err(TxError::App(AppError::Invalid {
                detail: format!("sink {name} is paused: resume it first"),
            }));
        }
        let n = i64::try_from(sinks::retry_now(&mut tx, name, now).await?).unwrap_or(i64::MAX);
        if n == 0 {
            // Nothing to audit: the transaction changed nothing.
            return Ok(0);
        }
        audit::append(
            &mut tx,
            &ctx.db.audit,
            &audit::Entry {
                actor: actor.to_owned(),
                action: "sink.retry_now",
                object_type: "sink",
                object_id: name.to_owned(),
                before: Some(json!({ "waiting_for_retry": n })),
                after: Some(json!({ "waiting_for_retry": 0, "made_due": n, "reason": reason })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(n)
    })
    .await?;
    if made_due > 0 {
        ctx.wake.outbox.notify_one();
    }
    tracing::info!(
        sink = name,
        by = actor,
        reason,
        made_due,
        "outbox sink: deliveries waiting for a retry made due now"
    );
    Ok(RetriedNow {
        sink: name.to_owned(),
        made_due,
    })
}
