//! The callback-retry lane's pass: callbacks whose processing failed (their
//! time has come) or was left half-done by a stopped process are parsed
//! from their stored bytes and processed again.

use super::intake::notice_outcome;
use super::refunds::RefundOutcome;
use super::{BATCH, Engine, LEASE_US};
use crate::providers::Notification;
use crate::store;
use crate::store::callbacks;
use http::{HeaderMap, HeaderName, HeaderValue};

impl Engine {
    /// Callbacks that failed (their time has come) or were left half-done by
    /// a stopped process are processed again. Returns how many.
    pub async fn retry_callbacks(&self, now: i64) -> store::Result<usize> {
        let stale_before = now - 15_000_000;
        if !callbacks::any_due(&self.db.pool, now, stale_before).await? {
            return Ok(0);
        }
        let due = callbacks::lease_due(
            &self.db.pool,
            now,
            stale_before,
            now + LEASE_US,
            BATCH,
            self.db.skip_locked(),
        )
        .await?;
        for row in &due {
            let now = self.now();
            self.metrics.callback("retry");
            let Some(provider) = self.providers.get(&row.provider).cloned() else {
                callbacks::failed(
                    &self.db.pool,
                    &row.id,
                    "provider no longer configured",
                    Some(now + LEASE_US),
                    now,
                )
                .await?;
                continue;
            };
            let headers = headers_from_json(&row.headers_json);
            match provider.parse(&headers, &row.payload) {
                Ok(Notification::Payment(n)) => {
                    let outcome = notice_outcome(&n, provider.name(), &row.id, &row.trace_id);
                    self.process(&row.id, &outcome).await;
                }
                Ok(Notification::Refund(n)) => {
                    let outcome =
                        RefundOutcome::of_notice(&n, provider.name(), &row.id, &row.trace_id);
                    self.process_refund(&row.id, &outcome).await;
                }
                Ok(Notification::Dispute(n)) => {
                    self.process_dispute(&row.id, &row.provider, &n, &row.trace_id)
                        .await;
                }
                Ok(Notification::Ignored { .. }) => {
                    callbacks::succeeded(&self.db.pool, &row.id, "ignored", now).await?;
                }
                Err(e) => {
                    callbacks::failed(
                        &self.db.pool,
                        &row.id,
                        &format!("unreadable: {e}"),
                        None,
                        now,
                    )
                    .await?;
                }
            }
        }
        Ok(due.len())
    }
}

/// The headers a callback was stored with (a JSON object of strings).
pub fn headers_from_json(text: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(text) {
        for (k, v) in map {
            if let (Ok(name), Some(Ok(value))) = (
                HeaderName::from_bytes(k.as_bytes()),
                v.as_str().map(HeaderValue::from_str),
            ) {
                headers.insert(name, value);
            }
        }
    }
    headers
}
