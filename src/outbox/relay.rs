//! The outbox relay: every sink, and every alert channel, has a lane of
//! its own, so a slow or failing one never holds up another. A lane leases
//! a batch of its due deliveries, sends them signed Standard-Webhooks style
//! with up to the sink's `in_flight` at once over kept-alive connections,
//! and writes the batch's attempts and outcomes in one transaction.
//! Delivery is at least once, with `webhook-id` = the message id on every
//! attempt; a payment's messages reach a sink in the order they were
//! written (a later one waits while an earlier one is pending). A sink whose
//! every attempt fails is down: its lane then probes it with one message at
//! a time instead of spending each message's retries, and when a probe gets
//! through, everything it holds is due at once, sent with the number in
//! flight doubling from one.

use crate::alerting::Channel;
use crate::config::Sink;
use crate::context::Context;
use crate::domain::{AlertKind, AlertSeverity};
use crate::store;
use crate::store::outbox::{self, DueDelivery, EventRow, Outcome, SinkFilter};
use crate::store::{alerts, outbox_ops, sinks};
use futures_util::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Where a lane's deliveries go.
#[derive(Clone, Debug)]
pub enum Target {
    Sink(Sink),
    Channel(Channel),
    /// Deliveries that name a sink no longer configured (the names given
    /// are those configured): each attempt refused, on the doubling backoff.
    Gone(Vec<String>),
}

/// One lane's state between passes.
#[derive(Debug)]
pub struct Lane {
    target: Target,
    /// Messages in flight at most now: the sink's limit, or less while
    /// ramping up after it was down.
    in_flight: usize,
    max: usize,
    /// Every attempt of the last pass failed: probe, one at a time.
    down: bool,
}

/// A down sink is probed this often.
const PROBE_EVERY: Duration = Duration::from_secs(2);

/// A lane whose pass found less than a batch waits this long from the
/// pass's start before the next, so traffic arriving steadily is leased
/// and recorded in fuller batches (fewer transactions beside intake's).
const GATHER: Duration = Duration::from_millis(20);

/// A lane with nothing to do looks again after this, woken or not.
const IDLE: Duration = Duration::from_millis(500);

/// `relay_outbox`'s passes per lane at most.
const PASSES_AT_MOST: usize = 100;

/// Deliveries leased per pass: this many times the messages in flight.
const BATCH_PER_IN_FLIGHT: usize = 8;

impl Lane {
    pub fn new(target: Target) -> Lane {
        let max = match &target {
            Target::Sink(s) => s.in_flight.max(1),
            Target::Channel(_) => 2,
            Target::Gone(_) => 4,
        };
        Lane {
            target,
            in_flight: max,
            max,
            down: false,
        }
    }

    /// The sink's or channel's name, or "(not configured)".
    pub fn name(&self) -> &str {
        match &self.target {
            Target::Sink(s) => &s.name,
            Target::Channel(c) => &c.name,
            Target::Gone(_) => "(not configured)",
        }
    }

    fn filter(&self) -> SinkFilter<'_> {
        match &self.target {
            Target::Sink(s) => SinkFilter::One(&s.name),
            Target::Channel(c) => SinkFilter::One(&c.name),
            Target::Gone(names) => SinkFilter::NoneOf(names),
        }
    }

    fn batch(&self) -> usize {
        if self.down {
            1
        } else {
            (self.in_flight * BATCH_PER_IN_FLIGHT).clamp(4, 512)
        }
    }

    /// A lease long enough for the batch sent `in_flight` at a time, each
    /// waiting its whole timeout, so it lapses only when its holder died.
    fn lease_us(&self) -> i64 {
        let timeout = match &self.target {
            Target::Sink(s) => s.timeout,
            Target::Channel(_) => super::channels::SMTP_TIMEOUT,
            Target::Gone(_) => Duration::ZERO,
        };
        let rounds = self.batch().div_ceil(self.in_flight.max(1)) as u32;
        (timeout * rounds + Duration::from_secs(30)).as_micros() as i64
    }
}

