//! Bulk work under the same rules as one ticket's: a list of tickets (or
//! of a bulk proposal's items) fixed when a job starts, then worked in the
//! background one item at a time, each through the single ticket's own
//! function — `assign`, `comment`, `conclude`, `propose`, `approve`,
//! `reject` — so each is its own transaction with its own audit entry, and
//! every payment move goes through `engine::apply`. Before each item the
//! job looks whether it was cancelled: what was worked stays worked once,
//! the rest stays as it was. Jobs of the job runner (`crate::jobs`): a
//! job a stopped process left is resumed by the workers. A bulk close may be undone for
//! [`UNDO_MINUTES`] after it ends ([`undo`]): a job reopening exactly the
//! tickets it closed.

use super::{Reopened, entry, fixes, required};
use crate::accounts::{TxError, decision_refusal, internal, retrying};
use crate::engine::Engine;
use crate::store;
use crate::store::bulk::{self, NewBulk, NewJob};
use crate::store::{audit, tickets, users};
use app::bulk::{BULK_LIMIT, UNDO_MINUTES};
use app::error::AppError;
use app::tickets::{FixKind, FixRequest};
use app::types::{Role, User};
use serde_json::{Value, json};
use std::time::Duration;

/// A short pause between items: a long job leaves the writer to the day's
/// webhooks between its transactions (1,000 items: 25 s more).
const ITEM_PAUSE: Duration = Duration::from_millis(25);

/// How long after a bulk close ends it may be undone.
pub const UNDO_WINDOW_US: i64 = UNDO_MINUTES * 60 * 1_000_000;

/// What a bulk job does to each item.
#[derive(Clone, Debug)]
pub enum BulkAction {
    Assign {
        owner: String,
    },
    Comment {
        text: String,
    },
    Close {
        conclusion: String,
    },
    Propose {
        kind: FixKind,
        reason: String,
        evidence: String,
    },
    Approve {
        comment: String,
    },
    Reject {
        comment: String,
    },
    /// A bulk close undone: each ticket it closed with `conclusion`
    /// reopened.
    Reopen {
        undoes: String,
        conclusion: String,
    },
}

impl BulkAction {
    fn kind(&self) -> &'static str {
        match self {
            BulkAction::Assign { .. } => "ASSIGN",
            BulkAction::Comment { .. } => "COMMENT",
            BulkAction::Close { .. } => "CLOSE",
            BulkAction::Propose { .. } => "PROPOSE",
            BulkAction::Approve { .. } => "APPROVE",
            BulkAction::Reject { .. } => "REJECT",
            BulkAction::Reopen { .. } => "REOPEN",
        }
    }

    fn params(&self) -> Value {
        match self {
            BulkAction::Assign { owner } => json!({ "owner": owner }),
            BulkAction::Comment { text } => json!({ "text": text }),
            BulkAction::Close { conclusion } => json!({ "conclusion": conclusion }),
            BulkAction::Propose {
                kind,
                reason,
                evidence,
            } => json!({ "kind": kind, "reason": reason, "evidence": evidence }),
            BulkAction::Approve { comment } => json!({ "comment": comment }),
            BulkAction::Reject { comment } => json!({ "comment": comment }),
            BulkAction::Reopen { undoes, conclusion } => {
                json!({ "undoes": undoes, "conclusion": conclusion })
            }
        }
    }

    /// The action back from a job's row (a resume reads it there).
    fn from_row(kind: &str, params: &str) -> Option<BulkAction> {
        let p: Value = serde_json::from_str(params).ok()?;
        let s = |k: &str| p[k].as_str().map(str::to_owned);
        Some(match kind {
            "ASSIGN" => BulkAction::Assign { owner: s("owner")? },
            "COMMENT" => BulkAction::Comment { text: s("text")? },
            "CLOSE" => BulkAction::Close {
                conclusion: s("conclusion")?,
            },
            "PROPOSE" => BulkAction::Propose {
                kind: serde_json::from_value(p["kind"].clone()).ok()?,
                reason: s("reason")?,
                evidence: s("evidence")?,
            },
            "APPROVE" => BulkAction::Approve {
                comment: s("comment")?,
            },
            "REJECT" => BulkAction::Reject {
                comment: s("comment")?,
            },
            "REOPEN" => BulkAction::Reopen {
                undoes: s("undoes")?,
                conclusion: s("conclusion")?,
            },
            _ => return None,
        })
    }

    /// The text every item gets, checked once before the job starts.
    fn check(&self) -> Result<(), AppError> {
        match self {
            BulkAction::Assign { owner } => required(owner, "owner").map(drop),
            BulkAction::Comment { text } => required(text, "comment").map(drop),
            BulkAction::Close { conclusion } => required(conclusion, "conclusion").map(drop),
            BulkAction::Propose {
                reason, evidence, ..
            } => {
                required(reason, "reason")?;
                required(evidence, "evidence").map(drop)
            }
            BulkAction::Approve { comment } | BulkAction::Reject { comment } => {
                required(comment, "comment").map(drop)
            }
            BulkAction::Reopen { .. } => Ok(()),
        }
    }
}

