//! Refused webhooks, each on SQLite and PostgreSQL over real
//! HTTP: every diagnosis from its real cause — a Stripe event signed ten
//! minutes off, one signed only with a retired secret, a body changed after
//! a verified delivery of the same event and the same body with a signature
//! not its own, a WeChat Pay notification naming an unknown platform serial
//! — listed by the API with the source address and masked headers; the
//! spike alert raised once per spell by 21 failures in 5 minutes and not by
//! 20; a scheduled pull failing for real alerted once per provider and day,
//! and not for a bill not ready yet.

use crate::both_databases;
use crate::engine_helpers::{serve, spawn_engine_app_with};
use crate::helpers::Backend;
use crate::stripe::{SECRET, sign, spawn_stripe_app_with};
use crate::wechatpay::{APIV3_KEY, SERIAL};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use reckon::config::ProviderConfig;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};

const RETIRED: &str = "whsec_retired_00112233445566778899";

/// A PaymentIntent event as Stripe sends one.
fn stripe_event(id: &str, payment_no: &str, amount: i64) -> String {
    serde_json::json!({
        "id": id, "object": "event", "type": "payment_intent.succeeded",
        "data": { "object": {
            "id": format!("pi_{payment_no}"), "object": "payment_intent", "amount": amount,
            "currency": "eur", "status": "succeeded", "metadata": { "payment_no": payment_no }
        }}
    })
    .to_string()
}

