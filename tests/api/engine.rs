//! The seed's drills against a real server, each on SQLite and PostgreSQL:
//! signed sandbox callbacks over HTTP, and the engine's workers ticked with
//! a hand-moved clock.

use crate::both_databases;
use crate::engine_helpers::spawn_engine_app;
use crate::helpers::Backend;
use reckon::domain::PaymentStatus;
use reckon::engine::{Applied, Outcome, Source};
use serde_json::json;

async fn ten_identical_success_callbacks_make_one_effect(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.payment("ORD-1", 19900, "CNY").await;
    let body = app.notice("evt_ten", &p, "SUCCEEDED", "199.00", "CNY", "TXN-1");
    for _ in 0..10 {
        let res = app.post_signed("evt_ten", &body).await;
        assert_eq!(res.status(), 200);
    }
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(app.count("payment_effects", &p).await, 1);
    assert_eq!(app.count("outbox_events", &p).await, 1);
    assert_eq!(app.count("payment_callbacks", &p).await, 1);
    let metrics = app.app.get("/metrics").await.text().await.unwrap();
    assert!(metrics.contains("callback_received_total 10"), "{metrics}");
    assert!(metrics.contains("callback_duplicate_total 9"), "{metrics}");
}

async fn success_then_failure_stays_succeeded_with_an_out_of_order_alert(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.payment("ORD-2", 500, "USD").await;
    let ok = app.notice("evt_ok", &p, "SUCCEEDED", "5.00", "USD", "TXN-2");
    assert_eq!(app.post_signed("evt_ok", &ok).await.status(), 200);
    let late = app.notice("evt_late", &p, "FAILED", "5.00", "USD", "TXN-2");
    assert_eq!(app.post_signed("evt_late", &late).await.status(), 200);
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(app.count("payment_effects", &p).await, 1);
    let kinds = app.alert_kinds(&p).await;
    assert_eq!(kinds, ["out_of_order"]);
}

async fn a_callback_amount_unlike_the_local_one_confirms_nothing(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.payment("ORD-3", 19900, "CNY").await;
    let lie = app.notice("evt_lie", &p, "SUCCEEDED", "198.00", "CNY", "TXN-3");
    assert_eq!(app.post_signed("evt_lie", &lie).await.status(), 200);
    assert_eq!(app.status(&p).await, "CREATED");
    assert_eq!(app.count("payment_effects", &p).await, 0);
    let (class, severity): (String, String) =
        sqlx::query_as("SELECT class, severity FROM discrepancies WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(
        (class.as_str(), severity.as_str()),
        ("AMOUNT_MISMATCH", "HIGH")
    );
    assert_eq!(app.alert_kinds(&p).await, ["conflict"]);
}