/// Over the limit, or nothing: refused before anything is written.
fn check_size(targets: &[String]) -> Result<(), AppError> {
    if targets.is_empty() {
        return Err(AppError::Invalid {
            detail: "no ticket selected".into(),
        });
    }
    if targets.len() > BULK_LIMIT {
        return Err(AppError::Invalid {
            detail: format!(
                "{} tickets selected; a bulk action takes at most {BULK_LIMIT} — narrow the filter",
                targets.len()
            ),
        });
    }
    Ok(())
}

fn new_id(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::now_v7().simple()).to_ascii_uppercase()
}

/// Writes the job (and, for a proposal, the bulk proposal) with its
/// audit entry in one transaction, then starts it.
async fn start(
    engine: &Engine,
    actor: &User,
    action: BulkAction,
    bulk_id: Option<&str>,
    targets: &[String],
    new_bulk: Option<(&str, &str)>,
) -> Result<String, AppError> {
    let job = new_id("BULK");
    let params = action.params().to_string();
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        if let (Some(id), Some((reason, evidence)), BulkAction::Propose { kind, .. }) =
            (bulk_id, new_bulk, &action)
        {
            bulk::insert_bulk(
                &mut tx,
                &NewBulk {
                    bulk_id: id,
                    kind: kind.as_str(),
                    reason,
                    evidence,
                    proposer_id: &actor.id,
                    proposer_name: &actor.username,
                    now,
                },
            )
            .await?;
        }
        if let BulkAction::Reopen { undoes, .. } = &action {
            // One undo per close, whoever asks first.
            if !bulk::mark_undone(&mut tx, undoes, &job, now).await? {
                return Err(TxError::App(AppError::Refused {
                    detail: format!("bulk close {undoes} was undone already"),
                }));
            }
            let undone = entry(
                actor,
                "bulk.undo",
                ("bulk_job", undoes),
                Some(json!({ "undone_by": null })),
                json!({ "undone_by": job, "items": targets }),
            );
            audit::append(&mut tx, &engine.db.audit, &undone, now).await?;
        }
        bulk::insert_job(
            &mut tx,
            &NewJob {
                job_id: &job,
                kind: action.kind(),
                bulk_id,
                params_json: &params,
                requested_by_id: &actor.id,
                requested_by: &actor.username,
                now,
            },
            targets,
        )
        .await?;
        let started = entry(
            actor,
            "bulk.start",
            ("bulk_job", &job),
            None,
            json!({ "kind": action.kind(), "bulk": bulk_id, "params": action.params(), "items": targets }),
        );
        audit::append(&mut tx, &engine.db.audit, &started, now).await?;
        tx.commit().await?;
        Ok(())
    })
    .await?;
    crate::jobs::spawn::<BulkRun>(engine, &job);
    Ok(job)
}

