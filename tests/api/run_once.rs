//! Scheduled work runs once across instances, on SQLite and
//! PostgreSQL: two instances on one database beat at the same moment and
//! each job of the beat runs on one of them — one pull of the day, one
//! ticket, one SLA alert; an instance that stops keeps its jobs until its
//! leases lapse, and then another takes them over.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app_with};
use crate::helpers::Backend;
use crate::schedule::at;
use reckon::engine::Engine;
use reckon::providers::sandbox::PaymentData;
use reckon::store::leader;
use reckon::workers::{self, Instance, jobs};

const SECOND: i64 = 1_000_000;
const HOUR: i64 = 3_600 * SECOND;

/// Two instances on one database, with the same hand-moved clock, and a
/// payment the sandbox settled yesterday that Reckon never saw: the day's
/// pull opens a PROVIDER_ONLY ticket, overdue an hour after.
struct Two {
    app: EngineApp,
    a: (Engine, Instance),
    b: (Engine, Instance),
    yesterday: String,
}

async fn two_instances(b: Backend) -> Two {
    let sla = reckon::domain::Sla::parse("PROVIDER_ONLY=1").unwrap();
    let app = spawn_engine_app_with(b, |c| {
        c.sla = sla;
        c.pull_catch_up_days = 1;
    })
    .await;
    let second = app.app.second_engine().await;
    let yesterday = today().yesterday().unwrap();
    app.sandbox.put_settled(
        PaymentData {
            payment_no: "UNSEEN-1".into(),
            txn_id: "SBX-UNSEEN-1".into(),
            status: "SUCCEEDED".into(),
            amount: "1.00".into(),
            currency: "CNY".into(),
        },
        jiff::Timestamp::from_microsecond(at(yesterday, 12)).unwrap(),
    );
    Two {
        a: (app.app_engine(), Instance::new()),
        b: (second, Instance::new()),
        app,
        yesterday: yesterday.to_string(),
    }
}

fn today() -> jiff::civil::Date {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
}

impl Two {
    async fn beat(&self, (engine, me): &(Engine, Instance)) -> Vec<&'static str> {
        workers::statement_beat(engine, me).await
    }

    /// Both instances' beats at once, at the clock's time.
    async fn both_beat(&self) -> (Vec<&'static str>, Vec<&'static str>) {
        tokio::join!(self.beat(&self.a), self.beat(&self.b))
    }

    async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(self.app.pool())
            .await
            .unwrap()
    }

    async fn pulls(&self) -> Vec<(String, String)> {
        sqlx::query_as("SELECT business_date, status FROM recon_runs WHERE source = 'pull'")
            .fetch_all(self.app.pool())
            .await
            .unwrap()
    }

    async fn sla_alerts(&self) -> i64 {
        self.count("SELECT COUNT(*) FROM alerts WHERE kind = 'sla_overdue'")
            .await
    }

    async fn holder(&self, job: &str) -> Option<String> {
        leader::holder(self.app.pool(), job, self.app.app.engine.now())
            .await
            .unwrap()
            .map(|(holder, _)| holder)
    }
}

/// Every job of `all` ran on exactly one of the two instances.
fn each_once(a: &[&str], b: &[&str], all: &[&str]) {
    for job in all {
        let on = usize::from(a.contains(job)) + usize::from(b.contains(job));
        assert_eq!(on, 1, "{job} ran on {on} instances: {a:?} and {b:?}");
    }
}

/// Two instances beat at the same moment: each job runs on one of them,
/// and its effect happens once — the day pulled once, one ticket; an hour
/// on, the next beat raises the ticket's SLA alert once.
async fn two_instances_at_one_beat_run_each_job_once(b: Backend) {
    let t = two_instances(b).await;
    let now = at(today(), 3);
    t.app.clock.set(now);
    let (a, b) = t.both_beat().await;
    each_once(&a, &b, &jobs::STATEMENT_BEAT);
    assert_eq!(
        t.pulls().await,
        vec![(t.yesterday.clone(), "COMPLETED".to_owned())]
    );
    let tickets = "SELECT COUNT(*) FROM discrepancies WHERE class = 'PROVIDER_ONLY'";
    assert_eq!(t.count(tickets).await, 1);
    let (ra, rb) = tokio::join!(
        workers::resume_beat(&t.a.0, &t.a.1),
        workers::resume_beat(&t.b.0, &t.b.1)
    );
    each_once(&ra, &rb, &jobs::RESUME_BEAT);

    // Within the beat each instance runs again only the jobs it holds.
    t.app.clock.set(now + 30 * SECOND);
    assert_eq!(t.both_beat().await, (a.clone(), b.clone()));
    for job in jobs::STATEMENT_BEAT {
        let holder = if a.contains(&job) { &t.a.1 } else { &t.b.1 };
        assert_eq!(t.holder(job).await.as_deref(), Some(holder.name()), "{job}");
    }

    // The next beat, past the ticket's SLA: each job once again, and the
    // alert raised once.
    t.app.clock.set(now + HOUR + 61 * SECOND);
    let (a, b) = t.both_beat().await;
    each_once(&a, &b, &jobs::STATEMENT_BEAT);
    assert_eq!(t.sla_alerts().await, 1);
    assert_eq!(t.pulls().await.len(), 1, "the day is not pulled again");
    assert_eq!(t.count(tickets).await, 1);
}

