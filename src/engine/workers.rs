//! The engine's workers, in lanes that never wait on each other: provider
//! calls (see `calls`), reconciliation repairs, callback retries, the outbox
//! relay, the statement schedule. Each lane leases its due rows (so two
//! instances on one PostgreSQL never take the same row) and reads the clock
//! per task. Tests call each lane's pass directly with a moved clock.

use super::intake::notice_outcome;
use super::refunds::RefundOutcome;
use super::{Applied, Engine, Outcome, Source};
use crate::domain::{Currency, Money, PaymentNo, PaymentStatus, ProviderTxnId};
use crate::providers::{CallError, CreateRequest, Notification};
use crate::store::{alerts, callbacks, outbox, payments, tasks};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::future::Future;
use std::time::Duration;
use tokio::sync::Notify;

/// Longer than a batch of callback retries or outbox deliveries, so a
/// lease only lapses when its holder died.
const LEASE_US: i64 = 30_000_000;
pub(super) const BATCH: i64 = 50;

impl Engine {
    /// Runs every lane until the process stops, each on its own task.
    pub fn spawn_workers(&self) -> tokio::task::JoinHandle<()> {
        let engine = self.clone();
        tokio::spawn(async move {
            let http = reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("an HTTP client");
            // The statement schedule: a long pull holds up nothing else.
            let schedule = engine.clone();
            let pulls = tokio::spawn(async move {
                loop {
                    if let Err(e) = crate::recon::scheduled_pulls(&schedule, schedule.now()).await {
                        tracing::error!(error = %e, "statement pull schedule");
                    }
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            });
            let calls = tokio::spawn(engine.clone().call_lane());
            let e = engine.clone();
            let repairs = tokio::spawn(async move {
                lane(&e.wake.repairs, "reconciliation repairs", || {
                    e.run_repairs(e.now())
                })
                .await
            });
            let e = engine.clone();
            let retries = tokio::spawn(async move {
                lane(&e.wake.callbacks, "callback retries", || {
                    e.retry_callbacks(e.now())
                })
                .await
            });
            let e = engine.clone();
            let relay = tokio::spawn(async move {
                lane(&e.wake.outbox, "outbox relay", || {
                    e.relay_outbox(&http, e.now())
                })
                .await
            });
            let _ = tokio::join!(pulls, calls, repairs, retries, relay);
        })
    }

    /// Callbacks that failed (their time has come) or were left half-done by
    /// a stopped process are processed again. Returns how many.
    pub async fn retry_callbacks(&self, now: i64) -> sqlx::Result<usize> {
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

    /// One create or status query (refunds are the refund module's), its
    /// clock read when it starts and again when the provider has answered.
    pub(super) async fn run_task(&self, task: &tasks::TaskRow) -> sqlx::Result<()> {
        if task.kind == tasks::REFUND || task.kind == tasks::REFUND_QUERY {
            return self.run_refund_task(task).await;
        }
        let now = self.now();
        let pool = &self.db.pool;
        let Some(p) = payments::get(pool, &task.payment_no).await? else {
            return tasks::close(pool, &task.task_id, "DONE", Some("payment missing"), now).await;
        };
        let status: PaymentStatus = p.status.parse().unwrap_or(PaymentStatus::Pending);
        let (Some(provider), Ok(payment_no), Ok(currency)) = (
            self.providers.get(&p.provider).cloned(),
            PaymentNo::parse(&p.payment_no),
            Currency::parse(&p.currency),
        ) else {
            return tasks::close(
                pool,
                &task.task_id,
                "DONE",
                Some("provider not configured"),
                now,
            )
            .await;
        };
        let local_money = Money::new(p.amount_minor, currency);
        let trace_id = format!("task-{}", task.task_id);
        let outcome = |target, money, txn, source| Outcome {
            payment_no: payment_no.clone(),
            provider: provider.name().clone(),
            provider_txn_id: txn,
            target,
            money,
            source,
            evidence: task.task_id.clone(),
            trace_id: trace_id.clone(),
        };

        if task.kind == tasks::CREATE {
            if status != PaymentStatus::Created {
                return tasks::close(pool, &task.task_id, "DONE", None, now).await;
            }
            let first_delay = self
                .settings
                .query_schedule
                .first()
                .copied()
                .unwrap_or(60_000_000);
            if !provider.creates_payments() {
                // The merchant's app creates it with the provider and the
                // provider reports by webhook; if none comes, ask.
                if provider.queries_payments() {
                    tasks::schedule(pool, tasks::QUERY, &p.payment_no, now + first_delay, now)
                        .await?;
                }
                return tasks::close(
                    pool,
                    &task.task_id,
                    "DONE",
                    Some("the merchant creates it with the provider"),
                    now,
                )
                .await;
            }
            let req = CreateRequest {
                payment_no: &payment_no,
                money: local_money,
                description: p.description.as_deref(),
            };
            let answer = provider.create_payment(&req).await;
            let now = self.now();
            match answer {
                Ok(view) => {
                    let target = view.status.unwrap_or(PaymentStatus::Pending);
                    self.apply(&outcome(
                        target,
                        view.money,
                        view.provider_txn_id,
                        Source::Dispatch,
                    ))
                    .await?;
                }
                Err(CallError::Refused(reason)) => {
                    tracing::warn!(%reason, "provider refused the payment");
                    self.apply(&outcome(
                        PaymentStatus::Failed,
                        local_money,
                        None,
                        Source::Dispatch,
                    ))
                    .await?;
                    return tasks::close(pool, &task.task_id, "DONE", Some(&reason), now).await;
                }
                // Unknown: never a failure. Ask the provider later.
                Err(e) => {
                    tracing::warn!(error = %e, "create result unknown; a status query follows")
                }
            }
            tasks::schedule(pool, tasks::QUERY, &p.payment_no, now + first_delay, now).await?;
            return tasks::close(pool, &task.task_id, "DONE", None, now).await;
        }

        // A status query.
        if status.is_settled() {
            return tasks::close(pool, &task.task_id, "DONE", None, now).await;
        }
        let txn = p
            .provider_txn_id
            .as_deref()
            .and_then(|t| ProviderTxnId::parse(t).ok());
        let answer = provider.query_payment(&payment_no, txn.as_ref()).await;
        let now = self.now();
        let error = match answer {
            Ok(view) => {
                let target = view.status.unwrap_or(PaymentStatus::Pending);
                let applied = self
                    .apply(&outcome(
                        target,
                        view.money,
                        view.provider_txn_id,
                        Source::Query,
                    ))
                    .await?;
                if target.is_settled() || matches!(applied, Applied::Conflict { .. }) {
                    return tasks::close(pool, &task.task_id, "DONE", None, now).await;
                }
                None
            }
            Err(e) => Some(e.to_string()),
        };
        let next_index = usize::try_from(task.attempts + 1).unwrap_or(usize::MAX);
        match self.settings.query_schedule.get(next_index) {
            Some(delay) => {
                tasks::retry_at(pool, &task.task_id, now + delay, error.as_deref(), now).await
            }
            None => {
                payments::set_awaiting_recon(pool, &p.payment_no, now).await?;
                alerts::raise_alert(
                    pool,
                    &alerts::NewAlert {
                        dedupe_key: &format!("queries_exhausted:{}", p.payment_no),
                        kind: "queries_exhausted",
                        severity: "high",
                        payment_no: Some(&p.payment_no),
                        message: &format!(
                            "payment {} still has no result after {} status queries; awaiting reconciliation",
                            p.payment_no,
                            task.attempts + 1
                        ),
                        trace_id: Some(&trace_id),
                        now,
                    },
                )
                .await?;
                tasks::close(pool, &task.task_id, "EXHAUSTED", error.as_deref(), now).await
            }
        }
    }

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
                None => Err(format!("sink {} is not configured", d.sink)),
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

/// A lane's loop: a pass, then the next at once if the pass took a full
/// batch, else when new work is written or 500 ms have passed.
async fn lane<F, Fut>(wake: &Notify, name: &'static str, mut pass: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = sqlx::Result<usize>>,
{
    loop {
        let full = match pass().await {
            Ok(n) => n as i64 == BATCH,
            Err(e) => {
                tracing::error!(error = %e, lane = name, "worker lane");
                false
            }
        };
        if full {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            _ = wake.notified() => {},
            _ = tokio::time::sleep(Duration::from_millis(500)) => {},
        }
    }
}

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
