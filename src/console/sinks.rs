//! The sinks page and API as read: every configured sink with its state
//! and deliveries by state. Pausing and resuming are the outbox room's
//! (`crate::outbox::sinks`).

use super::Desk;
use crate::accounts::internal;
use crate::engine::Engine;
use crate::store::sinks;
use app::error::AppError;
use app::sinks::{RetriedNow, SinkRow, delay_text};
use app::types::User;

/// The URL as shown: no user, password or query (a token may hide there).
fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let hidden_query = u.query().is_some();
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            let mut text = u.to_string();
            if hidden_query {
                text.push_str("?…");
            }
            text
        }
        Err(_) => "(not a URL)".into(),
    }
}

/// Every configured sink, in configuration order.
pub async fn list(engine: &Engine) -> Result<Vec<SinkRow>, AppError> {
    let pool = &engine.db.pool;
    let states = sinks::states(pool).await.map_err(internal)?;
    let counts = sinks::counts(pool).await.map_err(internal)?;
    Ok(engine
        .settings()
        .sinks
        .iter()
        .map(|s| {
            let st = states
                .iter()
                .find(|x| x.sink == s.name)
                .cloned()
                .unwrap_or_default();
            let n = counts
                .iter()
                .find(|x| x.sink == s.name)
                .cloned()
                .unwrap_or_default();
            let state = if st.paused_at.is_some() {
                "PAUSED"
            } else if st.failing_alerted_at.is_some() {
                "FAILING"
            } else {
                "ACTIVE"
            };
            SinkRow {
                name: s.name.clone(),
                url: shown_url(&s.url),
                event_types: s.event_types.clone(),
                schedule: s.schedule.iter().map(|d| delay_text(*d)).collect(),
                timeout_secs: s.timeout.as_secs(),
                state: state.into(),
                paused_at: st.paused_at,
                paused_by: st.paused_by,
                pause_reason: st.pause_reason,
                pending: n.pending,
                retrying: n.retrying,
                dead: n.dead,
                consecutive_failures: st.consecutive_failures,
                failing_since: st.failing_since,
                last_success_at: st.last_success_at,
                last_failure_at: st.last_failure_at,
                last_error: st.last_error,
            }
        })
        .collect())
}

/// The sinks page: what it reads is also the API's; pausing, resuming and
/// retrying now are the outbox room's, which audits them.
#[async_trait::async_trait]
impl app::ssr::Sinks for Desk {
    async fn sinks(&self) -> Result<Vec<SinkRow>, AppError> {
        list(&self.engine).await
    }

    async fn set_sink_paused(
        &self,
        actor: &User,
        name: &str,
        reason: &str,
        pause: bool,
    ) -> Result<(), AppError> {
        let by = crate::policy::held::Proposer::user(actor);
        crate::outbox::sinks::set_paused(
            &self.engine,
            &actor.username,
            Some(&by),
            name,
            reason,
            pause,
        )
        .await
    }

    async fn retry_sink_now(
        &self,
        actor: &User,
        name: &str,
        reason: &str,
    ) -> Result<RetriedNow, AppError> {
        crate::outbox::sinks::retry_now(&self.engine, &actor.username, name, reason).await
    }
}
