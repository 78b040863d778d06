//! The Standard-Webhooks adapter: a body mapped by JSON pointers, signed by
//! the official `standardwebhooks` npm package and by an independent signer
//! here. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use reckon::config::ProviderConfig;
use reckon::context::ManualClock;
use reckon::providers::standard::Mapping;
use reckon::providers::standard::StandardConfig;
use reckon::startup::Options;
use sha2::Sha256;
use std::sync::Arc;

pub(crate) const SECRET: &str = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";
const OLD_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

async fn spawn(b: Backend) -> TestApp {
    let mapping = Mapping {
        payment_no: "/order/reference".into(),
        txn_id: "/order/charge_id".into(),
        status: "/order/state".into(),
        amount: "/order/total".into(),
        amount_format: "major".into(),
        currency: "/order/currency".into(),
        refund_no: "/order/refund_no".into(),
        payment_txn_id: "/order/payment_charge_id".into(),
        ..Mapping::default()
    };
    spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig::StandardWebhooks(StandardConfig {
                name: "acme".into(),
                secret: SECRET.into(),
                previous_secrets: vec![OLD_SECRET.into()],
                mapping,
                ..StandardConfig::default()
            })];
        },
        Options {
            demo: false,
            clock: Arc::new(ManualClock::default()),
            workers: false,
            ..Options::default()
        },
    )
    .await
}

async fn payment(app: &TestApp, order: &str) -> String {
    let p = app.register_payment("acme", order, 12345, "USD").await;
    // A webhook-only sender is never called: the create task just closes.
    assert_eq!(
        reckon::workers::run_provider_tasks(&app.engine, app.engine.now())
            .await
            .unwrap(),
        1
    );
    p
}

pub(crate) fn body(payment_no: &str, state: &str) -> String {
    serde_json::json!({
        "type": "order.updated",
        "order": { "reference": payment_no, "charge_id": format!("ch_{payment_no}"), "state": state,
                   "total": "123.45", "currency": "usd" }
    })
    .to_string()
}

/// The specification's scheme, written out independently of the adapter.
pub(crate) fn sign(secret: &str, id: &str, ts: i64, body: &str) -> String {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{ts}.{body}").as_bytes());
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    )
}

