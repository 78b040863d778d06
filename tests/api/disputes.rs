//! Disputes as a lifecycle, through Stripe's signed webhooks (the Dispute
//! object as stripe-node's `types/Disputes.d.ts` and the API reference
//! describe it; events `charge.dispute.*` signed as Stripe signs, see
//! `stripe::sign`) and Stripe's balance transactions: a dispute opens a
//! DISPUTE ticket due at the evidence due date, records the money it moves
//! once however often or in whatever order it is told, closes its ticket
//! when won or lost, and its balance rows match it instead of opening
//! REFUND_MISMATCH. Adyen's and PayPal's are in `adyen` and `paypal`. Each
//! on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::Backend;
use crate::stripe::{SECRET, StripeApp, sign, spawn_stripe_app_with};
use serde_json::{Value, json};

const HOUR: i64 = 3_600;

/// A paid Stripe payment: registered, then its intent's success event.
async fn paid(s: &StripeApp, order: &str, amount: i64) -> (String, String) {
    let p = s
        .app
        .register_payment("stripe-eu", order, amount, "EUR")
        .await;
    let pi = format!("pi_{p}");
    let body = json!({
        "id": format!("evt_paid_{p}"), "object": "event", "type": "payment_intent.succeeded",
        "created": s.now(),
        "data": { "object": {
            "id": pi, "object": "payment_intent", "amount": amount, "currency": "eur",
            "status": "succeeded", "metadata": { "payment_no": p }
        }}
    })
    .to_string();
    assert_eq!(
        s.post(&body, &sign(SECRET, s.now(), &body)).await.status(),
        200
    );
    assert_eq!(s.app.payment_state(&p).await.0, "SUCCEEDED");
    (p, pi)
}

/// A balance transaction of a dispute's, as the Dispute lists it.
fn movement(id: &str, category: &str, amount: i64, fee: i64, created: i64) -> Value {
    json!({
        "id": id, "object": "balance_transaction", "amount": amount, "currency": "eur",
        "fee": fee, "net": amount - fee, "created": created, "available_on": created,
        "reporting_category": category, "type": "adjustment", "status": "available",
    })
}

/// A `charge.dispute.*` event as Stripe sends it: the Dispute as it is
/// after the event.
#[allow(clippy::too_many_arguments)]
fn dispute_event(
    id: &str,
    kind: &str,
    created: i64,
    dp: &str,
    pi: &str,
    amount: i64,
    status: &str,
    due_by: i64,
    movements: Vec<Value>,
) -> String {
    json!({
        "id": id, "object": "event", "api_version": "2024-06-20", "created": created,
        "type": kind, "livemode": false, "pending_webhooks": 1,
        "data": { "object": {
            "id": dp, "object": "dispute", "amount": amount, "currency": "eur",
            "charge": format!("ch_{pi}"), "payment_intent": pi, "reason": "fraudulent",
            "status": status, "is_charge_refundable": false, "livemode": false, "metadata": {},
            "created": created,
            "evidence_details": { "due_by": due_by, "has_evidence": false, "past_due": false, "submission_count": 0 },
            "balance_transactions": movements,
        }}
    })
    .to_string()
}

#[derive(Debug, sqlx::FromRow)]
struct Ticket {
    discrepancy_id: String,
    severity: String,
    status: String,
    payment_no: Option<String>,
    sla_due_at: Option<i64>,
    conclusion: Option<String>,
}

async fn dispute_tickets(s: &StripeApp) -> Vec<Ticket> {
    sqlx::query_as(
        "SELECT discrepancy_id, severity, status, payment_no, sla_due_at, conclusion FROM discrepancies \
         WHERE class = 'DISPUTE' ORDER BY found_at",
    )
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap()
}

async fn dispute(s: &StripeApp, dp: &str) -> (String, Option<i64>, Option<i64>) {
    sqlx::query_as(
        "SELECT status, evidence_due_at, closed_at FROM disputes WHERE provider = 'stripe-eu' AND dispute_id = $1",
    )
    .bind(dp)
    .fetch_one(&s.app.accounts.db.pool)
    .await
    .unwrap()
}

