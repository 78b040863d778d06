//! The PayPal adapter against PayPal's wire format: webhooks signed here as
//! PayPal documents it (SHA256withRSA over
//! `transmission id|transmission time|webhook id|CRC32(body)`, the CRC32
//! computed by a bitwise implementation of its own), by a certificate that
//! a test CA issued through an intermediate and that a local server
//! playing PayPal serves at its certificate URL; the same server speaks
//! PayPal's OAuth2 token, captures and refunds API. Each on SQLite and
//! PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::providers::paypal::PaypalConfig;
use reckon::startup::Options;
use rsa::RsaPrivateKey;
use rsa::signature::{SignatureEncoding, Signer};
use sha2::Sha256;
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use x509_cert::Certificate;
use x509_cert::builder::{Builder, CertificateBuilder, Profile};
use x509_cert::der::{Decode, EncodePem, pem::LineEnding};

const WEBHOOK_ID: &str = "1JE4291016473214C";
const CLIENT_ID: &str = "AZtest-client";
const CLIENT_SECRET: &str = "EFtest-secret";
const TOKEN: &str = "A21AAtest-access-token";

/// A test PKI: a root (configured as `cert_roots`), an intermediate CA and
/// PayPal's signing certificate under it, and a stranger's self-signed
/// certificate with PayPal's name.
struct Pki {
    root_pem: String,
    /// The signing certificate and the intermediate, as PayPal serves them.
    chain_pem: String,
    key: RsaPrivateKey,
    rogue_pem: String,
    rogue_key: RsaPrivateKey,
}

fn at(secs: u64) -> x509_cert::time::Time {
    x509_cert::time::Time::UtcTime(
        x509_cert::der::asn1::UtcTime::from_unix_duration(std::time::Duration::from_secs(secs))
            .unwrap(),
    )
}

fn issue(
    profile: Profile,
    serial: u32,
    subject: &str,
    key: &RsaPrivateKey,
    by: &RsaPrivateKey,
) -> Certificate {
    use rsa::pkcs8::EncodePublicKey;
    let spki_der = key.to_public_key().to_public_key_der().unwrap();
    let spki = x509_cert::spki::SubjectPublicKeyInfoOwned::from_der(spki_der.as_bytes()).unwrap();
    // 2020-01-01 to 2045-01-01: whatever the clock of the test says.
    let validity = x509_cert::time::Validity {
        not_before: at(1_577_836_800),
        not_after: at(2_366_841_600),
    };
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(by.clone());
    CertificateBuilder::new(
        profile,
        x509_cert::serial_number::SerialNumber::from(serial),
        validity,
        x509_cert::name::Name::from_str(subject).unwrap(),
        spki,
        &signer,
    )
    .unwrap()
    .build::<rsa::pkcs1v15::Signature>()
    .unwrap()
}

fn pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let new_key = || RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
        let (root_key, mid_key, key, rogue_key) = (new_key(), new_key(), new_key(), new_key());
        let root_name = "CN=Reckon Test Root CA,O=Reckon tests";
        let mid_name = "CN=Reckon Test Issuing CA,O=Reckon tests";
        let paypal_name = "CN=messageverificationcerts.sandbox.paypal.com,O=PayPal Inc.,L=San Jose,ST=California,C=US";
        let root = issue(Profile::Root, 1, root_name, &root_key, &root_key);
        let mid = issue(
            Profile::SubCA {
                issuer: x509_cert::name::Name::from_str(root_name).unwrap(),
                path_len_constraint: Some(0),
            },
            2,
            mid_name,
            &mid_key,
            &root_key,
        );
        let leaf = issue(
            Profile::Leaf {
                issuer: x509_cert::name::Name::from_str(mid_name).unwrap(),
                enable_key_agreement: false,
                enable_key_encipherment: false,
            },
            3,
            paypal_name,
            &key,
            &mid_key,
        );
        let rogue = issue(Profile::Root, 4, paypal_name, &rogue_key, &rogue_key);
        let pem = |c: &Certificate| c.to_pem(LineEnding::LF).unwrap();
        Pki {
            root_pem: pem(&root),
            chain_pem: pem(&leaf) + &pem(&mid),
            key,
            rogue_pem: pem(&rogue),
            rogue_key,
        }
    })
}

