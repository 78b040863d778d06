//! Expected cash and PAYOUT_LATE: Stripe payouts pulled day by day from
//! the fake in `stripe` (its balance transactions list), paid by a bank's
//! CSV statement, teach Reckon stripe-eu's usual delay; a payout not
//! credited past that range is PAYOUT_LATE, the fixed window's verdict
//! opens no second ticket for it, and its credit closes it. The expected
//! cash per day is checked against figures worked out by hand. Each on
//! SQLite and PostgreSQL.

use crate::bank::{count, token};
use crate::both_databases;
use crate::helpers::{Backend, TestApp};
use crate::stripe::{StripeApp, spawn_stripe_app_with};
use serde_json::{Value, json};

const DAY_S: i64 = 86_400;
/// 2026-11-01 00:00 UTC (the business zone is UTC).
const NOV_1: i64 = 1_793_491_200;

/// Midnight UTC of 2026-11-`day`.
fn nov(day: i64) -> i64 {
    NOV_1 + (day - 1) * DAY_S
}

fn day(d: i64) -> String {
    format!("2026-11-{d:02}")
}

/// A manual payout's balance transaction (Stripe's shape, the payout
/// expanded), made at 01:00 on 2026-11-`made` to arrive on `arrival`.
fn payout_txn(id: &str, amount: i64, made: i64, arrival: i64) -> Value {
    let at = nov(made) + 3600;
    json!({
        "id": format!("txn_{id}"), "object": "balance_transaction", "amount": -amount,
        "available_on": at, "balance_type": "payments", "created": at, "currency": "eur",
        "description": "STRIPE PAYOUT", "exchange_rate": null, "fee": 0, "fee_details": [],
        "net": -amount, "reporting_category": "payout", "status": "available", "type": "payout",
        "source": {
            "id": id, "object": "payout", "amount": amount, "arrival_date": nov(arrival),
            "automatic": false, "balance_transaction": format!("txn_{id}"), "created": at,
            "currency": "eur", "description": "STRIPE PAYOUT", "destination": "ba_1QaBANK",
            "method": "standard", "source_type": "card", "statement_descriptor": null,
            "status": "in_transit", "type": "bank_account", "metadata": {},
        },
    })
}

/// A charge of 100.00 EUR with a 2.90 fee on 2026-11-11: the day nets
/// 97.10, settled and not paid out yet.
fn charge_txn() -> Value {
    let at = nov(11) + 10 * 3600;
    json!({
        "id": "txn_ch_1", "object": "balance_transaction", "amount": 10_000,
        "available_on": at + 2 * DAY_S, "balance_type": "payments", "created": at, "currency": "eur",
        "description": null, "exchange_rate": null, "fee": 290,
        "fee_details": [{"amount": 290, "currency": "eur", "description": "Stripe processing fees", "type": "stripe_fee"}],
        "net": 9_710, "reporting_category": "charge", "status": "pending", "type": "charge",
        "source": {"id": "ch_1", "object": "charge", "amount": 10_000, "amount_captured": 10_000,
            "currency": "eur", "payment_intent": "pi_1", "metadata": {}, "status": "succeeded"},
    })
}

/// The history: (payout, amount, made, arrival, booked by the bank).
/// Delays from making to the credit: 2, 2, 2, 3, 2, 2 days — usually 2,
/// late after 3 (the 90th percentile of six is the longest).
const HISTORY: [(&str, i64, i64, i64, i64); 6] = [
    ("po_1QaHIST1", 101_000, 2, 4, 4),
    ("po_1QaHIST2", 102_000, 3, 5, 5),
    ("po_1QaHIST3", 103_000, 4, 6, 6),
    ("po_1QaHIST4", 104_000, 5, 7, 8),
    ("po_1QaHIST5", 105_000, 6, 8, 8),
    ("po_1QaHIST6", 106_000, 7, 9, 9),
];

/// The payout that comes late: made 11-10, announced for 11-12.
const LATE: &str = "po_1QaLATE";

