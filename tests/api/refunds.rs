//! Refunds against a real server and the sandbox provider, each on SQLite
//! and PostgreSQL: the seed's drill 6, concurrent partial refunds, refusals,
//! disagreeing and unknown refund notifications, idempotency, failures.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use reckon::sandbox_server::Chaos;
use serde_json::json;

impl EngineApp {
    /// A SUCCEEDED sandbox payment of `major` CNY.
    async fn paid(&self, order: &str, minor: i64, major: &str) -> String {
        let p = self.payment(order, minor, "CNY").await;
        self.sandbox_knows(&p, "SUCCEEDED", major, "CNY");
        let body = self.notice(
            &format!("evt-{order}"),
            &p,
            "SUCCEEDED",
            major,
            "CNY",
            &format!("SBX-{p}"),
        );
        assert_eq!(
            self.post_signed(&format!("evt-{order}"), &body)
                .await
                .status(),
            200
        );
        assert_eq!(self.status(&p).await, "SUCCEEDED");
        // Its create task finds it settled and ends.
        self.tick().await;
        p
    }

    async fn request_refund(
        &self,
        token: &str,
        key: &str,
        payment_no: &str,
        body: serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let res = self
            .app
            .client
            .post(format!(
                "{}/api/v1/payments/{payment_no}/refunds",
                self.app.base
            ))
            .bearer_auth(token)
            .header("idempotency-key", key)
            .json(&body)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or_default())
    }

    async fn refund_status(&self, refund_no: &str) -> String {
        crate::reads::refund_status(self.pool(), refund_no).await
    }

    /// (refunded, reserved) on the payment.
    async fn refund_figures(&self, payment_no: &str) -> (i64, i64) {
        crate::reads::refund_figures(self.pool(), payment_no).await
    }

    async fn events(&self, payment_no: &str, event_type: &str) -> i64 {
        crate::reads::events_of(self.pool(), payment_no, event_type).await
    }

    async fn tick(&self) -> usize {
        let engine = self.app_engine();
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap()
    }

    /// A refund notification as the sandbox sends it.
    fn refund_notice(
        &self,
        id: &str,
        refund: &serde_json::Value,
        status: &str,
        amount: &str,
        currency: &str,
    ) -> String {
        json!({
            "id": id,
            "type": format!("refund.{}", status.to_ascii_lowercase()),
            "data": {
                "refund_no": refund["refund_no"], "refund_id": refund["refund_id"],
                "payment_no": refund["payment_no"], "txn_id": refund["txn_id"],
                "status": status, "amount": amount, "currency": currency,
            }
        })
        .to_string()
    }

    /// The sandbox's record of a refund Reckon asked for.
    fn sandbox_refund(&self, refund_no: &str) -> serde_json::Value {
        serde_json::to_value(
            self.sandbox
                .refund(refund_no)
                .expect("the sandbox got the refund"),
        )
        .unwrap()
    }

    async fn discrepancy_classes(&self, payment_no: &str) -> Vec<(String, String)> {
        crate::reads::tickets_of(self.pool(), payment_no).await
    }
}