/// `new Webhook(secret).sign(id, date, payload)` from the official package.
fn official_signature(secret: &str, id: &str, ts: i64, payload: &str) -> String {
    let modules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("end2end/node_modules");
    assert!(
        modules.join("standardwebhooks").is_dir(),
        "the official standardwebhooks package is missing: run `npm ci` in end2end/ (the test command does)"
    );
    let out = std::process::Command::new("node")
        .arg("-e")
        .arg("const { Webhook } = require('standardwebhooks'); process.stdout.write(new Webhook(process.env.SECRET).sign(process.env.ID, new Date(Number(process.env.TS) * 1000), process.env.PAYLOAD));")
        .env("NODE_PATH", modules)
        .env("SECRET", secret)
        .env("ID", id)
        .env("TS", ts.to_string())
        .env("PAYLOAD", payload)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub(crate) async fn post(app: &TestApp, id: &str, ts: i64, body: &str, signature: &str) -> u16 {
    app.client
        .post(format!("{}/webhooks/acme", app.base))
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", signature)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn a_message_signed_by_the_official_library_is_accepted(b: Backend) {
    let app = spawn(b).await;
    let p = payment(&app, "SW-1").await;
    let ts = app.engine.now() / 1_000_000;
    let payload = body(&p, "paid");
    let sig = official_signature(SECRET, "msg_1", ts, &payload);
    assert_eq!(
        sig,
        sign(SECRET, "msg_1", ts, &payload),
        "both signers agree"
    );
    let changed = payload.replace("123.45", "123.46");
    assert_eq!(
        post(&app, "msg_1", ts, &changed, &sig).await,
        401,
        "one byte changed"
    );
    assert_eq!(post(&app, "msg_1", ts, &payload, &sig).await, 204);
    assert_eq!(app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
}

async fn mapped_messages_move_payments_once_and_bad_ones_are_refused(b: Backend) {
    let app = spawn(b).await;
    let p = payment(&app, "SW-2").await;
    let ts = app.engine.now() / 1_000_000;
    let paid = body(&p, "paid");
    assert_eq!(
        post(
            &app,
            "msg_2",
            ts - 301,
            &paid,
            &sign(SECRET, "msg_2", ts - 301, &paid)
        )
        .await,
        401
    );
    assert_eq!(
        post(
            &app,
            "msg_2",
            ts + 301,
            &paid,
            &sign(SECRET, "msg_2", ts + 301, &paid)
        )
        .await,
        401
    );
    assert_eq!(post(&app, "msg_2", ts, &paid, "v1,not-base64!").await, 401);
    assert_eq!(app.payment_state(&p).await, ("CREATED".to_string(), 0));
    // A status the mapping does not know: acknowledged, no effect.
    let odd = body(&p, "on_hold");
    assert_eq!(
        post(&app, "msg_3", ts, &odd, &sign(SECRET, "msg_3", ts, &odd)).await,
        204
    );
    assert_eq!(app.payment_state(&p).await, ("CREATED".to_string(), 0));
    // Signed with the previous secret (rotation), then repeated.
    assert_eq!(
        post(
            &app,
            "msg_4",
            ts,
            &paid,
            &sign(OLD_SECRET, "msg_4", ts, &paid)
        )
        .await,
        204
    );
    assert_eq!(
        post(&app, "msg_4", ts, &paid, &sign(SECRET, "msg_4", ts, &paid)).await,
        204
    );
    assert_eq!(app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));
    let txn: Option<String> = crate::reads::payment_txn(&app.accounts.db.pool, &p).await;
    assert_eq!(txn, Some(format!("ch_{p}")));
}

async fn a_refund_registered_with_reckon_is_settled_by_the_senders_event(b: Backend) {
    let app = spawn(b).await;
    let pool = &app.accounts.db.pool;
    let engine = app.engine.clone();
    let p = payment(&app, "SW-R").await;
    let ts = engine.now() / 1_000_000;
    let paid = body(&p, "paid");
    assert_eq!(
        post(&app, "msg_p", ts, &paid, &sign(SECRET, "msg_p", ts, &paid)).await,
        204
    );
    // Reckon cannot call this sender: the refund is registered, pending,
    // and the merchant refunds in the sender's own system.
    let req = reckon::engine::CreateRefund {
        amount_minor: 2345,
        currency: Some("USD".into()),
        reason: "partial return".into(),
    };
    let refund = engine
        .request_refund("test", "sw-r1", &p, &req)
        .await
        .expect("the refund is requested");
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    let status_of = || async { crate::reads::refund_status(pool, &refund_no).await };
    assert_eq!(status_of().await, "PENDING");
    let event = |state: &str, total: &str| {
        serde_json::json!({
            "type": "refund.updated",
            "order": { "reference": p, "refund_no": refund_no, "charge_id": "rf_1",
                       "payment_charge_id": format!("ch_{p}"), "state": state,
                       "total": total, "currency": "usd" }
        })
        .to_string()
    };
    // Another amount than registered: a discrepancy, nothing moves.
    let wrong = event("succeeded", "23.46");
    assert_eq!(
        post(
            &app,
            "msg_r1",
            ts,
            &wrong,
            &sign(SECRET, "msg_r1", ts, &wrong)
        )
        .await,
        204
    );
    assert_eq!(status_of().await, "PENDING");
    let done = event("succeeded", "23.45");
    for _ in 0..3 {
        assert_eq!(
            post(
                &app,
                "msg_r2",
                ts,
                &done,
                &sign(SECRET, "msg_r2", ts, &done)
            )
            .await,
            204
        );
    }
    assert_eq!(status_of().await, "SUCCEEDED");
    let figures: (String, i64, i64) = crate::reads::payment_refund_state(pool, &p).await;
    assert_eq!(figures, ("SUCCEEDED".to_string(), 2345, 0));
    let classes: Vec<String> = crate::reads::classes_of(pool, &p).await;
    assert_eq!(classes, ["REFUND_MISMATCH"]);
}

both_databases!(
    a_refund_registered_with_reckon_is_settled_by_the_senders_event,
    a_message_signed_by_the_official_library_is_accepted,
    mapped_messages_move_payments_once_and_bad_ones_are_refused,
);
