//! The outbox as the console reads it: every message with each sink's
//! delivery, and a message's attempts. Queuing deliveries again is the
//! outbox room's (`crate::outbox::jobs`).

use super::Desk;
use crate::accounts::internal;
use crate::engine::Engine;
use crate::outbox::jobs;
use crate::store::outbox;
use crate::store::outbox_ops as ops;
use app::error::AppError;
use app::outbox::{OutboxDetail, OutboxFilter, OutboxJob, OutboxMessage, OutboxPage, Resent};
use app::types::User;

const PAGE: i64 = 50;

/// A page of the outbox, newest first.
pub async fn list(engine: &Engine, filter: &OutboxFilter) -> Result<OutboxPage, AppError> {
    let q = jobs::query(engine, filter)?;
    let db = &engine.db;
    let mut rows = ops::messages(db, &q, PAGE + 1).await.map_err(internal)?;
    let next = (rows.len() as i64 > PAGE).then(|| {
        rows.truncate(PAGE as usize);
        let last = rows.last().expect("a full page");
        format!("{}.{}", last.created_at, last.message_id)
    });
    let ids: Vec<String> = rows.iter().map(|r| r.message_id.clone()).collect();
    let mut deliveries = ops::deliveries(db, &ids).await.map_err(internal)?;
    for m in &mut rows {
        let (mine, rest) = deliveries
            .drain(..)
            .partition(|d| d.message_id == m.message_id);
        deliveries = rest;
        m.deliveries = mine.into_iter().map(|d| d.delivery).collect();
    }
    Ok(OutboxPage {
        items: rows,
        next,
        sinks: sinks(engine).await?,
        sinks_configured: crate::outbox::any_configured(engine),
    })
}

/// Configured sinks, and any a delivery still names.
async fn sinks(engine: &Engine) -> Result<Vec<String>, AppError> {
    let mut all = ops::known_sinks(&engine.db.pool).await.map_err(internal)?;
    all.extend(engine.settings().sinks.iter().map(|s| s.name.clone()));
    all.extend(engine.settings().channels.iter().map(|c| c.name.clone()));
    all.sort();
    all.dedup();
    Ok(all)
}

/// A message with its payload and every attempt kept.
pub async fn message(engine: &Engine, id: &str) -> Result<OutboxDetail, AppError> {
    let pool = &engine.db.pool;
    let Some(event) = outbox::event(pool, id).await.map_err(internal)? else {
        return Err(AppError::NotFound);
    };
    let deliveries = ops::deliveries(&engine.db, &[id.to_owned()])
        .await
        .map_err(internal)?;
    let attempts = ops::attempts(pool, id).await.map_err(internal)?;
    Ok(OutboxDetail {
        message: OutboxMessage {
            message_id: event.message_id,
            event_type: event.event_type,
            payment_no: event.aggregate_id,
            created_at: event.created_at,
            deliveries: deliveries.into_iter().map(|d| d.delivery).collect(),
        },
        payload: event.payload,
        attempts,
        sinks_configured: crate::outbox::any_configured(engine),
    })
}

/// The outbox page: what it reads is also the API's; queuing deliveries
/// again is the outbox room's jobs, which audit it.
#[async_trait::async_trait]
impl app::ssr::Outbox for Desk {
    async fn outbox(&self, filter: &OutboxFilter) -> Result<OutboxPage, AppError> {
        list(&self.engine, filter).await
    }

    async fn outbox_message(&self, id: &str) -> Result<OutboxDetail, AppError> {
        message(&self.engine, id).await
    }

    async fn outbox_resend(
        &self,
        actor: &User,
        id: &str,
        sink: Option<&str>,
    ) -> Result<Resent, AppError> {
        jobs::resend(&self.engine, &actor.username, id, sink).await
    }

    async fn outbox_bulk_resend(
        &self,
        actor: &User,
        filter: &OutboxFilter,
    ) -> Result<OutboxJob, AppError> {
        let by = crate::policy::held::Proposer::user(actor);
        jobs::start_resend(
            &self.engine,
            &actor.username,
            Some(&by),
            filter,
            jobs::Run::Background,
        )
        .await
    }

    async fn outbox_recover(
        &self,
        actor: &User,
        sink: &str,
        since: &str,
    ) -> Result<OutboxJob, AppError> {
        jobs::start_recover(
            &self.engine,
            &actor.username,
            sink,
            since,
            jobs::Run::Background,
        )
        .await
    }

    async fn outbox_jobs(&self) -> Result<Vec<OutboxJob>, AppError> {
        jobs::jobs(&self.engine).await
    }

    async fn outbox_cancel_job(&self, actor: &User, job_id: &str) -> Result<OutboxJob, AppError> {
        jobs::cancel(&self.engine, &actor.username, job_id).await
    }
}
