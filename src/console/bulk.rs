//! Bulk work as the console asks for it: a selection (ticked tickets, or
//! every ticket the list's filters match) resolved to ticket ids, capped,
//! and handed to triage's bulk jobs; the bulk proposals and jobs read back
//! with their progress and, for a bulk close, until when it may be undone.

use super::{Desk, invalid};
use crate::accounts::internal;
use crate::engine::Engine;
use crate::store::bulk::{self, BulkRow, JobRow};
use crate::store::lists::{self, QueueAfter};
use crate::store::proposals;
use crate::triage::bulk::{self as work, BulkAction};
use app::bulk::{BULK_LIMIT, BulkDetail, BulkJob, BulkProposal, BulkStarted, Selection};
use app::error::AppError;
use app::tickets::FixKind;
use app::types::User;

/// Rows per query when a filter is resolved.
const CHUNK: i64 = 500;

impl Desk {
    /// The tickets a selection names: the ticked ones, or every one the
    /// filter matches (all pages). More than [`BULK_LIMIT`] is refused.
    async fn selected(&self, s: &Selection) -> Result<Vec<String>, AppError> {
        let ids = match s.scope.as_str() {
            "ids" => s.id_list(),
            "filter" => {
                let mut f = s.filter.clone();
                f.after = None;
                let mut out = Vec::new();
                let mut after: Option<QueueAfter> = None;
                loop {
                    let chunk =
                        lists::tickets(&self.engine.db, &f, after.as_ref(), CHUNK, self.now())
                            .await
                            .map_err(internal)?;
                    let full = chunk.len() as i64 == CHUNK;
                    after = chunk.last().map(QueueAfter::of);
                    out.extend(chunk.into_iter().map(|t| t.discrepancy_id));
                    // One past the limit is enough to refuse.
                    if !full || out.len() > BULK_LIMIT {
                        break;
                    }
                }
                out
            }
            other => {
                return Err(invalid(format!(
                    "unknown selection `{other}` (ids or filter)"
                )));
            }
        };
        if ids.len() > BULK_LIMIT {
            return Err(invalid(format!(
                "more than {BULK_LIMIT} tickets selected; a bulk action takes at most {BULK_LIMIT} — narrow the filter"
            )));
        }
        Ok(ids)
    }
}

#[async_trait::async_trait]
impl app::ssr::Bulk for Desk {
    async fn bulk_action(
        &self,
        actor: &User,
        action: &str,
        text: &str,
        s: &Selection,
    ) -> Result<BulkStarted, AppError> {
        let text = text.trim().to_owned();
        let action = match action {
            "ASSIGN" => BulkAction::Assign { owner: text },
            "COMMENT" => BulkAction::Comment { text },
            "CLOSE" => BulkAction::Close { conclusion: text },
            other => {
                return Err(invalid(format!(
                    "unknown bulk action `{other}` (ASSIGN, COMMENT or CLOSE)"
                )));
            }
        };
        let tickets = self.selected(s).await?;
        let job_id = work::start_action(&self.engine, actor, action, &tickets).await?;
        Ok(BulkStarted {
            job_id,
            bulk_id: None,
            total: tickets.len() as i64,
        })
    }

    async fn bulk_propose(
        &self,
        actor: &User,
        kind: FixKind,
        reason: &str,
        evidence: &str,
        s: &Selection,
    ) -> Result<BulkStarted, AppError> {
        let tickets = self.selected(s).await?;
        let (bulk_id, job_id) =
            work::propose(&self.engine, actor, kind, reason, evidence, &tickets).await?;
        Ok(BulkStarted {
            job_id,
            bulk_id: Some(bulk_id),
            total: tickets.len() as i64,
        })
    }

    async fn bulk_decide(
        &self,
        actor: &User,
        bulk_id: &str,
        approve: bool,
        comment: &str,
    ) -> Result<BulkStarted, AppError> {
        let (job_id, total) = work::decide(&self.engine, actor, bulk_id, approve, comment).await?;
        Ok(BulkStarted {
            job_id,
            bulk_id: Some(bulk_id.to_owned()),
            total,
        })
    }