async fn ten_identical_refund_notifications_grow_the_ledger_once(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let p = app.paid("R-1", 10000, "100.00").await;
    let (status, refund) = app
        .request_refund(
            &token,
            "rk-1",
            &p,
            json!({"amount_minor": 3000, "reason": "damaged"}),
        )
        .await;
    assert_eq!(status, 201, "{refund}");
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    assert_eq!(refund["status"], "REQUESTED");
    assert_eq!(refund["payment"]["refundable_minor"], 7000);
    assert_eq!(app.status(&p).await, "REFUNDING");
    // The worker asks the sandbox; the refund is pending there.
    assert_eq!(app.tick().await, 1);
    assert_eq!(app.refund_status(&refund_no).await, "PENDING");
    let at_sandbox = app.sandbox_refund(&refund_no);
    assert_eq!(at_sandbox["amount"], "30.00");

    let body = app.refund_notice("evt-refund-1", &at_sandbox, "SUCCEEDED", "30.00", "CNY");
    for _ in 0..10 {
        assert_eq!(app.post_signed("evt-refund-1", &body).await.status(), 200);
    }
    assert_eq!(app.refund_status(&refund_no).await, "SUCCEEDED");
    let ledger: i64 = crate::reads::ledger_entries_of(app.pool(), &p).await;
    assert_eq!(ledger, 1);
    assert_eq!(app.events(&p, "refund.succeeded").await, 1);
    assert_eq!(app.refund_figures(&p).await, (3000, 0));
    assert_eq!(
        app.status(&p).await,
        "SUCCEEDED",
        "a partial refund returns it to SUCCEEDED"
    );
    let stored: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM payment_callbacks WHERE refund_no = $1")
            .bind(&refund_no)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(stored, 1);

    // The rest, refunded through the sandbox's own notification: REFUNDED.
    let (status, rest) = app
        .request_refund(
            &token,
            "rk-2",
            &p,
            json!({"amount_minor": 7000, "reason": "returned"}),
        )
        .await;
    assert_eq!(status, 201, "{rest}");
    let rest_no = rest["refund_no"].as_str().unwrap().to_owned();
    app.tick().await;
    app.sandbox.settle_refund(&rest_no, true);
    app.wait_for_status(&p, "REFUNDED").await;
    assert_eq!(app.refund_figures(&p).await, (10000, 0));
    assert_eq!(app.events(&p, "refund.succeeded").await, 2);
    let (status, more) = app
        .request_refund(
            &token,
            "rk-3",
            &p,
            json!({"amount_minor": 1, "reason": "more"}),
        )
        .await;
    assert_eq!(status, 409, "{more}");
    let history: Vec<(String, String)> = sqlx::query_as(
        "SELECT from_status, to_status FROM payment_status_history WHERE payment_no = $1 ORDER BY at, id",
    )
    .bind(&p)
    .fetch_all(app.pool())
    .await
    .unwrap();
    let steps: Vec<String> = history.iter().map(|(f, t)| format!("{f}>{t}")).collect();
    assert_eq!(
        steps,
        [
            "CREATED>SUCCEEDED",
            "SUCCEEDED>REFUNDING",
            "REFUNDING>SUCCEEDED",
            "SUCCEEDED>REFUNDING",
            "REFUNDING>REFUNDED"
        ]
    );
    let metrics = app.app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("refunds_total{outcome=\"succeeded\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("refunds_total{outcome=\"duplicate\"} 9"),
        "{metrics}"
    );
}

async fn twenty_concurrent_partial_refunds_never_exceed_the_amount(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let p = app.paid("R-2", 10000, "100.00").await;
    let requests = (0..20).map(|i| {
        let (app, token, p) = (&app, &token, &p);
        async move {
            app.request_refund(
                token,
                &format!("c-{i}"),
                p,
                json!({"amount_minor": 700, "reason": "partial"}),
            )
            .await
        }
    });
    let answers = futures_util::future::join_all(requests).await;
    let accepted: Vec<_> = answers.iter().filter(|(s, _)| *s == 201).collect();
    let refused: Vec<_> = answers.iter().filter(|(s, _)| *s == 409).collect();
    assert_eq!(accepted.len() + refused.len(), 20, "{answers:?}");
    assert_eq!(accepted.len(), 14, "100.00 holds fourteen 7.00 refunds");
    for (_, body) in &refused {
        assert!(
            body["error"].as_str().unwrap().contains("exceeds"),
            "{body}"
        );
        assert!(body["refundable_minor"].as_i64().unwrap() < 700, "{body}");
        assert_eq!(body["currency"], "CNY");
    }
    assert_eq!(app.refund_figures(&p).await, (0, 9800));
    let rows: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_minor), 0) AS BIGINT) FROM refunds WHERE payment_no = $1",
    )
    .bind(&p)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(rows, 9800);
    // All of them go through: the refunded total is what was reserved.
    app.tick().await;
    let nos: Vec<String> = accepted
        .iter()
        .map(|(_, b)| b["refund_no"].as_str().unwrap().to_owned())
        .collect();
    for no in &nos {
        app.sandbox.settle_refund(no, true);
    }
    for _ in 0..100 {
        if app.refund_figures(&p).await == (9800, 0) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(app.refund_figures(&p).await, (9800, 0));
    assert_eq!(app.status(&p).await, "SUCCEEDED");
}