/// An instance stops holding every job: the other runs none of them until
/// the leases lapse — not even the SLA alert that falls due meanwhile —
/// then takes them all over, and the first, back, finds them held.
async fn a_stopped_instances_jobs_are_taken_over_once_its_leases_lapse(b: Backend) {
    let t = two_instances(b).await;
    let now = at(today(), 3);
    t.app.clock.set(now);
    assert_eq!(t.beat(&t.a).await, jobs::STATEMENT_BEAT);
    assert_eq!(t.pulls().await.len(), 1);
    // Its last beat, half a minute before the ticket's SLA runs out.
    let last = now + HOUR - 30 * SECOND;
    t.app.clock.set(last);
    assert_eq!(t.beat(&t.a).await, jobs::STATEMENT_BEAT);
    assert_eq!(t.sla_alerts().await, 0, "not due yet");

    // It stops. The SLA runs out; its leases hold for the rest of the beat.
    t.app.clock.set(last + 40 * SECOND);
    let ran = t.beat(&t.b).await;
    assert_eq!(t.sla_alerts().await, 0, "held by the stopped instance");
    assert_eq!(ran, Vec::<&str>::new());
    assert_eq!(
        t.holder(jobs::SLA_OVERDUE).await.as_deref(),
        Some(t.a.1.name())
    );

    // Lapsed: the other instance takes every job, and the alert is raised.
    t.app.clock.set(last + workers::JOB_LEASE_US);
    assert_eq!(t.beat(&t.b).await, jobs::STATEMENT_BEAT);
    assert_eq!(t.sla_alerts().await, 1);
    assert_eq!(
        t.holder(jobs::SLA_OVERDUE).await.as_deref(),
        Some(t.b.1.name())
    );
    // The first instance, back within that beat, finds them held.
    t.app.clock.set(last + workers::JOB_LEASE_US + 30 * SECOND);
    assert_eq!(t.beat(&t.a).await, Vec::<&str>::new());
    assert_eq!(t.sla_alerts().await, 1);
    assert_eq!(t.pulls().await.len(), 1);
}

/// A long pass's renewal: its holder extends the lease (never shortens
/// it), which keeps the job from the other instance past the beat; once
/// the lease lapsed and was taken, the old holder can no longer extend it.
async fn a_job_lease_is_extended_by_its_holder_only(b: Backend) {
    let app = spawn_engine_app_with(b, |_| {}).await;
    let pool = app.pool();
    let (a, b) = ("instance a", "instance b");
    let t = 1_000 * HOUR;
    let job = "a_long_job";
    assert!(
        leader::take(pool, job, a, t, t + 60 * SECOND)
            .await
            .unwrap()
    );
    assert!(
        !leader::take(pool, job, b, t + SECOND, t + 61 * SECOND)
            .await
            .unwrap()
    );
    // Renewed while it runs: held past its first minute.
    assert!(
        leader::extend(pool, job, a, t + 120 * SECOND)
            .await
            .unwrap()
    );
    assert!(leader::extend(pool, job, a, t + 90 * SECOND).await.unwrap());
    assert_eq!(
        leader::holder(pool, job, t + 100 * SECOND).await.unwrap(),
        Some((a.to_owned(), t + 120 * SECOND)),
        "extended, never shortened"
    );
    assert!(
        !leader::take(pool, job, b, t + 100 * SECOND, t + 160 * SECOND)
            .await
            .unwrap()
    );
    assert!(
        !leader::extend(pool, job, b, t + 200 * SECOND)
            .await
            .unwrap()
    );
    // Lapsed: taken by the other, and the old holder's renewal refused.
    assert!(
        leader::take(pool, job, b, t + 120 * SECOND, t + 180 * SECOND)
            .await
            .unwrap()
    );
    assert!(
        !leader::extend(pool, job, a, t + 240 * SECOND)
            .await
            .unwrap()
    );
    assert_eq!(
        leader::holder(pool, job, t + 150 * SECOND).await.unwrap(),
        Some((b.to_owned(), t + 180 * SECOND))
    );
    assert_eq!(
        leader::holder(pool, job, t + 180 * SECOND).await.unwrap(),
        None
    );
}

both_databases!(
    two_instances_at_one_beat_run_each_job_once,
    a_stopped_instances_jobs_are_taken_over_once_its_leases_lapse,
    a_job_lease_is_extended_by_its_holder_only,
);
