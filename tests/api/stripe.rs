//! The Stripe adapter against Stripe's wire format: events signed by the
//! official `stripe` npm package and by an independent signer here, and a
//! local server speaking Stripe's PaymentIntents API for creates and status
//! queries, refunds and the balance transactions list (its pulls are in
//! `pulls::stripe`). Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use axum::extract::{Path, Query, State};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use hmac::{Hmac, Mac};
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::providers::stripe::StripeConfig;
use reckon::startup::Options;
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) const SECRET: &str = "whsec_test_0123456789abcdef";
pub(crate) const API_KEY: &str = "sk_test_reckon";
const OLD_SECRET: &str = "whsec_old_fedcba9876543210";

/// Stripe's PaymentIntents API, as much as Reckon uses.
#[derive(Clone, Default)]
pub(crate) struct FakeStripe {
    pub(crate) intents: Arc<Mutex<HashMap<String, serde_json::Value>>>,
    pub(crate) refunds: Arc<Mutex<HashMap<String, serde_json::Value>>>,
    /// Idempotency-Key → refund id.
    keys: Arc<Mutex<HashMap<String, String>>>,
    /// The account's balance transactions, in any order (listed newest
    /// first), and how the list answers.
    pub(crate) balance: Arc<Mutex<Vec<serde_json::Value>>>,
    pub(crate) listing: Arc<Mutex<Listing>>,
    /// Per automatic payout, the balance transactions it settles (listed
    /// for `?payout=po_…`, whatever their `created`).
    pub(crate) settled: Arc<Mutex<HashMap<String, Vec<serde_json::Value>>>>,
    /// The account's events, each with whether every endpoint took it
    /// (`GET /v1/events`), and each list call's query.
    pub(crate) events: Arc<Mutex<Vec<(serde_json::Value, bool)>>>,
    pub(crate) events_asked: Arc<Mutex<Vec<Asked>>>,
}

/// A list call's query, its pairs in order.
pub(crate) type Asked = Vec<(String, String)>;

/// How `GET /v1/balance_transactions` behaves, and what it was asked.
#[derive(Default)]
pub(crate) struct Listing {
    /// At most this many a page (Stripe's is the `limit` asked; 0: that).
    pub(crate) page_size: usize,
    /// The list calls that fail, with the status they answer (1-based,
    /// counted over the app's life).
    pub(crate) fail_calls: Vec<(usize, u16)>,
    /// Every call answers this late.
    pub(crate) delay_ms: u64,
    /// Each call's query, in order.
    pub(crate) asked: Vec<Vec<(String, String)>>,
}

