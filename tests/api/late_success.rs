//! A verified success for a payment Reckon holds FAILED or CLOSED: money
//! taken without an order. One HIGH PAID_AFTER_CLOSE ticket and a critical
//! alert however often the provider says it, the payment kept as it is, and
//! two fixes under the two-person rule — accept it (SUCCEEDED through
//! `apply`, one ORDER_PAID, one `payment.succeeded`) or refund it through
//! the refund ledger (REFUNDED, one ledger row, the order never paid) —
//! each executed once, on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::Backend;
use crate::triage::{Desk, desk};
use reckon::domain::{Currency, Money, PaymentNo, PaymentStatus, ProviderName, ProviderTxnId};
use reckon::engine::{Applied, CreatePayment, Outcome, Source};
use serde_json::Value;

impl Desk {
    /// A payment of 88.00 CNY the sandbox took, that Reckon first hears is
    /// `first` (FAILED or CLOSED), then hears succeeded — `redeliveries`
    /// times, each with a callback id of its own. The payment and the id of
    /// the first success's callback row.
    pub(crate) async fn paid_after(
        &self,
        order: &str,
        first: &str,
        redeliveries: usize,
    ) -> (String, String) {
        let app = &self.app;
        let p = app.payment(order, 8800, "CNY").await;
        app.sandbox_knows(&p, "SUCCEEDED", "88.00", "CNY");
        let txn = format!("SBX-{p}");
        let id = format!("evt-{order}-{}", first.to_ascii_lowercase());
        let body = app.notice(&id, &p, first, "88.00", "CNY", &txn);
        assert_eq!(app.post_signed(&id, &body).await.status(), 200);
        assert_eq!(app.status(&p).await, first);
        // Its create task finds it settled and ends.
        let engine = app.app_engine();
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap();
        app.clock.advance_secs(60);
        for i in 0..redeliveries {
            let id = format!("evt-{order}-ok-{i}");
            let body = app.notice(&id, &p, "SUCCEEDED", "88.00", "CNY", &txn);
            assert_eq!(app.post_signed(&id, &body).await.status(), 200);
        }
        let first_ok: String = sqlx::query_scalar(
            "SELECT id FROM payment_callbacks WHERE callback_id = $1 AND provider = 'sandbox'",
        )
        .bind(format!("evt-{order}-ok-0"))
        .fetch_one(app.pool())
        .await
        .unwrap();
        (p, first_ok)
    }

    pub(crate) async fn effect_count(&self, payment_no: &str, effect: &str) -> i64 {
        sqlx::query_scalar(
            "SELECT COUNT(*) FROM payment_effects WHERE payment_no = $1 AND effect_type = $2",
        )
        .bind(payment_no)
        .bind(effect)
        .fetch_one(self.app.pool())
        .await
        .unwrap()
    }

    async fn event_count(&self, payment_no: &str, event: &str) -> i64 {
        crate::reads::events_of(self.app.pool(), payment_no, event).await
    }