/// CRC-32 (IEEE 802.3, reflected, as `java.util.zip.CRC32`), bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// PayPal's webhook headers for `body`, signed with `key` and naming
/// `cert_url`.
fn signed(key: &RsaPrivateKey, cert_url: &str, body: &str) -> Vec<(&'static str, String)> {
    let id = uuid::Uuid::new_v4().to_string();
    let time = "2026-12-05T10:00:00Z".to_string();
    let text = format!("{id}|{time}|{WEBHOOK_ID}|{}", crc32(body.as_bytes()));
    let sig = rsa::pkcs1v15::SigningKey::<Sha256>::new(key.clone()).sign(text.as_bytes());
    vec![
        ("paypal-transmission-id", id),
        ("paypal-transmission-time", time),
        (
            "paypal-transmission-sig",
            base64::engine::general_purpose::STANDARD.encode(sig.to_bytes()),
        ),
        ("paypal-cert-url", cert_url.to_owned()),
        ("paypal-auth-algo", "SHA256withRSA".to_owned()),
    ]
}

/// PayPal's API as much as Reckon uses, and its certificate URL.
#[derive(Clone, Default)]
struct FakePaypal {
    certs: Arc<Mutex<HashMap<String, String>>>,
    cert_fetches: Arc<Mutex<usize>>,
    captures: Arc<Mutex<HashMap<String, serde_json::Value>>>,
    refunds: Arc<Mutex<HashMap<String, serde_json::Value>>>,
    /// PayPal-Request-Id → refund id.
    requests: Arc<Mutex<HashMap<String, String>>>,
    base: Arc<Mutex<String>>,
}

fn unauthorized() -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        axum::http::StatusCode::UNAUTHORIZED,
        Json(serde_json::json!({"error": "invalid_token", "error_description": "Token signature verification failed"})),
    )
        .into_response()
}

fn bearer_ok(headers: &axum::http::HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bearer {TOKEN}"))
}

/// `POST /v1/oauth2/token`: Basic client credentials.
async fn token(headers: axum::http::HeaderMap, body: String) -> axum::response::Response {
    use axum::response::IntoResponse;
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"));
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Basic {basic}"))
        || body != "grant_type=client_credentials"
    {
        return unauthorized();
    }
    Json(serde_json::json!({
        "scope": "https://uri.paypal.com/services/payments/refund",
        "access_token": TOKEN, "token_type": "Bearer", "app_id": "APP-80W284485P519543T",
        "expires_in": 32400, "nonce": "2026-12-05T10:00:00ZtestNonce"
    }))
    .into_response()
}