/// Every lane this configuration has: each sink, each alert channel, and
/// the deliveries of sinks no longer configured.
pub fn lanes(ctx: &Context) -> Vec<Lane> {
    let settings = ctx.settings();
    let mut configured: Vec<String> = settings.sinks.iter().map(|s| s.name.clone()).collect();
    configured.extend(settings.channels.iter().map(|c| c.name.clone()));
    settings
        .sinks
        .iter()
        .map(|s| Target::Sink(s.clone()))
        .chain(settings.channels.iter().map(|c| Target::Channel(c.clone())))
        .chain([Target::Gone(configured)])
        .map(Lane::new)
        .collect()
}

/// The relay's HTTP client: connections kept alive between passes, as
/// many per host as messages are in flight.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .tcp_nodelay(true)
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .expect("an HTTP client")
}

/// Runs every lane on a task of its own until the process stops; new
/// outbox messages (`Wake::outbox`) wake them all.
pub fn spawn(ctx: &Context) -> tokio::task::JoinHandle<()> {
    let ctx = ctx.clone();
    tokio::spawn(async move {
        let http = client();
        let mut tasks = Vec::new();
        let mut wakes = Vec::new();
        for lane in lanes(&ctx) {
            let wake = Arc::new(Notify::new());
            wakes.push(wake.clone());
            tasks.push(tokio::spawn(run_lane(
                ctx.clone(),
                http.clone(),
                lane,
                wake,
            )));
        }
        let gauge = ctx.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                outbox_lag(&gauge).await;
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        }));
        loop {
            ctx.wake.outbox.notified().await;
            for w in &wakes {
                w.notify_one();
            }
        }
    })
}

async fn run_lane(ctx: Context, http: reqwest::Client, mut lane: Lane, wake: Arc<Notify>) {
    loop {
        let started = Instant::now();
        let full = match relay_pass(&ctx, &http, &mut lane, ctx.now()).await {
            Ok((_, full)) => full,
            Err(e) => {
                tracing::error!(error = %e, sink = lane.name(), "outbox relay");
                false
            }
        };
        if lane.down {
            tokio::time::sleep(PROBE_EVERY).await;
            continue;
        }
        if full {
            tokio::task::yield_now().await;
            continue;
        }
        tokio::select! {
            _ = wake.notified() => {},
            _ = tokio::time::sleep(IDLE) => {},
        }
        tokio::time::sleep_until((started + GATHER).into()).await;
    }
}

/// Every lane, fresh (none remembers a sink was down), passed until
/// nothing more is due at `now` or its sink is down, for tests and
/// tools: a payment's later messages follow its earlier ones in the
/// passes after. Returns how many deliveries were attempted.
pub async fn relay_outbox(ctx: &Context, http: &reqwest::Client, now: i64) -> store::Result<usize> {
    let mut attempted = 0;
    for mut lane in lanes(ctx) {
        for _ in 0..PASSES_AT_MOST {
            let (n, _) = relay_pass(ctx, http, &mut lane, now).await?;
            attempted += n;
            if n == 0 || lane.down {
                break;
            }
        }
    }
    outbox_lag(ctx).await;
    Ok(attempted)
}

/// The age of the oldest undelivered message, as the lag gauge.
async fn outbox_lag(ctx: &Context) {
    match outbox::oldest_pending(&ctx.db.pool).await {
        Ok(oldest) => {
            let lag = oldest.map(|t| (ctx.now() - t).max(0)).unwrap_or(0);
            ctx.metrics.outbox_lag(lag as f64 / 1e6);
        }
        Err(e) => tracing::warn!(error = %e, "outbox lag"),
    }
}