async fn the_same_callback_id_with_another_payload_keeps_the_first(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.payment("ORD-4", 1000, "CNY").await;
    let first = app.notice("evt_same", &p, "SUCCEEDED", "10.00", "CNY", "TXN-4");
    let second = app.notice("evt_same", &p, "FAILED", "10.00", "CNY", "TXN-4");
    assert_eq!(app.post_signed("evt_same", &first).await.status(), 200);
    assert_eq!(app.post_signed("evt_same", &second).await.status(), 200);
    let payload: Vec<u8> =
        sqlx::query_scalar("SELECT payload FROM payment_callbacks WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(payload, first.as_bytes());
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(app.alert_kinds(&p).await, ["callback_conflict"]);
}

async fn a_callback_and_a_status_query_racing_make_one_effect(b: Backend) {
    let app = spawn_engine_app(b).await;
    for i in 0..100 {
        let p = app.payment(&format!("RACE-{i}"), 1234, "CNY").await;
        let id = format!("evt_race_{i}");
        let body = app.notice(&id, &p, "SUCCEEDED", "12.34", "CNY", &format!("TXN-R{i}"));
        let query = Outcome {
            payment_no: reckon::domain::PaymentNo::parse(&p).unwrap(),
            provider: reckon::domain::ProviderName::parse("sandbox").unwrap(),
            provider_txn_id: Some(
                reckon::domain::ProviderTxnId::parse(&format!("TXN-R{i}")).unwrap(),
            ),
            target: PaymentStatus::Succeeded,
            money: reckon::domain::Money::parse_major(
                "12.34",
                reckon::domain::Currency::parse("CNY").unwrap(),
            )
            .unwrap(),
            source: Source::Query,
            evidence: format!("race-{i}"),
            trace_id: format!("race-{i}"),
            paid_at: None,
        };
        let engine = app.app_engine();
        let (res, applied) = tokio::join!(app.post_signed(&id, &body), engine.apply(&query));
        assert_eq!(res.status(), 200);
        let applied = applied.unwrap();
        assert!(
            matches!(applied, Applied::Moved { .. } | Applied::Duplicate { .. }),
            "{applied:?}"
        );
        assert_eq!(app.count("payment_effects", &p).await, 1, "iteration {i}");
        assert_eq!(app.count("outbox_events", &p).await, 1, "iteration {i}");
    }
}

async fn bad_callbacks_get_a_clear_4xx_and_change_nothing(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.payment("ORD-5", 1000, "CNY").await;
    let body = app.notice("evt_bad", &p, "SUCCEEDED", "10.00", "CNY", "TXN-5");
    // The server's clock is the test's hand-moved one.
    let now = app.app_engine().now() / 1_000_000;

    let forged = app
        .post_raw(
            "sandbox",
            "evt_bad",
            now,
            &body,
            Some("v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="),
        )
        .await;
    assert_eq!(forged.status(), 401);
    let stale = app
        .post_raw("sandbox", "evt_bad", now - 301, &body, None)
        .await;
    assert_eq!(stale.status(), 401);
    let future = app
        .post_raw("sandbox", "evt_bad", now + 301, &body, None)
        .await;
    assert_eq!(future.status(), 401);
    let big = "x".repeat(70 * 1024);
    let oversize = app.post_raw("sandbox", "evt_big", now, &big, None).await;
    assert_eq!(oversize.status(), 413);
    let invalid = app
        .post_raw("sandbox", "evt_json", now, "{not json", None)
        .await;
    assert_eq!(invalid.status(), 400);
    let unknown_provider = app.post_raw("paypal", "evt_bad", now, &body, None).await;
    assert_eq!(unknown_provider.status(), 404);
    let wrong_type = app
        .app
        .client
        .post(format!("{}/webhooks/sandbox", app.app.base))
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), 415);
    let nobody = app.notice(
        "evt_nobody",
        "PAY-NOBODY",
        "SUCCEEDED",
        "10.00",
        "CNY",
        "TXN-X",
    );
    assert_eq!(app.post_signed("evt_nobody", &nobody).await.status(), 404);

    assert_eq!(app.status(&p).await, "CREATED");
    assert_eq!(app.count("payment_effects", &p).await, 0);
    let stored: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM payment_callbacks WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(stored, 0, "nothing unverified is stored");
}

async fn a_failing_callback_is_retried_on_schedule_then_dead(b: Backend) {
    let app = spawn_engine_app(b).await;
    // A payment the provider names but Reckon does not have: every try fails.
    let body = app.notice(
        "evt_orphan",
        "PAY-ORPHAN",
        "SUCCEEDED",
        "1.00",
        "CNY",
        "TXN-O",
    );
    assert_eq!(app.post_signed("evt_orphan", &body).await.status(), 404);
    let engine = app.app_engine();
    let mut minutes_waited = Vec::new();
    for _ in 0..9 {
        let (status, retries, next): (String, i64, Option<i64>) = sqlx::query_as(
            "SELECT processing_status, retry_count, next_retry_at FROM payment_callbacks WHERE callback_id = 'evt_orphan'",
        )
        .fetch_one(app.pool())
        .await
        .unwrap();
        assert_eq!(status, "FAILED");
        let wait = (next.unwrap() - engine.now()) / 60_000_000;
        minutes_waited.push(wait);
        // Not due yet: nothing happens a minute early.
        app.clock.advance_secs(wait * 60 - 60);
        assert_eq!(engine.retry_callbacks(engine.now()).await.unwrap(), 0);
        app.clock.advance_secs(60);
        assert_eq!(engine.retry_callbacks(engine.now()).await.unwrap(), 1);
        let _ = retries;
    }
    assert_eq!(minutes_waited, [2, 4, 8, 16, 32, 64, 64, 64, 64]);
    let (status, retries): (String, i64) = sqlx::query_as(
        "SELECT processing_status, retry_count FROM payment_callbacks WHERE callback_id = 'evt_orphan'",
    )
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((status.as_str(), retries), ("DEAD", 10));
    let dead: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM alerts WHERE kind = 'callback_dead'")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(dead, 1);
    app.clock.advance_secs(24 * 3600);
    assert_eq!(
        engine.retry_callbacks(engine.now()).await.unwrap(),
        0,
        "DEAD stays dead"
    );
}

