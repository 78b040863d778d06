//! The daily statement schedule and the kept statement files, each on
//! SQLite and PostgreSQL: missed days caught up on start, a bill not ready
//! asked for again later, one pull per day with two instances, a missing
//! statement alerted once, the kept file downloaded byte-identical, and the
//! retention deleting old files only.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, serve, spawn_engine_app_with};
use crate::helpers::Backend;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use reckon::config::ProviderConfig;
use reckon::providers::sandbox::PaymentData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const DAY_US: i64 = 86_400 * 1_000_000;
const HOUR_US: i64 = 3_600 * 1_000_000;

/// A local server in front of the sandbox's statement API: it answers
/// "not ready" while told to, can be slow, and counts what it served.
#[derive(Clone, Default)]
struct Gate {
    target: Arc<Mutex<String>>,
    not_ready: Arc<AtomicBool>,
    delay_ms: Arc<AtomicU64>,
    asked: Arc<AtomicUsize>,
}

async fn gated_statement(
    State(gate): State<Gate>,
    Path(date): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    gate.asked.fetch_add(1, Ordering::SeqCst);
    let delay = gate.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    if gate.not_ready.load(Ordering::SeqCst) {
        return (
            StatusCode::CONFLICT,
            axum::Json(serde_json::json!({
                "error": format!("not ready: the statement of {date} is not cut yet")
            })),
        )
            .into_response();
    }
    let target = gate.target.lock().unwrap().clone();
    let mut url = format!("{target}/v1/statements/{date}");
    if let Some(q) = query {
        url.push('?');
        url.push_str(&q);
    }
    let res = reqwest::get(url).await.unwrap();
    let status = StatusCode::from_u16(res.status().as_u16()).unwrap();
    let body = res.bytes().await.unwrap();
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// An engine app whose sandbox statements pass through a [`Gate`], with
/// `catch_up_days` days caught up.
async fn gated_app(b: Backend, catch_up_days: i64) -> (EngineApp, Gate) {
    let gate = Gate::default();
    let url = serve(
        axum::Router::new()
            .route("/v1/statements/{date}", axum::routing::get(gated_statement))
            .with_state(gate.clone()),
    )
    .await;
    let target = gate.target.clone();
    let app = spawn_engine_app_with(b, move |c| {
        if let Some(ProviderConfig::Sandbox(s)) = c.providers.first_mut() {
            *target.lock().unwrap() = std::mem::replace(&mut s.base_url, url);
        }
        c.pull_catch_up_days = catch_up_days;
    })
    .await;
    (app, gate)
}

/// `date` at `hour`:00 UTC, microseconds.
pub(crate) fn at(date: jiff::civil::Date, hour: i8) -> i64 {
    date.at(hour, 0, 0, 0)
        .to_zoned(jiff::tz::TimeZone::UTC)
        .unwrap()
        .timestamp()
        .as_microsecond()
}

fn today() -> jiff::civil::Date {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
}

fn days_back(d: jiff::civil::Date, n: i64) -> jiff::civil::Date {
    d.checked_sub(jiff::Span::new().days(n)).unwrap()
}

/// A payment the sandbox settled at noon of `date` that Reckon never saw.
fn settled_at_provider(app: &EngineApp, no: &str, date: jiff::civil::Date) {
    app.sandbox.put_settled(
        PaymentData {
            payment_no: no.into(),
            txn_id: format!("SBX-{no}"),
            status: "SUCCEEDED".into(),
            amount: "1.00".into(),
            currency: "CNY".into(),
        },
        jiff::Timestamp::from_microsecond(at(date, 12)).unwrap(),
    );
}

/// The pull runs of the sandbox: (business day, status, rows read).
async fn pulls(app: &EngineApp) -> Vec<(String, String, i64)> {
    sqlx::query_as(
        "SELECT business_date, status, rows_read FROM recon_runs WHERE source = 'pull' \
         ORDER BY business_date, started_at",
    )
    .fetch_all(app.pool())
    .await
    .unwrap()
}

/// The server was down three days: on start, the schedule pulls each of
/// them, oldest first, and nothing before its window.
async fn three_missed_days_are_pulled_on_start(b: Backend) {
    let (app, _gate) = gated_app(b, 3).await;
    let today = today();
    let now = at(today, 3);
    app.clock.set(now);
    for n in 1..=4 {
        settled_at_provider(&app, &format!("MISSED-{n}"), days_back(today, n));
    }
    let engine = app.app_engine();
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, now).await.unwrap(),
        3
    );
    let expected: Vec<(String, String, i64)> = (1..=3)
        .rev()
        .map(|n| (days_back(today, n).to_string(), "COMPLETED".into(), 1))
        .collect();
    assert_eq!(
        pulls(&app).await,
        expected,
        "oldest first, outside the window none"
    );
    // Caught up: the next pass has nothing to do.
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, now + HOUR_US)
            .await
            .unwrap(),
        0
    );
    assert_eq!(pulls(&app).await.len(), 3);
}