/// One pass of `lane` at `now`: lease, send, record. Returns the
/// attempts made and whether the lease was a full batch (more may be
/// waiting).
pub async fn relay_pass(
    ctx: &Context,
    http: &reqwest::Client,
    lane: &mut Lane,
    now: i64,
) -> store::Result<(usize, bool)> {
    let db = &ctx.db;
    let probe = lane.down;
    if !probe && !outbox::any_due(&db.pool, db.kind, lane.filter(), now).await? {
        return Ok((0, false));
    }
    let batch = lane.batch();
    let lease_until = now + lane.lease_us();
    let due = {
        let _turn = db.write_turn().await;
        let mut tx = db.begin_write().await?;
        let due = outbox::lease(
            &mut tx,
            lane.filter(),
            now,
            lease_until,
            batch as i64,
            probe,
        )
        .await?;
        tx.commit().await?;
        due
    };
    if due.is_empty() {
        return Ok((0, false));
    }
    let ids: Vec<&str> = due.iter().map(|d| d.message_id.as_str()).collect();
    let events: HashMap<String, EventRow> = outbox::events(&db.pool, db.kind, &ids)
        .await?
        .into_iter()
        .map(|e| (e.message_id.clone(), e))
        .collect();
    let target = &lane.target;
    let events = &events;
    // At most `in_flight` sent at once; each finished one lets in the next.
    let mut sent = futures_util::stream::FuturesUnordered::new();
    let mut waiting = due.iter();
    let mut attempts: Vec<(&DueDelivery, Attempt)> = Vec::with_capacity(due.len());
    loop {
        while sent.len() < lane.in_flight.max(1) {
            let Some(d) = waiting.next() else { break };
            sent.push(attempt(ctx, http, target, events.get(&d.message_id), d));
        }
        match sent.next().await {
            Some(done) => attempts.push(done),
            None => break,
        }
    }
    drop(sent);
    record_pass(ctx, lane, &attempts, events, lease_until, now).await?;
    Ok((attempts.len(), due.len() >= batch))
}

/// One delivery's attempt to the lane's target.
async fn attempt<'d>(
    ctx: &Context,
    http: &reqwest::Client,
    target: &Target,
    event: Option<&EventRow>,
    d: &'d DueDelivery,
) -> (&'d DueDelivery, Attempt) {
    let attempt = match (event, target) {
        (None, _) => Attempt::refused(format!("message {} is gone", d.message_id)),
        (Some(_), Target::Gone(_)) => {
            Attempt::refused(format!("sink {} is not configured", d.sink))
        }
        (Some(event), Target::Sink(sink)) => send_to_sink(ctx, http, sink, event).await,
        (Some(event), Target::Channel(channel)) => {
            super::channels::deliver(http, channel, event, ctx.now() / 1_000_000).await
        }
    };
    (d, attempt)
}