/// Starts assigning, commenting or closing `tickets`; returns the job.
pub async fn start_action(
    engine: &Engine,
    actor: &User,
    action: BulkAction,
    tickets: &[String],
) -> Result<String, AppError> {
    if !matches!(
        action,
        BulkAction::Assign { .. } | BulkAction::Comment { .. } | BulkAction::Close { .. }
    ) {
        return Err(AppError::Invalid {
            detail: "a bulk action is ASSIGN, COMMENT or CLOSE".into(),
        });
    }
    action.check()?;
    check_size(tickets)?;
    if let BulkAction::Assign { owner } = &action {
        let worker = users::worker(&engine.db.pool, owner.trim())
            .await
            .map_err(internal)?;
        if worker.is_none() {
            return Err(AppError::Invalid {
                detail: format!("{} is not an active operator or supervisor", owner.trim()),
            });
        }
    }
    start(engine, actor, action, None, tickets, None).await
}

/// Proposes the same fix for every ticket of `tickets`: a bulk proposal,
/// its items proposed by a job one ticket at a time (a ticket the fix does
/// not fit is skipped, with why). Returns (bulk proposal, job).
pub async fn propose(
    engine: &Engine,
    actor: &User,
    kind: FixKind,
    reason: &str,
    evidence: &str,
    tickets: &[String],
) -> Result<(String, String), AppError> {
    let action = BulkAction::Propose {
        kind,
        reason: reason.trim().to_owned(),
        evidence: evidence.trim().to_owned(),
    };
    action.check()?;
    check_size(tickets)?;
    let bulk_id = new_id("BP");
    let (reason, evidence) = (reason.trim(), evidence.trim());
    let job = start(
        engine,
        actor,
        action,
        Some(&bulk_id),
        tickets,
        Some((reason, evidence)),
    )
    .await?;
    Ok((bulk_id, job))
}

/// Approves (or rejects) every waiting item of a bulk proposal, each
/// through the single proposal's decision; never by its proposer.
pub async fn decide(
    engine: &Engine,
    actor: &User,
    bulk_id: &str,
    approve: bool,
    comment: &str,
) -> Result<(String, i64), AppError> {
    let comment = required(comment, "comment")?.to_owned();
    let pool = &engine.db.pool;
    let Some(b) = bulk::bulk(pool, bulk_id).await.map_err(internal)? else {
        return Err(AppError::NotFound);
    };
    // Each item's own statement refuses the proposer too, and a decider
    // whose grant is pending or who vouched for the proposer; said here at
    // once rather than as N skipped items.
    if let Some(why) = decision_refusal(pool, &actor.id, &b.proposer_id).await? {
        return Err(why);
    }
    let items = bulk::pending_items(pool, bulk_id).await.map_err(internal)?;
    if items.is_empty() {
        return Err(AppError::ProposalDecided);
    }
    let action = if approve {
        BulkAction::Approve { comment }
    } else {
        BulkAction::Reject { comment }
    };
    let total = items.len() as i64;
    let job = start(engine, actor, action, Some(bulk_id), &items, None).await?;
    Ok((job, total))
}

/// Until when a job may be undone: a bulk close that ended, closed at
/// least one ticket and was not undone, for [`UNDO_WINDOW_US`] after.
pub fn undo_until(job: &bulk::JobRow) -> Option<i64> {
    let ended = job.finished_at?;
    (job.kind == "CLOSE" && job.undone_by.is_none() && job.done > 0)
        .then_some(ended + UNDO_WINDOW_US)
}

/// Undoes a bulk close within its window: a job reopening exactly the
/// tickets it closed (each still closed with its conclusion), by whoever
/// started it or a supervisor. Returns (job, tickets).
pub async fn undo(engine: &Engine, actor: &User, job_id: &str) -> Result<(String, i64), AppError> {
    let pool = &engine.db.pool;
    let Some(job) = bulk::job(pool, job_id).await.map_err(internal)? else {
        return Err(AppError::NotFound);
    };
    if job.requested_by_id != actor.id && actor.role != Role::Supervisor {
        return Err(AppError::Forbidden);
    }
    if job.kind != "CLOSE" {
        return Err(AppError::Invalid {
            detail: format!("only a bulk close can be undone, not a {}", job.kind),
        });
    }
    if let Some(by) = &job.undone_by {
        return Err(AppError::Refused {
            detail: format!("bulk close {job_id} was undone already, by job {by}"),
        });
    }
    if job.finished_at.is_none() {
        return Err(AppError::Refused {
            detail: format!(
                "the job is {}: cancel it or let it end, then undo",
                job.status
            ),
        });
    }
    let Some(until) = undo_until(&job) else {
        return Err(AppError::Refused {
            detail: "the job closed no ticket".into(),
        });
    };
    if engine.now() > until {
        return Err(AppError::UndoExpired {
            minutes: UNDO_MINUTES as u64,
        });
    }
    let action = match BulkAction::from_row(&job.kind, &job.params_json) {
        Some(BulkAction::Close { conclusion }) => BulkAction::Reopen {
            undoes: job_id.to_owned(),
            conclusion,
        },
        _ => {
            return Err(internal(format!("unreadable bulk close {job_id}")));
        }
    };
    let tickets = bulk::done_targets(pool, job_id).await.map_err(internal)?;
    let total = tickets.len() as i64;
    let reopening = start(engine, actor, action, None, &tickets, None).await?;
    Ok((reopening, total))
}

