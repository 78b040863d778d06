//! The sinks page and API (issue 28, helper B): every configured sink with
//! its state and deliveries by state, and pausing or resuming one — a
//! reason required, audited in the same transaction. A resumed sink's
//! waiting deliveries are due at once, so the relay is woken.

use crate::accounts::{TxError, internal, retrying};
use crate::engine::Engine;
use crate::store::{audit, sinks};
use app::error::AppError;
use app::sinks::{SinkRow, delay_text};
use serde_json::json;

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
        .settings
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

/// Pauses (`pause`) or resumes a configured sink, audited with `actor`
/// and the reason. Doing what is already done is refused, so the audit
/// log holds only changes.
pub async fn set_paused(
    engine: &Engine,
    actor: &str,
    name: &str,
    reason: &str,
    pause: bool,
) -> Result<(), AppError> {
    if !engine.settings.sinks.iter().any(|s| s.name == name) {
        return Err(AppError::NotFound);
    }
    let reason = crate::triage::required(reason, "reason")?;
    retrying(|| async {
        let now = engine.now();
        let mut tx = engine.db.begin_write().await?;
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
            &engine.db.audit,
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
        engine.wake.outbox.notify_one();
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