/// Writes a pass's attempts and outcomes in one transaction, then
/// raises what they call for and moves the lane's state on.
async fn record_pass(
    ctx: &Context,
    lane: &mut Lane,
    attempts: &[(&DueDelivery, Attempt)],
    events: &HashMap<String, EventRow>,
    lease_until: i64,
    leased_at: i64,
) -> store::Result<()> {
    let now = ctx.now();
    let outcomes: Vec<(&str, Outcome)> = attempts
        .iter()
        .map(|(d, a)| {
            let outcome = match &a.error {
                None => Outcome::Delivered,
                // A probe ahead of the message's schedule costs it nothing.
                Some(error) if lane.down && d.next_attempt_at > leased_at => {
                    Outcome::ProbeFailed { error }
                }
                Some(error) => Outcome::Failed {
                    error,
                    next_at: next_attempt(ctx, &lane.target, d.attempts + 1, now),
                },
            };
            (d.message_id.as_str(), outcome)
        })
        .collect();
    let logs: Vec<_> = attempts.iter().map(|(d, a)| a.logged(d, now)).collect();
    let failures = attempts.iter().filter(|(_, a)| a.error.is_some()).count();
    let delivered = attempts.len() - failures;
    let last_error = attempts.iter().rev().find_map(|(_, a)| a.error.as_deref());
    let is_sink = matches!(lane.target, Target::Sink(_));
    let name = lane.name().to_owned();
    let was_down = lane.down;
    let (stood, spell, made_due) = {
        let _turn = ctx.db.write_turn().await;
        let mut tx = ctx.db.begin_write().await?;
        outbox_ops::record_attempts(&mut tx, &logs).await?;
        let stood = outbox::record(&mut tx, &name, lease_until, now, &outcomes).await?;
        // A sink's run of failures ends with any delivery; an alert
        // channel's failing is told by `outbox_dead` on the others.
        let spell = match (is_sink, delivered, last_error) {
            (false, _, _) => None,
            (true, 0, Some(error)) => Some((
                sinks::failed(&mut *tx, &name, error, failures as i64, now).await?,
                error,
            )),
            (true, _, _) => {
                sinks::succeeded(&mut *tx, &name, now).await?;
                None
            }
        };
        // It answers again: what waited for a later retry is due now.
        let made_due = if was_down && delivered > 0 && is_sink {
            sinks::retry_now(&mut tx, &name, now).await?
        } else {
            0
        };
        tx.commit().await?;
        (stood, spell, made_due)
    };
    for ((d, _), ((_, outcome), current)) in attempts.iter().zip(outcomes.iter().zip(&stood)) {
        if !current {
            // Resent or leased again meanwhile: the row's newer state
            // stands (the attempt stays logged).
            continue;
        }
        match outcome {
            Outcome::Delivered => ctx.metrics.outbox("delivered"),
            Outcome::ProbeFailed { .. } => ctx.metrics.outbox("retry"),
            Outcome::Failed {
                next_at: Some(_), ..
            } => ctx.metrics.outbox("retry"),
            Outcome::Failed {
                next_at: None,
                error,
            } => {
                ctx.metrics.outbox("dead");
                alerts::raise_alert(
                    &ctx.db.pool,
                    &alerts::NewAlert {
                        dedupe_key: &format!("outbox_dead:{}:{}", d.message_id, d.sink),
                        kind: AlertKind::OutboxDead,
                        severity: AlertSeverity::High,
                        payment_no: events.get(&d.message_id).map(|e| e.aggregate_id.as_str()),
                        message: &format!(
                            "outbox message {} to {} dead-lettered after {} attempts: {error}",
                            d.message_id,
                            d.sink,
                            d.attempts + 1
                        ),
                        trace_id: None,
                        now,
                    },
                )
                .await?;
            }
        }
    }
    if let Some(((in_a_row, since), error)) = spell {
        crate::outbox::sinks::sink_failing_check(ctx, &name, error, in_a_row, since, now).await?;
    }
    // The lane's state: down when every attempt failed; up again at one
    // in flight, doubling with each pass that delivers everything.
    if delivered == 0 && failures > 0 && is_sink {
        if !lane.down {
            tracing::warn!(sink = %name, error = last_error.unwrap_or(""), "outbox sink down: probing it");
        }
        lane.down = true;
    } else if was_down && delivered > 0 {
        tracing::info!(sink = %name, due_now = made_due, "outbox sink answers again");
        lane.down = false;
        lane.in_flight = 1;
    } else if failures == 0 && lane.in_flight < lane.max {
        lane.in_flight = (lane.in_flight * 2).min(lane.max);
    }
    Ok(())
}

/// When to try a delivery again after `attempts` attempts failed: the
/// sink's own schedule; an alert channel, or a sink no longer
/// configured, keeps the doubling backoff.
fn next_attempt(ctx: &Context, target: &Target, attempts: i64, now: i64) -> Option<i64> {
    match target {
        Target::Sink(sink) => sink.next_attempt(attempts, now),
        Target::Channel(_) | Target::Gone(_) => (attempts < ctx.settings().outbox_max_attempts)
            .then(|| now + (10_000_000i64 << attempts.min(9)).min(3_600_000_000)),
    }
}

async fn send_to_sink(
    ctx: &Context,
    http: &reqwest::Client,
    sink: &Sink,
    event: &outbox::EventRow,
) -> Attempt {
    // Signed as it leaves: a consumer checks the timestamp's tolerance.
    let ts = ctx.now() / 1_000_000;
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

    fn logged<'a>(&'a self, d: &'a DueDelivery, at: i64) -> outbox_ops::NewAttempt<'a> {
        outbox_ops::NewAttempt {
            message_id: &d.message_id,
            sink: &d.sink,
            at,
            status_code: self.status_code.map(i64::from),
            latency_us: self.latency_us,
            answer_head: &self.answer_head,
            error: self.error.as_deref(),
            origin: if d.resent_by.is_some() {
                "RESEND"
            } else {
                "RELAY"
            },
            before: d.attempts,
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
