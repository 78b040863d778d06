//! A server wired to a real sandbox provider on 127.0.0.1 and a recording
//! outbox sink, with the engine's workers stopped and a hand-moved clock so
//! each test ticks them itself.

use crate::helpers::{Backend, TestApp, spawn_app_with};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::engine::{CreatePayment, Engine};
use reckon::providers::sandbox::PaymentData;
use reckon::providers::sandbox::SandboxConfig;
use reckon::providers::signing::Secret;
use reckon::sandbox_server::{Chaos, SandboxServer};
use reckon::startup::Options;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub struct EngineApp {
    pub app: TestApp,
    pub clock: Arc<ManualClock>,
    pub sandbox: SandboxServer,
    pub sink: RecordingSink,
    secret: Secret,
    down: Arc<AtomicBool>,
}

/// Serves `router` on a free port of 127.0.0.1; its base URL.
pub async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}")
}

/// An outbox consumer that records what it gets and can be told to fail.
#[derive(Clone, Default)]
pub struct RecordingSink {
    seen: Arc<Mutex<Vec<(String, String)>>>,
    failures_left: Arc<AtomicUsize>,
}

impl RecordingSink {
    pub fn fail_next(&self, n: usize) {
        self.failures_left.store(n, Ordering::SeqCst);
    }
    pub fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

async fn sink_handler(
    State(sink): State<RecordingSink>,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    sink.seen.lock().unwrap().push((id, body));
    let left = sink.failures_left.load(Ordering::SeqCst);
    if left > 0 {
        sink.failures_left.store(left - 1, Ordering::SeqCst);
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::NO_CONTENT
    }
}

pub async fn spawn_engine_app(backend: Backend) -> EngineApp {
    spawn_engine_app_with(backend, |_| {}).await
}

/// The same, with the configuration adjusted first.
pub async fn spawn_engine_app_with(
    backend: Backend,
    adjust: impl FnOnce(&mut reckon::config::Config),
) -> EngineApp {
    let secret = Secret::random();
    // Settles only when a test says so.
    let chaos = Chaos {
        settle_ms: 3_600_000,
        ..Chaos::default()
    };
    let sandbox = SandboxServer::new("http://127.0.0.1:9/unset", secret.clone(), chaos);
    let down = Arc::new(AtomicBool::new(false));
    let gate = down.clone();
    let sandbox_router = sandbox.router().layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let down = gate.load(Ordering::SeqCst);
            async move {
                if down {
                    axum::response::IntoResponse::into_response(StatusCode::SERVICE_UNAVAILABLE)
                } else {
                    next.run(req).await
                }
            }
        },
    ));
    let sandbox_url = serve(sandbox_router).await;
    let sink = RecordingSink::default();
    let sink_url = serve(
        Router::new()
            .route("/events", post(sink_handler))
            .with_state(sink.clone()),
    )
    .await;

    let clock = Arc::new(ManualClock::default());
    let whsec = secret.to_whsec();
    let app = spawn_app_with(
        backend,
        |c| {
            c.providers = vec![ProviderConfig::Sandbox(SandboxConfig {
                name: "sandbox".into(),
                base_url: sandbox_url.clone(),
                secret: whsec.into(),
                ..SandboxConfig::default()
            })];
            c.outbox_sinks = vec![("fulfilment".into(), format!("{sink_url}/events"))];
            adjust(c);
        },
        Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    sandbox.set_notify_url(&format!("{}/webhooks/sandbox", app.base));
    EngineApp {
        app,
        clock,
        sandbox,
        sink,
        secret,
        down,
    }
}

impl EngineApp {
    pub fn pool(&self) -> &sqlx::AnyPool {
        &self.app.accounts.db.pool
    }

    pub fn app_engine(&self) -> Engine {
        self.app.engine.clone()
    }