    async fn bulk_cancel(&self, actor: &User, id: &str) -> Result<(), AppError> {
        work::cancel(&self.engine, actor, id).await
    }

    async fn bulk_undo(&self, actor: &User, id: &str) -> Result<BulkStarted, AppError> {
        let (job_id, total) = work::undo(&self.engine, actor, id).await?;
        Ok(BulkStarted {
            job_id,
            bulk_id: None,
            total,
        })
    }

    async fn bulk_job(&self, id: &str) -> Result<BulkJob, AppError> {
        bulk_job(&self.engine, id).await
    }

    async fn bulk_jobs(&self) -> Result<Vec<BulkJob>, AppError> {
        let rows = bulk::recent_jobs(&self.engine.db.pool, None)
            .await
            .map_err(internal)?;
        let now = self.now();
        Ok(rows
            .into_iter()
            .map(|r| job_of(r, Vec::new(), now))
            .collect())
    }

    async fn bulk_proposals(&self) -> Result<Vec<BulkProposal>, AppError> {
        let rows = bulk::recent_bulks(&self.engine.db.pool)
            .await
            .map_err(internal)?;
        rows.into_iter().map(proposal_of).collect()
    }

    async fn bulk_proposal(&self, id: &str) -> Result<BulkDetail, AppError> {
        let pool = &self.engine.db.pool;
        let row = bulk::bulk(pool, id)
            .await
            .map_err(internal)?
            .ok_or(AppError::NotFound)?;
        let items = proposals::of_bulk(pool, id, self.now())
            .await
            .map_err(internal)?;
        let mut jobs = Vec::new();
        for j in bulk::recent_jobs(pool, Some(id)).await.map_err(internal)? {
            let exceptions = bulk::exceptions(pool, &j.job_id).await.map_err(internal)?;
            jobs.push(job_of(j, exceptions, self.now()));
        }
        Ok(BulkDetail {
            bulk: proposal_of(row)?,
            items,
            jobs,
        })
    }
}

/// A job with its progress and the items it skipped or failed.
pub async fn bulk_job(engine: &Engine, id: &str) -> Result<BulkJob, AppError> {
    let pool = &engine.db.pool;
    let row = bulk::job(pool, id)
        .await
        .map_err(internal)?
        .ok_or(AppError::NotFound)?;
    let exceptions = bulk::exceptions(pool, id).await.map_err(internal)?;
    Ok(job_of(row, exceptions, engine.now()))
}

/// A job as the console shows it at `now`: its undo offered only while
/// its window is open.
fn job_of(r: JobRow, exceptions: Vec<(String, String, String)>, now: i64) -> BulkJob {
    let undo_until = work::undo_until(&r).filter(|until| now <= *until);
    BulkJob {
        pending: (r.total - r.done - r.skipped - r.failed).max(0),
        id: r.job_id,
        kind: r.kind,
        bulk_id: r.bulk_id,
        requested_by: r.requested_by,
        status: r.status,
        total: r.total,
        done: r.done,
        skipped: r.skipped,
        failed: r.failed,
        error: r.error,
        started_at: r.started_at,
        finished_at: r.finished_at,
        exceptions,
        undo_until,
        undone_by: r.undone_by,
    }
}

fn proposal_of(r: BulkRow) -> Result<BulkProposal, AppError> {
    Ok(BulkProposal {
        kind: r
            .kind
            .parse()
            .map_err(|e: String| internal(format!("bulk {}: {e}", r.bulk_id)))?,
        id: r.bulk_id,
        reason: r.reason,
        evidence: r.evidence,
        proposer_id: r.proposer_id,
        proposer: r.proposer_name,
        proposed_at: r.proposed_at,
        items: r.items,
        pending: r.pending,
        stale: r.stale,
        executed: r.executed,
        rejected: r.rejected,
        failed: r.failed,
    })
}
