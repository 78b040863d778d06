//! The task loop: background work in lanes that never wait on each other,
//! each handing its kind of task to its owner — provider calls, callback
//! retries and the outbox relay to the engine; STATUS_LAG repairs, the
//! daily statement pulls and the statement files' retention to
//! reconciliation. Each lane leases its due rows
//! (so two instances on one PostgreSQL never take the same row) and reads
//! the clock per task. Tests call each lane's pass directly with a moved
//! clock.

use crate::engine::{self, Engine};
use crate::recon;
use std::future::Future;
use std::time::Duration;
use tokio::sync::Notify;

/// Runs every lane until the process stops, each on its own task.
pub fn spawn(engine: &Engine) -> tokio::task::JoinHandle<()> {
    let engine = engine.clone();
    tokio::spawn(async move {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client");
        // The statement schedule: a long pull holds up nothing else.
        let schedule = engine.clone();
        let pulls = tokio::spawn(async move {
            loop {
                if let Err(e) = recon::scheduled_pulls(&schedule, schedule.now()).await {
                    tracing::error!(error = %e, "statement pull schedule");
                }
                // Payouts against the bank, on the same beat: a payout or
                // credit past its window becomes a ticket without an import.
                if let Err(e) = crate::bank::match_payouts(&schedule, schedule.now()).await {
                    tracing::error!(error = %e, "bank matching");
                }
                // The statement files' retention, on the same beat.
                if let Err(e) = recon::expire_files(&schedule, schedule.now()).await {
                    tracing::error!(error = %e, "statement file retention");
                }
                // Records in transit to a statement now overdue: absent.
                if let Err(e) = recon::expire_overdue(&schedule, schedule.now()).await {
                    tracing::error!(error = %e, "records in transit past an overdue statement");
                }
                // Days whose last tickets were repaired or concluded since
                // their run close now.
                if let Err(e) = recon::close_ready_days(&schedule, schedule.now()).await {
                    tracing::error!(error = %e, "closing the days");
                }
                // Tickets past their SLA alerted, once each, on the same beat.
                if let Err(e) = crate::triage::sla::raise_overdue(&schedule, schedule.now()).await {
                    tracing::error!(error = %e, "ticket SLA pass");
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
        });
        let calls = tokio::spawn(engine.clone().call_lane());
        // C: alerts routed to their channels and due digests written for
        // the relay; every 15 s, so a critical alert waits on no pull.
        let alerting = engine.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = crate::alerting::route_alerts(&alerting, alerting.now()).await {
                    tracing::error!(error = %e, "alert channel routing");
                }
                tokio::time::sleep(Duration::from_secs(15)).await;
            }
        });
        // Bulk jobs a stopped process left running: resumed once silent.
        let bulk = engine.clone();
        tokio::spawn(async move {
            loop {
                if let Err(e) = crate::triage::bulk::resume_jobs(&bulk).await {
                    tracing::error!(error = %e, "bulk job resume");
                }
                if let Err(e) = crate::console::outbox::resume_jobs(&bulk).await {
                    tracing::error!(error = %e, "outbox job resume");
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
        });
        let e = engine.clone();
        let repairs = tokio::spawn(async move {
            let pass = || recon::run_repairs(&e, e.now());
            lane(
                &e.wake.repairs,
                "reconciliation repairs",
                recon::REPAIRS_PER_PASS,
                pass,
            )
            .await
        });
        let e = engine.clone();
        let retries = tokio::spawn(async move {
            let pass = || e.retry_callbacks(e.now());
            lane(&e.wake.callbacks, "callback retries", engine::BATCH, pass).await
        });
        let e = engine.clone();
        let relay = tokio::spawn(async move {
            let pass = || e.relay_outbox(&http, e.now());
            lane(&e.wake.outbox, "outbox relay", engine::BATCH, pass).await
        });
        let _ = tokio::join!(pulls, calls, repairs, retries, relay);
    })
}

/// One pass over the provider tasks due at `now`, for tests: the
/// reconciliation repairs, then each due provider call once (up to a
/// batch), concurrently within each account's slots, one payment's calls
/// in turn. Returns how many tasks ran.
pub async fn run_provider_tasks(engine: &Engine, now: i64) -> sqlx::Result<usize> {
    // Repairs first, as before the lanes: a repair finds its payment
    // as the run left it, and its ticket says what the repair did.
    let repairs = recon::run_repairs(engine, now).await?;
    Ok(repairs + engine.run_due_calls(now).await?)
}

/// A lane's loop: a pass, then the next at once if the pass took a full
/// batch (`batch` tasks), else when new work is written or 500 ms have
/// passed.
async fn lane<F, Fut>(wake: &Notify, name: &'static str, batch: i64, mut pass: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = sqlx::Result<usize>>,
{
    loop {
        let full = match pass().await {
            Ok(n) => n as i64 == batch,
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