/// The provider has no bill yet: the pull is asked for again after a
/// backoff (not before), and completes once the bill is there.
async fn a_bill_not_ready_is_asked_for_again_and_then_completes(b: Backend) {
    let (app, gate) = gated_app(b, 1).await;
    let today = today();
    let yesterday = days_back(today, 1);
    settled_at_provider(&app, "LATE-BILL", yesterday);
    let now = at(today, 3);
    app.clock.set(now);
    gate.not_ready.store(true, Ordering::SeqCst);
    let engine = app.app_engine();
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, now).await.unwrap(),
        1
    );
    let runs = pulls(&app).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].1, "FAILED");
    let (error, tries, next_at): (String, i64, i64) = sqlx::query_as(
        "SELECT last_error, tries, next_at FROM statement_pulls WHERE provider = 'sandbox' AND business_date = $1",
    )
    .bind(yesterday.to_string())
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert!(error.contains("not ready:"), "{error}");
    assert_eq!(tries, 1);
    // Not ready is asked again sooner than a failure is resumed.
    assert_eq!(next_at - now, 5 * 60 * 1_000_000);
    // Not again within the backoff.
    let asked = gate.asked.load(Ordering::SeqCst);
    let soon = now + 60 * 1_000_000;
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, soon).await.unwrap(),
        0
    );
    assert_eq!(gate.asked.load(Ordering::SeqCst), asked);
    // The bill is out: the next try resumes the run and completes it.
    gate.not_ready.store(false, Ordering::SeqCst);
    let later = now + HOUR_US;
    app.clock.set(later);
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, later)
            .await
            .unwrap(),
        1
    );
    let runs = pulls(&app).await;
    assert_eq!(
        runs,
        vec![(yesterday.to_string(), "COMPLETED".into(), 1)],
        "the same run, resumed"
    );
    let alerts: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM alerts WHERE kind = 'statement_missing'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(alerts, 0, "completed within its hours: no alert");
}

/// Two instances on one database run the schedule at once: each day is
/// pulled once.
async fn two_instances_pull_each_day_once(b: Backend) {
    let (app, gate) = gated_app(b, 3).await;
    let today = today();
    for n in 1..=3 {
        settled_at_provider(&app, &format!("TWICE-{n}"), days_back(today, n));
    }
    let now = at(today, 3);
    app.clock.set(now);
    // Slow answers, so both passes are at the same days at once.
    gate.delay_ms.store(150, Ordering::SeqCst);
    let first = app.app_engine();
    let mut db = reckon::store::Db::connect(&app.app.config.database_url)
        .await
        .unwrap();
    // The same audit key, as a second instance of one deployment has.
    db.audit = first.db.audit.clone();
    let second = reckon::engine::Engine::new(
        db,
        first.providers.clone(),
        reckon::metrics::Metrics::new(),
        first.clock.clone(),
        reckon::startup::settings_of(&app.app.config).unwrap(),
    );
    let (a, b) = tokio::join!(
        reckon::recon::scheduled_pulls(&first, now),
        reckon::recon::scheduled_pulls(&second, now)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a + b, 3, "{a} + {b} pulls");
    let runs = pulls(&app).await;
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|r| r.1 == "COMPLETED"), "{runs:?}");
    // And again: nothing left for either.
    let (a, b) = tokio::join!(
        reckon::recon::scheduled_pulls(&first, now + HOUR_US),
        reckon::recon::scheduled_pulls(&second, now + HOUR_US)
    );
    assert_eq!((a.unwrap(), b.unwrap()), (0, 0));
}