    /// Relays the outbox; the event types the fulfilment sink got for the
    /// payment, in order.
    async fn delivered(&self, payment_no: &str) -> Vec<String> {
        let engine = self.app.app_engine();
        reckon::outbox::relay_outbox(&engine, &reqwest::Client::new(), engine.now())
            .await
            .unwrap();
        self.app
            .sink
            .seen()
            .iter()
            .map(|(_, body)| serde_json::from_str::<Value>(body).unwrap())
            .filter(|e| e["payment_no"] == payment_no)
            .map(|e| e["type"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The payment's open PAID_AFTER_CLOSE tickets, by id.
    pub(crate) async fn late_tickets(&self, payment_no: &str) -> Vec<String> {
        sqlx::query_scalar(
            "SELECT discrepancy_id FROM discrepancies WHERE class = 'PAID_AFTER_CLOSE' \
               AND payment_no = $1 AND status <> 'CLOSED' ORDER BY found_at",
        )
        .bind(payment_no)
        .fetch_all(self.app.pool())
        .await
        .unwrap()
    }

    async fn steps(&self, payment_no: &str) -> Vec<String> {
        let rows: Vec<(String, String, String)> = sqlx::query_as(
            "SELECT from_status, to_status, source FROM payment_status_history WHERE payment_no = $1 ORDER BY at, id",
        )
        .bind(payment_no)
        .fetch_all(self.app.pool())
        .await
        .unwrap();
        rows.into_iter()
            .map(|(f, t, s)| format!("{f}>{t} ({s})"))
            .collect()
    }

    async fn propose(&self, who: &reqwest::Client, ticket: &str, kind: &str) -> String {
        let (status, proposal) = self
            .call(
                who,
                "fixes/propose",
                &[
                    ("id", ticket),
                    ("kind", kind),
                    ("reason", "the provider took the money after we gave up"),
                    ("evidence", "provider dashboard, transaction page"),
                ],
            )
            .await;
        assert_eq!(status, 200, "{kind}: {proposal}");
        proposal.as_str().unwrap().to_owned()
    }

    async fn approve(&self, who: &reqwest::Client, proposal: &str) -> (u16, Value) {
        self.call(
            who,
            "fixes/approve",
            &[
                ("proposal", proposal),
                ("comment", "checked with the provider"),
            ],
        )
        .await
    }
}

async fn a_late_success_after_failed_or_closed_opens_one_high_ticket(b: Backend) {
    let d = desk(b).await;
    for (order, first) in [("LATE-F", "FAILED"), ("LATE-C", "CLOSED")] {
        let (p, first_ok) = d.paid_after(order, first, 10).await;
        assert_eq!(d.app.status(&p).await, first, "nothing automatic moves it");
        assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 0);
        assert_eq!(d.event_count(&p, "payment.succeeded").await, 0);
        assert!(!d.delivered(&p).await.contains(&"payment.succeeded".into()));

        // Every provider-side source says the same and is told apart from
        // a plain out-of-order report: a status query, a replay, a
        // reconciliation repair, a create call's answer.
        let engine = d.app.app_engine();
        for source in [
            Source::Query,
            Source::Replay,
            Source::ReconRepair,
            Source::Dispatch,
        ] {
            let o = Outcome {
                payment_no: PaymentNo::parse(&p).unwrap(),
                provider: ProviderName::parse("sandbox").unwrap(),
                provider_txn_id: Some(ProviderTxnId::parse(&format!("SBX-{p}")).unwrap()),
                target: PaymentStatus::Succeeded,
                money: Money::new(8800, Currency::parse("CNY").unwrap()),
                source,
                evidence: format!("{source:?}"),
                trace_id: "late".into(),
                paid_at: None,
            };
            assert_eq!(
                engine.apply(&o).await.unwrap(),
                Applied::PaidAfterClose {
                    current: first.parse().unwrap()
                },
                "{source:?}"
            );
        }
        assert_eq!(d.app.status(&p).await, first);

        // Fourteen reports, one ticket with both sides' facts and the first
        // report as evidence, one critical alert, no out-of-order warning.
        let tickets = d.late_tickets(&p).await;
        assert_eq!(tickets.len(), 1, "{first}");
        let (severity, local, provider, txn, details): (String, String, String, String, String) =
            sqlx::query_as(
                "SELECT severity, local_status, provider_status, provider_txn_id, details \
                 FROM discrepancies WHERE discrepancy_id = $1",
            )
            .bind(&tickets[0])
            .fetch_one(d.app.pool())
            .await
            .unwrap();
        assert_eq!(
            (severity.as_str(), local.as_str(), provider.as_str()),
            ("HIGH", first, "SUCCEEDED")
        );
        assert_eq!(txn, format!("SBX-{p}"));
        let details: Value = serde_json::from_str(&details).unwrap();
        assert_eq!(details["evidence"], first_ok.as_str());
        assert_eq!(details["source"], "callback");
        let alerts: Vec<(String, String)> =
            sqlx::query_as("SELECT kind, severity FROM alerts WHERE payment_no = $1")
                .bind(&p)
                .fetch_all(d.app.pool())
                .await
                .unwrap();
        assert_eq!(
            alerts,
            [("paid_after_close".to_owned(), "critical".to_owned())]
        );
        let outcomes: Vec<String> = sqlx::query_scalar(
            "SELECT outcome FROM payment_callbacks WHERE payment_no = $1 AND callback_status = 'SUCCEEDED'",
        )
        .bind(&p)
        .fetch_all(d.app.pool())
        .await
        .unwrap();
        assert_eq!(outcomes.len(), 10);
        assert!(
            outcomes.iter().all(|o| o == "paid_after_close"),
            "{outcomes:?}"
        );

        // The console offers the two fixes, and only those.
        let (status, detail) = d
            .call(&d.olga, "tickets/show", &[("id", &tickets[0])])
            .await;
        assert_eq!(status, 200, "{detail}");
        assert_eq!(detail["summary"]["class"], "PAID_AFTER_CLOSE");
        assert_eq!(detail["summary"]["severity"], "HIGH");
        assert_eq!(
            detail["fixes"],
            serde_json::json!(["ACCEPT_PAYMENT", "REFUND_PAYMENT"])
        );
        let (status, err) = d
            .call(
                &d.olga,
                "fixes/propose",
                &[
                    ("id", &tickets[0]),
                    ("kind", "BACKFILL"),
                    ("reason", "r"),
                    ("evidence", "e"),
                ],
            )
            .await;
        assert_eq!(status, 400, "{err}");
        assert!(err.get("FixNotApplicable").is_some(), "{err}");
    }
}

async fn accepting_a_late_success_pays_the_order_exactly_once(b: Backend) {
    let d = desk(b).await;

    // After FAILED: an operator proposes, two supervisors approve at once.
    let (p, _) = d.paid_after("LATE-AF", "FAILED", 2).await;
    let ticket = d.late_tickets(&p).await.remove(0);
    let proposal = d.propose(&d.olga, &ticket, "ACCEPT_PAYMENT").await;
    let (status, err) = d.approve(&d.olga, &proposal).await;
    assert_eq!(status, 403, "an operator never approves: {err}");
    assert_eq!(d.app.status(&p).await, "FAILED");
    let (a, b2) = tokio::join!(d.approve(&d.sam, &proposal), d.approve(&d.sue, &proposal));
    let mut codes = [a.0, b2.0];
    codes.sort();
    assert_eq!(codes, [200, 409], "{a:?} {b2:?}");
    let (status, err) = d.approve(&d.sam, &proposal).await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(err, serde_json::json!("ProposalDecided"));
    assert_eq!(d.app.status(&p).await, "SUCCEEDED");
    assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 1);
    assert_eq!(d.event_count(&p, "payment.succeeded").await, 1);
    assert_eq!(
        d.steps(&p).await,
        ["CREATED>FAILED (callback)", "FAILED>SUCCEEDED (manual_fix)"]
    );
    let delivered = d.delivered(&p).await;
    assert_eq!(
        delivered
            .iter()
            .filter(|t| *t == "payment.succeeded")
            .count(),
        1,
        "{delivered:?}"
    );
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "CLOSED");
    // The provider saying it once more is a duplicate now: no new ticket.
    let body = d.app.notice(
        "evt-LATE-AF-again",
        &p,
        "SUCCEEDED",
        "88.00",
        "CNY",
        &format!("SBX-{p}"),
    );
    assert_eq!(
        d.app.post_signed("evt-LATE-AF-again", &body).await.status(),
        200
    );
    assert!(d.late_tickets(&p).await.is_empty());
    assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 1);

    // After CLOSED: a supervisor proposes and may not approve it himself;
    // the other supervisor does, once.
    let (p, _) = d.paid_after("LATE-AC", "CLOSED", 1).await;
    let ticket = d.late_tickets(&p).await.remove(0);
    let proposal = d.propose(&d.sam, &ticket, "ACCEPT_PAYMENT").await;
    let (status, err) = d.approve(&d.sam, &proposal).await;
    assert_eq!(status, 403, "{err}");
    assert_eq!(err, serde_json::json!("OwnProposal"));
    assert_eq!(d.app.status(&p).await, "CLOSED");
    let (status, done) = d.approve(&d.sue, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["class"], "executed");
    let (status, _) = d.approve(&d.sue, &proposal).await;
    assert_eq!(status, 409);
    assert_eq!(d.app.status(&p).await, "SUCCEEDED");
    assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 1);
    assert_eq!(d.event_count(&p, "payment.succeeded").await, 1);
    assert_eq!(
        d.steps(&p).await,
        ["CREATED>CLOSED (callback)", "CLOSED>SUCCEEDED (manual_fix)"]
    );
    let paid_at: Option<i64> =
        sqlx::query_scalar("SELECT paid_at FROM payments WHERE payment_no = $1")
            .bind(&p)
            .fetch_one(d.app.pool())
            .await
            .unwrap();
    assert!(paid_at.is_some());
}