/// Asks a running job to stop before its next item: by whoever started
/// it, or a supervisor.
pub async fn cancel(engine: &Engine, actor: &User, job_id: &str) -> Result<(), AppError> {
    let Some(job) = bulk::job(&engine.db.pool, job_id).await.map_err(internal)? else {
        return Err(AppError::NotFound);
    };
    if job.requested_by_id != actor.id && actor.role != Role::Supervisor {
        return Err(AppError::Forbidden);
    }
    let asked = retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
        if !bulk::request_cancel(&mut *tx, job_id, now).await? {
            return Ok(false);
        }
        let cancelled = entry(
            actor,
            "bulk.cancel",
            ("bulk_job", job_id),
            Some(json!({ "status": "RUNNING" })),
            json!({ "status": "CANCELLING" }),
        );
        audit::append(&mut tx, &engine.db.audit, &cancelled, now).await?;
        tx.commit().await?;
        Ok::<_, TxError>(true)
    })
    .await?;
    if asked {
        Ok(())
    } else {
        Err(AppError::Refused {
            detail: format!("the job is {}, not running", job.status),
        })
    }
}

/// A bulk job as the runner works it: one item a chunk, so a cancel is
/// seen before each item and the writer is left between two.
pub struct BulkRun {
    job: bulk::JobRow,
    action: BulkAction,
    actor: User,
    cancelled: bool,
}

impl crate::jobs::Kind for BulkRun {
    type Ctx = Engine;
    type Item = (i64, String);
    const NAME: &'static str = "bulk";
    const PAUSE: Duration = ITEM_PAUSE;

