//! The relay's lanes running as they do in `reckon serve` (one per sink,
//! on tasks of their own), each test on SQLite and on PostgreSQL, against
//! receivers on 127.0.0.1: a slow sink beside a fast one, a sink down and
//! back, two instances sharing one database's deliveries.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, serve, spawn_engine_app_with};
use crate::helpers::Backend;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use reckon::config::SinkConfig;
use reckon::engine::Engine;
use reckon::store::outbox;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request a receiver got, and what it answered.
#[derive(Clone, Debug)]
struct Got {
    sink: String,
    id: String,
    body: String,
    ok: bool,
}

/// Receivers at `/{sink}`: record every request in arrival order; answer
/// 503 for the sinks told to fail, after a pause for the slow ones.
#[derive(Clone, Default)]
struct Receivers {
    got: Arc<Mutex<Vec<Got>>>,
    failing: Arc<Mutex<BTreeSet<String>>>,
    slow: Arc<Mutex<HashMap<String, Duration>>>,
}

impl Receivers {
    fn got(&self, sink: &str) -> Vec<Got> {
        let all = self.got.lock().unwrap();
        all.iter().filter(|g| g.sink == sink).cloned().collect()
    }

    /// The ids `sink` took (answered 2xx), in arrival order.
    fn taken(&self, sink: &str) -> Vec<String> {
        self.got(sink)
            .into_iter()
            .filter(|g| g.ok)
            .map(|g| g.id)
            .collect()
    }

    fn fail(&self, sink: &str, fail: bool) {
        let mut f = self.failing.lock().unwrap();
        if fail {
            f.insert(sink.to_owned());
        } else {
            f.remove(sink);
        }
    }
}