async fn cert(State(s): State<FakePaypal>, Path(name): Path<String>) -> axum::response::Response {
    use axum::response::IntoResponse;
    *s.cert_fetches.lock().unwrap() += 1;
    match s.certs.lock().unwrap().get(&name) {
        Some(pem) => pem.clone().into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn get_capture(
    State(s): State<FakePaypal>,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !bearer_ok(&headers) {
        return unauthorized();
    }
    match s.captures.lock().unwrap().get(&id) {
        Some(c) => Json(c.clone()).into_response(),
        None => (
            axum::http::StatusCode::NOT_FOUND,
            Json(serde_json::json!({"name": "RESOURCE_NOT_FOUND", "message": "The specified resource does not exist."})),
        )
            .into_response(),
    }
}

/// `POST /v2/payments/captures/{id}/refund`, idempotent on
/// `PayPal-Request-Id`.
async fn refund_capture(
    State(s): State<FakePaypal>,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
    Json(body): Json<serde_json::Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !bearer_ok(&headers) {
        return unauthorized();
    }
    let request = headers["paypal-request-id"].to_str().unwrap().to_owned();
    if let Some(r) = s.requests.lock().unwrap().get(&request) {
        return Json(s.refunds.lock().unwrap()[r].clone()).into_response();
    }
    if !s.captures.lock().unwrap().contains_key(&id) {
        return (
            axum::http::StatusCode::NOT_FOUND,
            Json(serde_json::json!({"name": "RESOURCE_NOT_FOUND"})),
        )
            .into_response();
    }
    let refund_id = format!("{:X}", uuid::Uuid::new_v4().as_u128() >> 60);
    let base = s.base.lock().unwrap().clone();
    let refund = serde_json::json!({
        "id": refund_id, "status": "PENDING",
        "status_details": {"reason": "ECHECK"},
        "amount": body["amount"], "custom_id": body["custom_id"],
        "note_to_payer": body["note_to_payer"],
        "create_time": "2026-12-05T10:05:00Z", "update_time": "2026-12-05T10:05:00Z",
        "links": [
            {"href": format!("{base}/v2/payments/refunds/{refund_id}"), "rel": "self", "method": "GET"},
            {"href": format!("{base}/v2/payments/captures/{id}"), "rel": "up", "method": "GET"}
        ]
    });
    s.refunds
        .lock()
        .unwrap()
        .insert(refund_id.clone(), refund.clone());
    s.requests.lock().unwrap().insert(request, refund_id);
    (axum::http::StatusCode::CREATED, Json(refund)).into_response()
}

async fn get_refund(
    State(s): State<FakePaypal>,
    headers: axum::http::HeaderMap,
    Path(id): Path<String>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if !bearer_ok(&headers) {
        return unauthorized();
    }
    match s.refunds.lock().unwrap().get(&id) {
        Some(r) => Json(r.clone()).into_response(),
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve(paypal: FakePaypal) -> String {
    let router = Router::new()
        .route("/v1/oauth2/token", post(token))
        .route("/v1/notifications/certs/{name}", get(cert))
        .route("/v2/payments/captures/{id}", get(get_capture))
        .route("/v2/payments/captures/{id}/refund", post(refund_capture))
        .route("/v2/payments/refunds/{id}", get(get_refund))
        .with_state(paypal.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    *paypal.base.lock().unwrap() = base.clone();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    base
}

struct PaypalApp {
    app: TestApp,
    clock: Arc<ManualClock>,
    paypal: FakePaypal,
    base: String,
    /// A server that is not PayPal, serving PayPal's very certificate.
    foreign: FakePaypal,
    foreign_base: String,
}

async fn spawn_paypal_app(b: Backend) -> PaypalApp {
    let pki = pki();
    let paypal = FakePaypal::default();
    paypal
        .certs
        .lock()
        .unwrap()
        .insert("CERT-360caa42-fca2a594-test".into(), pki.chain_pem.clone());
    paypal
        .certs
        .lock()
        .unwrap()
        .insert("CERT-rogue".into(), pki.rogue_pem.clone());
    let base = serve(paypal.clone()).await;
    let foreign = FakePaypal::default();
    foreign
        .certs
        .lock()
        .unwrap()
        .insert("CERT-360caa42-fca2a594-test".into(), pki.chain_pem.clone());
    let foreign_base = serve(foreign.clone()).await;
    let cert_urls = vec![format!("{base}/v1/notifications/certs/")];
    let api = base.clone();
    let clock = Arc::new(ManualClock::default());
    let app = spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig::Paypal(PaypalConfig {
                name: "paypal-us".into(),
                base_url: api,
                client_id: CLIENT_ID.into(),
                client_secret: CLIENT_SECRET.into(),
                webhook_id: WEBHOOK_ID.into(),
                cert_roots: pki.root_pem.clone(),
                cert_urls: Some(cert_urls),
                ..PaypalConfig::default()
            })];
        },
        Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    PaypalApp {
        app,
        clock,
        paypal,
        base,
        foreign,
        foreign_base,
    }
}

impl PaypalApp {
    fn cert_url(&self) -> String {
        format!(
            "{}/v1/notifications/certs/CERT-360caa42-fca2a594-test",
            self.base
        )
    }

    async fn post(&self, body: &str, headers: &[(&'static str, String)]) -> reqwest::Response {
        let mut req = self
            .app
            .client
            .post(format!("{}/webhooks/paypal-us", self.app.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        req.send().await.unwrap()
    }

    /// Signed by PayPal's certificate, as PayPal sends it.
    async fn post_signed(&self, body: &str) -> reqwest::Response {
        self.post(body, &signed(&pki().key, &self.cert_url(), body))
            .await
    }

    async fn refused(&self) -> Vec<(String, String)> {
        sqlx::query_as("SELECT kind, reason FROM refused_callbacks WHERE provider = 'paypal-us' ORDER BY received_at")
            .fetch_all(&self.app.accounts.db.pool)
            .await
            .unwrap()
    }
}

/// A `PAYMENT.CAPTURE.*` event as PayPal sends it (Webhooks v1, capture
/// resource of Payments v2).
fn capture_event(
    event_id: &str,
    kind: &str,
    capture: &str,
    payment_no: &str,
    value: &str,
    status: &str,
) -> String {
    serde_json::json!({
        "id": event_id, "event_version": "1.0", "create_time": "2026-12-05T10:00:00.000Z",
        "resource_type": "capture", "resource_version": "2.0", "event_type": kind,
        "summary": format!("Payment {status}"),
        "resource": {
            "id": capture, "status": status,
            "amount": {"currency_code": "USD", "value": value},
            "final_capture": true, "custom_id": payment_no,
            "seller_protection": {"status": "ELIGIBLE", "dispute_categories": ["ITEM_NOT_RECEIVED", "UNAUTHORIZED_TRANSACTION"]},
            "seller_receivable_breakdown": {
                "gross_amount": {"currency_code": "USD", "value": value},
                "paypal_fee": {"currency_code": "USD", "value": "0.65"},
                "net_amount": {"currency_code": "USD", "value": "10.34"}
            },
            "supplementary_data": {"related_ids": {"order_id": "5O190127TN364715T"}},
            "create_time": "2026-12-05T09:59:58Z", "update_time": "2026-12-05T10:00:00Z",
            "links": [{"href": format!("https://api.sandbox.paypal.com/v2/payments/captures/{capture}"), "rel": "self", "method": "GET"}]
        },
        "links": [{"href": format!("https://api.sandbox.paypal.com/v1/notifications/webhooks-events/{event_id}"), "rel": "self", "method": "GET"}]
    })
    .to_string()
}

async fn a_signed_capture_completed_moves_the_payment_once(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-1", 1099, "USD")
        .await;
    let body = capture_event(
        "WH-1",
        "PAYMENT.CAPTURE.COMPLETED",
        "2GG279541U471931P",
        &p,
        "10.99",
        "COMPLETED",
    );
    assert_eq!(s.post_signed(&body).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    // PayPal redelivers (a new transmission, the same event): no second effect.
    assert_eq!(s.post_signed(&body).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert_eq!(s.app.redeliveries("paypal-us", "WH-1").await.0, 1);
    assert_eq!(
        *s.paypal.cert_fetches.lock().unwrap(),
        1,
        "the certificate is fetched once"
    );
    // Not a payment event: acknowledged, nothing happens.
    let approved = serde_json::json!({"id": "WH-2", "event_type": "CHECKOUT.ORDER.APPROVED",
        "resource_type": "checkout-order", "resource": {"id": "5O190127TN364715T", "status": "APPROVED"}})
    .to_string();
    assert_eq!(s.post_signed(&approved).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    assert!(s.refused().await.is_empty());
}

async fn forged_or_foreign_certificates_are_refused_and_recorded(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-2", 1099, "USD")
        .await;
    let body = capture_event(
        "WH-3",
        "PAYMENT.CAPTURE.COMPLETED",
        "3C679366HH908993F",
        &p,
        "10.99",
        "COMPLETED",
    );
    let pki = pki();
    // One byte of the body changed after signing.
    let headers = signed(&pki.key, &s.cert_url(), &body);
    assert_eq!(
        s.post(&body.replace("10.99", "10.98"), &headers)
            .await
            .status(),
        400
    );
    // PayPal's own certificate, served by a host that is not PayPal's.
    let foreign_url = format!(
        "{}/v1/notifications/certs/CERT-360caa42-fca2a594-test",
        s.foreign_base
    );
    let res = s.post(&body, &signed(&pki.key, &foreign_url, &body)).await;
    assert_eq!(res.status(), 400);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("not under PayPal's certificate URLs")
    );
    assert_eq!(*s.foreign.cert_fetches.lock().unwrap(), 0, "never fetched");
    // A certificate with PayPal's name that no configured root issued.
    let rogue_url = format!("{}/v1/notifications/certs/CERT-rogue", s.base);
    let res = s
        .post(&body, &signed(&pki.rogue_key, &rogue_url, &body))
        .await;
    assert_eq!(res.status(), 400);
    assert!(
        res.text()
            .await
            .unwrap()
            .contains("does not chain to a configured root")
    );
    // Signed by another key than the certificate's.
    assert_eq!(
        s.post(&body, &signed(&pki.rogue_key, &s.cert_url(), &body))
            .await
            .status(),
        400
    );
    // No headers at all.
    assert_eq!(s.post(&body, &[]).await.status(), 400);
    assert_eq!(s.app.payment_state(&p).await, ("CREATED".to_string(), 0));
    let refused = s.refused().await;
    assert_eq!(refused.len(), 5, "{refused:?}");
    assert!(
        refused.iter().all(|(kind, _)| kind == "unverified"),
        "{refused:?}"
    );
    assert!(refused[1].1.contains("signing certificate"), "{refused:?}");
    // The genuine one still passes.
    assert_eq!(s.post_signed(&body).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

/// Past the end of the chain's validity the very certificate PayPal
/// serves signs nothing: fetched then or kept from before.
async fn an_expired_signing_certificate_is_refused(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-X", 1099, "USD")
        .await;
    let first = capture_event(
        "WH-12",
        "PAYMENT.CAPTURE.PENDING",
        "1AB23456CD789012E",
        &p,
        "10.99",
        "PENDING",
    );
    assert_eq!(s.post_signed(&first).await.status(), 200);
    // 2045-06-01: the test CA's certificates ended 2045-01-01.
    s.clock.set(2_379_888_000_000_000);
    let body = capture_event(
        "WH-13",
        "PAYMENT.CAPTURE.COMPLETED",
        "1AB23456CD789012E",
        &p,
        "10.99",
        "COMPLETED",
    );
    let res = s.post_signed(&body).await;
    assert_eq!(res.status(), 400);
    assert!(res.text().await.unwrap().contains("expired"));
    assert_eq!(s.app.payment_state(&p).await.0, "PENDING");
}

async fn a_denied_capture_fails_the_payment(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-3", 2500, "USD")
        .await;
    let pending = capture_event(
        "WH-4",
        "PAYMENT.CAPTURE.PENDING",
        "7TK53561YB803214S",
        &p,
        "25.00",
        "PENDING",
    );
    assert_eq!(s.post_signed(&pending).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await.0, "PENDING");
    let denied = capture_event(
        "WH-5",
        "PAYMENT.CAPTURE.DENIED",
        "7TK53561YB803214S",
        &p,
        "25.00",
        "DECLINED",
    );
    assert_eq!(s.post_signed(&denied).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await.0, "FAILED");
}

/// No webhook settles it: the status query reads the capture the PENDING
/// one named, and finds it completed.
async fn a_pending_capture_is_settled_by_a_status_query(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-Q", 3000, "USD")
        .await;
    let engine = s.app.engine.clone();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let capture = "9KX06244DH587524W";
    let pending = capture_event(
        "WH-11",
        "PAYMENT.CAPTURE.PENDING",
        capture,
        &p,
        "30.00",
        "PENDING",
    );
    assert_eq!(s.post_signed(&pending).await.status(), 200);
    assert_eq!(s.app.payment_state(&p).await.0, "PENDING");
    let mut completed =
        serde_json::from_str::<serde_json::Value>(&pending).unwrap()["resource"].clone();
    completed["status"] = "COMPLETED".into();
    s.paypal
        .captures
        .lock()
        .unwrap()
        .insert(capture.into(), completed);
    s.clock.advance_secs(61);
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn paypal_refunds_reach_paypal_and_their_webhook_settles_them(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-4", 4200, "USD")
        .await;
    let capture = "5VY15380WH4716102";
    let body = capture_event(
        "WH-6",
        "PAYMENT.CAPTURE.COMPLETED",
        capture,
        &p,
        "42.00",
        "COMPLETED",
    );
    s.paypal.captures.lock().unwrap().insert(
        capture.into(),
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["resource"].clone(),
    );
    assert_eq!(s.post_signed(&body).await.status(), 200);
    // The merchant asks through Reckon's API.
    let token = s.app.api_token("shop").await;
    let res = s
        .app
        .client
        .post(format!("{}/api/v1/payments/{p}/refunds", s.app.base))
        .bearer_auth(&token)
        .header("idempotency-key", "pp-r1")
        .json(&serde_json::json!({"amount_minor": 1200, "reason": "requested_by_customer"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let refund: serde_json::Value = res.json().await.unwrap();
    let engine = s.app.engine.clone();
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let (refund_id, asked) = {
        let refunds = s.paypal.refunds.lock().unwrap();
        assert_eq!(refunds.len(), 1);
        let (id, r) = refunds.iter().next().unwrap();
        (id.clone(), r.clone())
    };
    assert_eq!(
        asked["amount"],
        serde_json::json!({"value": "12.00", "currency_code": "USD"})
    );
    assert_eq!(asked["custom_id"], serde_json::json!(refund_no));
    assert_eq!(
        s.paypal.requests.lock().unwrap().keys().collect::<Vec<_>>(),
        [&refund_no],
        "PayPal-Request-Id is the refund_no"
    );
    let pool = &s.app.accounts.db.pool;
    let row: (String, Option<String>) =
        sqlx::query_as("SELECT status, provider_refund_id FROM refunds WHERE refund_no = $1")
            .bind(&refund_no)
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(row, ("PENDING".to_string(), Some(refund_id.clone())));

    // PAYMENT.CAPTURE.REFUNDED with the refund completed; sent twice.
    let mut done = asked.clone();
    done["status"] = "COMPLETED".into();
    let refunded = serde_json::json!({"id": "WH-7", "event_version": "1.0",
        "event_type": "PAYMENT.CAPTURE.REFUNDED", "resource_type": "refund", "resource_version": "2.0",
        "resource": done})
    .to_string();
    for _ in 0..2 {
        assert_eq!(s.post_signed(&refunded).await.status(), 200);
    }
    let figures: (String, i64, i64) = crate::reads::payment_refund_state(pool, &p).await;
    assert_eq!(figures, ("SUCCEEDED".to_string(), 1200, 0));
    assert_eq!(crate::reads::ledger_entries(pool).await, 1);

    // A reversal PayPal made (no refund_no of Reckon's): a discrepancy.
    let reversal = serde_json::json!({"id": "WH-8", "event_type": "PAYMENT.CAPTURE.REVERSED",
        "resource_type": "refund", "resource": {"id": "0RV87654AB123456C", "status": "COMPLETED",
        "amount": {"currency_code": "USD", "value": "5.00"},
        "links": [{"href": format!("https://api.sandbox.paypal.com/v2/payments/captures/{capture}"), "rel": "up", "method": "GET"}]}})
    .to_string();
    assert_eq!(s.post_signed(&reversal).await.status(), 200);
    let classes: Vec<String> = crate::reads::classes_of(pool, &p).await;
    assert_eq!(classes, ["REFUND_MISMATCH"]);
    let figures: (i64, i64) = crate::reads::refund_figures(pool, &p).await;
    assert_eq!(figures, (1200, 0), "the reversal changed no refund");
}

/// The day's Settlement Report: two payments and the refund Reckon knows,
/// a withdrawal to the bank, a payment Reckon does not know.
fn settlement(date: &str, rows: &[[&str; 7]]) -> String {
    let day = date.replace('-', "/");
    let mut out = format!(
        "\"RH\",{day} 23:59:00 +0000,\"A\",\"MERCHANT7EXAMPLE\",011\n\"FH\",01\n\"SH\",{day} 00:00:00 +0000,{day} 23:59:59 +0000,\"MERCHANT7EXAMPLE\",\"\"\n\
         \"CH\",\"Transaction ID\",\"Invoice ID\",\"PayPal Reference ID\",\"PayPal Reference ID Type\",\"Transaction Event Code\",\"Transaction Initiation Date\",\"Transaction Completion Date\",\"Transaction  Debit or Credit\",\"Gross Transaction Amount\",\"Gross Transaction Currency\",\"Fee Debit or Credit\",\"Fee Amount\",\"Fee Currency\",\"Custom Field\",\"Consumer ID\",\"Payment Tracking ID\",\"Store ID\"\n"
    );
    for [txn, reference, code, direction, amount, fee, custom] in rows {
        out.push_str(&format!(
            "\"SB\",\"{txn}\",\"\",\"{reference}\",\"TXN\",\"{code}\",{day} 00:10:00 +0000,{day} 00:10:05 +0000,\"{direction}\",{amount},\"USD\",\"DR\",{fee},\"USD\",\"{custom}\",\"\",\"\",\"\"\n"
        ));
    }
    out.push_str(&format!(
        "\"SF\",\"USD\",0,0,0,0,0,0,0,0\n\"SC\",{}\n\"RF\",\"USD\",0,0,0,0,0,0,0,0\n\"RC\",{}\n\"FF\",01\n",
        rows.len(),
        rows.len() + 4
    ));
    out
}

async fn upload(s: &PaypalApp, token: &str, date: &str, body: String) -> (u16, serde_json::Value) {
    let form = reqwest::multipart::Form::new()
        .text("provider", "paypal-us")
        .text("business_date", date.to_owned())
        .part(
            "file",
            reqwest::multipart::Part::bytes(body.into_bytes()).file_name("STL-20261205.01.011.CSV"),
        );
    let res = s
        .app
        .client
        .post(format!("{}/api/v1/recon/runs", s.app.base))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or_default())
}

async fn a_settlement_report_reconciles_into_its_tickets(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let token = s.app.api_token("shop").await;
    let date = jiff::Timestamp::from_microsecond(s.app.engine.now())
        .unwrap()
        .strftime("%Y-%m-%d")
        .to_string();
    let matched = s
        .app
        .register_payment("paypal-us", "PP-5", 4200, "USD")
        .await;
    let short = s
        .app
        .register_payment("paypal-us", "PP-6", 1000, "USD")
        .await;
    for (event, capture, p, value) in [
        ("WH-9", "CAPMATCHED0000001", &matched, "42.00"),
        ("WH-10", "CAPSHORT000000002", &short, "10.00"),
    ] {
        let body = capture_event(
            event,
            "PAYMENT.CAPTURE.COMPLETED",
            capture,
            p,
            value,
            "COMPLETED",
        );
        assert_eq!(s.post_signed(&body).await.status(), 200);
    }
    // Malformed: an amount with a decimal point; refused, naming the line.
    let bad = settlement(
        &date,
        &[[
            "CAPMATCHED0000001",
            "",
            "T0006",
            "CR",
            "42.00",
            "157",
            &matched,
        ]],
    );
    let (status, refused) = upload(&s, &token, &date, bad).await;
    assert_eq!(status, 422, "{refused}");
    let why = refused["error"].as_str().unwrap_or_default();
    assert!(
        why.contains("Gross Transaction Amount") && why.contains("line 5"),
        "{refused}"
    );

    let report = settlement(
        &date,
        &[
            [
                "CAPMATCHED0000001",
                "",
                "T0006",
                "CR",
                "4200",
                "157",
                &matched,
            ],
            // PayPal settled 9.00 of a 10.00 payment.
            ["CAPSHORT000000002", "", "T0006", "CR", "900", "40", &short],
            [
                "CAPSTRANGER000003",
                "",
                "T0006",
                "CR",
                "777",
                "30",
                "NOT-RECKONS",
            ],
            ["WD00000000000004", "", "T0400", "DR", "5000", "0", ""],
        ],
    );
    let (status, run) = upload(&s, &token, &date, report).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    let tickets: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT class, provider_txn_id FROM discrepancies WHERE source = 'recon' ORDER BY class, provider_txn_id",
    )
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        tickets,
        [
            (
                "AMOUNT_MISMATCH".to_string(),
                Some("CAPSHORT000000002".to_string())
            ),
            (
                "PROVIDER_ONLY".to_string(),
                Some("CAPSTRANGER000003".to_string())
            ),
        ]
    );
}

/// `CUSTOMER.DISPUTE.CREATED` as PayPal sends it: the dispute resource of
/// the Disputes v1 API (developer.paypal.com/api/customer-disputes/v1).
fn dispute_event(
    event_id: &str,
    kind: &str,
    at: &str,
    status: &str,
    outcome: Option<&str>,
) -> String {
    serde_json::json!({
        "id": event_id, "event_version": "1.0", "create_time": at,
        "resource_type": "dispute", "event_type": kind,
        "summary": "A new dispute opened with Case # PP-D-27803",
        "resource": {
            "dispute_id": "PP-D-27803", "create_time": "2026-12-05T10:00:00.000Z",
            "update_time": at,
            "disputed_transactions": [{
                "seller_transaction_id": "2GG279541U471931P", "create_time": "2026-12-05T09:59:58.000Z",
                "transaction_status": "COMPLETED",
                "gross_amount": {"currency_code": "USD", "value": "10.99"},
                "seller": {"merchant_id": "RD465XN5VS364"}
            }],
            "reason": "MERCHANDISE_OR_SERVICE_NOT_RECEIVED", "status": status,
            "dispute_amount": {"currency_code": "USD", "value": "10.99"},
            "dispute_life_cycle_stage": "CHARGEBACK", "dispute_channel": "EXTERNAL",
            "seller_response_due_date": "2026-12-15T10:00:00.000Z",
            "dispute_outcome": outcome.map(|o| serde_json::json!({"outcome_code": o})),
            "links": [{"href": "https://api.sandbox.paypal.com/v1/customer/disputes/PP-D-27803", "rel": "self", "method": "GET"}]
        },
        "links": [{"href": format!("https://api.sandbox.paypal.com/v1/notifications/webhooks-events/{event_id}"), "rel": "self", "method": "GET"}]
    })
    .to_string()
}

async fn a_paypal_dispute_opens_a_ticket_due_at_the_sellers_response_date(b: Backend) {
    let s = spawn_paypal_app(b).await;
    let p = s
        .app
        .register_payment("paypal-us", "PP-D1", 1099, "USD")
        .await;
    let body = capture_event(
        "WH-D0",
        "PAYMENT.CAPTURE.COMPLETED",
        "2GG279541U471931P",
        &p,
        "10.99",
        "COMPLETED",
    );
    assert_eq!(s.post_signed(&body).await.status(), 200);
    let created = dispute_event(
        "WH-D1",
        "CUSTOMER.DISPUTE.CREATED",
        "2026-12-05T10:00:01.000Z",
        "WAITING_FOR_SELLER_RESPONSE",
        None,
    );
    assert_eq!(s.post_signed(&created).await.status(), 200);
    assert_eq!(s.post_signed(&created).await.status(), 200, "redelivered");
    let pool = &s.app.accounts.db.pool;
    let due = jiff::Timestamp::from_second(1_797_328_800)
        .unwrap()
        .as_microsecond();
    let d: (String, i64, String, Option<String>, Option<i64>) = sqlx::query_as(
        "SELECT status, amount_minor, currency, payment_no, evidence_due_at FROM disputes WHERE dispute_id = 'PP-D-27803'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(
        d,
        (
            "OPEN".into(),
            1099,
            "USD".into(),
            Some(p.clone()),
            Some(due)
        )
    );
    let ticket: (i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), MAX(sla_due_at) FROM discrepancies WHERE class = 'DISPUTE' AND status = 'OPEN'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(ticket, (1, Some(due)));
    // Resolved for the buyer: lost, the ticket closed; the payment is as
    // paid as it was.
    let resolved = dispute_event(
        "WH-D2",
        "CUSTOMER.DISPUTE.RESOLVED",
        "2026-12-10T10:00:00.000Z",
        "RESOLVED",
        Some("RESOLVED_BUYER_FAVOUR"),
    );
    assert_eq!(s.post_signed(&resolved).await.status(), 200);
    let status: (String, String) = sqlx::query_as(
        "SELECT d.status, t.status FROM disputes d JOIN discrepancies t ON t.discrepancy_id = d.ticket_id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(status, ("LOST".into(), "CLOSED".into()));
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    // The seller appeals: under review again, the closed ticket is a
    // person's again, with a note and an audit entry saying why.
    let appealed = dispute_event(
        "WH-D3",
        "CUSTOMER.DISPUTE.UPDATED",
        "2026-12-11T10:00:00.000Z",
        "UNDER_REVIEW",
        None,
    );
    assert_eq!(s.post_signed(&appealed).await.status(), 200);
    assert_eq!(s.post_signed(&appealed).await.status(), 200, "redelivered");
    let status: (String, String, Option<String>) = sqlx::query_as(
        "SELECT d.status, t.status, t.conclusion FROM disputes d JOIN discrepancies t ON t.discrepancy_id = d.ticket_id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(
        status,
        ("EVIDENCE_SUBMITTED".into(), "IN_PROGRESS".into(), None)
    );
    let reopened: Vec<(String, String)> =
        sqlx::query_as("SELECT author, body FROM ticket_notes WHERE kind = 'reopen'")
            .fetch_all(pool)
            .await
            .unwrap();
    assert_eq!(reopened.len(), 1, "{reopened:?}");
    assert_eq!(reopened[0].0, "provider:paypal-us");
    assert!(
        reopened[0].1.contains("was LOST") && reopened[0].1.contains("EVIDENCE_SUBMITTED"),
        "{reopened:?}"
    );
    assert_eq!(
        count_of(
            pool,
            "SELECT COUNT(*) FROM audit_log WHERE action = 'ticket.reopen'"
        )
        .await,
        1
    );
    assert!(s.refused().await.is_empty());
}

async fn count_of(pool: &sqlx::AnyPool, sql: &str) -> i64 {
    sqlx::query_scalar(sql).fetch_one(pool).await.unwrap()
}

both_databases!(
    a_paypal_dispute_opens_a_ticket_due_at_the_sellers_response_date,
    a_signed_capture_completed_moves_the_payment_once,
    forged_or_foreign_certificates_are_refused_and_recorded,
    a_denied_capture_fails_the_payment,
    an_expired_signing_certificate_is_refused,
    a_pending_capture_is_settled_by_a_status_query,
    paypal_refunds_reach_paypal_and_their_webhook_settles_them,
    a_settlement_report_reconciles_into_its_tickets,
);