async fn upload_csv(app: &TestApp, token: &str, name: &str, lines: &[String]) -> Value {
    let mut text = String::from("date,amount,currency,reference,counterparty,direction\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    let res = crate::bank::upload(app, token, name, text.into_bytes()).await;
    assert_eq!(res.status(), 201);
    res.json().await.unwrap()
}

fn credit(booked: i64, amount: i64, payout: &str) -> String {
    format!(
        "{},{}.{:02},EUR,STRIPE PAYOUT {payout},STRIPE PAYMENTS EUROPE LTD,C",
        day(booked),
        amount / 100,
        amount % 100
    )
}

/// Stripe's days 11-02 to 11-11 pulled (the first `paid` history payouts,
/// the late one, the charge) and the history's credits imported, on
/// 2026-11-12.
async fn with_history(b: Backend, paid: usize) -> (StripeApp, String) {
    let s = spawn_stripe_app_with(b, |c| c.timezone = "UTC".into()).await;
    s.clock.set((nov(12) + 8 * 3600) * 1_000_000);
    {
        let mut balance = s.stripe.balance.lock().unwrap();
        for (id, amount, made, arrival, _) in &HISTORY[..paid] {
            balance.push(payout_txn(id, *amount, *made, *arrival));
        }
        balance.push(payout_txn(LATE, 250_000, 10, 12));
        balance.push(charge_txn());
    }
    for d in 2..=11 {
        let run = reckon::recon::pull_statement(&s.app.engine, "stripe-eu", &day(d), "test")
            .await
            .unwrap();
        assert_eq!(run.status, "COMPLETED", "{run:?}");
    }
    let token = token(&s.app).await;
    let lines: Vec<String> = HISTORY[..paid]
        .iter()
        .map(|(id, amount, _, _, booked)| credit(*booked, *amount, id))
        .collect();
    let body = upload_csv(&s.app, &token, "history.csv", &lines).await;
    assert_eq!(body["matching"]["matched"], paid as i64, "{body}");
    assert_eq!(body["matching"]["late"], 0, "{body}");
    (s, token)
}

async fn run_match(s: &StripeApp, token: &str, on: i64) -> Value {
    s.clock.set((nov(on) + 8 * 3600) * 1_000_000);
    let app = &s.app;
    let res = app
        .client
        .post(format!("{}/api/v1/bank/match", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn late_state(app: &TestApp) -> String {
    sqlx::query_scalar("SELECT state FROM payouts WHERE payout_id = $1")
        .bind(LATE)
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap()
}

/// The late payout's tickets: (class, severity, status).
async fn late_tickets(app: &TestApp) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT class, severity, status FROM discrepancies WHERE provider_txn_id = $1 ORDER BY class",
    )
    .bind(LATE)
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

async fn expected(app: &TestApp, token: &str, query: &str) -> (u16, Value) {
    let res = app
        .client
        .get(format!("{}/api/v1/bank/expected{query}", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap())
}

fn row(day_: i64, payouts: i64, announced: i64, settled: (i64, i64), arrived: i64) -> Value {
    json!({
        "day": day(day_), "provider": "stripe-eu", "currency": "EUR",
        "payouts": payouts, "announced_minor": announced,
        "settled_days": settled.0, "settled_minor": settled.1,
        "expected_minor": announced + settled.1, "arrived_minor": arrived,
    })
}

async fn a_payout_past_its_usual_delay_is_late_until_its_credit_comes(b: Backend) {
    let (s, token) = with_history(b, 6).await;
    let app = &s.app;

    // The expected cash, worked out by hand: each payout on its announced
    // day; 11-11's 97.10 (no payout made since) at 11-11 + 2 days; the
    // bank's credits on the days it booked them (HIST4's a day late).
    let (status, cash) = expected(app, &token, "?from=2026-11-06&to=2026-11-16").await;
    assert_eq!(status, 200, "{cash}");
    assert_eq!(
        cash["delays"],
        json!([{"provider": "stripe-eu", "currency": "EUR", "samples": 6, "learned": true,
            "median_days": 2, "late_after_days": 3, "max_days": 3}])
    );
    assert_eq!(
        cash["days"],
        json!([
            row(6, 1, 103_000, (0, 0), 103_000),
            row(7, 1, 104_000, (0, 0), 0),
            row(8, 1, 105_000, (0, 0), 104_000 + 105_000),
            row(9, 1, 106_000, (0, 0), 106_000),
            row(12, 1, 250_000, (0, 0), 0),
            row(13, 0, 0, (1, 9_710), 0),
        ])
    );
    assert_eq!(
        (cash["from"].as_str(), cash["to"].as_str()),
        (Some("2026-11-06"), Some("2026-11-16"))
    );
    // The command line gives the same days.
    let out = app.cli(
        &[
            "bank",
            "expected",
            "--from",
            "2026-11-06",
            "--to",
            "2026-11-16",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["days"], cash["days"]);
    // A span backwards or not a day is refused, named.
    let (status, body) = expected(app, &token, "?from=2026-11-16&to=2026-11-06").await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = expected(app, &token, "?from=16.11.2026").await;
    assert_eq!(
        (
            status,
            body["error"]
                .as_str()
                .is_some_and(|e| e.contains("YYYY-MM-DD"))
        ),
        (400, true),
        "{body}"
    );

    // 11-13: the range (made 11-10 + 3 days) has not ended.
    let figures = run_match(&s, &token, 13).await;
    assert_eq!(figures["late"], 0, "{figures}");
    assert_eq!(late_state(app).await, "PENDING");
    // 11-14: past it, and before the 3-day window after 11-12 has passed.
    let figures = run_match(&s, &token, 14).await;
    assert_eq!(
        (figures["late"].as_i64(), figures["missing"].as_i64()),
        (Some(1), Some(0)),
        "{figures}"
    );
    assert_eq!(late_state(app).await, "PAYOUT_LATE");
    assert_eq!(
        late_tickets(app).await,
        [("PAYOUT_LATE".into(), "MEDIUM".into(), "OPEN".into())]
    );
    let details: String =
        sqlx::query_scalar("SELECT details FROM discrepancies WHERE class = 'PAYOUT_LATE'")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert!(
        details.contains("usually reach the bank 2 days"),
        "{details}"
    );
    // Raised once: the next pass finds it decided.
    assert_eq!(run_match(&s, &token, 14).await["late"], 0);
    // The bank page says so, and shows the expected cash.
    app.add_user(
        "fiona",
        app::types::Role::Operator,
        "a long finance password",
    )
    .await;
    assert_eq!(
        app.login("fiona", "a long finance password").await.status(),
        200
    );
    let html = app.get("/bank").await.text().await.unwrap();
    assert!(
        html.contains(&format!(
            "data-payout=\"{LATE}\" data-state=\"PAYOUT_LATE\""
        )),
        "the late payout on the bank page"
    );
    let at = html
        .find("id=\"bank-expected\"")
        .expect("the expected cash section");
    let section = &html[at..];
    let row_at = section
        .find("data-day=\"2026-11-13\"")
        .expect("11-13's expected cash");
    assert!(
        section[row_at..].contains("97.10"),
        "{}",
        &section[row_at..]
    );

    // 11-16: past the window too. Missing, but no second ticket.
    let figures = run_match(&s, &token, 16).await;
    assert_eq!(figures["missing"], 1, "{figures}");
    assert_eq!(late_state(app).await, "PAYOUT_MISSING");
    assert_eq!(
        late_tickets(app).await,
        [("PAYOUT_LATE".into(), "MEDIUM".into(), "OPEN".into())]
    );
    let actions: String =
        sqlx::query_scalar("SELECT actions FROM discrepancies WHERE class = 'PAYOUT_LATE'")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert!(actions.contains("past the bank window"), "{actions}");

    // 11-17: the credit, booked 11-16, arrives: matched, the ticket closed
    // by the pass, with its audit entry.
    s.clock.set((nov(17) + 8 * 3600) * 1_000_000);
    let body = upload_csv(app, &token, "late.csv", &[credit(16, 250_000, LATE)]).await;
    assert_eq!(body["matching"]["matched"], 1, "{body}");
    assert_eq!(late_state(app).await, "PAYOUT_MATCHED");
    assert_eq!(
        late_tickets(app).await,
        [("PAYOUT_LATE".into(), "MEDIUM".into(), "CLOSED".into())]
    );
    let conclusion: String =
        sqlx::query_scalar("SELECT conclusion FROM discrepancies WHERE class = 'PAYOUT_LATE'")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert!(conclusion.contains("booked 2026-11-16"), "{conclusion}");
    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT actor, action FROM audit_log WHERE object_type = 'ticket' ORDER BY seq",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        audited,
        [("reckon (bank matching)".into(), "ticket.close".into())]
    );
    // Arrived on 11-16, and now part of the history: seven payouts.
    let (_, cash) = expected(app, &token, "?from=2026-11-16&to=2026-11-16").await;
    assert_eq!(cash["days"], json!([row(16, 0, 0, (0, 0), 250_000)]));
    assert_eq!(cash["delays"][0]["samples"], 7);
    assert_eq!(count(app, "bank_statements").await, 2);
}

/// Four paid payouts are too few to learn from: nothing is late, nothing
/// is placed by a delay, and the fixed window's PAYOUT_MISSING decides.
async fn without_enough_history_nothing_is_late(b: Backend) {
    let (s, token) = with_history(b, 4).await;
    let app = &s.app;
    let (_, cash) = expected(app, &token, "?from=2026-11-12&to=2026-11-16").await;
    assert_eq!(
        cash["delays"],
        json!([{"provider": "stripe-eu", "currency": "EUR", "samples": 4, "learned": false,
            "median_days": null, "late_after_days": null, "max_days": null}])
    );
    // The announced payout only: 11-11's net has no usual day to go to.
    assert_eq!(cash["days"], json!([row(12, 1, 250_000, (0, 0), 0)]));
    let figures = run_match(&s, &token, 15).await;
    assert_eq!(
        (figures["late"].as_i64(), figures["missing"].as_i64()),
        (Some(0), Some(0)),
        "{figures}"
    );
    assert_eq!(late_state(app).await, "PENDING");
    let figures = run_match(&s, &token, 16).await;
    assert_eq!(
        (figures["late"].as_i64(), figures["missing"].as_i64()),
        (Some(0), Some(1)),
        "{figures}"
    );
    assert_eq!(
        late_tickets(app).await,
        [("PAYOUT_MISSING".into(), "HIGH".into(), "OPEN".into())]
    );
}

/// A late payout the provider then cancels will not come: its PAYOUT_LATE
/// ticket closes saying so, and it is no longer counted as expected.
async fn a_late_payout_the_provider_cancels_closes_its_ticket(b: Backend) {
    let (s, token) = with_history(b, 6).await;
    let app = &s.app;
    assert_eq!(run_match(&s, &token, 14).await["late"], 1);
    assert_eq!(late_state(app).await, "PAYOUT_LATE");
    {
        let mut balance = s.stripe.balance.lock().unwrap();
        let late = balance
            .iter_mut()
            .find(|t| t["source"]["id"] == LATE)
            .unwrap();
        late["source"]["status"] = "canceled".into();
    }
    // Day 10 read again: Stripe now says the payout was cancelled.
    let run = reckon::recon::pull_statement(&app.engine, "stripe-eu", &day(10), "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(late_state(app).await, "NOT_SENT");
    assert_eq!(
        late_tickets(app).await,
        [("PAYOUT_LATE".into(), "MEDIUM".into(), "CLOSED".into())]
    );
    let conclusion: String =
        sqlx::query_scalar("SELECT conclusion FROM discrepancies WHERE class = 'PAYOUT_LATE'")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert!(
        conclusion.contains("canceled") && conclusion.contains("will not reach the bank"),
        "{conclusion}"
    );
    let audited: Vec<(String, String)> = sqlx::query_as(
        "SELECT actor, action FROM audit_log WHERE object_type = 'ticket' ORDER BY seq",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        audited,
        [("reckon (bank matching)".into(), "ticket.close".into())]
    );
    // Not expected any more: no payout announced for its day.
    let (_, cash) = expected(app, &token, "?from=2026-11-12&to=2026-11-12").await;
    assert!(
        cash["days"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["announced_minor"] == 0),
        "{cash}"
    );
    // The next pass neither reopens it nor calls it missing.
    let figures = run_match(&s, &token, 16).await;
    assert_eq!(
        (figures["late"].as_i64(), figures["missing"].as_i64()),
        (Some(0), Some(0)),
        "{figures}"
    );
}

both_databases!(
    a_late_payout_the_provider_cancels_closes_its_ticket,
    a_payout_past_its_usual_delay_is_late_until_its_credit_comes,
    without_enough_history_nothing_is_late,
);
