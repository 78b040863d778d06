//! The outbox relay's pass: due messages delivered to their sinks, at
//! least once, signed Standard-Webhooks style; retried with backoff, then
//! dead-lettered and alerted.

use crate::engine::{BATCH, Engine, LEASE_US};
use crate::store::{alerts, outbox, outbox_ops};

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
            let attempt = match sink {
                None => match self.settings.channel(&d.sink) {
                    // An alert channel's message, rendered for its kind.
                    Some(channel) => {
                        super::channels::deliver(http, channel, &event, self.now() / 1_000_000)
                            .await
                    }
                    None => Attempt::refused(format!("sink {} is not configured", d.sink)),
                },
                Some(sink) => self.deliver(http, sink, &event).await,
            };
            let now = self.now();
            // The attempt is logged with the delivery row's update, in one
            // transaction: the log never shows what the row does not.
            let mut tx = self.db.begin_write().await?;
            outbox_ops::record_attempt(&mut tx, &attempt.logged(d, now)).await?;
            match &attempt.error {
                None => {
                    let current = outbox::delivered(&mut *tx, d, now).await?;
                    tx.commit().await?;
                    if !current {
                        // Resent or leased again meanwhile: the row's
                        // newer state stands (the attempt stays logged).
                        continue;
                    }
                    // An alert channel's failing is told by `outbox_dead`
                    // on the other channels, not as a failing sink.
                    if sink.is_some() {
                        self.sink_delivered(&d.sink, now).await?;
                    }
                    self.metrics.outbox("delivered");
                }
                Some(error) => {
                    let attempts = d.attempts + 1;
                    // The sink's own schedule; an alert channel, or a sink
                    // no longer configured, keeps the doubling backoff.
                    let next = match sink {
                        Some(sink) => sink.next_attempt(attempts, now),
                        None => (attempts < self.settings.outbox_max_attempts)
                            .then(|| now + (10_000_000i64 << attempts.min(9)).min(3_600_000_000)),
                    };
                    let current = outbox::attempt_failed(&mut *tx, d, error, next).await?;
                    tx.commit().await?;
                    if !current {
                        continue;
                    }
                    if sink.is_some() {
                        self.sink_failed(&d.sink, error, now).await?;
                    }
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
        sink: &crate::engine::Sink,
        event: &outbox::EventRow,
    ) -> Attempt {
        // Signed as it leaves: a consumer checks the timestamp's tolerance.
        let ts = self.now() / 1_000_000;
        let body = event.payload.as_bytes();
        let started = std::time::Instant::now();
        let sent = http
            .post(&sink.url)
            .timeout(sink.timeout)
            .header("content-type", "application/json")
            .header("webhook-id", &event.message_id)
            .header("webhook-timestamp", ts.to_string())
            .header(
                "webhook-signature",
                sink.signature(&event.message_id, ts, body),
            )
            .body(event.payload.clone())
            .send()
            .await;
        let mut res = match sent {
            Ok(res) => res,
            Err(e) => {
                let mut a = Attempt::refused(e.without_url().to_string());
                a.latency_us = started.elapsed().as_micros() as i64;
                return a;
            }
        };
        let status = res.status();
        // Only the answer's head is kept: read no more than that.
        let mut head = Vec::new();
        while head.len() < ANSWER_HEAD
            && let Ok(Some(chunk)) = res.chunk().await
        {
            head.extend_from_slice(&chunk);
        }
        Attempt {
            status_code: Some(status.as_u16()),
            latency_us: started.elapsed().as_micros() as i64,
            answer_head: answer_head(&head),
            error: (!status.is_success()).then(|| format!("sink answered {status}")),
        }
    }
}

/// Bytes of a sink's answer kept in the attempts log.
const ANSWER_HEAD: usize = 256;

/// One delivery attempt's outcome (shared with the sinks and alert
/// channels): `error: None` means delivered. SMTP has no status code; its
/// reply goes into `answer_head`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attempt {
    pub status_code: Option<u16>,
    pub latency_us: i64,
    pub answer_head: String,
    pub error: Option<String>,
}

impl Attempt {
    /// Nothing was sent, or nothing answered.
    pub fn refused(error: String) -> Attempt {
        Attempt {
            status_code: None,
            latency_us: 0,
            answer_head: String::new(),
            error: Some(error),
        }
    }

    fn logged<'a>(&'a self, d: &'a outbox::DueDelivery, at: i64) -> outbox_ops::NewAttempt<'a> {
        outbox_ops::NewAttempt {
            message_id: &d.message_id,
            sink: &d.sink,
            at,
            status_code: self.status_code.map(i64::from),
            latency_us: self.latency_us,
            answer_head: &self.answer_head,
            error: self.error.as_deref(),
        }
    }
}

/// The first [`ANSWER_HEAD`] bytes as text, cut on a character boundary
/// (invalid UTF-8 replaced).
pub fn answer_head(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(ANSWER_HEAD)]);
    let mut end = text.len().min(ANSWER_HEAD);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::answer_head;

    #[test]
    fn the_answer_head_is_short_and_whole_characters() {
        assert_eq!(answer_head(b"ok"), "ok");
        let long = "\u{00e9}".repeat(300);
        let head = answer_head(long.as_bytes());
        assert!(head.len() <= 256);
        assert_eq!(head, "\u{00e9}".repeat(128));
        assert_eq!(answer_head(&[0xff, b'a']), "\u{fffd}a");
    }
}