async fn the_outbox_retries_a_failing_sink_and_delivers_with_a_stable_id(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.payment("ORD-6", 700, "EUR").await;
    let body = app.notice("evt_out", &p, "SUCCEEDED", "7.00", "EUR", "TXN-6");
    assert_eq!(app.post_signed("evt_out", &body).await.status(), 200);
    let engine = app.app_engine();
    let http = reqwest::Client::new();
    app.sink.fail_next(2);
    for _ in 0..2 {
        assert_eq!(
            reckon::outbox::relay_outbox(&engine, &http, engine.now())
                .await
                .unwrap(),
            1
        );
        app.clock.advance_secs(3600);
    }
    assert_eq!(
        reckon::outbox::relay_outbox(&engine, &http, engine.now())
            .await
            .unwrap(),
        1
    );
    app.clock.advance_secs(3600);
    assert_eq!(
        reckon::outbox::relay_outbox(&engine, &http, engine.now())
            .await
            .unwrap(),
        0,
        "delivered once"
    );
    let seen = app.sink.seen();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|(id, _)| id == &seen[0].0),
        "the same webhook-id every time"
    );
    let event: serde_json::Value = serde_json::from_str(&seen[2].1).unwrap();
    assert_eq!(event["type"], "payment.succeeded");
    assert_eq!(event["payment_no"], json!(p));
    let status: String = sqlx::query_scalar("SELECT status FROM outbox_deliveries")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(status, "DELIVERED");
}