async fn refunds_of_payments_that_were_never_paid_are_refused(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let body = json!({"amount_minor": 100, "reason": "x"});
    let created = app.payment("R-3", 1000, "CNY").await;
    let (status, answer) = app
        .request_refund(&token, "n-1", &created, body.clone())
        .await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("only a SUCCEEDED"),
        "{answer}"
    );
    assert_eq!(answer["payment_status"], "CREATED");

    let failed = app.payment("R-4", 1000, "CNY").await;
    let notice = app.notice("evt-f", &failed, "FAILED", "10.00", "CNY", "SBX-F");
    assert_eq!(app.post_signed("evt-f", &notice).await.status(), 200);
    assert_eq!(
        app.request_refund(&token, "n-2", &failed, body.clone())
            .await
            .0,
        409
    );

    let closed = app.payment("R-5", 1000, "CNY").await;
    let notice = app.notice("evt-c", &closed, "CLOSED", "10.00", "CNY", "SBX-C");
    assert_eq!(app.post_signed("evt-c", &notice).await.status(), 200);
    assert_eq!(app.status(&closed).await, "CLOSED");
    assert_eq!(
        app.request_refund(&token, "n-3", &closed, body.clone())
            .await
            .0,
        409
    );

    let paid = app.paid("R-6", 1000, "10.00").await;
    let (status, answer) = app
        .request_refund(
            &token,
            "n-4",
            &paid,
            json!({"amount_minor": 1001, "reason": "too much"}),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(answer["refundable_minor"], 1000);
    assert_eq!(
        app.request_refund(&token, "n-5", "PAYNOSUCH", body.clone())
            .await
            .0,
        404
    );
    assert_eq!(
        app.request_refund(
            &token,
            "n-6",
            &paid,
            json!({"amount_minor": 0, "reason": "x"})
        )
        .await
        .0,
        400
    );
    assert_eq!(
        app.request_refund(
            &token,
            "n-7",
            &paid,
            json!({"amount_minor": 10, "currency": "USD", "reason": "x"})
        )
        .await
        .0,
        422
    );
    let res = app
        .app
        .client
        .post(format!("{}/api/v1/payments/{paid}/refunds", app.app.base))
        .bearer_auth(&token)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400, "Idempotency-Key is required");
    assert_eq!(app.refund_figures(&paid).await, (0, 0));
    assert_eq!(app.status(&paid).await, "SUCCEEDED");
    let refunds: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM refunds")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(refunds, 0);
}

async fn a_refund_notification_that_disagrees_changes_nothing(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let p = app.paid("R-7", 5000, "50.00").await;
    let (_, refund) = app
        .request_refund(
            &token,
            "m-1",
            &p,
            json!({"amount_minor": 2000, "reason": "x"}),
        )
        .await;
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    app.tick().await;
    let at_sandbox = app.sandbox_refund(&refund_no);
    let more = app.refund_notice("evt-m1", &at_sandbox, "SUCCEEDED", "25.00", "CNY");
    assert_eq!(app.post_signed("evt-m1", &more).await.status(), 200);
    let other_currency = app.refund_notice("evt-m2", &at_sandbox, "SUCCEEDED", "20.00", "USD");
    assert_eq!(
        app.post_signed("evt-m2", &other_currency).await.status(),
        200
    );
    let mut other_txn = at_sandbox.clone();
    other_txn["txn_id"] = "SBX-SOMEONE-ELSE".into();
    let foreign = app.refund_notice("evt-m3", &other_txn, "SUCCEEDED", "20.00", "CNY");
    assert_eq!(app.post_signed("evt-m3", &foreign).await.status(), 200);
    assert_eq!(app.refund_status(&refund_no).await, "PENDING");
    assert_eq!(app.refund_figures(&p).await, (0, 2000));
    assert_eq!(app.events(&p, "refund.succeeded").await, 0);
    let found = app.discrepancy_classes(&p).await;
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found
            .iter()
            .all(|(c, s)| c == "REFUND_MISMATCH" && s == "HIGH"),
        "{found:?}"
    );
    assert_eq!(app.alert_kinds(&p).await, ["refund_mismatch"; 3]);
    // The true one still lands.
    let right = app.refund_notice("evt-m4", &at_sandbox, "SUCCEEDED", "20.00", "CNY");
    assert_eq!(app.post_signed("evt-m4", &right).await.status(), 200);
    assert_eq!(app.refund_figures(&p).await, (2000, 0));
}