    /// A CREATED payment (no provider call made: workers are stopped).
    pub async fn payment(&self, order_no: &str, amount_minor: i64, currency: &str) -> String {
        let req = CreatePayment {
            order_no: order_no.into(),
            provider: "sandbox".into(),
            amount_minor,
            currency: currency.into(),
            description: None,
        };
        let created = self
            .app
            .engine
            .create_payment("test", &format!("key-{order_no}"), &req)
            .await;
        created.expect("the payment is created").payment_no
    }

    pub fn notice(
        &self,
        id: &str,
        payment_no: &str,
        status: &str,
        amount: &str,
        currency: &str,
        txn: &str,
    ) -> String {
        serde_json::json!({
            "id": id,
            "type": format!("payment.{}", status.to_ascii_lowercase()),
            "data": { "payment_no": payment_no, "txn_id": txn, "status": status, "amount": amount, "currency": currency }
        })
        .to_string()
    }

    pub async fn post_signed(&self, id: &str, body: &str) -> reqwest::Response {
        let now = self.app.engine.now() / 1_000_000;
        self.post_raw("sandbox", id, now, body, None).await
    }

    /// Signed and sent by `client` (one with its own connections).
    pub async fn post_signed_with(
        &self,
        client: &reqwest::Client,
        id: &str,
        body: &str,
    ) -> reqwest::Result<reqwest::Response> {
        let ts = self.app.engine.now() / 1_000_000;
        client
            .post(format!("{}/webhooks/sandbox", self.app.base))
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header(
                "webhook-signature",
                self.secret.sign(id, ts, body.as_bytes()),
            )
            .body(body.to_owned())
            .send()
            .await
    }

    /// Signed with the sandbox secret at `ts` unless `signature` is given.
    pub async fn post_raw(
        &self,
        provider: &str,
        id: &str,
        ts: i64,
        body: &str,
        signature: Option<&str>,
    ) -> reqwest::Response {
        let sig = signature
            .map(str::to_owned)
            .unwrap_or_else(|| self.secret.sign(id, ts, body.as_bytes()));
        self.app
            .client
            .post(format!("{}/webhooks/{provider}", self.app.base))
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", ts.to_string())
            .header("webhook-signature", sig)
            .body(body.to_owned())
            .send()
            .await
            .unwrap()
    }

    pub async fn status(&self, payment_no: &str) -> String {
        crate::reads::payment_status(self.pool(), payment_no).await
    }

    pub async fn wait_for_status(&self, payment_no: &str, want: &str) {
        for _ in 0..100 {
            if self.status(payment_no).await == want {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("payment {payment_no} never became {want}");
    }

    pub async fn count(&self, table: &str, payment_no: &str) -> i64 {
        let column = if table == "outbox_events" {
            "aggregate_id"
        } else {
            "payment_no"
        };
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE {column} = $1"))
            .bind(payment_no)
            .fetch_one(self.pool())
            .await
            .unwrap()
    }

    pub async fn alert_kinds(&self, payment_no: &str) -> Vec<String> {
        sqlx::query_scalar("SELECT kind FROM alerts WHERE payment_no = $1 ORDER BY created_at")
            .bind(payment_no)
            .fetch_all(self.pool())
            .await
            .unwrap()
    }

    pub async fn token(&self) -> String {
        self.app.api_token("shop").await
    }

    pub async fn create(
        &self,
        token: &str,
        key: &str,
        body: &serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let res = self
            .app
            .client
            .post(format!("{}/api/v1/payments", self.app.base))
            .bearer_auth(token)
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or_default())
    }

    pub async fn show(&self, token: &str, payment_no: &str) -> serde_json::Value {
        self.app
            .client
            .get(format!("{}/api/v1/payments/{payment_no}", self.app.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The provider answers 503 to everything while down.
    pub fn sandbox_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The provider's own record of a payment, as if it had been created there.
    pub fn sandbox_knows(&self, payment_no: &str, status: &str, amount: &str, currency: &str) {
        self.sandbox.put(PaymentData {
            payment_no: payment_no.into(),
            txn_id: format!("SBX-{payment_no}"),
            status: status.into(),
            amount: amount.into(),
            currency: currency.into(),
        });
    }
}
