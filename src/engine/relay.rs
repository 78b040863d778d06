//! The outbox relay's pass: due messages delivered to their sinks, at
//! least once, signed Standard-Webhooks style; retried with backoff, then
//! dead-lettered and alerted.

use super::{BATCH, Engine, LEASE_US};
use crate::store::{alerts, outbox};

impl Engine {
    /// Delivers due outbox messages to their sinks, signed with
    /// `webhook-id` = message id so consumers can deduplicate. Returns how
    /// many deliveries were attempted.
    pub async fn relay_outbox(&self, http: &reqwest::Client, now: i64) -> sqlx::Result<usize> {
        let pool = &self.db.pool;
        let due = if outbox::any_due(pool, now).await? {
            outbox::lease_due(pool, now, now + LEASE_US, BATCH, self.db.skip_locked()).await?
        } else {
            Vec::new()
        };
        for d in &due {
            let Some(event) = outbox::event(pool, &d.message_id).await? else {
                continue;
            };
            let sink = self.settings.sinks.iter().find(|s| s.name == d.sink);
            let result = match sink {
                None => match self.settings.channel(&d.sink) {
                    // C: an alert channel's message, rendered for its kind.
                    Some(channel) => {
                        crate::alerting::deliver(http, channel, &event, self.now() / 1_000_000)
                            .await
                            .error
                            .map_or(Ok(()), Err)
                    }
                    None => Err(format!("sink {} is not configured", d.sink)),
                },
                Some(sink) => self.deliver(http, &sink.url, &event).await,
            };
            let now = self.now();
            match result {
                Ok(()) => {
                    outbox::delivered(pool, d, now).await?;
                    self.metrics.outbox("delivered");
                }
                Err(error) => {
                    let attempts = d.attempts + 1;
                    let next = (attempts < self.settings.outbox_max_attempts)
                        .then(|| now + (10_000_000i64 << attempts.min(9)).min(3_600_000_000));
                    outbox::attempt_failed(pool, d, &error, next).await?;
                    self.metrics
                        .outbox(if next.is_some() { "retry" } else { "dead" });
                    if next.is_none() {
                        alerts::raise_alert(
                            pool,
                            &alerts::NewAlert {
                                dedupe_key: &format!("outbox_dead:{}:{}", d.message_id, d.sink),
                                kind: "outbox_dead",
                                severity: "high",
                                payment_no: Some(&event.aggregate_id),
                                message: &format!(
                                    "outbox message {} to {} dead-lettered after {attempts} attempts: {error}",
                                    d.message_id, d.sink
                                ),
                                trace_id: None,
                                now,
                            },
                        )
                        .await?;
                    }
                }
            }
        }
        let now = self.now();
        let lag = outbox::oldest_pending(pool)
            .await?
            .map(|t| (now - t).max(0))
            .unwrap_or(0);
        self.metrics.outbox_lag(lag as f64 / 1e6);
        Ok(due.len())
    }

    async fn deliver(
        &self,
        http: &reqwest::Client,
        url: &str,
        event: &outbox::EventRow,
    ) -> Result<(), String> {
        // Signed as it leaves: a consumer checks the timestamp's tolerance.
        let ts = self.now() / 1_000_000;
        let body = event.payload.as_bytes();
        let res = http
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", &event.message_id)
            .header("webhook-timestamp", ts.to_string())
            .header(
                "webhook-signature",
                self.settings
                    .outbox_secret
                    .sign(&event.message_id, ts, body),
            )
            .body(event.payload.clone())
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        if res.status().is_success() {
            Ok(())
        } else {
            Err(format!("sink answered {}", res.status()))
        }
    }
}

/// One delivery attempt's outcome (the shared contract of issue 28):
/// `error: None` means delivered. SMTP has no status code; the server's
/// reply goes into `answer_head`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attempt {
    pub status_code: Option<u16>,
    pub latency_us: i64,
    pub answer_head: String,
    pub error: Option<String>,
}