async fn count(s: &StripeApp, sql: &str) -> i64 {
    sqlx::query_scalar(sql)
        .fetch_one(&s.app.accounts.db.pool)
        .await
        .unwrap()
}

impl StripeApp {
    async fn send(&self, body: &str) {
        let status = self
            .post(body, &sign(SECRET, self.now(), body))
            .await
            .status();
        assert_eq!(status, 200, "{body}");
    }
}

async fn a_stripe_dispute_is_ticketed_due_at_its_evidence_date_and_closed_when_won(b: Backend) {
    let s = spawn_stripe_app_with(b, |_| {}).await;
    let engine = s.app.engine.clone();
    let (p, pi) = paid(&s, "DSP-1", 4200).await;
    let t0 = s.now();
    // The answer is due in 2 hours: well inside the class's own SLA hours,
    // so only the ticket's own due time can make it overdue at 3 hours.
    let due = t0 + 2 * HOUR;
    let created = dispute_event(
        "evt_dp_1",
        "charge.dispute.created",
        t0,
        "dp_1",
        &pi,
        4200,
        "needs_response",
        due,
        vec![],
    );
    s.send(&created).await;
    assert_eq!(
        dispute(&s, "dp_1").await,
        ("OPEN".into(), Some(due * 1_000_000), None)
    );
    let tickets = dispute_tickets(&s).await;
    assert_eq!(tickets.len(), 1, "{tickets:?}");
    let ticket = &tickets[0];
    assert_eq!(
        (
            ticket.severity.as_str(),
            ticket.status.as_str(),
            ticket.payment_no.as_deref()
        ),
        ("HIGH", "OPEN", Some(p.as_str()))
    );
    assert_eq!(
        ticket.sla_due_at,
        Some(due * 1_000_000),
        "the evidence due date is its SLA"
    );
    // The dispute moves no payment: still paid, by the one event.
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));

    // Overdue at its own due time, not its class's hours.
    let overdue = "SELECT COUNT(*) FROM alerts WHERE kind = 'sla_overdue'";
    let raised = reckon::triage::sla::raise_overdue(&engine, (due - 60) * 1_000_000)
        .await
        .unwrap();
    assert_eq!(raised, 0, "not before its due time");
    let raised = reckon::triage::sla::raise_overdue(&engine, (t0 + 3 * HOUR) * 1_000_000)
        .await
        .unwrap();
    assert_eq!(raised, 1, "past its due time");
    assert_eq!(count(&s, overdue).await, 1);

    // The money taken, with Stripe's dispute fee; told twice (a
    // redelivery: the same event, signed again), counted once.
    let withdrawn = movement("txn_dpw_1", "dispute", -4200, 1500, t0 + 60);
    let funds = dispute_event(
        "evt_dp_2",
        "charge.dispute.funds_withdrawn",
        t0 + 60,
        "dp_1",
        &pi,
        4200,
        "needs_response",
        due,
        vec![withdrawn.clone()],
    );
    s.send(&funds).await;
    s.send(&funds).await;
    assert_eq!(
        s.app.redeliveries("stripe-eu", "evt_dp_2").await.0,
        1,
        "a duplicate"
    );
    assert_eq!(count(&s, "SELECT COUNT(*) FROM dispute_movements").await, 1);
    assert_eq!(count(&s, "SELECT COUNT(*) FROM dispute_events").await, 2);

    // Won: the money given back, the fee too; the ticket closes by itself
    // with an audit entry, its detail showing the dispute's history.
    let reinstated = movement("txn_dpr_1", "dispute_reversal", 4200, -1500, t0 + 120);
    let won = dispute_event(
        "evt_dp_3",
        "charge.dispute.closed",
        t0 + 120,
        "dp_1",
        &pi,
        4200,
        "won",
        due,
        vec![withdrawn.clone(), reinstated.clone()],
    );
    s.send(&won).await;
    let (status, _, closed_at) = dispute(&s, "dp_1").await;
    assert_eq!(
        (status.as_str(), closed_at),
        ("WON", Some((t0 + 120) * 1_000_000))
    );
    let ticket = &dispute_tickets(&s).await[0];
    assert_eq!(ticket.status, "CLOSED");
    assert!(
        ticket
            .conclusion
            .as_deref()
            .is_some_and(|c| c.contains("dp_1 WON")),
        "{ticket:?}"
    );
    let audited = count(
        &s,
        &format!(
            "SELECT COUNT(*) FROM audit_log WHERE action = 'ticket.close' AND object_id = '{}'",
            ticket.discrepancy_id
        ),
    )
    .await;
    assert_eq!(audited, 1);
    // funds_reinstated, made before the close but delivered after it: kept
    // in the history, moves nothing back, counts its money once.
    let late = dispute_event(
        "evt_dp_4",
        "charge.dispute.funds_reinstated",
        t0 + 110,
        "dp_1",
        &pi,
        4200,
        "under_review",
        due,
        vec![withdrawn, reinstated],
    );
    s.send(&late).await;
    assert_eq!(dispute(&s, "dp_1").await.0, "WON");
    assert_eq!(dispute_tickets(&s).await[0].status, "CLOSED");
    assert_eq!(count(&s, "SELECT COUNT(*) FROM dispute_movements").await, 2);
    assert_eq!(
        count(&s, "SELECT COUNT(*) FROM dispute_events WHERE applied = 0").await,
        1
    );
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));

    // The day's close: 42.00 disputed and 42.00 reinstated, the fee given
    // back, nothing open at the day's end.
    let day = jiff::Timestamp::from_second(t0)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    let figures = reckon::recon::disputes_of_day(&engine, "stripe-eu", &day)
        .await
        .unwrap();
    assert_eq!(figures.len(), 1, "{figures:?}");
    let f = &figures[0];
    assert_eq!(
        (
            f.currency.as_str(),
            f.withdrawn_minor,
            f.reinstated_minor,
            f.fees_minor,
            f.open_count
        ),
        ("EUR", 4200, 4200, 0, 0),
        "{f:?}"
    );
    // And in the signed close of the day (its balance pulled: the charge
    // and both dispute rows, matched to the dispute).
    let day_start = jiff::Timestamp::from_second(t0)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .start_of_day()
        .unwrap()
        .timestamp()
        .as_second();
    let row = |id: &str, category: &str, kind: &str, amount: i64, at: i64, source: Value| {
        json!({
            "id": id, "object": "balance_transaction", "amount": amount, "available_on": at,
            "balance_type": "payments", "created": at, "currency": "eur", "description": null,
            "exchange_rate": null, "fee": 0, "fee_details": [], "net": amount,
            "reporting_category": category, "status": "available", "type": kind, "source": source,
        })
    };
    let dispute_source = json!({ "id": "dp_1", "object": "dispute", "amount": 4200, "currency": "eur",
        "charge": format!("ch_{pi}"), "payment_intent": pi, "metadata": {}, "status": "won" });
    *s.stripe.balance.lock().unwrap() = vec![
        row(
            "txn_c1",
            "charge",
            "charge",
            4200,
            day_start + 1,
            json!({ "id": format!("ch_{pi}"),
            "object": "charge", "amount": 4200, "amount_captured": 4200, "currency": "eur",
            "payment_intent": pi, "metadata": { "payment_no": p }, "status": "succeeded" }),
        ),
        row(
            "txn_dpw_1",
            "dispute",
            "adjustment",
            -4200,
            day_start + 2,
            dispute_source.clone(),
        ),
        row(
            "txn_dpr_1",
            "dispute_reversal",
            "adjustment",
            4200,
            day_start + 3,
            dispute_source,
        ),
    ];
    let run = reckon::recon::pull_statement(&engine, "stripe-eu", &day, "test")
        .await
        .unwrap();
    let figures: Value = serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(figures["classes"]["MATCHED"], 3, "{figures}");
    // Every row matched, no ticket open on the day: it closed by itself.
    let (close, _) = reckon::recon::day_close(&engine, "stripe-eu", &day)
        .await
        .unwrap();
    let close = close.expect("the day closed after its run");
    let body: Value = serde_json::from_str(&close.body_json).unwrap();
    assert_eq!(
        body["disputes"],
        json!([{ "currency": "EUR", "withdrawn_minor": 4200, "reinstated_minor": 4200,
            "fees_minor": 0, "open_count": 0, "open_minor": 0 }]),
        "{body}"
    );
}