/// `GET /v1/balance_transactions` as Stripe answers it: Bearer auth,
/// `created[gte|lt]` bounds, newest first, `limit`, `starting_after` the
/// id of the last object of the page before, `expand[]=data.source`
/// replacing each source id by its object.
async fn list_balance(
    State(s): State<FakeStripe>,
    headers: axum::http::HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let error = |status: StatusCode, message: &str| {
        let body =
            serde_json::json!({"error": {"message": message, "type": "invalid_request_error"}});
        (status, Json(body)).into_response()
    };
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {API_KEY}"))
    {
        return error(
            StatusCode::UNAUTHORIZED,
            "Invalid API Key provided: sk_test_******ong",
        );
    }
    let (call, page_size, fail, delay) = {
        let mut l = s.listing.lock().unwrap();
        l.asked.push(query.clone());
        let call = l.asked.len();
        let fail = l.fail_calls.iter().find(|(c, _)| *c == call).map(|f| f.1);
        (call, l.page_size, fail, l.delay_ms)
    };
    tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    if let Some(status) = fail {
        let status = StatusCode::from_u16(status).unwrap();
        return error(status, &format!("call {call} answered {status}"));
    }
    let arg = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let bound = |k: &str| arg(k).map(|v| v.parse::<i64>().unwrap());
    let (gte, lt) = (bound("created[gte]"), bound("created[lt]"));
    let limit: usize = arg("limit").map_or(10, |l| l.parse().unwrap());
    let expand = arg("expand[]").as_deref() == Some("data.source");
    let listed = match arg("payout") {
        Some(po) => s
            .settled
            .lock()
            .unwrap()
            .get(&po)
            .cloned()
            .unwrap_or_default(),
        None => s.balance.lock().unwrap().clone(),
    };
    let mut all: Vec<serde_json::Value> = listed
        .iter()
        .filter(|t| {
            let c = t["created"].as_i64().unwrap();
            gte.is_none_or(|g| c >= g) && lt.is_none_or(|l| c < l)
        })
        .cloned()
        .collect();
    // Newest first; Stripe's order among equal times is its own (here: id).
    all.sort_by(|a, b| {
        (b["created"].as_i64(), b["id"].as_str()).cmp(&(a["created"].as_i64(), a["id"].as_str()))
    });
    let from = match arg("starting_after") {
        Some(after) => match all.iter().position(|t| t["id"] == after.as_str()) {
            Some(at) => at + 1,
            None => return error(StatusCode::BAD_REQUEST, "No such balance transaction"),
        },
        None => 0,
    };
    let size = if page_size == 0 {
        limit
    } else {
        page_size.min(limit)
    };
    let page: Vec<serde_json::Value> = all
        .iter()
        .skip(from)
        .take(size)
        .map(|t| {
            let mut t = t.clone();
            if !expand {
                t["source"] = t["source"]["id"].clone();
            }
            t
        })
        .collect();
    Json(serde_json::json!({
        "object": "list", "data": page, "has_more": from + size < all.len(),
        "url": "/v1/balance_transactions",
    }))
    .into_response()
}

/// `GET /v1/events` as Stripe answers it: Bearer auth, `created[gte|lt]`,
/// `delivery_success` (false: pending or failed at some endpoint),
/// `types[]` (up to 20), newest first, `limit` and `starting_after`.
async fn list_events(
    State(s): State<FakeStripe>,
    headers: axum::http::HeaderMap,
    Query(query): Query<Vec<(String, String)>>,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    s.events_asked.lock().unwrap().push(query.clone());
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {API_KEY}"))
    {
        let body = serde_json::json!({"error": {"message": "Invalid API Key provided"}});
        return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    }
    let arg = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let bound = |k: &str| arg(k).map(|v| v.parse::<i64>().unwrap());
    let (gte, lt) = (bound("created[gte]"), bound("created[lt]"));
    let delivered = arg("delivery_success").map(|v| v == "true");
    let types: Vec<String> = query
        .iter()
        .filter(|(n, _)| n == "types[]")
        .map(|(_, v)| v.clone())
        .collect();
    if types.len() > 20 {
        let body = serde_json::json!({"error": {"message": "types: at most 20"}});
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }
    let limit: usize = arg("limit").map_or(10, |l| l.parse().unwrap());
    let mut all: Vec<serde_json::Value> = s
        .events
        .lock()
        .unwrap()
        .iter()
        .filter(|(e, ok)| {
            let c = e["created"].as_i64().unwrap();
            gte.is_none_or(|g| c >= g)
                && lt.is_none_or(|l| c < l)
                && delivered.is_none_or(|d| d == *ok)
                && (types.is_empty() || types.iter().any(|t| e["type"] == t.as_str()))
        })
        .map(|(e, _)| e.clone())
        .collect();
    all.sort_by(|a, b| {
        (b["created"].as_i64(), b["id"].as_str()).cmp(&(a["created"].as_i64(), a["id"].as_str()))
    });
    let from = match arg("starting_after") {
        Some(after) => match all.iter().position(|e| e["id"] == after.as_str()) {
            Some(at) => at + 1,
            None => {
                let body = serde_json::json!({"error": {"message": "No such event"}});
                return (StatusCode::BAD_REQUEST, Json(body)).into_response();
            }
        },
        None => 0,
    };
    let page: Vec<serde_json::Value> = all.iter().skip(from).take(limit).cloned().collect();
    // Pretty, as Stripe's API answers: the events' bytes are not a webhook's.
    let body = serde_json::to_string_pretty(&serde_json::json!({
        "object": "list", "data": page, "has_more": from + limit < all.len(), "url": "/v1/events",
    }))
    .unwrap();
    ([("content-type", "application/json")], body).into_response()
}

