//! What the console's pages do beside triage, each audited: replay one
//! stored callback, or every DEAD one of a provider and time range as a
//! job that runs in the background and can be left and returned to; resume
//! a reconciliation run; acknowledge an alert.

use super::{Desk, invalid};
use crate::accounts::{TxError, internal, retrying};
use crate::engine::Engine;
use crate::store;
use crate::store::{alerts, audit, callbacks, replay_jobs};
use app::console::ReplayJob;
use app::error::AppError;
use app::tickets::ActionResult;
use app::types::User;
use serde_json::json;
use std::collections::BTreeMap;

/// One audit entry in its own transaction.
async fn audit_one(
    engine: &Engine,
    actor: &str,
    action: &'static str,
    (object_type, object_id): (&'static str, &str),
    after: serde_json::Value,
) -> Result<(), AppError> {
    retrying(|| async {
        let mut tx = engine.db.begin_write().await?;
        audit::append(
            &mut tx,
            &engine.db.audit,
            &audit::Entry {
                actor: actor.to_owned(),
                action,
                object_type,
                object_id: object_id.to_owned(),
                before: None,
                after: Some(after.clone()),
            },
            engine.now(),
        )
        .await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

/// One stored callback through `apply` again, audited with what it did.
pub(super) async fn replay_one(
    engine: &Engine,
    actor: &str,
    id: &str,
    job: Option<&str>,
) -> Result<ActionResult, AppError> {
    let out = engine
        .replay_callback(id, actor, job)
        .await
        .map_err(crate::triage::action_error)?;
    let result = ActionResult {
        class: out.class.into(),
        detail: out.detail,
    };
    audit_one(
        engine,
        actor,
        "callback.replay",
        ("callback", id),
        json!({ "class": result.class, "detail": result.detail, "payment_no": out.payment_no, "job": job }),
    )
    .await?;
    Ok(result)
}

impl Desk {
    /// Starts replaying every DEAD callback of `provider` received in
    /// [from, to] (business days, inclusive) in the background; returns the
    /// job to watch.
    pub async fn start_replay_job(
        &self,
        actor: &User,
        provider: &str,
        from: &str,
        to: &str,
    ) -> Result<String, AppError> {
        if self.engine.providers.get(provider).is_none() {
            return Err(invalid(format!("provider {provider} is not configured")));
        }
        let (from_at, _) = self.range(from)?;
        let (_, to_at) = self.range(to)?;
        if to_at <= from_at {
            return Err(invalid("the range ends before it starts"));
        }
        let pool = &self.engine.db.pool;
        let total = callbacks::dead_count(pool, provider, (from_at, to_at))
            .await
            .map_err(internal)?;
        let job = format!("JOB{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase();
        replay_jobs::insert(
            pool,
            &replay_jobs::NewJob {
                job_id: &job,
                provider,
                from_at,
                to_at,
                requested_by: &actor.username,
                total,
                now: self.now(),
            },
        )
        .await
        .map_err(internal)?;
        audit_one(
            &self.engine,
            &actor.username,
            "callback.bulk_replay",
            ("replay_job", &job),
            json!({ "provider": provider, "from": from, "to": to, "dead": total }),
        )
        .await?;
        crate::jobs::spawn::<Replay>(&self.engine, &job);
        Ok(job)
    }
}

/// A bulk replay as the runner works it: the range's DEAD callbacks as
/// they were when it began, replayed in chunks of ten, the progress and
/// how each went written after each chunk. It has no cancel, and it is not
/// resumed: which callbacks it replayed is not kept, so a job cut off is
/// shown interrupted, to start again.
pub(super) struct Replay {
    job_id: String,
    provider: String,
    range: (i64, i64),
    actor: String,
    left: Option<std::collections::VecDeque<String>>,
    done: i64,
    classes: BTreeMap<String, i64>,
}

impl crate::jobs::Kind for Replay {
    type Ctx = Engine;
    type Item = String;
    const NAME: &'static str = "replay";
    const PAUSE: std::time::Duration = std::time::Duration::ZERO;

    async fn load(engine: &Engine, job_id: &str) -> Result<Self, AppError> {
        let row = replay_jobs::recent(&engine.db.pool, Some(job_id))
            .await
            .map_err(internal)?
            .into_iter()
            .next()
            .ok_or(AppError::NotFound)?;
        Ok(Replay {
            job_id: row.job_id,
            provider: row.provider,
            range: (row.from_at, row.to_at),
            actor: row.requested_by,
            left: None,
            done: 0,
            classes: BTreeMap::new(),
        })
    }

    async fn running(&mut self, _: &Engine) -> Result<bool, AppError> {
        Ok(true)
    }

    async fn next_chunk(&mut self, engine: &Engine) -> Result<Vec<String>, AppError> {
        let left = match &mut self.left {
            Some(left) => left,
            None => self.left.insert(
                callbacks::dead_ids(&engine.db.pool, &self.provider, self.range)
                    .await
                    .map_err(internal)?
                    .into(),
            ),
        };
        let n = left.len().min(10);
        Ok(left.drain(..n).collect())
    }

    async fn work_item(&mut self, engine: &Engine, id: String) -> Result<(), AppError> {
        let class = match replay_one(engine, &self.actor, &id, Some(&self.job_id)).await {
            Ok(r) => r.class,
            Err(e) => format!("refused: {e}"),
        };
        *self.classes.entry(class).or_default() += 1;
        self.done += 1;
        Ok(())
    }

    async fn touch(&mut self, engine: &Engine) -> Result<(), AppError> {
        let classes_json = serde_json::to_string(&self.classes).unwrap_or_default();
        replay_jobs::progress(
            &engine.db.pool,
            &self.job_id,
            self.done,
            &classes_json,
            engine.now(),
        )
        .await
        .map_err(internal)
    }

    async fn finish(&mut self, engine: &Engine) -> Result<(), AppError> {
        let classes_json = serde_json::to_string(&self.classes).unwrap_or_default();
        replay_jobs::finish(
            &engine.db.pool,
            &self.job_id,
            self.done,
            &classes_json,
            engine.now(),
        )
        .await
        .map_err(internal)?;
        tracing::info!(job = self.job_id, total = self.done, classes = ?self.classes, "bulk replay done");
        Ok(())
    }

    async fn fail(engine: &Engine, job_id: &str, error: &str) -> store::Result<()> {
        replay_jobs::fail(&engine.db.pool, job_id, error, engine.now()).await
    }
}

/// The recent replay jobs (or the one named); a job silent too long is
/// shown as the interrupted job it is.
pub(super) async fn replay_jobs(
    engine: &Engine,
    id: Option<&str>,
) -> Result<Vec<ReplayJob>, AppError> {
    let now = engine.now();
    let rows = replay_jobs::recent(&engine.db.pool, id)
        .await
        .map_err(internal)?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let classes: BTreeMap<String, i64> =
                serde_json::from_str(&r.classes_json).unwrap_or_default();
            let (mut status, mut error) = (r.status, r.error);
            if status == "RUNNING" && r.updated_at < now - crate::jobs::SILENT_US {
                status = "FAILED".into();
                error = Some("interrupted (the server stopped); start it again — callbacks already replayed are no longer DEAD".into());
            }
            ReplayJob {
                id: r.job_id,
                provider: r.provider,
                from_at: r.from_at,
                to_at: r.to_at,
                requested_by: r.requested_by,
                status,
                total: r.total,
                done: r.done,
                classes: classes.into_iter().collect(),
                error,
                started_at: r.started_at,
                finished_at: r.finished_at,
            }
        })
        .collect())
}

/// Resumes a run that did not complete, in the background (a pull can take
/// a while; the runs page shows its progress).
pub(super) async fn resume(engine: &Engine, actor: &User, id: &str) -> Result<(), AppError> {
    let status = crate::store::lists::run_status(&engine.db, id)
        .await
        .map_err(internal)?;
    match status.as_deref() {
        None => return Err(AppError::NotFound),
        Some("COMPLETED") => return Err(invalid("the run is complete")),
        Some(_) => {}
    }
    // Said now: the resume below runs after the answer.
    if let Some(why) = crate::recon::resume_held(engine, id)
        .await
        .map_err(internal)?
    {
        return Err(invalid(why));
    }
    audit_one(
        engine,
        &actor.username,
        "recon.resume",
        ("run", id),
        json!({ "status": status }),
    )
    .await?;
    let engine = engine.clone();
    let run = id.to_owned();
    let who = actor.username.clone();
    tokio::spawn(async move {
        if let Err(e) = crate::recon::resume_run(&engine, &run).await {
            tracing::warn!(run_id = %run, by = %who, error = %e, "resume failed");
        }
    });
    Ok(())
}

/// Acknowledges an open alert with a comment, audited in the same
/// transaction.
pub(super) async fn acknowledge(
    engine: &Engine,
    actor: &User,
    id: &str,
    comment: &str,
) -> Result<(), AppError> {
    let comment = crate::triage::required(comment, "comment")?;
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        if !alerts::acknowledge(&mut tx, id, &actor.username, comment, now).await? {
            return Err(TxError::App(AppError::NotFound));
        }
        audit::append(
            &mut tx,
            &engine.db.audit,
            &audit::Entry {
                actor: actor.username.clone(),
                action: "alert.acknowledge",
                object_type: "alert",
                object_id: id.to_owned(),
                before: Some(json!({ "acknowledged": false })),
                after: Some(json!({ "acknowledged": true, "comment": comment })),
            },
            now,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    })
    .await
}

/// Most alerts one bulk acknowledgement takes (a page is 50).
pub const ACK_LIMIT: usize = 200;

/// Acknowledges the alerts `ids` with one comment in one transaction, each
/// audited as if acknowledged alone; those no longer open are named and
/// left as they were.
pub(super) async fn acknowledge_many(
    engine: &Engine,
    actor: &User,
    ids: &[String],
    comment: &str,
) -> Result<app::console::Acknowledged, AppError> {
    let comment = crate::triage::required(comment, "comment")?;
    let mut unique: Vec<&str> = Vec::new();
    for id in ids.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        if !unique.contains(&id) {
            unique.push(id);
        }
    }
    if unique.is_empty() {
        return Err(invalid("tick at least one alert to acknowledge"));
    }
    if unique.len() > ACK_LIMIT {
        return Err(invalid(format!(
            "at most {ACK_LIMIT} alerts are acknowledged at once; {} were ticked",
            unique.len()
        )));
    }
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        let mut done = app::console::Acknowledged::default();
        for id in &unique {
            if !alerts::acknowledge(&mut tx, id, &actor.username, comment, now).await? {
                done.skipped.push((*id).to_owned());
                continue;
            }
            audit::append(
                &mut tx,
                &engine.db.audit,
                &audit::Entry {
                    actor: actor.username.clone(),
                    action: "alert.acknowledge",
                    object_type: "alert",
                    object_id: (*id).to_owned(),
                    before: Some(json!({ "acknowledged": false })),
                    after: Some(json!({ "acknowledged": true, "comment": comment })),
                },
                now,
            )
            .await?;
            done.acknowledged.push((*id).to_owned());
        }
        tx.commit().await?;
        Ok(done)
    })
    .await
}
