//! The task loop: background work in lanes that never wait on each other,
//! each handing its kind of task to its owner — provider calls, callback
//! retries and the outbox relay to the engine; STATUS_LAG repairs, the
//! daily statement pulls and the statement files' retention to
//! reconciliation. Each lane leases its due rows
//! (so two instances on one PostgreSQL never take the same row) and reads
//! the clock per task. The passes of the 60 s beats run once across
//! instances: each under its job's lease (`store::leader`), held for a
//! beat by the instance that ran it. Tests call each lane's pass, or a
//! beat, directly with a moved clock.

use crate::engine::{self, Engine};
use crate::recon;
use crate::store;
use crate::store::leader;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// How often the scheduled jobs' beats come.
pub const BEAT: Duration = Duration::from_secs(60);
/// A job's lease lasts a beat: the instance that ran it keeps it until its
/// next beat (so the job runs once per beat across instances), and a
/// stopped instance's lapses by then.
pub const JOB_LEASE_US: i64 = BEAT.as_micros() as i64;
/// A job's lease is renewed this often while its pass runs, so a long
/// pass keeps it.
const RENEW_EVERY: Duration = Duration::from_secs(20);

/// The scheduled jobs, by the name of their lease.
pub mod jobs {
    pub const STATEMENT_PULLS: &str = "statement_pulls";
    pub const REPORT_PUSHES: &str = "report_pushes";
    pub const BANK_MATCHING: &str = "bank_matching";
    pub const FILE_RETENTION: &str = "statement_file_retention";
    pub const OVERDUE_EDGES: &str = "overdue_edges";
    pub const DAY_CLOSES: &str = "day_closes";
    pub const SLA_OVERDUE: &str = "sla_overdue";
    pub const BULK_RESUME: &str = "bulk_job_resume";
    pub const OUTBOX_RESUME: &str = "outbox_job_resume";
    /// The statement beat's jobs, in the order they run.
    pub const STATEMENT_BEAT: [&str; 7] = [
        STATEMENT_PULLS,
        REPORT_PUSHES,
        BANK_MATCHING,
        FILE_RETENTION,
        OVERDUE_EDGES,
        DAY_CLOSES,
        SLA_OVERDUE,
    ];
    pub const RESUME_BEAT: [&str; 2] = [BULK_RESUME, OUTBOX_RESUME];
}

/// One instance of Reckon as its job leases name it.
#[derive(Clone, Debug)]
pub struct Instance {
    name: Arc<str>,
}

