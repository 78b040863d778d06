//! Sinks as endpoints, each test on SQLite and on
//! PostgreSQL, against receivers on 127.0.0.1 and a hand-moved clock:
//! both signatures during a secret rotation, each verified as the Standard
//! Webhooks spec says (not with Reckon's signing code); a paused sink
//! waiting without spending attempts; a schedule's offsets and DEAD; the
//! event-type filter; one `sink_failing` alert per failing spell; "retry
//! now" making a sink's deliveries waiting for a later retry due at once.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, serve, spawn_engine_app_with};
use crate::helpers::Backend;
use app::types::Role;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use reckon::config::SinkConfig;
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NEW_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OLD_SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/// One request a receiver got.
#[derive(Clone, Debug)]
struct Got {
    sink: String,
    id: String,
    timestamp: String,
    signature: String,
    body: String,
}

/// Receivers at `/{sink}`: record everything; answer 503 for the sinks
/// told to fail.
#[derive(Clone, Default)]
struct Receivers {
    got: Arc<Mutex<Vec<Got>>>,
    failing: Arc<Mutex<BTreeSet<String>>>,
}

impl Receivers {
    fn got(&self, sink: &str) -> Vec<Got> {
        let all = self.got.lock().unwrap();
        all.iter().filter(|g| g.sink == sink).cloned().collect()
    }
    fn fail(&self, sink: &str, fail: bool) {
        let mut f = self.failing.lock().unwrap();
        if fail {
            f.insert(sink.to_owned());
        } else {
            f.remove(sink);
        }
    }
    fn event_types(&self, sink: &str) -> Vec<String> {
        let mut types: Vec<String> = self
            .got(sink)
            .iter()
            .map(|g| {
                serde_json::from_str::<Value>(&g.body).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        types.sort();
        types
    }
}

async fn receive(
    State(r): State<Receivers>,
    Path(sink): Path<String>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    r.got.lock().unwrap().push(Got {
        sink: sink.clone(),
        id: h("webhook-id"),
        timestamp: h("webhook-timestamp"),
        signature: h("webhook-signature"),
        body,
    });
    if r.failing.lock().unwrap().contains(&sink) {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::NO_CONTENT
    }
}

/// The Standard Webhooks check, written from the spec: the key is the
/// base64 after `whsec_`; the signed content `{id}.{timestamp}.{body}`;
/// the header a space-separated list of `v1,{base64 HMAC-SHA256}`, any
/// one of which may match.
fn verifies_with(secret: &str, g: &Got) -> bool {
    let key = B64.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{}.{}.{}", g.id, g.timestamp, g.body).as_bytes());
    let expected = B64.encode(mac.finalize().into_bytes());
    g.signature
        .split(' ')
        .filter_map(|e| e.strip_prefix("v1,"))
        .any(|sig| sig == expected)
}

fn sink(name: &str, base: &str, event_types: &[&str], schedule: &[i64]) -> SinkConfig {
    SinkConfig {
        name: name.into(),
        url: format!("{base}/{name}"),
        event_types: event_types.iter().map(|s| s.to_string()).collect(),
        secret: Some(NEW_SECRET.into()),
        previous_secret: None,
        timeout: Duration::from_secs(5),
        schedule: schedule.iter().map(|s| s * 1_000_000).collect(),
        in_flight: None,
    }
}

/// An engine app whose only sinks are `sinks` (built with the receivers'
/// base URL), and the receivers.
async fn app_with_sinks(
    b: Backend,
    sinks: impl FnOnce(&str) -> Vec<SinkConfig>,
    adjust: impl FnOnce(&mut reckon::config::Config),
) -> (EngineApp, Receivers) {
    let receivers = Receivers::default();
    let base = serve(
        Router::new()
            .route("/{sink}", post(receive))
            .with_state(receivers.clone()),
    )
    .await;
    let named = sinks(&base);
    let app = spawn_engine_app_with(b, |c| {
        c.outbox_sinks = Vec::new();
        c.sinks.named = named;
        adjust(c);
    })
    .await;
    (app, receivers)
}

/// A payment moved to `status` by a signed provider notice.
async fn settle(app: &EngineApp, order: &str, status: &str) -> String {
    let p = app.payment(order, 1000, "EUR").await;
    let id = format!("evt_{order}");
    let body = app.notice(&id, &p, status, "10.00", "EUR", &format!("TXN-{order}"));
    assert_eq!(app.post_signed(&id, &body).await.status(), 200);
    p
}

async fn relay(app: &EngineApp) -> usize {
    let engine = app.app_engine();
    reckon::outbox::relay_outbox(&engine, &reqwest::Client::new(), engine.now())
        .await
        .unwrap()
}

async fn scalar(app: &EngineApp, sql: &str, sink: &str) -> i64 {
    sqlx::query_scalar(sql)
        .bind(sink)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

async fn sinks_api(app: &EngineApp, token: &str) -> Vec<Value> {
    let res = app
        .app
        .client
        .get(format!("{}/api/v1/sinks", app.app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn api_post(app: &EngineApp, token: &str, path: &str, body: Value) -> (u16, Value) {
    let res = app
        .app
        .client
        .post(format!("{}{path}", app.app.base))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or_default())
}

async fn signatures_during_a_rotation_verify_with_either_secret(b: Backend) {
    let (app, rx) = app_with_sinks(
        b,
        |base| {
            let mut rotating = sink("rotating", base, &[], &[5]);
            rotating.previous_secret = Some(OLD_SECRET.into());
            vec![rotating, sink("settled", base, &[], &[5])]
        },
        |_| {},
    )
    .await;
    settle(&app, "ROT-1", "SUCCEEDED").await;
    assert_eq!(relay(&app).await, 2);

    let got = rx.got("rotating");
    assert_eq!(got.len(), 1);
    let g = &got[0];
    assert_eq!(g.signature.split(' ').count(), 2, "{}", g.signature);
    assert!(
        verifies_with(NEW_SECRET, g),
        "a receiver holding only the new secret"
    );
    assert!(
        verifies_with(OLD_SECRET, g),
        "a receiver holding only the old secret"
    );
    let stranger = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    assert!(
        !verifies_with(stranger, g),
        "another secret does not verify"
    );
    let mut tampered = g.clone();
    tampered.body.push(' ');
    assert!(!verifies_with(NEW_SECRET, &tampered) && !verifies_with(OLD_SECRET, &tampered));

    // After the rotation: one signature, the new secret's only.
    let got = rx.got("settled");
    assert_eq!(got[0].signature.split(' ').count(), 1);
    assert!(verifies_with(NEW_SECRET, &got[0]) && !verifies_with(OLD_SECRET, &got[0]));
    assert_eq!(
        got[0].id, g.id,
        "one message, one webhook-id, to every sink"
    );
}

async fn a_paused_sink_delivers_everything_after_resume(b: Backend) {
    let (app, rx) = app_with_sinks(
        b,
        |base| vec![sink("orders", base, &[], &[5, 300, 1800])],
        |_| {},
    )
    .await;
    let token = app.token().await;
    let path = "/api/v1/sinks/orders/pause";
    assert_eq!(
        api_post(&app, &token, path, json!({ "reason": "  " }))
            .await
            .0,
        400
    );
    assert_eq!(
        api_post(
            &app,
            &token,
            "/api/v1/sinks/nowhere/pause",
            json!({ "reason": "x" })
        )
        .await
        .0,
        404
    );
    let (status, view) = api_post(&app, &token, path, json!({ "reason": "shop migrating" })).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["state"], "PAUSED");
    assert_eq!(view["pause_reason"], "shop migrating");
    assert_eq!(
        api_post(&app, &token, path, json!({ "reason": "again" }))
            .await
            .0,
        400,
        "already paused"
    );

    let mut ids = BTreeSet::new();
    for n in 0..3 {
        settle(&app, &format!("PAUSE-{n}"), "SUCCEEDED").await;
    }
    // Far past every step of the schedule: nothing leased, nothing spent.
    for _ in 0..6 {
        assert_eq!(relay(&app).await, 0);
        app.clock.advance_secs(3 * 3600);
    }
    assert!(rx.got("orders").is_empty());
    let attempts = "SELECT COALESCE(SUM(attempts), 0) FROM outbox_deliveries WHERE sink = $1";
    assert_eq!(scalar(&app, attempts, "orders").await, 0);
    let pending = "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = $1 AND status = 'PENDING'";
    assert_eq!(scalar(&app, pending, "orders").await, 3);
    let listed = sinks_api(&app, &token).await;
    assert_eq!(listed[0]["pending"], 3);

    // Resumed from the console by an operator, with a reason.
    app.app
        .add_user("olivia", Role::Operator, "correct horse battery")
        .await;
    assert_eq!(
        app.app
            .login("olivia", "correct horse battery")
            .await
            .status(),
        200
    );
    let res = app
        .app
        .call(
            "sinks/pause",
            &[
                ("name", "orders"),
                ("reason", "migration done"),
                ("pause", "false"),
            ],
        )
        .await;
    assert_eq!(res.status(), 200);
    assert_eq!(relay(&app).await, 3);
    let got = rx.got("orders");
    assert_eq!(got.len(), 3);
    ids.extend(got.iter().map(|g| g.id.clone()));
    assert_eq!(ids.len(), 3, "each message once");
    assert_eq!(relay(&app).await, 0);
    let delivered = "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = $1 AND status = 'DELIVERED' AND attempts = 1";
    assert_eq!(scalar(&app, delivered, "orders").await, 3);

    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT action, actor FROM audit_log WHERE object_type = 'sink' AND object_id = 'orders' ORDER BY seq",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        audited,
        [
            ("sink.pause".to_owned(), "token:shop".to_owned()),
            ("sink.resume".to_owned(), "olivia".to_owned())
        ]
    );
}

async fn the_schedule_retries_at_its_offsets_then_dead(b: Backend) {
    let (app, rx) = app_with_sinks(
        b,
        |base| vec![sink("slow", base, &[], &[5, 60, 600])],
        |_| {},
    )
    .await;
    rx.fail("slow", true);
    settle(&app, "SCHED-1", "SUCCEEDED").await;
    assert_eq!(relay(&app).await, 1, "the first attempt at once");
    // Each step: one second early nothing; on the offset, one attempt.
    for step in [5, 60, 600] {
        app.clock.advance_secs(step - 1);
        assert_eq!(relay(&app).await, 0, "not before {step}s");
        app.clock.advance_secs(1);
        assert_eq!(relay(&app).await, 1, "at {step}s");
    }
    app.clock.advance_secs(86_400);
    assert_eq!(relay(&app).await, 0, "DEAD after the last step");
    assert_eq!(rx.got("slow").len(), 4);
    let (status, attempts): (String, i64) = sqlx::query_as(
        "SELECT status, CAST(attempts AS BIGINT) FROM outbox_deliveries WHERE sink = 'slow'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((status.as_str(), attempts), ("DEAD", 4));
    assert_eq!(app.app.alert_count("outbox_dead").await, 1);
}

async fn each_sink_gets_only_its_event_types(b: Backend) {
    let (app, rx) = app_with_sinks(
        b,
        |base| {
            vec![
                sink("paid", base, &["payment.succeeded"], &[5]),
                sink("failures", base, &["payment.failed"], &[5]),
                sink("payments", base, &["payment.*"], &[5]),
                sink("refunds", base, &["refund.*"], &[5]),
                sink("everything", base, &[], &[5]),
            ]
        },
        |_| {},
    )
    .await;
    settle(&app, "TYPE-1", "SUCCEEDED").await;
    settle(&app, "TYPE-2", "FAILED").await;
    assert_eq!(relay(&app).await, 6);
    assert_eq!(rx.event_types("paid"), ["payment.succeeded"]);
    assert_eq!(rx.event_types("failures"), ["payment.failed"]);
    assert_eq!(
        rx.event_types("payments"),
        ["payment.failed", "payment.succeeded"]
    );
    assert_eq!(
        rx.event_types("everything"),
        ["payment.failed", "payment.succeeded"]
    );
    assert!(rx.got("refunds").is_empty());
    let rows = "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = $1";
    assert_eq!(
        scalar(&app, rows, "refunds").await,
        0,
        "no row for a sink that wants none"
    );
    assert_eq!(scalar(&app, rows, "paid").await, 1);
}

async fn a_failing_sink_raises_one_alert_and_shows_failing(b: Backend) {
    let (app, rx) = app_with_sinks(
        b,
        |base| {
            vec![
                sink("flaky", base, &[], &[10; 20]),
                sink("fine", base, &[], &[10; 20]),
            ]
        },
        |c| c.sinks.failing_attempts = 3,
    )
    .await;
    let token = app.token().await;
    rx.fail("flaky", true);
    settle(&app, "FAIL-1", "SUCCEEDED").await;
    settle(&app, "FAIL-2", "SUCCEEDED").await;
    assert_eq!(relay(&app).await, 4, "two messages to two sinks");
    assert_eq!(
        app.app.alert_count("sink_failing").await,
        0,
        "two failures: not yet"
    );
    let listed = sinks_api(&app, &token).await;
    assert_eq!(listed[0]["state"], "ACTIVE");
    assert_eq!(listed[0]["consecutive_failures"], 2);
    for _ in 0..4 {
        app.clock.advance_secs(10);
        assert_eq!(relay(&app).await, 2);
    }
    assert_eq!(
        app.app.alert_count("sink_failing").await,
        1,
        "once per failing spell"
    );

    let listed = sinks_api(&app, &token).await;
    let flaky = &listed[0];
    assert_eq!(flaky["name"], "flaky");
    assert_eq!(flaky["state"], "FAILING");
    assert_eq!(flaky["retrying"], 2);
    assert_eq!(flaky["consecutive_failures"], 10);
    assert!(flaky["last_failure_at"].is_i64() && flaky["last_success_at"].is_null());
    assert!(
        flaky.to_string().find("whsec").is_none(),
        "no secret shown: {flaky}"
    );
    assert_eq!(listed[1]["state"], "ACTIVE");
    assert!(listed[1]["last_success_at"].is_i64());

    // The dashboard shows it.
    app.app
        .add_user("vera", Role::Supervisor, "correct horse battery")
        .await;
    assert_eq!(
        app.app
            .login("vera", "correct horse battery")
            .await
            .status(),
        200
    );
    let dash: Value = app.app.call("dashboard", &[]).await.json().await.unwrap();
    let failing = dash["failing_sinks"].as_array().unwrap();
    assert_eq!(failing.len(), 1, "{dash}");
    assert_eq!(failing[0]["name"], "flaky");
    // And the sinks page, rendered on the server.
    let page = app.app.get("/sinks").await.text().await.unwrap();
    assert!(
        page.contains(r#"data-sink="flaky" data-state="FAILING""#),
        "{page}"
    );
    assert!(
        page.contains(r#"data-sink="fine" data-state="ACTIVE""#),
        "{page}"
    );
    assert!(
        !page.contains("whsec") && !page.contains("MfKQ9r8"),
        "no secret on the page"
    );

    // It recovers: delivered, active again, and a later spell alerts anew.
    rx.fail("flaky", false);
    app.clock.advance_secs(10);
    assert_eq!(relay(&app).await, 2);
    let listed = sinks_api(&app, &token).await;
    assert_eq!(listed[0]["state"], "ACTIVE");
    assert_eq!(listed[0]["retrying"], 0);
    let dash: Value = app.app.call("dashboard", &[]).await.json().await.unwrap();
    assert!(dash["failing_sinks"].as_array().unwrap().is_empty());
    assert_eq!(app.app.alert_count("sink_failing").await, 1);
}

/// Each of `orders` ('s pending deliveries) failed twice: they wait for
/// the schedule's 5-minute step. Returns how many wait.
async fn waiting_five_minutes(app: &EngineApp, rx: &Receivers, orders: &[&str]) -> i64 {
    rx.fail("orders", true);
    for order in orders {
        settle(app, order, "SUCCEEDED").await;
    }
    relay(app).await;
    app.clock.advance_secs(5);
    relay(app).await;
    assert_eq!(relay(app).await, 0, "nothing due before the 5-minute step");
    rx.fail("orders", false);
    scalar(
        app,
        "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = $1 AND status = 'PENDING' AND attempts = 2",
        "orders",
    )
    .await
}

async fn retry_now_sends_a_sinks_waiting_deliveries_at_once(b: Backend) {
    let (app, rx) = app_with_sinks(
        b,
        |base| {
            vec![
                sink("orders", base, &[], &[5, 300, 1800]),
                sink("ledger", base, &[], &[5, 300, 1800]),
            ]
        },
        |_| {},
    )
    .await;
    assert_eq!(waiting_five_minutes(&app, &rx, &["RN-1", "RN-2"]).await, 2);
    assert_eq!(rx.got("orders").len(), 4, "two attempts each");
    assert_eq!(rx.got("ledger").len(), 2, "the other sink delivered");

    // Admins read the sinks page but may not act on a sink.
    let admin = app.app.signed_in("ada", Role::Admin).await;
    let res = app
        .app
        .call_with(
            &admin,
            "sinks/retry",
            &[("name", "orders"), ("reason", "back")],
        )
        .await;
    assert_eq!(res.status(), 403);

    // An operator, from the console: a reason is required.
    let olivia = app.app.signed_in("olivia", Role::Operator).await;
    let res = app
        .app
        .call_with(
            &olivia,
            "sinks/retry",
            &[("name", "orders"), ("reason", " ")],
        )
        .await;
    assert_eq!(res.status(), 400);
    let res = app
        .app
        .call_with(
            &olivia,
            "sinks/retry",
            &[("name", "orders"), ("reason", "the shop is back")],
        )
        .await;
    assert_eq!(res.status(), 200);
    let done: Value = res.json().await.unwrap();
    assert_eq!(done, json!({ "sink": "orders", "made_due": 2 }));
    // The next pass, at the same clock, delivers them: each once more.
    assert_eq!(relay(&app).await, 2);
    let got = rx.got("orders");
    assert_eq!(got.len(), 6);
    let last: BTreeSet<String> = got[4..].iter().map(|g| g.id.clone()).collect();
    let first: BTreeSet<String> = got[..2].iter().map(|g| g.id.clone()).collect();
    assert_eq!(last, first, "the same two messages, the same webhook-ids");
    let delivered = "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = $1 AND status = 'DELIVERED' AND attempts = 3";
    assert_eq!(scalar(&app, delivered, "orders").await, 2);
    assert_eq!(rx.got("ledger").len(), 2, "the other sink untouched");

    // A supervisor, with nothing waiting: said so, nothing audited.
    let vera = app.app.signed_in("vera", Role::Supervisor).await;
    let res = app
        .app
        .call_with(
            &vera,
            "sinks/retry",
            &[("name", "orders"), ("reason", "again")],
        )
        .await;
    assert_eq!(res.status(), 200);
    let done: Value = res.json().await.unwrap();
    assert_eq!(done["made_due"], 0);

    // Through the API.
    let token = app.token().await;
    assert_eq!(waiting_five_minutes(&app, &rx, &["RN-3"]).await, 1);
    let path = "/api/v1/sinks/orders/retry";
    let (status, body) = api_post(&app, &token, path, json!({})).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = api_post(&app, &token, path, json!({ "reason": "" })).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = api_post(
        &app,
        &token,
        "/api/v1/sinks/nowhere/retry",
        json!({ "reason": "x" }),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = api_post(&app, &token, path, json!({ "reason": "back again" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["made_due"], 1);
    assert_eq!(body["detail"], "1 delivery to orders is due now");
    assert_eq!(relay(&app).await, 1);
    let (status, body) = api_post(&app, &token, path, json!({ "reason": "once more" })).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["made_due"], 0);
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("nothing was waiting"),
        "{body}"
    );

    // A paused sink is refused: resuming it sends its deliveries.
    assert_eq!(waiting_five_minutes(&app, &rx, &["RN-4"]).await, 1);
    let (status, _) = api_post(
        &app,
        &token,
        "/api/v1/sinks/orders/pause",
        json!({ "reason": "maintenance" }),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = api_post(&app, &token, path, json!({ "reason": "now" })).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("resume it first"),
        "{body}"
    );
    let res = app
        .app
        .call_with(
            &olivia,
            "sinks/retry",
            &[("name", "orders"), ("reason", "now")],
        )
        .await;
    assert_eq!(res.status(), 400);
    assert_eq!(relay(&app).await, 0, "paused: nothing sent");

    let audited: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT actor, object_id, before_json, after_json FROM audit_log \
         WHERE action = 'sink.retry_now' ORDER BY seq",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(audited.len(), 2, "{audited:?}");
    assert_eq!(
        (audited[0].0.as_str(), audited[0].1.as_str()),
        ("olivia", "orders")
    );
    let before: Value = serde_json::from_str(&audited[0].2).unwrap();
    let after: Value = serde_json::from_str(&audited[0].3).unwrap();
    assert_eq!(before["waiting_for_retry"], 2);
    assert_eq!(after["made_due"], 2);
    assert_eq!(after["reason"], "the shop is back");
    assert_eq!(audited[1].0, "token:shop", "the API token, named as one");
    assert!(audited[1].3.contains("back again"), "{}", audited[1].3);
}

both_databases!(
    retry_now_sends_a_sinks_waiting_deliveries_at_once,
    signatures_during_a_rotation_verify_with_either_secret,
    a_paused_sink_delivers_everything_after_resume,
    the_schedule_retries_at_its_offsets_then_dead,
    each_sink_gets_only_its_event_types,
    a_failing_sink_raises_one_alert_and_shows_failing,
);
