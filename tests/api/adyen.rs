//! The Adyen adapter against Adyen's wire format: standard notifications
//! signed by an independent signer here and by the official
//! `@adyen/api-library` (`hmacValidator`), a local server playing the
//! Checkout API's refund endpoint and the report download, and the
//! Settlement details report reconciled. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::providers::adyen::{Adyen, AdyenConfig};
use reckon::startup::Options;
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Adyen's published example HMAC key (its HMAC documentation and the
/// official libraries' tests).
const HMAC_KEY: &str = "44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056";
const OTHER_KEY: &str = "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF";
const API_KEY: &str = "AQE_test_checkout_key";
const REPORT_KEY: &str = "AQE_test_report_key";
const MERCHANT: &str = "ReckonECOM";

/// The Checkout API's refund endpoint and the report download, as much as
/// Reckon uses.
#[derive(Clone, Default)]
struct FakeAdyen {
    /// Each refund request: (path pspReference, Idempotency-Key, body).
    refunds: Arc<Mutex<Vec<(String, String, serde_json::Value)>>>,
    /// Idempotency-Key → the refund's pspReference.
    keys: Arc<Mutex<HashMap<String, String>>>,
    /// Report file name → its bytes.
    reports: Arc<Mutex<HashMap<String, String>>>,
}