/// A statement still missing the configured hours after its ready time
/// raises one alert for its provider and day; not before, not twice.
async fn a_statement_missing_hours_after_it_is_due_is_alerted_once(b: Backend) {
    let (app, gate) = gated_app(b, 1).await;
    gate.not_ready.store(true, Ordering::SeqCst);
    let today = today();
    let yesterday = days_back(today, 1).to_string();
    let engine = app.app_engine();
    let missing = || async {
        sqlx::query_as::<_, (String, String)>(
            "SELECT dedupe_key, message FROM alerts WHERE kind = 'statement_missing'",
        )
        .fetch_all(app.pool())
        .await
        .unwrap()
    };
    // Ready at 02:00; the alert is due six hours on.
    reckon::recon::scheduled_pulls(&engine, at(today, 7))
        .await
        .unwrap();
    assert!(missing().await.is_empty(), "not yet");
    for hour in [9, 10, 11] {
        reckon::recon::scheduled_pulls(&engine, at(today, hour))
            .await
            .unwrap();
    }
    let alerts = missing().await;
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(
        alerts[0].0,
        format!("statement_missing:sandbox:{yesterday}")
    );
    assert!(
        alerts[0].1.contains(&yesterday) && alerts[0].1.contains("sandbox"),
        "{}",
        alerts[0].1
    );
    // The console: the dashboard of that day names the provider; the runs
    // page shows its schedule, its last try's error and the day missing.
    app.clock.set(at(today, 11));
    let desk = signed_in(&app).await;
    let call = |endpoint: &'static str, form: Vec<(&'static str, String)>| {
        let (app, desk) = (&app, &desk);
        async move {
            let res = app
                .app
                .call_with(
                    desk,
                    endpoint,
                    &form
                        .iter()
                        .map(|(k, v)| (*k, v.as_str()))
                        .collect::<Vec<_>>(),
                )
                .await;
            assert_eq!(res.status(), 200, "{endpoint}");
            res.json::<serde_json::Value>().await.unwrap()
        }
    };
    let dash = call("dashboard", vec![("day", yesterday.clone())]).await;
    assert_eq!(
        dash["missing_statements"],
        serde_json::json!(["sandbox"]),
        "{dash}"
    );
    let runs = call("runs/list", vec![]).await;
    let schedule = &runs["schedules"][0];
    assert_eq!(schedule["provider"], "sandbox");
    assert_eq!(schedule["zone"], "UTC");
    assert_eq!(schedule["ready_hour"], 2);
    assert_eq!(schedule["missing"], serde_json::json!([yesterday]));
    assert!(
        schedule["last_error"]
            .as_str()
            .unwrap()
            .contains("not ready:"),
        "{schedule}"
    );
    assert!(
        schedule["next_at"].as_i64().unwrap() >= at(today, 11),
        "{schedule}"
    );
}

/// A signed-in console user's client.
pub(crate) async fn signed_in(app: &EngineApp) -> reqwest::Client {
    const PASSWORD: &str = "correct horse battery";
    app.app
        .add_user("olga", app::types::Role::Operator, PASSWORD)
        .await;
    let client = crate::helpers::client();
    let res = app
        .app
        .call_with(
            &client,
            "login",
            &[("username", "olga"), ("password", PASSWORD)],
        )
        .await;
    assert!(res.status().is_success() || res.status().is_redirection());
    client
}