/// `POST /v1/refunds`, idempotent on the Idempotency-Key header.
async fn create_refund(
    State(s): State<FakeStripe>,
    headers: axum::http::HeaderMap,
    Form(form): Form<HashMap<String, String>>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let key = headers["idempotency-key"].to_str().unwrap().to_owned();
    if let Some(id) = s.keys.lock().unwrap().get(&key) {
        return Json(s.refunds.lock().unwrap()[id].clone()).into_response();
    }
    let intent = s
        .intents
        .lock()
        .unwrap()
        .get(&form["payment_intent"])
        .cloned();
    let Some(intent) = intent.filter(|i| i["status"] == "succeeded") else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Json(
                serde_json::json!({"error": {"message": "This PaymentIntent cannot be refunded"}}),
            ),
        )
            .into_response();
    };
    let id = format!("re_{}", uuid::Uuid::new_v4().simple());
    let refund = serde_json::json!({
        "id": id, "object": "refund", "amount": form["amount"].parse::<i64>().unwrap(),
        "currency": intent["currency"], "payment_intent": intent["id"], "status": "pending",
        "metadata": { "refund_no": form["metadata[refund_no]"], "payment_no": form["metadata[payment_no]"] },
    });
    s.refunds.lock().unwrap().insert(id.clone(), refund.clone());
    s.keys.lock().unwrap().insert(key, id);
    Json(refund).into_response()
}

async fn create_intent(
    State(s): State<FakeStripe>,
    Form(form): Form<HashMap<String, String>>,
) -> Json<serde_json::Value> {
    let id = format!("pi_{}", uuid::Uuid::new_v4().simple());
    let intent = serde_json::json!({
        "id": id, "object": "payment_intent",
        "amount": form["amount"].parse::<i64>().unwrap(),
        "currency": form["currency"],
        "status": "requires_payment_method",
        "metadata": { "payment_no": form["metadata[payment_no]"] },
    });
    s.intents.lock().unwrap().insert(id, intent.clone());
    Json(intent)
}

async fn get_intent(
    State(s): State<FakeStripe>,
    Path(id): Path<String>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match s.intents.lock().unwrap().get(&id) {
        Some(i) => Json(i.clone()).into_response(),
        None => (
            axum::http::StatusCode::NOT_FOUND,
            Json(serde_json::json!({"error": {"message": "No such payment_intent"}})),
        )
            .into_response(),
    }
}

pub(crate) struct StripeApp {
    pub(crate) app: TestApp,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) stripe: FakeStripe,
}

/// The fake on 127.0.0.1, a port of its own: its base URL.
pub(crate) async fn serve(stripe: FakeStripe) -> String {
    let router = Router::new()
        .route("/v1/payment_intents", post(create_intent))
        .route("/v1/payment_intents/{id}", get(get_intent))
        .route("/v1/refunds", post(create_refund))
        .route("/v1/balance_transactions", get(list_balance))
        .route("/v1/events", get(list_events))
        .with_state(stripe);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    base
}

async fn spawn_stripe_app(b: Backend) -> StripeApp {
    spawn_stripe_app_with(b, |_| {}).await
}

