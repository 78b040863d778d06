//! The workers' lanes with the real workers and the real clock: a provider
//! account whose status queries hang to its client's timeout holds up only
//! its own calls — another account's payment is created, paid by callback
//! and announced to the outbox sink at once, signed at send time — and its
//! own calls run concurrently, never more at once than its slots.

use crate::both_databases;
use crate::engine_helpers::serve;
use crate::helpers::{Backend, spawn_app_with};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use reckon::config::ProviderConfig;
use reckon::engine::CreatePayment;
use reckon::providers::sandbox::SandboxConfig;
use reckon::providers::signing::{Secret, verify_headers};
use reckon::sandbox_server::{Chaos, SandboxServer};
use reckon::startup::Options;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

both_databases!(a_hanging_provider_never_delays_another_accounts_outbox_message);

/// The slow account's client gives up after this; its server answers later.
const TIMEOUT_MS: u64 = 2_000;
const HANGING_QUERIES: usize = 20;
/// `Settings::calls_per_account` by default.
const SLOTS: usize = 4;
/// What a consumer checking Standard-Webhooks timestamps tolerates.
const TOLERANCE_SECS: i64 = 300;

/// When each status query reached the hanging provider.
#[derive(Clone, Default)]
struct Hang {
    queries: Arc<Mutex<Vec<Instant>>>,
}

impl Hang {
    fn started(&self) -> Vec<Instant> {
        self.queries.lock().unwrap().clone()
    }
}

/// A status query (`GET /v1/payments/{no}`) sleeps well past the client's
/// timeout; creates go through to the real sandbox behind it.
async fn hang_queries(State(hang): State<Hang>, req: Request, next: Next) -> Response {
    if req.method() == Method::GET && req.uri().path().starts_with("/v1/payments/") {
        hang.queries.lock().unwrap().push(Instant::now());
        tokio::time::sleep(Duration::from_millis(TIMEOUT_MS * 5)).await;
        return StatusCode::GATEWAY_TIMEOUT.into_response();
    }
    next.run(req).await
}

/// One message as the consumer got it.
#[derive(Clone, Debug)]
struct Received {
    at: Instant,
    /// The receive time, seconds since the epoch, as the consumer reads it.
    at_secs: i64,
    timestamp: i64,
    verified: bool,
    body: serde_json::Value,
}

#[derive(Clone)]
struct Consumer {
    secret: Secret,
    got: Arc<Mutex<Vec<Received>>>,
}

async fn consume(State(c): State<Consumer>, headers: HeaderMap, body: String) -> StatusCode {
    let at = Instant::now();
    let at_secs = jiff::Timestamp::now().as_second();
    let timestamp = headers
        .get("webhook-timestamp")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let verified = verify_headers(
        &c.secret,
        &headers,
        body.as_bytes(),
        at_secs,
        TOLERANCE_SECS,
    )
    .is_ok();
    c.got.lock().unwrap().push(Received {
        at,
        at_secs,
        timestamp,
        verified,
        body: serde_json::from_str(&body).unwrap_or_default(),
    });
    StatusCode::NO_CONTENT
}

/// The most query starts within any span shorter than the client's
/// timeout: a slot starts its next query only after the last one timed out.
fn most_at_once(starts: &[Instant]) -> usize {
    let span = Duration::from_millis(TIMEOUT_MS * 3 / 4);
    starts
        .iter()
        .map(|a| {
            starts
                .iter()
                .filter(|b| **b >= *a && **b - *a < span)
                .count()
        })
        .max()
        .unwrap_or(0)
}