/// An uploaded statement downloads byte for byte, with its hash.
async fn the_kept_file_downloads_byte_identical(b: Backend) {
    let (app, _gate) = gated_app(b, 1).await;
    let token = app.token().await;
    let (date, stamp) = app.today();
    let p = app.paid_with("KEPT-1", 500, "5.00", "SBX-KEPT-1").await;
    // CRLF line ends and a trailing blank line: kept as they came.
    let file = crate::recon::statement(&[crate::recon::row(
        "payment",
        "SBX-KEPT-1",
        &p,
        ("", ""),
        "5.00",
        "CNY",
        &stamp,
    )])
    .replace('\n', "\r\n")
        + "\r\n";
    let (status, run) = app.upload_only(&token, &date, &file).await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["run_id"].as_str().unwrap();
    let res = app
        .app
        .client
        .get(format!("{}/api/v1/recon/runs/{run_id}/file", app.app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let sha = res.headers()["x-statement-sha256"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(Some(sha.as_str()), run["file_hash"].as_str());
    assert!(
        res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("sandbox-statement.csv")
    );
    assert_eq!(res.bytes().await.unwrap().as_ref(), file.as_bytes());
    // The console's runs page links it, with its hash and checks; its
    // download is the same bytes.
    let desk = signed_in(&app).await;
    let res = app.app.call_with(&desk, "runs/list", &[]).await;
    let runs: serde_json::Value = res.json().await.unwrap();
    let listed = &runs["items"][0];
    assert_eq!(listed["id"], run_id);
    assert_eq!(listed["file_kept"], true);
    assert_eq!(listed["file_hash"], run["file_hash"]);
    assert!(
        listed["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["holds"] == true),
        "{listed}"
    );
    let res = desk
        .get(format!("{}/runs/{run_id}/file", app.app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.bytes().await.unwrap().as_ref(), file.as_bytes());
    // Without a token, nothing.
    let res = app
        .app
        .client
        .get(format!("{}/api/v1/recon/runs/{run_id}/file", app.app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // A pull page by page keeps no file: a clear 404.
    let res = app
        .app
        .client
        .get(format!("{}/api/v1/recon/runs/RUNNONE/file", app.app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    // The upload and each download are in the audit log, by whom.
    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, actor FROM audit_log WHERE object_type = 'recon_run' AND object_id = $1 ORDER BY seq",
    )
    .bind(run_id)
    .fetch_all(&app.app.accounts.db.pool)
    .await
    .unwrap();
    let actions: Vec<&str> = audited.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        actions,
        [
            "statement.upload",
            "statement.download",
            "statement.download"
        ],
        "{audited:?}"
    );
    assert!(audited[1].1.starts_with("token:"), "{audited:?}");
    assert!(!audited[2].1.starts_with("token:"), "{audited:?}");
}

/// The retention pass deletes the files kept longer than the configured
/// days, and those only; the runs stay.
async fn retention_deletes_old_files_only(b: Backend) {
    let (app, _gate) = gated_app(b, 1).await;
    let token = app.token().await;
    let engine = app.app_engine();
    let start = engine.now();
    let upload = |date: String| {
        let app = &app;
        let token = &token;
        async move {
            let (status, run) = app
                .upload_only(token, &date, &crate::recon::statement(&[]))
                .await;
            assert_eq!(status, 201, "{run}");
            run["run_id"].as_str().unwrap().to_owned()
        }
    };
    let old = upload("2025-01-01".into()).await;
    app.clock.set(start + 100 * DAY_US);
    let recent = upload("2025-04-11".into()).await;
    let kept = || async {
        sqlx::query_scalar::<_, String>("SELECT run_id FROM statement_files ORDER BY kept_at")
            .fetch_all(app.pool())
            .await
            .unwrap()
    };
    assert_eq!(kept().await, vec![old.clone(), recent.clone()]);
    // 399 days on: both within 400 days.
    assert_eq!(
        reckon::recon::expire_files(&engine, start + 399 * DAY_US)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        reckon::recon::expire_files(&engine, start + 401 * DAY_US)
            .await
            .unwrap(),
        1
    );
    assert_eq!(kept().await, vec![recent]);
    assert!(
        reckon::recon::find_run(&engine, &old)
            .await
            .unwrap()
            .is_some()
    );
}

/// A provider whose bills are cut in China time reconciles the China day,
/// whatever the business zone (UTC here): a payment at 17:30 UTC is the
/// next China day's.
async fn a_china_cut_provider_reconciles_the_china_day(b: Backend) {
    let app = spawn_engine_app_with(b, |c| {
        c.pull_times = vec![reckon::config::PullTime {
            provider: "sandbox".into(),
            zone: "Asia/Shanghai".into(),
            ready_hour: 10,
        }]
    })
    .await;
    let token = app.token().await;
    let d = days_back(today(), 2);
    app.clock.set(at(d, 17) + HOUR_US / 2);
    app.paid_with("CHINA-DAY", 500, "5.00", "SBX-CHINA-DAY")
        .await;
    let local_without_row = |date: jiff::civil::Date| {
        let (app, token) = (&app, &token);
        async move {
            let (status, run) = app
                .upload_only(token, &date.to_string(), &crate::recon::statement(&[]))
                .await;
            assert_eq!(status, 201, "{run}");
            let figures: serde_json::Value =
                serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
            figures["local_without_row"].as_i64().unwrap()
        }
    };
    assert_eq!(
        local_without_row(d.tomorrow().unwrap()).await,
        1,
        "the China day after"
    );
    assert_eq!(local_without_row(d).await, 0, "not the UTC day");
}

/// A manual pull or resume through the API: its status and answer.
async fn by_hand(
    app: &EngineApp,
    token: &str,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let res = app
        .app
        .client
        .post(format!("{}{path}", app.app.base))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

/// A pull or resume by hand takes the day's lease as the schedule does:
/// while another instance holds it, each is refused naming the holder,
/// starting no second run and asking the provider nothing; once the lease
/// has ended, both work.
async fn a_pull_by_hand_waits_for_the_days_lease(b: Backend) {
    let (app, gate) = gated_app(b, 1).await;
    let token = app.token().await;
    let today = today();
    let yesterday = days_back(today, 1);
    let date = yesterday.to_string();
    settled_at_provider(&app, "BY-HAND", yesterday);
    let now = at(today, 3);
    app.clock.set(now);
    // A pull by hand before the bill is out: one FAILED run.
    gate.not_ready.store(true, Ordering::SeqCst);
    let pull = serde_json::json!({ "provider": "sandbox", "business_date": date });
    let (status, answer) = by_hand(&app, &token, "/api/v1/recon/pulls", pull.clone()).await;
    assert_eq!(status, 422, "{answer}");
    gate.not_ready.store(false, Ordering::SeqCst);
    let (run_id,): (String,) =
        sqlx::query_as("SELECT run_id FROM recon_runs WHERE source = 'pull'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    // Another instance's pass leases the day.
    let until = now + HOUR_US;
    let taken = reckon::store::statement_pulls::take(
        app.pool(),
        "sandbox",
        &date,
        "instance-b",
        until,
        now,
        true,
    )
    .await
    .unwrap();
    assert!(taken.is_some());
    let asked = gate.asked.load(Ordering::SeqCst);
    let resume = format!("/api/v1/recon/runs/{run_id}/resume");
    for path in ["/api/v1/recon/pulls", resume.as_str()] {
        let (status, answer) = by_hand(&app, &token, path, pull.clone()).await;
        assert_eq!(status, 409, "{path}: {answer}");
        let error = answer["error"].as_str().unwrap();
        assert!(
            error.contains("instance-b") && error.contains(&date) && error.contains(&run_id),
            "{error}"
        );
        assert_eq!(
            answer.as_object().unwrap().len(),
            1,
            "the API's error shape"
        );
    }
    // The console's resume says so too, before it would start.
    let desk = signed_in(&app).await;
    let res = app
        .app
        .call_with(&desk, "runs/resume", &[("id", run_id.as_str())])
        .await;
    assert_eq!(res.status(), 400);
    let said = res.text().await.unwrap();
    assert!(said.contains("instance-b"), "{said}");
    assert_eq!(
        pulls(&app).await,
        vec![(date.clone(), "FAILED".into(), 0)],
        "no second run, the failed one untouched"
    );
    assert_eq!(gate.asked.load(Ordering::SeqCst), asked, "nothing asked");
    // The lease has ended: the resume completes the run, and a new pull
    // runs (and gives the lease back, recording the day done).
    app.clock.set(until);
    let (status, run) = by_hand(&app, &token, &resume, serde_json::json!({})).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(
        (&run["run_id"], &run["status"]),
        (&run_id.clone().into(), &"COMPLETED".into())
    );
    let (status, again) = by_hand(&app, &token, "/api/v1/recon/pulls", pull).await;
    assert_eq!(status, 201, "{again}");
    assert_eq!(again["status"], "COMPLETED", "{again}");
    assert_eq!(again["bill_type"], "sandbox statement pages", "{again}");
    let (owner, done, last_run): (Option<String>, i64, Option<String>) = sqlx::query_as(
        "SELECT owner, CAST(done AS BIGINT), last_run_id FROM statement_pulls \
         WHERE provider = 'sandbox' AND business_date = $1",
    )
    .bind(&date)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((owner, done), (None, 1));
    assert_eq!(
        last_run.as_ref(),
        again["run_id"].as_str().map(str::to_owned).as_ref()
    );
}

both_databases!(
    a_china_cut_provider_reconciles_the_china_day,
    three_missed_days_are_pulled_on_start,
    a_bill_not_ready_is_asked_for_again_and_then_completes,
    two_instances_pull_each_day_once,
    a_statement_missing_hours_after_it_is_due_is_alerted_once,
    the_kept_file_downloads_byte_identical,
    retention_deletes_old_files_only,
    a_pull_by_hand_waits_for_the_days_lease,
);