/// A Stripe account `stripe-eu` against the fake, its settings as `edit`
/// leaves them.
pub(crate) async fn spawn_stripe_app_with(
    b: Backend,
    edit: impl FnOnce(&mut reckon::config::Config),
) -> StripeApp {
    let stripe = FakeStripe::default();
    let base = serve(stripe.clone()).await;
    let clock = Arc::new(ManualClock::default());
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig::Stripe(StripeConfig {
                name: "stripe-eu".into(),
                base_url: base,
                secret: SECRET.into(),
                previous_secrets: vec![OLD_SECRET.into()],
                api_key: API_KEY.into(),
                ..StripeConfig::default()
            })];
            edit(c);
        },
        Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    StripeApp { app, clock, stripe }
}

impl StripeApp {
    pub(crate) fn now(&self) -> i64 {
        self.app.engine.now() / 1_000_000
    }

    pub(crate) async fn post(&self, body: &str, signature: &str) -> reqwest::Response {
        self.app
            .client
            .post(format!("{}/webhooks/stripe-eu", self.app.base))
            .header("content-type", "application/json")
            .header("stripe-signature", signature)
            .body(body.to_owned())
            .send()
            .await
            .unwrap()
    }
}

fn event(id: &str, kind: &str, payment_no: &str, amount: i64) -> String {
    serde_json::json!({
        "id": id, "object": "event", "type": kind,
        "data": { "object": {
            "id": format!("pi_{payment_no}"), "object": "payment_intent", "amount": amount,
            "currency": "eur", "status": "succeeded", "metadata": { "payment_no": payment_no }
        }}
    })
    .to_string()
}

/// A PaymentIntent event as Stripe sends it: the intent as it is after
/// the event (`status`), `extra` fields merged into the intent, and the
/// event's delivery counter.
fn intent_event(
    id: &str,
    kind: &str,
    payment_no: &str,
    amount: i64,
    status: &str,
    extra: serde_json::Value,
    pending_webhooks: i64,
) -> String {
    let mut intent = serde_json::json!({
        "id": format!("pi_{payment_no}"), "object": "payment_intent", "amount": amount,
        "currency": "eur", "status": status, "last_payment_error": null,
        "metadata": { "payment_no": payment_no }
    });
    if let (Some(i), Some(e)) = (intent.as_object_mut(), extra.as_object()) {
        i.extend(e.clone());
    }
    serde_json::json!({
        "id": id, "object": "event", "api_version": "2024-06-20", "created": 1_764_500_000,
        "type": kind, "livemode": false, "pending_webhooks": pending_webhooks,
        "request": { "id": null, "idempotency_key": null },
        "data": { "object": intent }
    })
    .to_string()
}

/// What the outbox holds for a payment: its event types, in order.
async fn outbox_types(app: &TestApp, payment_no: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT event_type FROM outbox_events WHERE aggregate_id = $1 ORDER BY created_at, message_id",
    )
    .bind(payment_no)
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

/// Stripe's documented scheme, written out here independently of the
/// adapter: hex HMAC-SHA256 of "{t}.{body}" keyed with the secret string.
pub(crate) fn sign(secret: &str, t: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{body}").as_bytes());
    format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
}