impl Instance {
    /// A name of its own: the process id, for a person reading the table,
    /// and a UUID, since two instances may share a process id (containers).
    pub fn new() -> Instance {
        Instance {
            name: format!("pid {} ({})", std::process::id(), uuid::Uuid::now_v7()).into(),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Default for Instance {
    fn default() -> Self {
        Instance::new()
    }
}

/// Runs every lane until the process stops, each on its own task.
pub fn spawn(engine: &Engine) -> tokio::task::JoinHandle<()> {
    let engine = engine.clone();
    tokio::spawn(async move {
        // This process's name on the job leases its beats take.
        let me = Instance::new();
        // The statement schedule: a long pull holds up nothing else.
        let schedule = engine.clone();
        let beat = me.clone();
        let pulls = tokio::spawn(async move {
            loop {
                statement_beat(&schedule, &beat).await;
                tokio::time::sleep(BEAT).await;
            }
        });
        let calls = tokio::spawn(engine.clone().call_lane());
        // Alerts routed to their channels and due digests written for
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
        // Bulk and outbox jobs a stopped process left running: resumed
        // once silent.
        let resumes = engine.clone();
        tokio::spawn(async move {
            loop {
                resume_beat(&resumes, &me).await;
                tokio::time::sleep(BEAT).await;
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
        // The outbox relay: a lane per sink and alert channel.
        let relay = crate::outbox::relay::spawn(&engine);
        let _ = tokio::join!(pulls, calls, repairs, retries, relay);
    })
}

/// One pass over the provider tasks due at `now`, for tests: the
/// reconciliation repairs, then each due provider call once (up to a
/// batch), concurrently within each account's slots, one payment's calls
/// in turn. Returns how many tasks ran.
pub async fn run_provider_tasks(engine: &Engine, now: i64) -> store::Result<usize> {
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
    Fut: Future<Output = store::Result<usize>>,
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

/// The statement schedule's beat: the daily pulls, bank matching, the
/// statement files' retention, records in transit past an overdue
/// statement, the day closes and the SLA pass, each under its job's lease
/// (at the engine's clock when it starts). Returns the jobs this instance
/// ran; the others were held by another instance.
pub async fn statement_beat(engine: &Engine, me: &Instance) -> Vec<&'static str> {
    let e = engine;
    // Every instance: a version adopted elsewhere is in force here from
    // this beat on.
    if let Err(e) = crate::config_versions::follow(engine).await {
        tracing::error!(error = %e, "settings' version");
    }
    let mut beat = Beat::new(e, me);
    beat.job(jobs::STATEMENT_PULLS, |now| recon::scheduled_pulls(e, now))
        .await;
    // Reports a provider said are ready, fetched and imported.
    beat.job(jobs::REPORT_PUSHES, |now| {
        recon::fetch_pushed_reports(e, now)
    })
    .await;
    // Payouts against the bank: a payout or credit past its window becomes
    // a ticket without an import.
    beat.job(jobs::BANK_MATCHING, |now| {
        crate::bank::match_payouts(e, now)
    })
    .await;
    beat.job(jobs::FILE_RETENTION, |now| recon::expire_files(e, now))
        .await;
    // Records in transit to a statement now overdue: absent.
    beat.job(jobs::OVERDUE_EDGES, |now| recon::expire_overdue(e, now))
        .await;
    // Days whose last tickets were repaired or concluded since their run.
    beat.job(jobs::DAY_CLOSES, |now| recon::close_ready_days(e, now))
        .await;
    beat.job(jobs::SLA_OVERDUE, |now| {
        crate::triage::sla::raise_overdue(e, now)
    })
    .await;
    beat.ran
}

/// The resume beat: bulk and outbox jobs a stopped process left running,
/// resumed through the job runner by one instance. Returns the jobs this
/// instance ran.
pub async fn resume_beat(engine: &Engine, me: &Instance) -> Vec<&'static str> {
    use crate::jobs::resume;
    let e = engine;
    let mut beat = Beat::new(e, me);
    beat.job(jobs::BULK_RESUME, |_| {
        resume::<crate::triage::bulk::BulkRun>(e)
    })
    .await;
    beat.job(jobs::OUTBOX_RESUME, |_| {
        resume::<crate::outbox::jobs::Requeue>(e)
    })
    .await;
    beat.ran
}

/// One instance's beat: the jobs it ran.
struct Beat<'a> {
    engine: &'a Engine,
    me: &'a Instance,
    ran: Vec<&'static str>,
}

impl<'a> Beat<'a> {
    fn new(engine: &'a Engine, me: &'a Instance) -> Beat<'a> {
        Beat {
            engine,
            me,
            ran: Vec::new(),
        }
    }

    /// Runs `pass` at the engine's clock if this instance takes `job`'s
    /// lease (free, lapsed or its own), renewing it while the pass runs
    /// and keeping it afterwards until it lapses a beat on; skips it when
    /// another instance holds it. A row lease per job, not a PostgreSQL
    /// advisory lock: it holds for the beat, not only while the pass runs,
    /// needs no connection kept for the pass, and works the same on SQLite.
    async fn job<F, Fut, T, E>(&mut self, job: &'static str, pass: F)
    where
        F: FnOnce(i64) -> Fut,
        Fut: Future<Output = Result<T, E>>,
        E: std::fmt::Display,
    {
        let (engine, me) = (self.engine, self.me);
        let now = engine.now();
        match leader::take(&engine.db.pool, job, me.name(), now, now + JOB_LEASE_US).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::error!(error = %e, job, "job lease not taken");
                return;
            }
        }
        let _renewal = Renewal::start(engine, me, job);
        if let Err(e) = pass(now).await {
            tracing::error!(error = %e, job, "scheduled job failed");
        }
        self.ran.push(job);
    }
}

/// Renews a job's lease while its pass runs; stops when dropped.
struct Renewal(tokio::task::JoinHandle<()>);

impl Renewal {
    fn start(engine: &Engine, me: &Instance, job: &'static str) -> Renewal {
        let (engine, me) = (engine.clone(), me.clone());
        Renewal(tokio::spawn(async move {
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                let until = engine.now() + JOB_LEASE_US;
                match leader::extend(&engine.db.pool, job, me.name(), until).await {
                    Ok(true) => {}
                    // Lapsed and taken elsewhere: the pass's own keys keep
                    // its effects single; the lease is not taken back.
                    Ok(false) => {
                        tracing::warn!(job, "job lease lost while its pass ran");
                        return;
                    }
                    Err(e) => tracing::warn!(error = %e, job, "job lease not renewed"),
                }
            }
        }))
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}