async fn refunding_a_late_success_goes_through_the_ledger_once(b: Backend) {
    let d = desk(b).await;
    let ledger = |p: String| {
        let pool = d.app.pool().clone();
        async move { crate::reads::ledger_entries_of(&pool, &p).await }
    };
    let refunds_of = |p: String| {
        let pool = d.app.pool().clone();
        async move {
            sqlx::query_as::<_, (String, String, i64)>(
                "SELECT refund_no, status, amount_minor FROM refunds WHERE payment_no = $1",
            )
            .bind(p)
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let engine = d.app.app_engine();

    // After CLOSED: refunded in full, through the provider, once.
    let (p, _) = d.paid_after("LATE-RC", "CLOSED", 3).await;
    let ticket = d.late_tickets(&p).await.remove(0);
    let proposal = d.propose(&d.sam, &ticket, "REFUND_PAYMENT").await;
    let (status, err) = d.approve(&d.sam, &proposal).await;
    assert_eq!(status, 403, "{err}");
    assert!(refunds_of(p.clone()).await.is_empty());
    let (a, b2) = tokio::join!(d.approve(&d.sue, &proposal), d.approve(&d.sue, &proposal));
    let mut codes = [a.0, b2.0];
    codes.sort();
    assert_eq!(codes, [200, 409], "{a:?} {b2:?}");
    let (status, _) = d.approve(&d.olga, &proposal).await;
    assert_eq!(status, 403);
    let refunds = refunds_of(p.clone()).await;
    assert_eq!(refunds.len(), 1, "{refunds:?}");
    let (refund_no, status, amount) = refunds[0].clone();
    assert_eq!((status.as_str(), amount), ("REQUESTED", 8800));
    assert_eq!(d.app.status(&p).await, "REFUNDING");
    // The worker asks the sandbox; the sandbox settles it and says so.
    d.app.clock.advance_secs(1);
    assert_eq!(
        reckon::workers::run_provider_tasks(&engine, engine.now())
            .await
            .unwrap(),
        1
    );
    assert_eq!(refunds_of(p.clone()).await[0].1, "PENDING");
    let at_sandbox = d
        .app
        .sandbox
        .refund(&refund_no)
        .expect("the sandbox got the refund");
    assert_eq!(at_sandbox.amount, "88.00");
    assert_eq!(at_sandbox.txn_id, format!("SBX-{p}"));
    d.app.clock.advance_secs(1);
    d.app.sandbox.settle_refund(&refund_no, true);
    d.app.wait_for_status(&p, "REFUNDED").await;
    d.app.clock.advance_secs(1);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(refunds_of(p.clone()).await[0].1, "SUCCEEDED");
    assert_eq!(ledger(p.clone()).await, 1);
    let figures: (i64, i64) = crate::reads::refund_figures(d.app.pool(), &p).await;
    assert_eq!(figures, (8800, 0));
    assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 0);
    assert_eq!(d.event_count(&p, "payment.succeeded").await, 0);
    assert_eq!(d.event_count(&p, "refund.succeeded").await, 1);
    let delivered = d.delivered(&p).await;
    assert!(
        !delivered.contains(&"payment.succeeded".into()),
        "{delivered:?}"
    );
    assert!(
        delivered.contains(&"refund.succeeded".into()),
        "{delivered:?}"
    );
    let steps = d.steps(&p).await;
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(steps[0], "CREATED>CLOSED (callback)");
    assert_eq!(steps[1], "CLOSED>REFUNDING (manual_fix)");
    assert!(steps[2].starts_with("REFUNDING>REFUNDED"), "{steps:?}");
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &ticket)]).await;
    assert_eq!(detail["summary"]["status"], "CLOSED");

    // After FAILED, when the provider fails the refund: the payment goes
    // back to FAILED (never SUCCEEDED, the order was never paid) and a new
    // ticket offers both fixes again.
    let (p, _) = d.paid_after("LATE-RF", "FAILED", 1).await;
    let ticket = d.late_tickets(&p).await.remove(0);
    let proposal = d.propose(&d.olga, &ticket, "REFUND_PAYMENT").await;
    let (status, done) = d.approve(&d.sam, &proposal).await;
    assert_eq!(status, 200, "{done}");
    let (refund_no, _, _) = refunds_of(p.clone()).await.remove(0);
    d.app.clock.advance_secs(1);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    assert_eq!(refunds_of(p.clone()).await[0].1, "PENDING");
    d.app.clock.advance_secs(1);
    d.app.sandbox.settle_refund(&refund_no, false);
    d.app.wait_for_status(&p, "FAILED").await;
    assert_eq!(refunds_of(p.clone()).await[0].1, "FAILED");
    assert_eq!(ledger(p.clone()).await, 0);
    assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 0);
    let again = d.late_tickets(&p).await;
    assert_eq!(again.len(), 1, "a new ticket for the failed refund");
    assert_ne!(again[0], ticket);
    let (_, detail) = d.call(&d.olga, "tickets/show", &[("id", &again[0])]).await;
    assert_eq!(
        detail["fixes"],
        serde_json::json!(["ACCEPT_PAYMENT", "REFUND_PAYMENT"])
    );
    let critical: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM alerts WHERE payment_no = $1 AND kind = 'paid_after_close' AND severity = 'critical'",
    )
    .bind(&p)
    .fetch_one(d.app.pool())
    .await
    .unwrap();
    assert_eq!(critical, 2);
    // The second decision this time: take the money; the order is paid.
    let proposal = d.propose(&d.olga, &again[0], "ACCEPT_PAYMENT").await;
    let (status, done) = d.approve(&d.sue, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(d.app.status(&p).await, "SUCCEEDED");
    assert_eq!(d.effect_count(&p, "ORDER_PAID").await, 1);
}