async fn the_merchant_api_creates_idempotently_and_the_provider_settles_it(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let body = json!({ "order_no": "ORD-API-1", "provider": "sandbox", "amount_minor": 2500, "currency": "CNY" });
    let first = app.create(&token, "key-1", &body).await;
    assert_eq!(first.0, 201);
    let again = app.create(&token, "key-1", &body).await;
    assert_eq!(again, first, "same key, same body: the stored answer");
    let other = json!({ "order_no": "ORD-API-1", "provider": "sandbox", "amount_minor": 2600, "currency": "CNY" });
    assert_eq!(app.create(&token, "key-1", &other).await.0, 422);
    assert_eq!(
        app.create(&token, "key-2", &body).await.0,
        409,
        "a live attempt exists"
    );
    let missing = app
        .app
        .client
        .post(format!("{}/api/v1/payments", app.app.base))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 400);
    let no_token = app.create("rk_nope", "key-3", &body).await;
    assert_eq!(no_token.0, 401);

    let p = first.1["payment_no"].as_str().unwrap().to_owned();
    assert_eq!(first.1["status"], "CREATED");
    // The dispatcher calls the sandbox outside the transaction…
    let engine = app.app_engine();
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(app.status(&p).await, "PENDING");
    // …the sandbox settles and notifies; the payment succeeds once.
    app.sandbox.settle(&p, true);
    app.wait_for_status(&p, "SUCCEEDED").await;
    let detail = app.show(&token, &p).await;
    assert_eq!(detail["payment"]["status"], "SUCCEEDED");
    assert_eq!(detail["effects"].as_array().unwrap().len(), 1);
    let path: Vec<_> = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            format!(
                "{}>{}",
                h["from_status"].as_str().unwrap(),
                h["to_status"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(path, ["CREATED>PENDING", "PENDING>SUCCEEDED"]);
}

async fn a_provider_timeout_leaves_the_payment_unknown_and_a_query_settles_it(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let body = json!({ "order_no": "ORD-T", "provider": "sandbox", "amount_minor": 990, "currency": "CNY" });
    let (status, created) = app.create(&token, "key-t", &body).await;
    assert_eq!(status, 201);
    let p = created["payment_no"].as_str().unwrap().to_owned();
    let engine = app.app_engine();
    // The provider is unreachable when the dispatcher calls.
    app.sandbox_down(true);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(app.status(&p).await, "CREATED", "unknown is not failed");
    // It had in fact taken the payment; a status query finds the result.
    app.sandbox_down(false);
    app.sandbox_knows(&p, "SUCCEEDED", "9.90", "CNY");
    app.clock.advance_secs(61);
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(app.count("payment_effects", &p).await, 1);
}

async fn queries_that_never_get_a_result_end_awaiting_reconciliation(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let body = json!({ "order_no": "ORD-Q", "provider": "sandbox", "amount_minor": 100, "currency": "USD" });
    let (_, created) = app.create(&token, "key-q", &body).await;
    let p = created["payment_no"].as_str().unwrap().to_owned();
    let engine = app.app_engine();
    app.sandbox_down(true);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    for delay in [60, 5 * 60, 30 * 60, 2 * 3600, 12 * 3600] {
        app.clock.advance_secs(delay + 1);
        assert_eq!(
            reckon::workers::run_provider_tasks(&engine, engine.now())
                .await
                .unwrap(),
            1
        );
    }
    app.clock.advance_secs(48 * 3600);
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        0
    );
    let awaiting: i64 =
        sqlx::query_scalar("SELECT awaiting_recon FROM payments WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(awaiting, 1);
    assert_eq!(app.status(&p).await, "CREATED");
    assert_eq!(app.alert_kinds(&p).await, ["queries_exhausted"]);
}

async fn closing_a_pending_payment_goes_through_the_provider(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let body = json!({ "order_no": "ORD-C", "provider": "sandbox", "amount_minor": 300, "currency": "CNY" });
    let (_, created) = app.create(&token, "key-c", &body).await;
    let p = created["payment_no"].as_str().unwrap().to_owned();
    let engine = app.app_engine();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let res = app
        .app
        .client
        .post(format!("{}/api/v1/payments/{p}/close", app.app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(app.status(&p).await, "CLOSED");
    // A success arriving later cannot reopen it.
    app.sandbox.settle(&p, true);
    let again = app
        .app
        .client
        .post(format!("{}/api/v1/payments/{p}/close", app.app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    assert_eq!(app.status(&p).await, "CLOSED");
}

/// Many callbacks at once land in shared group commits: fresh successes,
/// repeats, a second notification id for a paid payment, lying amounts and
/// unknown payments, all mixed — each gets its own correct answer.
async fn a_burst_of_mixed_callbacks_is_grouped_and_each_is_right(b: Backend) {
    let app = spawn_engine_app(b).await;
    let mut fresh = Vec::new();
    for i in 0..120 {
        fresh.push(app.payment(&format!("BURST-{i}"), 1000, "CNY").await);
    }
    let mut sends = Vec::new();
    for (i, p) in fresh.iter().enumerate() {
        let (amount, id) = if i % 12 == 0 {
            ("9.99", format!("evt_b{i}"))
        } else {
            ("10.00", format!("evt_b{i}"))
        };
        sends.push((
            id.clone(),
            app.notice(&id, p, "SUCCEEDED", amount, "CNY", &format!("TB{i}")),
            200,
        ));
        if i % 10 == 1 {
            // The same notification again, and the same result under another id.
            sends.push((
                id.clone(),
                app.notice(&id, p, "SUCCEEDED", amount, "CNY", &format!("TB{i}")),
                200,
            ));
            let other = format!("evt_b{i}_again");
            sends.push((
                other.clone(),
                app.notice(&other, p, "SUCCEEDED", amount, "CNY", &format!("TB{i}")),
                200,
            ));
        }
    }
    for i in 0..10 {
        let id = format!("evt_ghost{i}");
        sends.push((
            id.clone(),
            app.notice(
                &id,
                &format!("PAY-GHOST-{i}"),
                "SUCCEEDED",
                "1.00",
                "CNY",
                "TG",
            ),
            404,
        ));
    }
    let results =
        futures_util::future::join_all(sends.iter().map(|(id, body, _)| app.post_signed(id, body)))
            .await;
    for ((id, _, want), res) in sends.iter().zip(results) {
        assert_eq!(res.status().as_u16(), *want, "{id}");
    }
    let succeeded: i64 = crate::reads::succeeded_payments(app.pool()).await;
    assert_eq!(succeeded, 110, "all but the ten lying amounts");
    let effects: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_effects")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(effects, 110);
    let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox_events")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(events, 110);
    let deliveries: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox_deliveries WHERE status = 'PENDING'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(deliveries, 110, "one delivery per event and sink");
    let mismatches: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies WHERE class = 'AMOUNT_MISMATCH'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(mismatches, 10);
    let stored: Vec<(String, i64)> = sqlx::query_as(
        "SELECT processing_status, COUNT(*) FROM payment_callbacks GROUP BY processing_status ORDER BY processing_status",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        stored,
        [("FAILED".to_string(), 10), ("SUCCESS".to_string(), 132)]
    );
    let history: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_status_history")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(history, 110);
    let metrics = app.app.get("/metrics").await.text().await.unwrap();
    let commits: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("callback_batch_size_count "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        commits < sends.len() as f64,
        "callbacks shared commits ({commits} for {})",
        sends.len()
    );
    // The common case went in multi-row statements, never failing over: on
    // SQLite through the writer's own connection, on PostgreSQL the pool's
    // (the lying amounts and ghosts were taken back and went one by one).
    let written = |outcome: &str| -> f64 {
        let line = format!("callback_batch_writes_total{{outcome=\"{outcome}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(line.as_str()))
            .map_or(0.0, |n| n.parse().unwrap())
    };
    let (direct, pooled) = (written("direct"), written("pool"));
    match b {
        Backend::Sqlite => assert!(direct > 0.0 && pooled == 0.0, "{direct} {pooled}"),
        Backend::Postgres => assert!(direct == 0.0 && pooled > 0.0, "{direct} {pooled}"),
    }
    assert_eq!(written("fell_back"), 0.0, "{metrics}");
    // Only the intake writer's own connection leaves the sync to its
    // syncer: every connection of the pool still commits durably.
    let mut held = Vec::new();
    // On SQLite all the pool has beside the writer's own (8 in all).
    let others = match b {
        Backend::Sqlite => 7,
        Backend::Postgres => 8,
    };
    for _ in 0..others {
        let mut conn = app.pool().acquire().await.unwrap();
        let durable = match b {
            Backend::Sqlite => {
                let level: i64 = sqlx::query_scalar("PRAGMA synchronous")
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap();
                level == 2
            }
            Backend::Postgres => {
                let setting: String = sqlx::query_scalar("SHOW synchronous_commit")
                    .fetch_one(&mut *conn)
                    .await
                    .unwrap();
                setting == "on"
            }
        };
        assert!(durable, "a pool connection commits without syncing");
        held.push(conn);
    }
    drop(held);

    // A second burst: every first notification sent again (stored before,
    // so each batch that takes one finds it already there) mixed with the
    // first notifications of 40 new payments.
    let mut later = Vec::new();
    for i in 0..40 {
        later.push(app.payment(&format!("LATER-{i}"), 1000, "CNY").await);
    }
    let mut again = Vec::new();
    for (i, p) in fresh.iter().enumerate() {
        let amount = if i % 12 == 0 { "9.99" } else { "10.00" };
        let id = format!("evt_b{i}");
        again.push((
            id.clone(),
            app.notice(&id, p, "SUCCEEDED", amount, "CNY", &format!("TB{i}")),
        ));
        if let Some(p) = later.get(i / 3).filter(|_| i % 3 == 0) {
            let id = format!("evt_l{i}");
            again.push((
                id.clone(),
                app.notice(&id, p, "SUCCEEDED", "10.00", "CNY", &format!("TL{i}")),
            ));
        }
    }
    let results =
        futures_util::future::join_all(again.iter().map(|(id, body)| app.post_signed(id, body)))
            .await;
    for ((id, _), res) in again.iter().zip(results) {
        assert_eq!(res.status().as_u16(), 200, "{id}");
    }
    let pool = app.pool().clone();
    let count = |sql: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(count("SELECT COUNT(*) FROM payment_effects").await, 150);
    assert_eq!(
        count("SELECT COUNT(*) FROM payment_status_history").await,
        150
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM payment_callbacks").await,
        182,
        "the 40 new ones stored, no resend stored twice"
    );
    assert_eq!(
        count("SELECT CAST(SUM(duplicates) AS BIGINT) FROM payment_callbacks").await,
        12 + 120,
        "every resend counted on the callback first stored"
    );
    assert_eq!(
        count("SELECT COUNT(*) FROM payments WHERE status = 'SUCCEEDED'").await,
        150,
        "the 110 of the first burst and the 40 new ones"
    );
}

both_databases!(
    a_burst_of_mixed_callbacks_is_grouped_and_each_is_right,
    ten_identical_success_callbacks_make_one_effect,
    success_then_failure_stays_succeeded_with_an_out_of_order_alert,
    a_callback_amount_unlike_the_local_one_confirms_nothing,
    the_same_callback_id_with_another_payload_keeps_the_first,
    a_callback_and_a_status_query_racing_make_one_effect,
    bad_callbacks_get_a_clear_4xx_and_change_nothing,
    a_failing_callback_is_retried_on_schedule_then_dead,
    the_outbox_retries_a_failing_sink_and_delivers_with_a_stable_id,
    the_merchant_api_creates_idempotently_and_the_provider_settles_it,
    a_provider_timeout_leaves_the_payment_unknown_and_a_query_settles_it,
    queries_that_never_get_a_result_end_awaiting_reconciliation,
    closing_a_pending_payment_goes_through_the_provider,
);