async fn a_hanging_provider_never_delays_another_accounts_outbox_message(backend: Backend) {
    let sandbox_secret = Secret::random();
    let never_settles = || Chaos {
        settle_ms: 3_600_000,
        ..Chaos::default()
    };
    let fast = SandboxServer::new(
        "http://127.0.0.1:9/unset",
        sandbox_secret.clone(),
        never_settles(),
    );
    let fast_url = serve(fast.router()).await;
    let slow = SandboxServer::new(
        "http://127.0.0.1:9/unset",
        Secret::random(),
        never_settles(),
    );
    let hang = Hang::default();
    let slow_url = serve(slow.router().layer(axum::middleware::from_fn_with_state(
        hang.clone(),
        hang_queries,
    )))
    .await;
    let outbox_secret = Secret::random();
    let consumer = Consumer {
        secret: outbox_secret.clone(),
        got: Arc::default(),
    };
    let sink_url = serve(
        Router::new()
            .route("/events", post(consume))
            .with_state(consumer.clone()),
    )
    .await;

    let whsec = sandbox_secret.to_whsec();
    let app = spawn_app_with(
        backend,
        |c| {
            c.providers = vec![
                ProviderConfig::Sandbox(SandboxConfig {
                    name: "sandbox".into(),
                    base_url: fast_url.clone(),
                    secret: whsec.clone().into(),
                    ..SandboxConfig::default()
                }),
                ProviderConfig::Sandbox(SandboxConfig {
                    name: "slow".into(),
                    base_url: slow_url.clone(),
                    secret: Secret::random().to_whsec().into(),
                    timeout_ms: Some(TIMEOUT_MS),
                    ..SandboxConfig::default()
                }),
            ];
            c.outbox_sinks = vec![("fulfilment".into(), format!("{sink_url}/events"))];
            c.outbox_secret = Some(outbox_secret.to_whsec().into());
            // Each payment is asked about as soon as it is created, then an
            // hour later (past this test).
            c.query_schedule = vec![0, 3_600_000_000];
        },
        Options {
            demo: false,
            workers: true,
            ..Options::default()
        },
    )
    .await;
    let engine = app.engine.clone();
    let create = |provider: &'static str, order_no: String| {
        let engine = engine.clone();
        async move {
            let req = CreatePayment {
                order_no: order_no.clone(),
                provider: provider.into(),
                amount_minor: 1999,
                currency: "EUR".into(),
                description: None,
            };
            let created = engine
                .create_payment("test", &format!("key-{order_no}"), &req)
                .await;
            created.expect("the payment is created").payment_no
        }
    };

    // Twenty payments of the slow account, each created at its provider,
    // then queried: the queries hang.
    for i in 0..HANGING_QUERIES {
        create("slow", format!("slow-{i}")).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while hang.started().len() < SLOTS {
        assert!(
            Instant::now() < deadline,
            "the slow account's queries never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Meanwhile a payment of the other account is created at its provider
    // and paid by callback.
    let paid = create("sandbox", "fast-1".into()).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let txn = loop {
        let (status, txn): (String, Option<String>) =
            sqlx::query_as("SELECT status, provider_txn_id FROM payments WHERE payment_no = $1")
                .bind(&paid)
                .fetch_one(&app.accounts.db.pool)
                .await
                .unwrap();
        if let ("PENDING", Some(txn)) = (status.as_str(), txn) {
            break txn;
        }
        assert!(
            Instant::now() < deadline,
            "the other account's create waited behind the hanging queries (still {status})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let id = format!("evt-{paid}");
    let notice = serde_json::json!({
        "id": id,
        "type": "payment.succeeded",
        "data": { "payment_no": paid, "txn_id": txn, "status": "SUCCEEDED", "amount": "19.99", "currency": "EUR" }
    })
    .to_string();
    let sent = Instant::now();
    let ts = jiff::Timestamp::now().as_second();
    let res = app
        .client
        .post(format!("{}/webhooks/sandbox", app.base))
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", ts.to_string())
        .header(
            "webhook-signature",
            sandbox_secret.sign(&id, ts, notice.as_bytes()),
        )
        .body(notice)
        .send()
        .await
        .unwrap();
    assert!(
        res.status().is_success(),
        "callback answered {}",
        res.status()
    );
    let hanging_then = hang.started().len();
    assert!(
        hanging_then < HANGING_QUERIES,
        "the callback came after the hanging queries ({hanging_then}) had all started"
    );

    // Its message, as the consumer got it. Waited for well past the bound,
    // so a slow relay shows how slow.
    let deadline = Instant::now() + Duration::from_secs(60);
    let message = loop {
        let got = consumer.got.lock().unwrap().clone();
        if let Some(m) = got
            .into_iter()
            .find(|m| m.body["payment_no"] == paid.as_str() && m.body["status"] == "SUCCEEDED")
        {
            break m;
        }
        assert!(
            Instant::now() < deadline,
            "the outbox message never came; the consumer got {:?}",
            consumer.got.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    let latency = message.at - sent;
    let skew = message.at_secs - message.timestamp;
    println!(
        "outbox latency under a hanging provider ({backend:?}): {:.3} s after the callback was sent, \
         signed {skew} s before receipt, {hanging_then} of {HANGING_QUERIES} hanging queries started by then",
        latency.as_secs_f64()
    );
    assert!(
        latency < Duration::from_secs(2),
        "the outbox message took {latency:?} behind the hanging provider"
    );
    assert!(
        skew.abs() <= TOLERANCE_SECS,
        "signed {skew} s before it arrived"
    );
    assert!(
        message.verified,
        "the consumer refused the message's signature or timestamp"
    );

    // All twenty queries ran, concurrently but never more than the
    // account's slots at once.
    let deadline = Instant::now() + Duration::from_secs(60);
    while hang.started().len() < HANGING_QUERIES {
        assert!(
            Instant::now() < deadline,
            "only {} of the {HANGING_QUERIES} queries ran",
            hang.started().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let starts = hang.started();
    let at_once = most_at_once(&starts);
    println!("most hanging queries at once: {at_once} (slots {SLOTS})");
    assert!(
        (2..=SLOTS).contains(&at_once),
        "{at_once} queries at once on an account of {SLOTS} slots"
    );
}