/// `GET /api/v1/refused?{query}` with an API token.
async fn api(app: &crate::helpers::TestApp, token: &str, path: &str) -> serde_json::Value {
    let res = app
        .client
        .get(format!("{}/api/v1/{path}", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200, "{path}");
    res.json().await.unwrap()
}

async fn stripe_refusals_are_diagnosed_by_their_cause(b: Backend) {
    let s = spawn_stripe_app_with(b, |c| {
        if let Some(ProviderConfig::Stripe(st)) = c.providers.first_mut() {
            st.retired_secrets = vec![RETIRED.into()];
        }
    })
    .await;
    let token = s.app.api_token("ops").await;
    let p = s
        .app
        .register_payment("stripe-eu", "RF-1", 500, "EUR")
        .await;
    let body = stripe_event("evt_rf_1", &p, 500);
    let now = s.now();

    // Each a second after the one before, so the list's order is theirs.
    let tick = || s.clock.advance_secs(1);
    // Signed with the right secret, ten minutes ago (a clock off).
    assert_eq!(
        s.post(&body, &sign(SECRET, now - 600, &body))
            .await
            .status(),
        400
    );
    tick();
    // Signed with the retired secret only: the sender never rolled.
    assert_eq!(
        s.post(&body, &sign(RETIRED, now, &body)).await.status(),
        400
    );
    tick();
    // A retired secret never accepts: the payment has not moved.
    assert_eq!(s.app.payment_state(&p).await.0, "CREATED");
    // The event arrives verified; then its body changed on the way, with
    // the signature made for the original.
    let good = sign(SECRET, now, &body);
    assert_eq!(s.post(&body, &good).await.status(), 200);
    tick();
    let tampered = body.replace("500", "5000");
    assert_eq!(s.post(&tampered, &good).await.status(), 400);
    tick();
    // The very same bytes again, with a signature not made for them.
    assert_eq!(
        s.post(&body, &sign("whsec_someone_else", now, &body))
            .await
            .status(),
        400
    );
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));

    let page = api(&s.app, &token, "refused").await;
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 4, "{page:#}");
    let diagnoses: Vec<&str> = items
        .iter()
        .map(|i| i["diagnosis"].as_str().unwrap_or("-"))
        .collect();
    // Newest first.
    assert_eq!(
        diagnoses,
        [
            "body_seen_verified",
            "body_changed",
            "retired_secret",
            "timestamp_skew"
        ]
    );
    let detail = |n: usize| items[n]["diagnosis_detail"].as_str().unwrap().to_owned();
    assert!(detail(3).contains("600 s behind"), "{}", detail(3));
    assert!(detail(2).contains("retired_secrets[0]"), "{}", detail(2));
    assert!(detail(1).contains("evt_rf_1"), "{}", detail(1));
    for i in items {
        assert_eq!(i["source_addr"], "127.0.0.1");
        assert_eq!(i["provider"], "stripe-eu");
        assert_eq!(i["kind"], "unverified");
    }
    // Filtered by diagnosis; a provider with none.
    let skew = api(&s.app, &token, "refused?diagnosis=timestamp_skew").await;
    assert_eq!(skew["items"].as_array().unwrap().len(), 1);
    let none = api(&s.app, &token, "refused?provider=nobody").await;
    assert!(none["items"].as_array().unwrap().is_empty());
    // Counted per hour and reason.
    let hourly = page["hourly"].as_array().unwrap();
    let total: i64 = hourly.iter().map(|h| h["count"].as_i64().unwrap()).sum();
    assert_eq!(total, 4, "{hourly:?}");
    // One, with its signature header shortened.
    let one = api(
        &s.app,
        &token,
        &format!("refused/{}", items[2]["id"].as_str().unwrap()),
    )
    .await;
    let headers = one["headers"].as_array().unwrap();
    let sig = headers
        .iter()
        .find(|h| h[0] == "stripe-signature")
        .map(|h| h[1].as_str().unwrap().to_owned())
        .unwrap();
    assert!(sig.contains("****") && !sig.contains("v1="), "{sig}");
    assert_eq!(one["diagnosis"], "retired_secret");
    // The dashboard's count of the last 24 hours.
    let counted: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM refused_callbacks WHERE diagnosis IS NOT NULL")
            .fetch_one(&s.app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(counted, 4);
    // An unknown id is a 404 in the API's one error shape.
    let missing = s
        .app
        .client
        .get(format!("{}/api/v1/refused/nope", s.app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    // A NUL names nothing, on PostgreSQL too: 404 and 400, never a 500.
    for (path, status) in [
        ("refused/X%00Y", 404),
        ("refused?provider=a%00b", 400),
        ("refused?from=yesterday", 400),
    ] {
        let res = s
            .app
            .client
            .get(format!("{}/api/v1/{path}", s.app.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), status, "{path}");
    }
}

async fn a_wechat_notification_naming_an_unknown_serial_is_diagnosed(b: Backend) {
    let w = crate::wechatpay::spawn(b).await;
    let p = w.app.register_payment("wechat", "RF-WX", 199, "CNY").await;
    let body = w.envelope("EV-RF", &p, "SUCCESS", 199, APIV3_KEY);
    let now = w.now();
    let unknown = "PUB_KEY_ID_0114232134912410000000000000";
    let (status, _) = w.post(&body, now, "nonce-rf", unknown, &w.key).await;
    assert_ne!(status, 204);
    let (diagnosis, detail, reason): (String, String, String) = sqlx::query_as(
        "SELECT diagnosis, diagnosis_detail, reason FROM refused_callbacks WHERE provider = 'wechat'",
    )
    .fetch_one(&w.app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(diagnosis, "unknown_serial", "{reason}");
    assert!(
        detail.contains(unknown) && detail.contains(SERIAL),
        "{detail}"
    );
    // Signed ten minutes ahead by the right key: skew, not the serial.
    let (status, _) = w.post(&body, now + 600, "nonce-rf-2", SERIAL, &w.key).await;
    assert_ne!(status, 204);
    let skew: String = sqlx::query_scalar(
        "SELECT diagnosis_detail FROM refused_callbacks WHERE diagnosis = 'timestamp_skew'",
    )
    .fetch_one(&w.app.accounts.db.pool)
    .await
    .unwrap();
    assert!(skew.contains("600 s ahead of"), "{skew}");
    assert_eq!(w.app.payment_state(&p).await.0, "CREATED");
}

/// A Standard Webhooks sender: ten minutes off, then a retired secret.
async fn standard_webhooks_refusals_are_diagnosed(b: Backend) {
    use reckon::providers::standard::StandardConfig;
    let retired = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let clock = Arc::new(reckon::context::ManualClock::default());
    let app = crate::helpers::spawn_app_with(
        b,
        |c| {
            c.providers = vec![ProviderConfig::StandardWebhooks(StandardConfig {
                name: "acme".into(),
                secret: crate::standard::SECRET.into(),
                retired_secrets: vec![retired.into()],
                ..StandardConfig::default()
            })];
        },
        reckon::startup::Options {
            demo: false,
            clock: clock.clone(),
            workers: false,
            ..reckon::startup::Options::default()
        },
    )
    .await;
    let now = app.engine.now() / 1_000_000;
    let body = crate::standard::body("ACME-RF", "paid");
    let secret = crate::standard::SECRET;
    let sign = crate::standard::sign;
    let post = crate::standard::post;
    assert_eq!(
        post(
            &app,
            "msg_1",
            now + 900,
            &body,
            &sign(secret, "msg_1", now + 900, &body)
        )
        .await,
        401
    );
    clock.advance_secs(1);
    assert_eq!(
        post(
            &app,
            "msg_2",
            now,
            &body,
            &sign(retired, "msg_2", now, &body)
        )
        .await,
        401
    );
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT diagnosis, diagnosis_detail FROM refused_callbacks ORDER BY received_at, id",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "timestamp_skew");
    assert!(rows[0].1.contains("900 s ahead of"), "{}", rows[0].1);
    assert_eq!(rows[1].0, "retired_secret");
}

async fn twenty_one_bad_signatures_in_five_minutes_raise_one_spike_alert(b: Backend) {
    let s = spawn_stripe_app_with(b, |_| {}).await;
    let body = stripe_event("evt_spike", "SPIKE-1", 100);
    let bad = |s: &crate::stripe::StripeApp| sign("whsec_rotated_at_stripe", s.now(), &body);
    for _ in 0..20 {
        assert_eq!(s.post(&body, &bad(&s)).await.status(), 400);
        s.clock.advance_secs(10);
    }
    assert_eq!(
        s.app.alert_count("webhooks_refused_spike").await,
        0,
        "20 in 200 s: not more than 20"
    );
    assert_eq!(s.post(&body, &bad(&s)).await.status(), 400);
    assert_eq!(s.app.alert_count("webhooks_refused_spike").await, 1);
    // The spell goes on: no second alert.
    for _ in 0..10 {
        assert_eq!(s.post(&body, &bad(&s)).await.status(), 400);
        s.clock.advance_secs(5);
    }
    assert_eq!(s.app.alert_count("webhooks_refused_spike").await, 1);
    let message: String =
        sqlx::query_scalar("SELECT message FROM alerts WHERE kind = 'webhooks_refused_spike'")
            .fetch_one(&s.app.accounts.db.pool)
            .await
            .unwrap();
    assert!(
        message.contains("rotated on one side only")
            && message.contains("/refused?provider=stripe-eu"),
        "{message}"
    );
    // Quiet for longer than the window, then another burst: a new spell.
    s.clock.advance_secs(6 * 60);
    for _ in 0..21 {
        s.post(&body, &bad(&s)).await;
    }
    assert_eq!(s.app.alert_count("webhooks_refused_spike").await, 2);
}

/// Past the rate bound (600 rows a minute) refusals are no longer kept,
/// but every failure is still counted towards the spike.
async fn failures_past_the_rate_bound_are_still_counted(b: Backend) {
    let s = spawn_stripe_app_with(b, |_| {}).await;
    // Early in a minute: the bound counts per minute of the engine's clock.
    let minute = s.app.engine.now().div_euclid(60_000_000) * 60_000_000;
    s.clock.set(minute + 10_000_000);
    let body = stripe_event("evt_flood", "FLOOD-1", 100);
    let bad = sign("whsec_not_ours", s.now(), &body);
    for _ in 0..610 {
        assert_eq!(s.post(&body, &bad).await.status(), 400);
    }
    // Counted in memory while the spell is alerted; written within a second.
    s.clock.advance_secs(1);
    assert_eq!(s.post(&body, &bad).await.status(), 400);
    let pool = &s.app.accounts.db.pool;
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM refused_callbacks")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(kept, 600);
    let counted: i64 =
        sqlx::query_scalar("SELECT CAST(SUM(failures) AS BIGINT) FROM refused_tally")
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(counted, 611);
    assert_eq!(s.app.alert_count("webhooks_refused_spike").await, 1);
}

/// In front of the sandbox's statements: answers "not ready" or an error.
async fn failing_statement(
    State(status): State<Arc<AtomicU16>>,
    Path(date): Path<String>,
) -> Response {
    let code = status.load(Ordering::SeqCst);
    let message = if code == 409 {
        format!("not ready: the statement of {date} is not cut yet")
    } else {
        "internal error".to_owned()
    };
    (
        StatusCode::from_u16(code).unwrap(),
        axum::Json(serde_json::json!({ "error": message })),
    )
        .into_response()
}

async fn a_failing_scheduled_pull_is_alerted_once_per_provider_and_day(b: Backend) {
    let status = Arc::new(AtomicU16::new(409));
    let url = serve(
        axum::Router::new()
            .route(
                "/v1/statements/{date}",
                axum::routing::get(failing_statement),
            )
            .with_state(status.clone()),
    )
    .await;
    let app = spawn_engine_app_with(b, move |c| {
        if let Some(ProviderConfig::Sandbox(s)) = c.providers.first_mut() {
            s.base_url = url;
        }
        c.pull_catch_up_days = 1;
    })
    .await;
    let engine = app.app_engine();
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let at = |hour: i8| {
        today
            .at(hour, 0, 0, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_microsecond()
    };
    let failed = || async {
        sqlx::query_as::<_, (String, String)>(
            "SELECT dedupe_key, message FROM alerts WHERE kind = 'statement_pull_failed'",
        )
        .fetch_all(app.pool())
        .await
        .unwrap()
    };
    // Not ready yet: asked again later, no alert.
    app.clock.set(at(3));
    reckon::recon::scheduled_pulls(&engine, at(3))
        .await
        .unwrap();
    assert!(failed().await.is_empty());
    // The provider errs: one alert for the provider and day, however many
    // tries fail after it.
    status.store(500, Ordering::SeqCst);
    for hour in [4, 5, 7] {
        app.clock.set(at(hour));
        reckon::recon::scheduled_pulls(&engine, at(hour))
            .await
            .unwrap();
    }
    let alerts = failed().await;
    let yesterday = today.yesterday().unwrap().to_string();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(
        alerts[0].0,
        format!("statement_pull_failed:sandbox:{yesterday}")
    );
    assert!(alerts[0].1.contains("500"), "{}", alerts[0].1);
}

/// A refused webhook over 4 KiB keeps only its start, cut in the middle
/// of the JSON: what it shows is masked by key and by value all the same,
/// up to a card number cut in two at the end.
async fn a_refused_body_cut_short_shows_no_personal_data(b: Backend) {
    let s = spawn_stripe_app_with(b, |_| {}).await;
    let token = s.app.api_token("ops").await;
    let p = s
        .app
        .register_payment("stripe-eu", "RF-CUT", 500, "EUR")
        .await;
    let template = serde_json::json!({
        "id": "evt_cut", "object": "event", "type": "payment_intent.succeeded",
        "data": { "object": {
            "id": format!("pi_{p}"), "object": "payment_intent", "amount": 500, "currency": "eur",
            "receipt_email": "wang.li@example.com",
            "shipping": { "name": "Wang Li", "phone": "+86 138 0013 8000" },
            "description": "for lee@example.org, tel 13900139000, from 203.0.113.9, paid by 5555 5555 5555 4444",
            "metadata": { "payment_no": p, "memo": "MEMO", "coupon": "ref=SPRING" },
        }}
    })
    .to_string();
    // A memo long enough that a card number starts 6 bytes before the cut.
    let at = template.find("MEMO").unwrap();
    let memo = format!("{} 4111111111111111 and more", "x".repeat(4090 - at - 1));
    let body = template.replace("MEMO", &memo);
    assert!(body.len() > 4096 && serde_json::from_str::<serde_json::Value>(&body).is_ok());
    assert_eq!(&body[4090..4096], "411111");
    let now = s.now();
    assert_eq!(
        s.post(&body, &sign("whsec_someone_else", now, &body))
            .await
            .status(),
        400
    );
    let page = api(&s.app, &token, "refused").await;
    let id = page["items"][0]["id"].as_str().unwrap().to_owned();
    let one = api(&s.app, &token, &format!("refused/{id}")).await;
    let shown = one["body"].as_str().unwrap();
    for leaked in [
        "wang.li@example.com",
        "Wang Li",
        "138 0013 8000",
        "lee@example.org",
        "13900139000",
        "203.0.113.9",
        "5555 5555 5555 4444",
        "411111",
    ] {
        assert!(!shown.contains(leaked), "{leaked} shown:\n{shown}");
    }
    // What a person needs to triage is still there (the keys come in
    // order, so the event's id and type are past the cut).
    for kept in [&p, "\"amount\":500", "\"currency\":\"eur\"", "****4444"] {
        assert!(shown.contains(kept), "{kept} lost:\n{shown}");
    }
}

both_databases!(
    a_refused_body_cut_short_shows_no_personal_data,
    stripe_refusals_are_diagnosed_by_their_cause,
    a_wechat_notification_naming_an_unknown_serial_is_diagnosed,
    standard_webhooks_refusals_are_diagnosed,
    twenty_one_bad_signatures_in_five_minutes_raise_one_spike_alert,
    failures_past_the_rate_bound_are_still_counted,
    a_failing_scheduled_pull_is_alerted_once_per_provider_and_day,
);