/// `POST /v71/payments/{paymentPspReference}/refunds`: `X-API-Key`,
/// `Idempotency-Key`; 201 with a `PaymentRefundResponse`, status received.
async fn refund(
    State(s): State<FakeAdyen>,
    Path(psp): Path<String>,
    headers: axum::http::HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(API_KEY) {
        let error = serde_json::json!({"status": 401, "errorCode": "000",
            "message": "HTTP Status Response - Unauthorized", "errorType": "security"});
        return (StatusCode::UNAUTHORIZED, Json(error)).into_response();
    }
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    s.refunds
        .lock()
        .unwrap()
        .push((psp.clone(), key.clone(), body.clone()));
    let n = s.keys.lock().unwrap().len();
    let refund_psp = s
        .keys
        .lock()
        .unwrap()
        .entry(key)
        .or_insert_with(|| format!("RFND{n:012}"))
        .clone();
    let answer = serde_json::json!({
        "merchantAccount": body["merchantAccount"], "paymentPspReference": psp,
        "pspReference": refund_psp, "reference": body["reference"],
        "status": "received", "amount": body["amount"],
    });
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// `GET /reports/download/MerchantAccount/{account}/{file}` with the report
/// user's `X-API-Key`.
async fn report(
    State(s): State<FakeAdyen>,
    Path((account, file)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(REPORT_KEY) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    match s.reports.lock().unwrap().get(&file) {
        Some(text) if account == MERCHANT => text.clone().into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

struct AdyenApp {
    app: TestApp,
    fake: FakeAdyen,
    config: AdyenConfig,
}

async fn spawn_adyen_app(b: Backend) -> AdyenApp {
    let fake = FakeAdyen::default();
    let router = Router::new()
        .route("/v71/payments/{psp}/refunds", post(refund))
        .route(
            "/reports/download/MerchantAccount/{account}/{file}",
            get(report),
        )
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let config = AdyenConfig {
        name: "adyen-eu".into(),
        base_url: base.clone(),
        merchant_account: MERCHANT.into(),
        hmac_key: HMAC_KEY.into(),
        api_key: API_KEY.into(),
        report_base_url: Some(format!("{base}/reports/download")),
        report_api_key: REPORT_KEY.into(),
        ..AdyenConfig::default()
    };
    let section = config.clone();
    let app = spawn_app_with(
        b,
        |c| c.providers = vec![ProviderConfig::Adyen(section)],
        Options {
            demo: false,
            clock: Arc::new(ManualClock::default()),
            workers: false,
            ..Options::default()
        },
    )
    .await;
    AdyenApp { app, fake, config }
}

/// Adyen's documented scheme, written out here independently of the
/// adapter: base64 HMAC-SHA256, keyed with the hex key decoded, of
/// `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success`.
fn sign(key_hex: &str, item: &serde_json::Value) -> String {
    let s = |f: &str| item[f].as_str().unwrap_or("").to_owned();
    let text = [
        s("pspReference"),
        s("originalReference"),
        s("merchantAccountCode"),
        s("merchantReference"),
        item["amount"]["value"].as_i64().unwrap().to_string(),
        item["amount"]["currency"].as_str().unwrap().to_owned(),
        s("eventCode"),
        s("success"),
    ]
    .join(":");
    let mut mac = Hmac::<Sha256>::new_from_slice(&hex::decode(key_hex).unwrap()).unwrap();
    mac.update(text.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// A NotificationRequestItem as Adyen sends it (webhooks reference).
fn item(
    event: &str,
    psp: &str,
    original: Option<&str>,
    reference: &str,
    value: i64,
    success: bool,
) -> serde_json::Value {
    let mut item = serde_json::json!({
        "amount": { "currency": "EUR", "value": value },
        "eventCode": event,
        "eventDate": "2026-12-01T10:00:00+01:00",
        "merchantAccountCode": MERCHANT,
        "merchantReference": reference,
        "paymentMethod": "visa",
        "pspReference": psp,
        "success": success.to_string(),
    });
    if let Some(o) = original {
        item["originalReference"] = o.into();
    }
    item
}

/// The webhook's body, its item signed with `signature`.
fn notification(mut item: serde_json::Value, signature: &str) -> String {
    item["additionalData"] = serde_json::json!({ "hmacSignature": signature });
    serde_json::json!({ "live": "false", "notificationItems": [{ "NotificationRequestItem": item }] })
        .to_string()
}

fn signed(item: serde_json::Value) -> String {
    let signature = sign(HMAC_KEY, &item);
    notification(item, &signature)
}

/// `new hmacValidator().calculateHmac(item, key)` from the official package.
fn official_signature(item: &serde_json::Value, key: &str) -> String {
    let modules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("end2end/node_modules");
    assert!(
        modules.join("@adyen/api-library").is_dir(),
        "the official @adyen/api-library package is missing: run `npm ci` in end2end/ (the test command does)"
    );
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg("const { hmacValidator } = require('@adyen/api-library'); process.stdout.write(new hmacValidator().calculateHmac(JSON.parse(process.env.ITEM), process.env.KEY));")
        .env("NODE_PATH", modules)
        .env("ITEM", item.to_string())
        .env("KEY", key)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

impl AdyenApp {
    async fn post(&self, body: &str) -> (u16, String) {
        let res = self
            .app
            .post_webhook("adyen-eu", "application/json", body.to_owned())
            .await;
        let status = res.status().as_u16();
        (status, res.text().await.unwrap())
    }

    /// A payment registered with Reckon and authorised at Adyen (its
    /// AUTHORISATION notification accepted).
    async fn paid(&self, order: &str, value: i64, psp: &str) -> String {
        let p = self
            .app
            .register_payment("adyen-eu", order, value, "EUR")
            .await;
        let body = signed(item("AUTHORISATION", psp, None, &p, value, true));
        assert_eq!(self.post(&body).await, (200, "[accepted]".to_string()));
        p
    }
}

async fn refused_kinds(app: &TestApp) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT kind FROM refused_callbacks WHERE provider = 'adyen-eu' ORDER BY received_at, id",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

async fn an_authorisation_succeeds_the_payment_once_and_bad_ones_are_refused(b: Backend) {
    let s = spawn_adyen_app(b).await;
    let p = s
        .app
        .register_payment("adyen-eu", "AD-1", 1130, "EUR")
        .await;
    let good = item("AUTHORISATION", "7914073381342284", None, &p, 1130, true);
    // Signed with another key; a signed field changed; no signature.
    let wrong_key = notification(good.clone(), &sign(OTHER_KEY, &good));
    assert_eq!(s.post(&wrong_key).await.0, 400);
    let mut more = good.clone();
    more["amount"]["value"] = 11300.into();
    assert_eq!(
        s.post(&notification(more, &sign(HMAC_KEY, &good))).await.0,
        400
    );
    let unsigned = serde_json::json!({ "live": "false",
        "notificationItems": [{ "NotificationRequestItem": good.clone() }] })
    .to_string();
    assert_eq!(s.post(&unsigned).await.0, 400);
    assert_eq!(s.app.payment_state(&p).await, ("CREATED".to_string(), 0));
    assert_eq!(
        refused_kinds(&s.app).await,
        ["unverified", "unverified", "unverified"]
    );
    // Signed: accepted as Adyen asks, once; the same again is a duplicate.
    let body = signed(good.clone());
    assert_eq!(s.post(&body).await, (200, "[accepted]".to_string()));
    assert_eq!(s.post(&body).await, (200, "[accepted]".to_string()));
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    let txn: Option<String> = crate::reads::payment_txn(&s.app.accounts.db.pool, &p).await;
    assert_eq!(txn.as_deref(), Some("7914073381342284"));
    assert_eq!(
        s.app
            .redeliveries("adyen-eu", "AUTHORISATION:7914073381342284:true")
            .await
            .0,
        1,
        "the replay is counted as a duplicate"
    );
    // An event that moves no payment is acknowledged with no effect.
    let chargeback = signed(item(
        "CHARGEBACK",
        "9915555555555555",
        Some("7914073381342284"),
        &p,
        1130,
        true,
    ));
    assert_eq!(s.post(&chargeback).await, (200, "[accepted]".to_string()));
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    // Two items in one webhook: refused whole, nothing read.
    let other = item("AUTHORISATION", "7914073381342285", None, &p, 1130, true);
    let mut two: serde_json::Value = serde_json::from_str(&signed(good)).unwrap();
    let mut second = other.clone();
    second["additionalData"] = serde_json::json!({ "hmacSignature": sign(HMAC_KEY, &other) });
    two["notificationItems"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({ "NotificationRequestItem": second }));
    assert_eq!(s.post(&two.to_string()).await.0, 400);
}

async fn a_notification_signed_by_the_official_adyen_library_is_accepted(b: Backend) {
    let s = spawn_adyen_app(b).await;
    let p = s
        .app
        .register_payment("adyen-eu", "AD-SDK", 2500, "EUR")
        .await;
    let it = item("AUTHORISATION", "8815000000000001", None, &p, 2500, true);
    let official = official_signature(&it, HMAC_KEY);
    assert_eq!(official, sign(HMAC_KEY, &it), "both signers agree");
    let mut changed = it.clone();
    changed["merchantAccountCode"] = "SomeoneElse".into();
    assert_eq!(s.post(&notification(changed, &official)).await.0, 400);
    assert_eq!(
        s.post(&notification(it, &official)).await,
        (200, "[accepted]".to_string())
    );
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn a_refund_is_asked_of_adyen_and_settled_by_its_notification(b: Backend) {
    let s = spawn_adyen_app(b).await;
    let engine = s.app.engine.clone();
    let pool = &s.app.accounts.db.pool;
    let p = s.paid("AD-R", 4000, "8816000000000001").await;
    let req = reckon::engine::CreateRefund {
        amount_minor: 1500,
        currency: Some("EUR".into()),
        reason: "returned".into(),
    };
    let refund = engine
        .request_refund("test", "ad-r1", &p, &req)
        .await
        .expect("the refund is requested");
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let asked = s.fake.refunds.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let (psp, key, body) = &asked[0];
    assert_eq!(psp, "8816000000000001");
    assert_eq!(key, &refund_no, "the refund_no is the idempotency key");
    assert_eq!(
        body,
        &serde_json::json!({ "merchantAccount": MERCHANT, "reference": refund_no,
            "amount": { "value": 1500, "currency": "EUR" } })
    );
    let status_of = || async { crate::reads::refund_status(pool, &refund_no).await };
    assert_eq!(status_of().await, "PENDING", "received is not done");
    let refund_psp = s.fake.keys.lock().unwrap()[&refund_no].clone();
    let done = signed(item(
        "REFUND",
        &refund_psp,
        Some("8816000000000001"),
        &refund_no,
        1500,
        true,
    ));
    assert_eq!(s.post(&done).await, (200, "[accepted]".to_string()));
    assert_eq!(status_of().await, "SUCCEEDED");
    let figures: (String, i64, i64) = crate::reads::payment_refund_state(pool, &p).await;
    assert_eq!(figures, ("SUCCEEDED".to_string(), 1500, 0));
}

/// The Settlement details report's columns, as the reporting docs list
/// them and their sample has them.
const HEADER: &str = "Company Account,Merchant Account,Psp Reference,Merchant Reference,Payment Method,Creation Date,TimeZone,Type,Modification Reference,Gross Currency,Gross Debit (GC),Gross Credit (GC),Exchange Rate,Net Currency,Net Debit (NC),Net Credit (NC),Commission (NC),Markup (NC),Scheme Fees (NC),Interchange (NC),Payment Method Variant,Modification Merchant Reference,Batch Number";

async fn pushes(app: &TestApp) -> Vec<(String, i64, i64, Option<String>, Option<String>)> {
    reckon::store::report_pushes::of_provider(&app.accounts.db.pool, "adyen-eu")
        .await
        .unwrap()
        .into_iter()
        .map(|p| (p.file_name, p.tries, p.done, p.run_id, p.last_error))
        .collect()
}

async fn a_pushed_settlement_report_is_fetched_and_reconciled(b: Backend) {
    let s = spawn_adyen_app(b).await;
    let engine = s.app.engine.clone();
    let pool = &s.app.accounts.db.pool;
    let a = s.paid("AD-A", 1000, "8817000000000001").await;
    // Paid here, absent from the batch: the report misses it.
    let missing = s.paid("AD-B", 2000, "8817000000000002").await;
    let zone = reckon::recon::statement_zone(&engine, "adyen-eu");
    let now = jiff::Timestamp::from_microsecond(engine.now()).unwrap();
    let date = now.to_zoned(zone.clone()).date().to_string();
    let at = now.strftime("%Y-%m-%d %H:%M:%S").to_string();
    // Made the next day, after the batch closed.
    let made = (now + jiff::SignedDuration::from_hours(24))
        .strftime("%Y-%m-%dT%H:%M:%S+00:00")
        .to_string();
    let report = format!(
        "{HEADER}\n\
ReckonCo,{MERCHANT},8817000000000001,{a},visa,{at},UTC,Settled,8817000000009001,EUR,,10.00,1,EUR,,9.71,,0.09,0.05,0.15,visadebit,,7\n\
ReckonCo,{MERCHANT},,,,{at},UTC,Fee,Transaction Fees,EUR,,,,EUR,0.10,,,,,,,,7\n\
ReckonCo,{MERCHANT},,,,{at},UTC,MerchantPayout,TX7,EUR,,,,EUR,9.61,,,,,,,,7\n"
    );
    let file = "settlement_detail_report_batch_7.csv";
    s.fake.reports.lock().unwrap().insert(file.into(), report);
    // REPORT_AVAILABLE: the file name in pspReference, its URL in reason.
    let url = format!(
        "{}/reports/download/MerchantAccount/{MERCHANT}/{file}",
        s.config.base_url
    );
    let push = |file: &str, url: &str| {
        let mut it = item("REPORT_AVAILABLE", file, None, "", 0, true);
        it["reason"] = url.into();
        it["eventDate"] = made.clone().into();
        signed(it)
    };
    for _ in 0..2 {
        assert_eq!(
            s.post(&push(file, &url)).await,
            (200, "[accepted]".to_string())
        );
    }
    // One naming a URL on another host is recorded and never fetched.
    let elsewhere = url.replace("127.0.0.1", "localhost");
    let other = "settlement_detail_report_batch_8.csv";
    assert_eq!(
        s.post(&push(other, &elsewhere)).await,
        (200, "[accepted]".to_string())
    );
    assert_eq!(
        reckon::recon::fetch_pushed_reports(&engine, engine.now())
            .await
            .unwrap(),
        2,
        "the push sent twice is one"
    );
    let seen = pushes(&s.app).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    let fetched = seen.iter().find(|p| p.0 == file).unwrap();
    assert_eq!(
        (fetched.1, fetched.2, &fetched.4),
        (1, 1, &None),
        "{seen:?}"
    );
    let refused = seen.iter().find(|p| p.0 == other).unwrap();
    assert_eq!((refused.1, refused.2), (1, 1), "{seen:?}");
    assert!(
        refused.4.as_deref().unwrap().contains("report host"),
        "{seen:?}"
    );
    let run_id = fetched.3.clone().unwrap();
    let run = reckon::recon::find_run(&engine, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            run.status.as_str(),
            run.business_date.as_str(),
            run.rows_read
        ),
        ("COMPLETED", date.as_str(), 1),
        "{run:?}"
    );
    let classes_a: Vec<String> = crate::reads::classes_of(pool, &a).await;
    assert!(classes_a.is_empty(), "{classes_a:?}");
    let classes: Vec<String> = crate::reads::classes_of(pool, &missing).await;
    assert_eq!(classes, ["LOCAL_ONLY"]);
    // The batch's payout, for the bank side.
    let payouts: Vec<(String, i64, String, String)> = sqlx::query_as(
        "SELECT payout_id, amount_minor, currency, arrival_on FROM payouts WHERE provider = 'adyen-eu'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(
        payouts,
        [(
            "TX7".to_string(),
            961,
            "EUR".to_string(),
            at[..10].to_string()
        )]
    );
    // Nothing is due again.
    assert_eq!(
        reckon::recon::fetch_pushed_reports(&engine, engine.now())
            .await
            .unwrap(),
        0
    );
    // The report user's key is what the download host asks for.
    let mut wrong = s.config.clone();
    wrong.report_api_key = "AQE_wrong".into();
    let name = reckon::domain::ProviderName::parse("adyen-eu").unwrap();
    let refused = Adyen::from_config(&wrong, name)
        .unwrap()
        .download_report(&url, file)
        .await;
    assert!(
        matches!(refused, Err(reckon::providers::CallError::Refused(ref e)) if e.contains("report credentials")),
        "{refused:?}"
    );
}

/// Adyen's dispute events (docs.adyen.com "Dispute webhooks"): the
/// dispute's own pspReference on each, the payment's as
/// originalReference, the defence's end in
/// `additionalData.defensePeriodEndsAt` (outside the signed fields).
async fn an_adyen_chargeback_opens_a_dispute_due_at_its_defence_period_end(b: Backend) {
    let s = spawn_adyen_app(b).await;
    let p = s
        .app
        .register_payment("adyen-eu", "AD-D1", 2500, "EUR")
        .await;
    let auth = item("AUTHORISATION", "8815555555555501", None, &p, 2500, true);
    assert_eq!(s.post(&signed(auth)).await.0, 200);
    let with_extra = |item: serde_json::Value| {
        let signature = sign(HMAC_KEY, &item);
        let mut body: serde_json::Value =
            serde_json::from_str(&notification(item, &signature)).unwrap();
        let extra = &mut body["notificationItems"][0]["NotificationRequestItem"]["additionalData"];
        extra["chargebackReasonCode"] = "10.4".into();
        extra["chargebackSchemeCode"] = "visa".into();
        extra["defensePeriodEndsAt"] = "2026-12-24T12:00:00+01:00".into();
        extra["disputeStatus"] = "Undefended".into();
        body.to_string()
    };
    let chargeback = with_extra(item(
        "CHARGEBACK",
        "9915555555555502",
        Some("8815555555555501"),
        &p,
        2500,
        true,
    ));
    assert_eq!(s.post(&chargeback).await, (200, "[accepted]".to_string()));
    // Sent again: nothing new.
    assert_eq!(s.post(&chargeback).await, (200, "[accepted]".to_string()));
    let pool = &s.app.accounts.db.pool;
    let d: (String, Option<i64>, Option<String>, Option<String>) = sqlx::query_as(
        "SELECT status, evidence_due_at, payment_no, reason FROM disputes WHERE provider = 'adyen-eu' AND dispute_id = '9915555555555502'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let due = jiff::Timestamp::from_second(1_798_110_000)
        .unwrap()
        .as_microsecond();
    assert_eq!(
        d,
        (
            "OPEN".into(),
            Some(due),
            Some(p.clone()),
            Some("reason code 10.4".into())
        )
    );
    let ticket: (String, String, Option<i64>) = sqlx::query_as(
        "SELECT severity, status, sla_due_at FROM discrepancies WHERE class = 'DISPUTE'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(ticket, ("HIGH".into(), "OPEN".into(), Some(due)));
    let moved: (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) FROM dispute_movements WHERE kind = 'WITHDRAWN'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(moved, (1, 2500), "the chargeback took the amount, once");
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    // Defended and reversed: won, the money given back, the ticket closed.
    let mut reversed = item(
        "CHARGEBACK_REVERSED",
        "9915555555555502",
        Some("8815555555555501"),
        &p,
        2500,
        true,
    );
    reversed["eventDate"] = "2026-12-20T10:00:00+01:00".into();
    assert_eq!(s.post(&signed(reversed)).await.0, 200);
    let status: (String, String) = sqlx::query_as(
        "SELECT d.status, t.status FROM disputes d JOIN discrepancies t ON t.discrepancy_id = d.ticket_id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(status, ("WON".into(), "CLOSED".into()));
    // A second chargeback after the win: lost after all. The ticket is
    // reopened and concluded again on the new decision.
    let mut second = item(
        "SECOND_CHARGEBACK",
        "9915555555555502",
        Some("8815555555555501"),
        &p,
        2500,
        true,
    );
    second["eventDate"] = "2026-12-28T10:00:00+01:00".into();
    assert_eq!(s.post(&signed(second)).await.0, 200);
    let status: (String, String, String) = sqlx::query_as(
        "SELECT d.status, t.status, t.conclusion FROM disputes d JOIN discrepancies t ON t.discrepancy_id = d.ticket_id",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!((&*status.0, &*status.1), ("LOST", "CLOSED"));
    assert!(status.2.contains("LOST"), "{}", status.2);
    let actions: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE action IN ('ticket.reopen', 'ticket.close') ORDER BY seq",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(actions, ["ticket.close", "ticket.reopen", "ticket.close"]);
    let moved: (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) FROM dispute_movements WHERE kind = 'WITHDRAWN'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(moved, (2, 5000), "taken, given back, taken again");
}

both_databases!(
    an_adyen_chargeback_opens_a_dispute_due_at_its_defence_period_end,
    an_authorisation_succeeds_the_payment_once_and_bad_ones_are_refused,
    a_notification_signed_by_the_official_adyen_library_is_accepted,
    a_refund_is_asked_of_adyen_and_settled_by_its_notification,
    a_pushed_settlement_report_is_fetched_and_reconciled,
);
