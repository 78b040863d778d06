//! The Stripe adapter against Stripe's wire format: events signed by the
//! official `stripe` npm package and by an independent signer here, and a
//! local server speaking Stripe's PaymentIntents API for creates and status
//! queries. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use hmac::{Hmac, Mac};
use reckon::config::ProviderConfig;
use reckon::engine::ManualClock;
use reckon::startup::Options;
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

const SECRET: &str = "whsec_test_0123456789abcdef";
const OLD_SECRET: &str = "whsec_old_fedcba9876543210";

/// Stripe's PaymentIntents API, as much as Reckon uses.
#[derive(Clone, Default)]
struct FakeStripe {
    intents: Arc<Mutex<HashMap<String, serde_json::Value>>>,
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

struct StripeApp {
    app: TestApp,
    clock: Arc<ManualClock>,
    stripe: FakeStripe,
}

async fn spawn_stripe_app(b: Backend) -> StripeApp {
    let stripe = FakeStripe::default();
    let router = Router::new()
        .route("/v1/payment_intents", post(create_intent))
        .route("/v1/payment_intents/{id}", get(get_intent))
        .with_state(stripe.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let clock = Arc::new(ManualClock::default());
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig {
                name: "stripe-eu".into(),
                kind: "stripe".into(),
                base_url: base,
                secret: SECRET.into(),
                previous_secrets: vec![OLD_SECRET.into()],
                api_key: Some("sk_test_reckon".into()),
                ..ProviderConfig::default()
            }];
        },
        Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
        },
    )
    .await;
    StripeApp { app, clock, stripe }
}

impl StripeApp {
    fn now(&self) -> i64 {
        self.app.engine.now() / 1_000_000
    }

    async fn post(&self, body: &str, signature: &str) -> reqwest::Response {
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

/// Stripe's documented scheme, written out here independently of the
/// adapter: hex HMAC-SHA256 of "{t}.{body}" keyed with the secret string.
fn sign(secret: &str, t: i64, body: &str) -> String {
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
    assert_eq!(engine.run_provider_tasks(engine.now()).await.unwrap(), 1);
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
    assert_eq!(engine.run_provider_tasks(engine.now()).await.unwrap(), 1);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

both_databases!(
    events_signed_by_the_official_stripe_library_are_accepted,
    a_stripe_event_moves_the_payment_once_and_bad_ones_are_refused,
    a_stripe_payment_is_created_then_settled_by_a_status_query,
);