/// `stripe.webhooks.generateTestHeaderString` from the official package.
fn official_header(payload: &str, secret: &str) -> String {
    let modules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("end2end/node_modules");
    assert!(
        modules.join("stripe").is_dir(),
        "the official stripe package is missing: run `npm ci` in end2end/ (the test command does)"
    );
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg("const Stripe = require('stripe'); const s = new Stripe('sk_test_x'); process.stdout.write(s.webhooks.generateTestHeaderString({ payload: process.env.PAYLOAD, secret: process.env.SECRET }));")
        .env("NODE_PATH", modules)
        .env("PAYLOAD", payload)
        .env("SECRET", secret)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

async fn events_signed_by_the_official_stripe_library_are_accepted(b: Backend) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-1", 1999, "EUR")
        .await;
    let body = event("evt_official_1", "payment_intent.succeeded", &p, 1999);
    let header = official_header(&body, SECRET);
    assert!(
        header.starts_with("t=") && header.contains(",v1="),
        "{header}"
    );
    let mut changed = body.clone().into_bytes();
    let at = body.find("1999").unwrap();
    changed[at] = b'2';
    let changed = String::from_utf8(changed).unwrap();
    assert_eq!(
        s.post(&changed, &header).await.status(),
        400,
        "one byte changed"
    );
    assert_eq!(s.post(&body, &header).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn a_stripe_event_moves_the_payment_once_and_bad_ones_are_refused(b: Backend) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-2", 500, "EUR")
        .await;
    let body = event("evt_2", "payment_intent.succeeded", &p, 500);
    let now = s.now();
    // Refused: stale, tampered, wrong key, missing or malformed header.
    assert_eq!(
        s.post(&body, &sign(SECRET, now - 301, &body))
            .await
            .status(),
        400
    );
    assert_eq!(
        s.post(&body.replace("500", "501"), &sign(SECRET, now, &body))
            .await
            .status(),
        400
    );
    assert_eq!(
        s.post(&body, &sign("whsec_wrong", now, &body))
            .await
            .status(),
        400
    );
    assert_eq!(s.post(&body, "v1=deadbeef").await.status(), 400);
    assert_eq!(s.app.payment_state(&p).await.0, "CREATED");
    // Accepted with the previous secret (rotation), then a duplicate.
    assert_eq!(
        s.post(&body, &sign(OLD_SECRET, now, &body)).await.status(),
        200
    );
    assert_eq!(s.post(&body, &sign(SECRET, now, &body)).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    // Not a payment event: acknowledged, nothing happens.
    let refund = event("evt_3", "charge.refunded", &p, 500);
    assert_eq!(
        s.post(&refund, &sign(SECRET, now, &refund)).await.status(),
        200
    );
    let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_callbacks")
        .fetch_one(&s.app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(stored, 1);
}

async fn a_stripe_payment_is_created_then_settled_by_a_status_query(b: Backend) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-3", 4200, "EUR")
        .await;
    let engine = s.app.engine.clone();
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.app.payment_state(&p).await.0, "PENDING");
    let (id, intent) = {
        let intents = s.stripe.intents.lock().unwrap();
        let (id, i) = intents.iter().next().unwrap();
        (id.clone(), i.clone())
    };
    assert_eq!(intent["amount"], 4200);
    assert_eq!(intent["currency"], "eur");
    assert_eq!(intent["metadata"]["payment_no"], serde_json::json!(p));
    // The customer pays; no webhook arrives; the status query finds it.
    s.stripe.intents.lock().unwrap().get_mut(&id).unwrap()["status"] = "succeeded".into();
    s.clock.advance_secs(61);
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn stripe_refunds_are_requested_and_their_events_settle_them(b: Backend) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-4", 4200, "EUR")
        .await;
    let engine = s.app.engine.clone();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let intent = {
        let mut intents = s.stripe.intents.lock().unwrap();
        let (id, i) = intents.iter_mut().next().unwrap();
        i["status"] = "succeeded".into();
        id.clone()
    };
    s.clock.advance_secs(61);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(s.app.payment_state(&p).await.0, "SUCCEEDED");

    let req = reckon::engine::CreateRefund {
        amount_minor: 1200,
        currency: None,
        reason: "requested_by_customer".into(),
    };
    let refund = engine
        .request_refund("test", "st-r1", &p, &req)
        .await
        .expect("the refund is requested");
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let (re_id, stripe_refund) = {
        let refunds = s.stripe.refunds.lock().unwrap();
        let (id, r) = refunds.iter().next().unwrap();
        (id.clone(), r.clone())
    };
    assert_eq!(stripe_refund["payment_intent"], serde_json::json!(intent));
    assert_eq!(
        stripe_refund["metadata"]["refund_no"],
        serde_json::json!(refund_no)
    );
    let pool = &s.app.accounts.db.pool;
    let row: (String, Option<String>) =
        sqlx::query_as("SELECT status, provider_refund_id FROM refunds WHERE refund_no = $1")
            .bind(&refund_no)
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(row, ("PENDING".to_string(), Some(re_id.clone())));

    // refund.updated with the Refund succeeded; sent twice.
    let mut done = stripe_refund.clone();
    done["status"] = "succeeded".into();
    let updated = serde_json::json!({"id": "evt_r1", "object": "event", "type": "refund.updated",
        "data": {"object": done}})
    .to_string();
    let now = s.now();
    for _ in 0..2 {
        assert_eq!(
            s.post(&updated, &sign(SECRET, now, &updated))
                .await
                .status(),
            200
        );
    }
    // charge.refunded is the charge's running total: acknowledged only.
    let charge = serde_json::json!({"id": "evt_r2", "object": "event", "type": "charge.refunded",
        "data": {"object": {"id": "ch_1", "object": "charge", "amount": 4200, "amount_refunded": 1200,
        "currency": "eur", "payment_intent": intent, "refunded": false}}})
    .to_string();
    assert_eq!(
        s.post(&charge, &sign(SECRET, now, &charge)).await.status(),
        200
    );
    let figures: (String, i64, i64) = crate::reads::payment_refund_state(pool, &p).await;
    assert_eq!(figures, ("SUCCEEDED".to_string(), 1200, 0));
    let ledger: i64 = crate::reads::ledger_entries(pool).await;
    assert_eq!(ledger, 1);

    // A refund made in Stripe's dashboard: no refund_no of Reckon's.
    let dashboard = serde_json::json!({"id": "evt_r3", "object": "event", "type": "refund.created",
        "data": {"object": {"id": "re_dashboard", "object": "refund", "amount": 500, "currency": "eur",
        "payment_intent": intent, "status": "succeeded", "metadata": {}}}})
    .to_string();
    assert_eq!(
        s.post(&dashboard, &sign(SECRET, now, &dashboard))
            .await
            .status(),
        200
    );
    let classes: Vec<String> = crate::reads::classes_of(pool, &p).await;
    assert_eq!(
        classes,
        ["REFUND_MISMATCH"],
        "named by the intent's payment"
    );
    let figures: (i64, i64) = crate::reads::refund_figures(pool, &p).await;
    assert_eq!(figures, (1200, 0), "the stranger's refund changed nothing");
}

async fn a_declined_attempt_then_a_success_on_one_intent_pays_the_order_once(b: Backend) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-RETRY", 2500, "EUR")
        .await;
    let now = s.now();
    let s = &s;
    let post = |body: String| async move {
        let sig = sign(SECRET, now, &body);
        s.post(&body, &sig).await.status()
    };
    let created = intent_event(
        "evt_c",
        "payment_intent.created",
        &p,
        2500,
        "requires_payment_method",
        serde_json::json!({}),
        1,
    );
    assert_eq!(post(created).await, 200);
    // The card is declined: the intent goes back to requires_payment_method.
    let declined = intent_event(
        "evt_d",
        "payment_intent.payment_failed",
        &p,
        2500,
        "requires_payment_method",
        serde_json::json!({ "last_payment_error": {
            "type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
            "message": "Your card has insufficient funds.", "charge": "ch_1"
        }}),
        1,
    );
    assert_eq!(post(declined).await, 200);
    assert_eq!(s.app.payment_state(&p).await, ("PENDING".to_string(), 0));
    assert!(
        outbox_types(&s.app, &p).await.is_empty(),
        "nothing downstream"
    );
    let timeline: Vec<String> = sqlx::query_scalar(
        "SELECT evidence_ref FROM payment_status_history WHERE payment_no = $1 ORDER BY at, id",
    )
    .bind(&p)
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap();
    assert!(
        timeline.iter().any(|e| e.contains("declined attempt: card_declined (insufficient_funds): Your card has insufficient funds.")),
        "{timeline:?}"
    );
    // The customer retries on the same intent, and it succeeds.
    let succeeded = intent_event(
        "evt_s",
        "payment_intent.succeeded",
        &p,
        2500,
        "succeeded",
        serde_json::json!({ "latest_charge": "ch_2" }),
        1,
    );
    assert_eq!(post(succeeded).await, 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    let effects: Vec<String> =
        sqlx::query_scalar("SELECT effect_type FROM payment_effects WHERE payment_no = $1")
            .bind(&p)
            .fetch_all(&s.app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(effects, ["ORDER_PAID"]);
    assert_eq!(outbox_types(&s.app, &p).await, ["payment.succeeded"]);
    assert_eq!(s.app.alert_count("out_of_order").await, 0);
}

async fn a_canceled_intent_closes_the_payment(b: Backend) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-CANCEL", 900, "EUR")
        .await;
    let now = s.now();
    for (id, kind, status) in [
        (
            "evt_a1",
            "payment_intent.requires_action",
            "requires_action",
        ),
        ("evt_a2", "payment_intent.processing", "processing"),
    ] {
        let body = intent_event(id, kind, &p, 900, status, serde_json::json!({}), 1);
        assert_eq!(s.post(&body, &sign(SECRET, now, &body)).await.status(), 200);
        assert_eq!(
            s.app.payment_state(&p).await,
            ("PENDING".to_string(), 0),
            "{kind}"
        );
    }
    let body = intent_event(
        "evt_x",
        "payment_intent.canceled",
        &p,
        900,
        "canceled",
        serde_json::json!({ "cancellation_reason": "abandoned" }),
        1,
    );
    assert_eq!(s.post(&body, &sign(SECRET, now, &body)).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("CLOSED".to_string(), 1));
    assert_eq!(outbox_types(&s.app, &p).await, ["payment.closed"]);
}

async fn a_stripe_redelivery_with_a_new_envelope_is_a_duplicate_and_other_facts_a_conflict(
    b: Backend,
) {
    let s = spawn_stripe_app(b).await;
    let p = s
        .app
        .register_payment("stripe-eu", "ST-RD", 700, "EUR")
        .await;
    let now = s.now();
    // One event, as Stripe sends it again and again: `pending_webhooks`
    // is the envelope, the amount a fact.
    let delivery = |amount: i64, pending_webhooks: i64| {
        intent_event(
            "evt_rd",
            "payment_intent.succeeded",
            &p,
            amount,
            "succeeded",
            serde_json::json!({}),
            pending_webhooks,
        )
    };
    let first = delivery(700, 2);
    assert_eq!(
        s.post(&first, &sign(SECRET, now, &first)).await.status(),
        200
    );
    // Stripe's retry: one endpoint fewer still pending, signed anew a
    // minute later.
    let again = delivery(700, 1);
    assert_ne!(first, again);
    assert_eq!(
        s.post(&again, &sign(SECRET, now + 60, &again))
            .await
            .status(),
        200
    );
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(s.app.alert_count("callback_conflict").await, 0);
    assert_eq!(s.app.redeliveries("stripe-eu", "evt_rd").await, (1, 1, 0));
    // The same event id saying another amount: a conflict, the first kept.
    let other = delivery(701, 1);
    assert_eq!(
        s.post(&other, &sign(SECRET, now, &other)).await.status(),
        200
    );
    assert_eq!(s.app.alert_count("callback_conflict").await, 1);
    assert_eq!(s.app.redeliveries("stripe-eu", "evt_rd").await, (1, 2, 1));
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

both_databases!(
    a_declined_attempt_then_a_success_on_one_intent_pays_the_order_once,
    a_canceled_intent_closes_the_payment,
    a_stripe_redelivery_with_a_new_envelope_is_a_duplicate_and_other_facts_a_conflict,
    stripe_refunds_are_requested_and_their_events_settle_them,
    events_signed_by_the_official_stripe_library_are_accepted,
    a_stripe_event_moves_the_payment_once_and_bad_ones_are_refused,
    a_stripe_payment_is_created_then_settled_by_a_status_query,
);