async fn a_lost_dispute_told_out_of_order_ends_lost(b: Backend) {
    let s = spawn_stripe_app_with(b, |_| {}).await;
    let engine = s.app.engine.clone();
    let (p, pi) = paid(&s, "DSP-2", 1500).await;
    let t0 = s.now();
    let due = t0 + 7 * 24 * HOUR;
    let withdrawn = movement("txn_dpw_2", "dispute", -1500, 1500, t0 + 5);
    // Evidence submitted (made second) arrives first; then the creation.
    let review = dispute_event(
        "evt_l_2",
        "charge.dispute.updated",
        t0 + 30,
        "dp_2",
        &pi,
        1500,
        "under_review",
        due,
        vec![withdrawn.clone()],
    );
    s.send(&review).await;
    assert_eq!(dispute(&s, "dp_2").await.0, "EVIDENCE_SUBMITTED");
    let created = dispute_event(
        "evt_l_1",
        "charge.dispute.created",
        t0,
        "dp_2",
        &pi,
        1500,
        "needs_response",
        due,
        vec![],
    );
    s.send(&created).await;
    assert_eq!(
        dispute(&s, "dp_2").await.0,
        "EVIDENCE_SUBMITTED",
        "not moved back"
    );
    let opened = count(
        &s,
        "SELECT opened_at FROM disputes WHERE dispute_id = 'dp_2'",
    )
    .await;
    assert_eq!(opened, t0 * 1_000_000, "opened when the provider opened it");
    assert_eq!(
        dispute_tickets(&s).await.len(),
        1,
        "one ticket for the dispute"
    );
    assert_eq!(dispute_tickets(&s).await[0].status, "OPEN");

    // Open at the day's end before it is decided.
    let day = jiff::Timestamp::from_second(t0)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    let open = reckon::recon::disputes_of_day(&engine, "stripe-eu", &day)
        .await
        .unwrap();
    assert_eq!(
        (open[0].open_count, open[0].open_minor),
        (1, 1500),
        "{open:?}"
    );

    let lost = dispute_event(
        "evt_l_3",
        "charge.dispute.closed",
        t0 + 90,
        "dp_2",
        &pi,
        1500,
        "lost",
        due,
        vec![withdrawn.clone()],
    );
    s.send(&lost).await;
    // A late update made before the loss changes nothing.
    let stale = dispute_event(
        "evt_l_4",
        "charge.dispute.updated",
        t0 + 60,
        "dp_2",
        &pi,
        1500,
        "under_review",
        due,
        vec![withdrawn],
    );
    s.send(&stale).await;
    assert_eq!(dispute(&s, "dp_2").await.0, "LOST");
    let ticket = &dispute_tickets(&s).await[0];
    assert_eq!(ticket.status, "CLOSED");
    assert!(
        ticket
            .conclusion
            .as_deref()
            .is_some_and(|c| c.contains("LOST")),
        "{ticket:?}"
    );
    assert_eq!(
        count(&s, "SELECT COUNT(*) FROM dispute_events WHERE applied = 0").await,
        2,
        "the creation and the stale update were kept, not applied"
    );
    let f = &reckon::recon::disputes_of_day(&engine, "stripe-eu", &day)
        .await
        .unwrap()[0];
    assert_eq!(
        (
            f.withdrawn_minor,
            f.reinstated_minor,
            f.fees_minor,
            f.open_count
        ),
        (1500, 0, 1500, 0),
        "{f:?}"
    );
    // Its payment is still paid: a lost dispute is money on the close, not
    // a payment's state.
    assert_eq!(s.app.payment_state(&p).await, ("SUCCEEDED".to_string(), 1));

    // Read through the API with a recon:read token; a status that is not
    // one is refused.
    let token = s
        .app
        .api_token_with("disputes", &[app::tokens::Scope::ReconRead])
        .await;
    let get = |query: &str| {
        s.app
            .client
            .get(format!("{}/api/v1/disputes{query}", s.app.base))
            .bearer_auth(&token)
            .send()
    };
    let listed: Value = get("?provider=stripe-eu&status=LOST")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let d = &listed["disputes"][0];
    assert_eq!(
        listed["disputes"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    assert_eq!(
        (
            d["dispute_id"].as_str(),
            d["status"].as_str(),
            d["withdrawn_minor"].as_i64()
        ),
        (Some("dp_2"), Some("LOST"), Some(1500)),
        "{d}"
    );
    assert_eq!(d["fee_minor"], 1500);
    assert_eq!(d["payment_no"], p.as_str());
    let none: Value = get("?status=WON").await.unwrap().json().await.unwrap();
    assert_eq!(none["disputes"], json!([]));
    assert_eq!(get("?status=GONE").await.unwrap().status(), 400);
}

/// A balance transaction as Stripe lists it, its Dispute expanded.
fn balance_dispute(id: &str, category: &str, amount: i64, at: i64, dp: &str, pi: &str) -> Value {
    json!({
        "id": id, "object": "balance_transaction", "amount": amount, "available_on": at,
        "balance_type": "payments", "created": at, "currency": "eur", "description": null,
        "exchange_rate": null, "fee": 1500, "fee_details": [], "net": amount - 1500,
        "reporting_category": category, "status": "available", "type": "adjustment",
        "source": { "id": dp, "object": "dispute", "amount": amount.abs(), "currency": "eur",
            "charge": format!("ch_{pi}"), "payment_intent": pi, "metadata": {},
            "reason": "fraudulent", "status": "needs_response" },
    })
}

async fn a_stripe_balance_dispute_row_matches_its_dispute_and_an_unknown_one_is_ticketed(
    b: Backend,
) {
    let s = spawn_stripe_app_with(b, |_| {}).await;
    let engine = s.app.engine.clone();
    let (p, pi) = paid(&s, "DSP-3", 4200).await;
    let t0 = s.now();
    let created = dispute_event(
        "evt_k_1",
        "charge.dispute.created",
        t0,
        "dp_known",
        &pi,
        4200,
        "needs_response",
        t0 + 9 * 24 * HOUR,
        vec![],
    );
    s.send(&created).await;
    let day = jiff::Timestamp::from_second(t0)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let start = day
        .to_zoned(jiff::tz::TimeZone::UTC)
        .unwrap()
        .timestamp()
        .as_second();
    // The day's balance: the known dispute's money taken, and a dispute of
    // a charge Reckon never heard a notification of.
    let charge = json!({
        "id": "txn_charge", "object": "balance_transaction", "amount": 4200, "available_on": start + 5,
        "balance_type": "payments", "created": start + 5, "currency": "eur", "description": null,
        "exchange_rate": null, "fee": 0, "fee_details": [], "net": 4200,
        "reporting_category": "charge", "status": "available", "type": "charge",
        "source": { "id": format!("ch_{pi}"), "object": "charge", "amount": 4200, "amount_captured": 4200,
            "currency": "eur", "payment_intent": pi, "metadata": { "payment_no": p }, "status": "succeeded" },
    });
    *s.stripe.balance.lock().unwrap() = vec![
        charge,
        balance_dispute("txn_known", "dispute", -4200, start + 10, "dp_known", &pi),
        balance_dispute(
            "txn_stranger",
            "dispute",
            -900,
            start + 20,
            "dp_stranger",
            "pi_stranger",
        ),
    ];
    let run = reckon::recon::pull_statement(&engine, "stripe-eu", &day.to_string(), "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    let found: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT class, severity, details FROM discrepancies WHERE source = 'recon' ORDER BY class",
    )
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    let (class, severity, details) = &found[0];
    assert_eq!((class.as_str(), severity.as_str()), ("DISPUTE", "HIGH"));
    assert!(
        details.contains("dp_stranger") && details.contains("no notification"),
        "{details}"
    );
    assert_eq!(
        count(
            &s,
            "SELECT COUNT(*) FROM discrepancies WHERE class = 'REFUND_MISMATCH'"
        )
        .await,
        0
    );
    let figures: Value = serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(
        figures["classes"]["MATCHED"], 2,
        "the charge and the known dispute's row: {figures}"
    );

    // The stranger's notification arriving later takes up the run's ticket
    // (no second one), due at its evidence date.
    let late = dispute_event(
        "evt_s_1",
        "charge.dispute.created",
        t0,
        "dp_stranger",
        "pi_stranger",
        900,
        "needs_response",
        t0 + 5 * 24 * HOUR,
        vec![],
    );
    s.send(&late).await;
    let due: Vec<(String, Option<i64>)> = sqlx::query_as(
        "SELECT dedupe_key, sla_due_at FROM discrepancies WHERE class = 'DISPUTE' ORDER BY dedupe_key",
    )
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        due.len(),
        2,
        "the known dispute's and the stranger's: {due:?}"
    );
    let stranger = due.iter().find(|(k, _)| k.starts_with("recon:")).unwrap();
    assert_eq!(stranger.1, Some((t0 + 5 * 24 * HOUR) * 1_000_000));
}

/// `reckon dispute list` reads the disputes from the database as the API
/// does; a status that is not one is refused with a clear word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reckon_dispute_list_lists_the_disputes_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let reckon = {
        let data = data.clone();
        move |args: &[&str]| {
            std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
                .args(args)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("RECKON_DATA_DIR", &data)
                .output()
                .unwrap()
        }
    };
    let migrated = tokio::task::spawn_blocking({
        let reckon = reckon.clone();
        move || reckon(&["migrate"])
    })
    .await
    .unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let url = format!("sqlite://{}", data.join("reckon.db").display());
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    for (id, status, opened) in [("dp_a", "OPEN", 10), ("dp_b", "LOST", 20)] {
        sqlx::query(
            "INSERT INTO disputes (provider, dispute_id, amount_minor, currency, status, provider_status, \
               status_rank, last_event_at, opened_at, updated_at) VALUES ('stripe-eu', $1, 900, 'EUR', $2, $3, 2, $4, $4, $4)",
        )
        .bind(id)
        .bind(status)
        .bind(status.to_lowercase())
        .bind(opened)
        .execute(&pool)
        .await
        .unwrap();
    }
    sqlx::query(
        "INSERT INTO dispute_movements (provider, movement_id, dispute_id, kind, amount_minor, fee_minor, currency, moved_at) \
         VALUES ('stripe-eu', 'txn_b', 'dp_b', 'WITHDRAWN', 900, 1500, 'EUR', 20)",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
    let out = tokio::task::spawn_blocking({
        let reckon = reckon.clone();
        move || reckon(&["dispute", "list", "--status", "LOST"])
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["dispute_id"], "dp_b");
    assert_eq!(
        (
            listed[0]["withdrawn_minor"].as_i64(),
            listed[0]["fee_minor"].as_i64()
        ),
        (Some(900), Some(1500))
    );
    let all = tokio::task::spawn_blocking({
        let reckon = reckon.clone();
        move || reckon(&["dispute", "list"])
    })
    .await
    .unwrap();
    let all: Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(all[0]["dispute_id"], "dp_b", "newest opened first: {all}");
    assert_eq!(all.as_array().map(Vec::len), Some(2));
    let bad = tokio::task::spawn_blocking(move || reckon(&["dispute", "list", "--status", "GONE"]))
        .await
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected one of"));
}

both_databases!(
    a_stripe_dispute_is_ticketed_due_at_its_evidence_date_and_closed_when_won,
    a_lost_dispute_told_out_of_order_ends_lost,
    a_stripe_balance_dispute_row_matches_its_dispute_and_an_unknown_one_is_ticketed,
);