async fn a_refund_reckon_never_requested_is_a_discrepancy(b: Backend) {
    let app = spawn_engine_app(b).await;
    let p = app.paid("R-8", 5000, "50.00").await;
    // Made in the provider's own dashboard.
    let stranger = json!({"refund_no": "DASHBOARD-1", "refund_id": "SBXR-DASH", "payment_no": p, "txn_id": format!("SBX-{p}")});
    let body = app.refund_notice("evt-u1", &stranger, "SUCCEEDED", "10.00", "CNY");
    assert_eq!(app.post_signed("evt-u1", &body).await.status(), 200);
    assert_eq!(app.refund_figures(&p).await, (0, 0));
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(
        app.discrepancy_classes(&p).await,
        [("REFUND_MISMATCH".to_string(), "HIGH".to_string())]
    );
    let details: String =
        sqlx::query_scalar("SELECT details FROM discrepancies WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert!(details.contains("did not request"), "{details}");
    let ledger: i64 = crate::reads::ledger_entries(app.pool()).await;
    assert_eq!(ledger, 0);
}

async fn a_refund_key_gives_the_same_answer_and_refuses_another_body(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let p = app.paid("R-9", 5000, "50.00").await;
    let body = json!({"amount_minor": 1500, "reason": "size"});
    let first = app.request_refund(&token, "same", &p, body.clone()).await;
    let again = app.request_refund(&token, "same", &p, body.clone()).await;
    assert_eq!(first.0, 201);
    assert_eq!(first, again);
    let (status, answer) = app
        .request_refund(
            &token,
            "same",
            &p,
            json!({"amount_minor": 1600, "reason": "size"}),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(app.refund_figures(&p).await, (0, 1500));
    let shown = app
        .app
        .client
        .get(format!(
            "{}/api/v1/refunds/{}",
            app.app.base,
            first.1["refund_no"].as_str().unwrap()
        ))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(shown.status(), 200);
    let shown: serde_json::Value = shown.json().await.unwrap();
    assert_eq!(shown["amount_minor"], 1500);
    assert_eq!(shown["payment"]["refundable_minor"], 3500);
    let detail = app.show(&token, &p).await;
    assert_eq!(detail["refunds"].as_array().unwrap().len(), 1);
}

async fn a_failed_refund_releases_the_reservation(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    // The provider refuses at once: it never heard of this payment.
    let p = app.paid("R-10", 5000, "50.00").await;
    let (_, refund) = app
        .request_refund(
            &token,
            "f-1",
            &p,
            json!({"amount_minor": 5000, "reason": "x"}),
        )
        .await;
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    app.sandbox.put(reckon::providers::sandbox::PaymentData {
        payment_no: p.clone(),
        txn_id: format!("SBX-{p}"),
        status: "CLOSED".into(),
        amount: "50.00".into(),
        currency: "CNY".into(),
    });
    app.tick().await;
    assert_eq!(app.refund_status(&refund_no).await, "FAILED");
    assert_eq!(app.refund_figures(&p).await, (0, 0));
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(app.events(&p, "refund.failed").await, 1);

    // The provider takes it, then reports failure by notification.
    app.sandbox_knows(&p, "SUCCEEDED", "50.00", "CNY");
    let (status, again) = app
        .request_refund(
            &token,
            "f-2",
            &p,
            json!({"amount_minor": 5000, "reason": "x"}),
        )
        .await;
    assert_eq!(status, 201, "the whole amount is refundable again: {again}");
    let again_no = again["refund_no"].as_str().unwrap().to_owned();
    app.tick().await;
    app.sandbox.settle_refund(&again_no, false);
    for _ in 0..100 {
        if app.refund_status(&again_no).await == "FAILED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(app.refund_status(&again_no).await, "FAILED");
    assert_eq!(app.refund_figures(&p).await, (0, 0));
    assert_eq!(app.status(&p).await, "SUCCEEDED");
    assert_eq!(app.events(&p, "refund.failed").await, 2);
}

async fn a_refund_call_that_times_out_stays_pending_until_a_query_settles_it(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let p = app.paid("R-11", 5000, "50.00").await;
    let (_, refund) = app
        .request_refund(
            &token,
            "t-1",
            &p,
            json!({"amount_minor": 1000, "reason": "x"}),
        )
        .await;
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    app.sandbox_down(true);
    assert_eq!(app.tick().await, 1);
    assert_eq!(
        app.refund_status(&refund_no).await,
        "PENDING",
        "no answer is no result"
    );
    assert_eq!(app.refund_figures(&p).await, (0, 1000));
    // Back up; notifications get lost. The query finds no refund (the
    // request never arrived), asks again, and a later query sees it done.
    app.sandbox_down(false);
    app.sandbox.set_chaos(Chaos {
        settle_ms: 3_600_000,
        drop_rate: 1.0,
        ..Chaos::default()
    });
    app.clock.advance_secs(61);
    assert_eq!(app.tick().await, 1);
    assert_eq!(app.sandbox_refund(&refund_no)["status"], "PENDING");
    app.sandbox.settle_refund(&refund_no, true);
    app.clock.advance_secs(5 * 60 + 1);
    assert_eq!(app.tick().await, 1);
    assert_eq!(app.refund_status(&refund_no).await, "SUCCEEDED");
    assert_eq!(app.refund_figures(&p).await, (1000, 0));
    assert_eq!(app.events(&p, "refund.succeeded").await, 1);
    app.clock.advance_secs(24 * 3600);
    assert_eq!(app.tick().await, 0, "nothing left to ask");
}

async fn the_sandbox_duplicates_and_reorders_refund_notifications_and_the_ledger_holds(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let p = app.paid("R-12", 8000, "80.00").await;
    app.sandbox.set_chaos(Chaos {
        settle_ms: 3_600_000,
        duplicates: 3,
        reorder: true,
        ..Chaos::default()
    });
    let (_, refund) = app
        .request_refund(
            &token,
            "d-1",
            &p,
            json!({"amount_minor": 8000, "reason": "x"}),
        )
        .await;
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    app.tick().await;
    app.sandbox.settle_refund(&refund_no, true);
    // Three SUCCEEDED notifications, then three stale PENDING ones.
    let mut stored = 0;
    for _ in 0..100 {
        stored = sqlx::query_scalar("SELECT COUNT(*) FROM payment_callbacks WHERE refund_no = $1")
            .bind(&refund_no)
            .fetch_one(app.pool())
            .await
            .unwrap();
        if stored == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(stored, 2, "two distinct notifications, each stored once");
    assert_eq!(app.refund_status(&refund_no).await, "SUCCEEDED");
    assert_eq!(app.status(&p).await, "REFUNDED");
    assert_eq!(app.refund_figures(&p).await, (8000, 0));
    assert_eq!(app.events(&p, "refund.succeeded").await, 1);
    let outcomes: Vec<String> = sqlx::query_scalar(
        "SELECT outcome FROM payment_callbacks WHERE refund_no = $1 ORDER BY received_at, id",
    )
    .bind(&refund_no)
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(outcomes, ["applied", "out_of_order"]);
}

both_databases!(
    the_sandbox_duplicates_and_reorders_refund_notifications_and_the_ledger_holds,
    ten_identical_refund_notifications_grow_the_ledger_once,
    twenty_concurrent_partial_refunds_never_exceed_the_amount,
    refunds_of_payments_that_were_never_paid_are_refused,
    a_refund_notification_that_disagrees_changes_nothing,
    a_refund_reckon_never_requested_is_a_discrepancy,
    a_refund_key_gives_the_same_answer_and_refuses_another_body,
    a_failed_refund_releases_the_reservation,
    a_refund_call_that_times_out_stays_pending_until_a_query_settles_it,
);