    async fn load(engine: &Engine, id: &str) -> Result<Self, AppError> {
        let pool = &engine.db.pool;
        let job = bulk::job(pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let action =
            BulkAction::from_row(&job.kind, &job.params_json).ok_or_else(|| AppError::Invalid {
                detail: format!("unreadable bulk job {}", job.kind),
            })?;
        // The person as they are now: a disabled account or a lost role
        // stops the job.
        let actor = users::by_id(pool, &job.requested_by_id)
            .await
            .map_err(internal)?
            .filter(|u| !u.disabled)
            .ok_or_else(|| AppError::Refused {
                detail: format!("{} can no longer work tickets", job.requested_by),
            })?;
        let allowed = match action {
            BulkAction::Approve { .. } | BulkAction::Reject { .. } => {
                actor.role == Role::Supervisor
            }
            _ => matches!(actor.role, Role::Operator | Role::Supervisor),
        };
        if !allowed {
            return Err(AppError::Forbidden);
        }
        Ok(BulkRun {
            job,
            action,
            actor,
            cancelled: false,
        })
    }

    async fn running(&mut self, engine: &Engine) -> Result<bool, AppError> {
        let status = bulk::status(&engine.db.pool, &self.job.job_id)
            .await
            .map_err(internal)?;
        self.cancelled = status.as_deref() != Some("RUNNING");
        Ok(!self.cancelled)
    }

    async fn next_chunk(&mut self, engine: &Engine) -> Result<Vec<Self::Item>, AppError> {
        bulk::next_items(&engine.db.pool, &self.job.job_id, 1)
            .await
            .map_err(internal)
    }

    async fn work_item(
        &mut self,
        engine: &Engine,
        (seq, target): Self::Item,
    ) -> Result<(), AppError> {
        let id = &self.job.job_id;
        let (outcome, detail) = work(
            engine,
            &self.actor,
            &self.action,
            self.job.bulk_id.as_deref(),
            &target,
        )
        .await;
        retrying(|| async {
            let mut tx = engine.db.begin_write().await?;
            bulk::item_worked(&mut tx, id, seq, outcome, &detail, engine.now()).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Each item's row counts it and bumps the job: nothing more to write.
    async fn touch(&mut self, _: &Engine) -> Result<(), AppError> {
        Ok(())
    }

    async fn finish(&mut self, engine: &Engine) -> Result<(), AppError> {
        let id = &self.job.job_id;
        bulk::finish(&engine.db.pool, id, engine.now())
            .await
            .map_err(internal)?;
        if self.cancelled {
            tracing::info!(job = id, "bulk job cancelled");
        } else {
            tracing::info!(job = id, kind = self.job.kind, "bulk job done");
        }
        Ok(())
    }

    async fn fail(engine: &Engine, id: &str, error: &str) -> store::Result<()> {
        bulk::fail(&engine.db.pool, id, error, engine.now()).await
    }

    async fn silent(engine: &Engine, silent_us: i64) -> store::Result<Vec<String>> {
        let pool = &engine.db.pool;
        let before = engine.now() - silent_us;
        let mut silent = Vec::new();
        for id in bulk::unfinished(pool).await? {
            if bulk::job(pool, &id)
                .await?
                .is_some_and(|job| job.updated_at < before)
            {
                silent.push(id);
            }
        }
        Ok(silent)
    }
}

/// One item through the single ticket's function: DONE, SKIPPED (it no
/// longer fits: closed, decided, stale, not applicable) or FAILED, and why.
async fn work(
    engine: &Engine,
    actor: &User,
    action: &BulkAction,
    bulk_id: Option<&str>,
    target: &str,
) -> (&'static str, String) {
    let result = match action {
        BulkAction::Assign { owner } => super::assign(engine, actor, target, owner)
            .await
            .map(|()| format!("assigned to {owner}")),
        BulkAction::Comment { text } => super::comment(engine, actor, target, text)
            .await
            .map(|()| "commented".to_owned()),
        BulkAction::Close { conclusion } => super::conclude(engine, actor, target, conclusion)
            .await
            .map(|()| "closed".to_owned()),
        BulkAction::Propose {
            kind,
            reason,
            evidence,
        } => {
            // A payment Reckon lacks is backfilled for the order the
            // statement names, when it names one; one fix cannot name
            // each ticket's order otherwise.
            let order_no = match tickets::ticket(&engine.db.pool, target).await {
                Ok(t) => t.and_then(|t| t.order_no),
                Err(e) => return ("FAILED", internal(e).to_string()),
            };
            let fix = FixRequest {
                ticket_id: target.to_owned(),
                kind: *kind,
                reason: reason.clone(),
                evidence: evidence.clone(),
                order_no,
                keep: None,
            };
            fixes::propose_item(engine, actor, &fix, bulk_id)
                .await
                .map(|p| format!("proposal {p}"))
        }
        BulkAction::Approve { comment } => fixes::approve(engine, actor, target, comment)
            .await
            .map(|r| r.detail),
        BulkAction::Reject { comment } => fixes::reject(engine, actor, target, comment)
            .await
            .map(|()| "rejected".to_owned()),
        BulkAction::Reopen { undoes, conclusion } => {
            match super::reopen(engine, actor, target, undoes, conclusion).await {
                Ok(Reopened::Yes) => Ok("reopened".to_owned()),
                Ok(Reopened::No(why)) => return ("SKIPPED", why),
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(detail) => ("DONE", detail),
        Err(e @ (AppError::Internal { .. } | AppError::Refused { .. })) => {
            ("FAILED", e.to_string())
        }
        Err(AppError::ProposalStale { reason }) => ("SKIPPED", format!("stale: {reason}")),
        Err(e) => ("SKIPPED", e.to_string()),
    }
}