async fn a_late_success_never_pays_an_order_twice(b: Backend) {
    let d = desk(b).await;
    let (a, _) = d.paid_after("LATE-TWICE", "FAILED", 1).await;
    let ticket = d.late_tickets(&a).await.remove(0);
    let proposal = d.propose(&d.olga, &ticket, "ACCEPT_PAYMENT").await;

    // Meanwhile the shop's retry, a second attempt of the same order, is paid.
    let req = CreatePayment {
        order_no: "LATE-TWICE".into(),
        provider: "sandbox".into(),
        amount_minor: 8800,
        currency: "CNY".into(),
        description: None,
    };
    let created = d
        .app
        .app_engine()
        .create_payment("test", "key-LATE-TWICE-retry", &req)
        .await;
    let retry = created.expect("the retry is created").payment_no;
    let ok = d.app.notice(
        "evt-retry-ok",
        &retry,
        "SUCCEEDED",
        "88.00",
        "CNY",
        &format!("SBX-{retry}"),
    );
    assert_eq!(d.app.post_signed("evt-retry-ok", &ok).await.status(), 200);
    assert_eq!(d.app.status(&retry).await, "SUCCEEDED");

    // Approving the acceptance now would pay the order twice: refused.
    let (status, err) = d.approve(&d.sam, &proposal).await;
    assert_eq!(status, 409, "{err}");
    assert!(err.to_string().contains("pay it twice"), "{err}");
    assert_eq!(d.app.status(&a).await, "FAILED");
    assert_eq!(d.effect_count(&a, "ORDER_PAID").await, 0);
    // Nor can it be proposed again; the refund can, and gives it back.
    let (status, err) = d
        .call(
            &d.olga,
            "fixes/propose",
            &[
                ("id", &ticket),
                ("kind", "ACCEPT_PAYMENT"),
                ("reason", "r"),
                ("evidence", "e"),
            ],
        )
        .await;
    assert_eq!(status, 400, "{err}");
    assert!(err.to_string().contains("already paid by"), "{err}");
    let proposal = d.propose(&d.olga, &ticket, "REFUND_PAYMENT").await;
    let (status, done) = d.approve(&d.sue, &proposal).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(d.app.status(&a).await, "REFUNDING");
    assert_eq!(d.effect_count(&a, "ORDER_PAID").await, 0);
    assert_eq!(d.effect_count(&retry, "ORDER_PAID").await, 1);
}

both_databases!(
    a_late_success_never_pays_an_order_twice,
    a_late_success_after_failed_or_closed_opens_one_high_ticket,
    accepting_a_late_success_pays_the_order_exactly_once,
    refunding_a_late_success_goes_through_the_ledger_once,
);
