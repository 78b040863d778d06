//! Stored callbacks as the console shows them: the list (newest first,
//! keyset pages), one callback in full (masked headers and body, what it
//! moved, its replays and redeliveries), and replaying them — one, or every
//! DEAD one of a provider and time range as a job that runs in the
//! background and can be left and returned to.

use super::{Desk, audit_one, invalid, mask, page};
use crate::accounts::internal;
use crate::engine::Engine;
use crate::store;
use crate::store::lists::{self as store_lists, After, CallbackQuery};
use crate::store::{audit, callbacks, payments, replay_jobs};
use app::console::{
    CallbackDetail, CallbackFilter, CallbackPage, CallbackProcessing, CallbackReplay,
    CallbackSummary, RawView, ReplayJob,
};
use app::error::AppError;
use app::tickets::{ActionResult, PAGE_SIZE};
use app::types::User;
use serde_json::json;
use std::collections::BTreeMap;

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

#[async_trait::async_trait]
impl app::ssr::Callbacks for Desk {
    async fn callbacks(&self, f: &CallbackFilter) -> Result<CallbackPage, AppError> {
        let query = CallbackQuery {
            q: f.q.as_deref(),
            status: f.status.as_deref(),
            provider: f.provider.as_deref(),
            received: f.day.as_deref().map(|d| self.range(d)).transpose()?,
            after: After::parse(f.after.as_deref()),
        };
        let rows = store_lists::callbacks(&self.engine.db, &query, PAGE_SIZE + 1)
            .await
            .map_err(internal)?;
        let (items, next) = page(rows, |c: &CallbackSummary| {
            format!("{}.{}", c.received_at, c.id)
        });
        Ok(CallbackPage { items, next })
    }

    async fn callback(&self, id: &str) -> Result<CallbackDetail, AppError> {
        let db = &self.engine.db;
        let local = |at| self.local_minutes(at);
        let pool = &db.pool;
        let row = callbacks::detail(pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let summary = row.listed;
        let produced: Vec<String> = payments::moves_citing(pool, id)
            .await
            .map_err(internal)?
            .into_iter()
            .map(|(from, to, source, at)| format!("{} {from} → {to} ({source})", local(at)))
            .collect();
        let mut replays = callbacks::replays(pool, id).await.map_err(internal)?;
        if replays.is_empty() {
            // Replays made before each kept its own result: their audit entries.
            replays = audit::replays_of(pool, id)
                .await
                .map_err(internal)?
                .into_iter()
                .map(|(at, actor, after)| {
                    let after = after
                        .as_deref()
                        .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                        .unwrap_or_default();
                    let text = |k: &str| after[k].as_str().unwrap_or_default().to_owned();
                    CallbackReplay {
                        at,
                        actor,
                        class: text("class"),
                        detail: text("detail"),
                        error: None,
                        job: after["job"].as_str().map(str::to_owned),
                    }
                })
                .collect();
        }
        let mut identical_redeliveries = 0;
        let mut redeliveries = Vec::new();
        for r in callbacks::redeliveries(pool, id).await.map_err(internal)? {
            // Its own bytes again: counted, never listed as other bytes.
            if r.payload_hash == row.payload_hash {
                identical_redeliveries += r.deliveries;
                continue;
            }
            let what = if r.same_facts {
                "same facts, new envelope"
            } else {
                "OTHER FACTS: conflict, not applied"
            };
            let times = if r.deliveries > 1 {
                format!(" · ×{}", r.deliveries)
            } else {
                String::new()
            };
            redeliveries.push(format!(
                "{} {what} · sha-256 {}{times}",
                local(r.received_at),
                &r.payload_hash[..r.payload_hash.len().min(16)]
            ));
        }
        let original = match row.original_status {
            Some(status) => CallbackProcessing {
                status,
                outcome: row.original_outcome,
                error: row.original_error,
                at: row.original_processed_at,
            },
            None => CallbackProcessing {
                status: summary.processing_status.clone(),
                outcome: summary.outcome.clone(),
                error: row.error_message.clone(),
                at: row.processed_at,
            },
        };
        Ok(CallbackDetail {
            facts: row.facts,
            original,
            identical_redeliveries,
            redeliveries,
            replayable: summary.verify_result == "VERIFIED",
            summary,
            headers: mask::headers(&row.headers_json),
            payload_bytes: row.payload.len() as i64,
            payload: mask::payload(&row.payload),
            payload_hash: row.payload_hash,
            error_message: row.error_message,
            next_retry_at: row.next_retry_at,
            processed_at: row.processed_at,
            refund_no: row.refund_no,
            produced,
            replays,
        })
    }

    async fn callback_raw(&self, actor: &User, id: &str) -> Result<RawView, AppError> {
        if !actor.view_raw {
            return Err(AppError::Forbidden);
        }
        let row = callbacks::detail(&self.engine.db.pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        // Written before anything is shown: a look that cannot be recorded
        // is not given.
        audit_one(
            &self.engine,
            &actor.username,
            "callback.view_raw",
            ("callback", id),
            json!({ "payload_hash": row.payload_hash }),
        )
        .await?;
        Ok(RawView {
            headers: mask::raw_headers(&row.headers_json),
            body: mask::raw_payload(&row.payload),
        })
    }

    async fn replay_callback(&self, actor: &User, id: &str) -> Result<ActionResult, AppError> {
        replay_one(&self.engine, &actor.username, id, None).await
    }

    /// Starts replaying every DEAD callback of `provider` received in
    /// [from, to] (business days, inclusive) in the background; returns the
    /// job to watch.
    async fn start_bulk_replay(
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

    /// The recent replay jobs; a job silent too long is shown as the
    /// interrupted job it is.
    async fn replay_jobs(&self) -> Result<Vec<ReplayJob>, AppError> {
        let engine = &self.engine;
        let now = engine.now();
        let rows = replay_jobs::recent(&engine.db.pool, None)
            .await
            .map_err(internal)?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let classes: BTreeMap<String, i64> =
                    serde_json::from_str(&r.classes_json).unwrap_or_default();
                let mut job = ReplayJob {
                    classes: classes.into_iter().collect(),
                    ..r.job
                };
                if job.status == "RUNNING" && r.updated_at < now - crate::jobs::SILENT_US {
                    job.status = "FAILED".into();
                    job.error = Some("interrupted (the server stopped); start it again — callbacks already replayed are no longer DEAD".into());
                }
                job
            })
            .collect())
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
            job_id: row.job.id,
            provider: row.job.provider,
            range: (row.job.from_at, row.job.to_at),
            actor: row.job.requested_by,
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