async fn receive(
    State(r): State<Receivers>,
    Path(sink): Path<String>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let pause = r.slow.lock().unwrap().get(&sink).copied();
    if let Some(pause) = pause {
        tokio::time::sleep(pause).await;
    }
    let ok = !r.failing.lock().unwrap().contains(&sink);
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    r.got.lock().unwrap().push(Got { sink, id, body, ok });
    if ok {
        StatusCode::NO_CONTENT
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

fn sink(name: &str, base: &str, in_flight: usize) -> SinkConfig {
    SinkConfig {
        name: name.into(),
        url: format!("{base}/{name}"),
        event_types: Vec::new(),
        secret: None,
        previous_secret: None,
        timeout: Duration::from_secs(10),
        // The default schedule's first steps: a retry waits 5 s, then 5 min.
        schedule: [5, 300, 1800, 7200, 18_000]
            .iter()
            .map(|s| s * 1_000_000)
            .collect(),
        in_flight: Some(in_flight),
    }
}

/// An engine app whose sinks are `sinks` (name, messages in flight), with
/// the receivers.
async fn app_with_sinks(b: Backend, sinks: &[(&str, usize)]) -> (EngineApp, Receivers) {
    let receivers = Receivers::default();
    let base = serve(
        Router::new()
            .route("/{sink}", post(receive))
            .with_state(receivers.clone()),
    )
    .await;
    let named: Vec<SinkConfig> = sinks.iter().map(|(n, k)| sink(n, &base, *k)).collect();
    let app = spawn_engine_app_with(b, |c| {
        c.outbox_sinks = Vec::new();
        c.sinks.named = named;
    })
    .await;
    (app, receivers)
}

/// `payments` payments with a `payment.succeeded` then a `refund.succeeded`
/// each, written as the engine writes them: one transaction, one time.
async fn messages(app: &EngineApp, payments: usize) {
    let engine = app.app_engine();
    let now = engine.now();
    let rows: Vec<(String, String, String, String)> = (0..payments)
        .flat_map(|i| {
            let payment = format!("PAY-RELAY-{i:04}");
            ["payment.succeeded", "refund.succeeded"].map(|t| {
                (
                    uuid::Uuid::now_v7().to_string(),
                    payment.clone(),
                    t.to_owned(),
                    format!(r#"{{"type":"{t}","payment_no":"{payment}"}}"#),
                )
            })
        })
        .collect();
    let events: Vec<outbox::NewEvent> = rows
        .iter()
        .map(|(id, payment, t, payload)| outbox::NewEvent {
            message_id: id,
            aggregate_type: "payment",
            aggregate_id: payment,
            event_type: t,
            payload,
            now,
        })
        .collect();
    let mut tx = engine.db.begin_write().await.unwrap();
    outbox::insert_events_many(&mut *tx, &events, &engine.sink_names()[..])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    engine.wake_workers();
}

/// Waits (up to a minute) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("still not so after a minute: {what}");
}

async fn count(app: &EngineApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(app.pool()).await.unwrap()
}

/// For every payment, its `payment.succeeded` reached `sink` before its
/// `refund.succeeded`.
fn in_order_per_payment(r: &Receivers, sink: &str) {
    let mut seen: HashMap<String, Vec<String>> = HashMap::new();
    for g in r.got(sink).into_iter().filter(|g| g.ok) {
        let body: Value = serde_json::from_str(&g.body).unwrap();
        seen.entry(body["payment_no"].as_str().unwrap().to_owned())
            .or_default()
            .push(body["type"].as_str().unwrap().to_owned());
    }
    for (payment, types) in seen {
        assert_eq!(
            types,
            ["payment.succeeded", "refund.succeeded"],
            "{payment} at {sink}"
        );
    }
}

fn run_lanes(engine: &Engine) {
    // Detached: the lanes run until the test ends.
    drop(reckon::outbox::relay::spawn(engine));
}

/// A sink that takes 2 s to answer, one message at a time, beside a fast
/// one: the fast one has every message while the slow one has answered
/// at most a few.
async fn a_slow_sink_never_holds_up_a_fast_one(b: Backend) {
    let (app, r) = app_with_sinks(b, &[("fast", 8), ("slow", 1)]).await;
    r.slow
        .lock()
        .unwrap()
        .insert("slow".into(), Duration::from_secs(2));
    messages(&app, 20).await;
    run_lanes(&app.app_engine());
    until("the fast sink has all 40 messages", || {
        r.taken("fast").len() == 40
    })
    .await;
    let slow = r.got("slow").len();
    assert!(
        slow <= 2,
        "the slow sink answered {slow} meanwhile: it held up the fast one"
    );
    in_order_per_payment(&r, "fast");
    let ids: BTreeSet<String> = r.taken("fast").into_iter().collect();
    assert_eq!(ids.len(), 40, "each message once");
}

/// A sink down while messages wait: its lane probes it one message at a
/// time instead of spending every message's retries; when it answers
/// again, its whole backlog — including messages whose next retry is 5
/// minutes away on a clock that no longer moves — is delivered at once,
/// each message once with the id it always had, a payment's in order.
async fn a_sink_back_from_an_outage_gets_its_backlog_at_once_in_order(b: Backend) {
    let (app, r) = app_with_sinks(b, &[("shop", 8)]).await;
    r.fail("shop", true);
    messages(&app, 20).await;
    run_lanes(&app.app_engine());
    // The first batch fails (the first message of each payment)…
    until("the first batch failed", || r.got("shop").len() >= 20).await;
    // …minutes pass: the failed ones are due again, and the probes take
    // them one at a time, each failure costing its message the 5 s step.
    app.clock.advance_secs(600);
    let mut twice = 0;
    for _ in 0..300 {
        twice = count(
            &app,
            "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = 'shop' AND attempts >= 2",
        )
        .await;
        if twice >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(twice >= 2, "the probes took due messages");
    let tried = r.got("shop").len();
    assert!(
        tried < 20 + 10,
        "a down sink is probed, not sent every due message: {tried} requests"
    );
    let spent = count(
        &app,
        "SELECT COALESCE(MAX(attempts), 0) FROM outbox_deliveries WHERE sink = 'shop'",
    )
    .await;
    assert!(spent <= 2, "no message's schedule was spent: {spent}");

    // It answers again; the clock stays where it is.
    let before = r.got("shop").len();
    r.fail("shop", false);
    until("the whole backlog delivered", || {
        r.taken("shop").len() >= 40
    })
    .await;
    let taken = r.taken("shop");
    let unique: BTreeSet<&String> = taken.iter().collect();
    assert_eq!((taken.len(), unique.len()), (40, 40), "each message once");
    let ids: BTreeSet<String> = r.got("shop").into_iter().map(|g| g.id).collect();
    assert_eq!(ids.len(), 40, "every attempt carried its message's one id");
    // The last batch is written once its answers are in.
    let mut delivered = 0;
    for _ in 0..100 {
        delivered = count(
            &app,
            "SELECT COUNT(*) FROM outbox_deliveries WHERE sink = 'shop' AND status = 'DELIVERED'",
        )
        .await;
        if delivered == 40 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(delivered, 40);
    in_order_per_payment(&r, "shop");
    assert!(r.got("shop").len() - before >= 40);
}

/// Two instances on one database, each running its lanes: every message
/// delivered once (each lease taken by one instance), in order per payment.
async fn two_instances_share_the_deliveries(b: Backend) {
    let (app, r) = app_with_sinks(b, &[("shop", 2)]).await;
    r.slow
        .lock()
        .unwrap()
        .insert("shop".into(), Duration::from_millis(5));
    let second = reckon::Application::build_with(
        &app.app.config,
        reckon::startup::Options {
            demo: false,
            clock: app.clock.clone(),
            workers: false,
            ..Default::default()
        },
    )
    .await
    .expect("a second instance builds");
    messages(&app, 150).await;
    run_lanes(&app.app_engine());
    run_lanes(&second.engine);
    until("every message delivered", || r.taken("shop").len() >= 300).await;
    let taken = r.taken("shop");
    let unique: BTreeSet<&String> = taken.iter().collect();
    assert_eq!(unique.len(), 300);
    assert_eq!(taken.len(), 300, "no lease was taken twice");
    in_order_per_payment(&r, "shop");
}

both_databases!(
    a_slow_sink_never_holds_up_a_fast_one,
    a_sink_back_from_an_outage_gets_its_backlog_at_once_in_order,
    two_instances_share_the_deliveries,
);
