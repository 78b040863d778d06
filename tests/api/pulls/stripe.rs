//! Stripe's statement pulled through `GET /v1/balance_transactions`, from
//! the fake in `stripe` speaking Stripe's list format (Bearer auth,
//! `created` bounds, `starting_after`, `has_more`, expanded sources), on a
//! business day cut in Shanghai time. Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::Backend;
use crate::stripe::{API_KEY, FakeStripe, SECRET, StripeApp, serve, sign, spawn_stripe_app_with};
use serde_json::{Value, json};

/// 2026-12-01 in Asia/Shanghai starts at 2026-11-30 16:00 UTC.
const DAY: &str = "2026-12-01";
const DAY_START: i64 = 1_796_054_400;
const DAY_END: i64 = DAY_START + 86_400;
/// 2026-11-30 20:00 UTC: early morning of DAY in Shanghai.
const NOW: i64 = 1_796_068_800;

async fn spawn(b: Backend, edit: impl FnOnce(&mut reckon::config::Config)) -> StripeApp {
    let s = spawn_stripe_app_with(b, |c| {
        c.timezone = "Asia/Shanghai".into();
        edit(c);
    })
    .await;
    s.clock.set(NOW * 1_000_000);
    s
}

/// Payments of `stripe-eu` created through the fake, each intent then
/// settled at Stripe with `status` and read back by the status query:
/// (payment_no, intent id).
async fn payments(s: &StripeApp, wanted: &[(&str, i64, &str, &str)]) -> Vec<(String, String)> {
    let mut made = Vec::new();
    for (order, amount, currency, _) in wanted {
        made.push(
            s.app
                .register_payment("stripe-eu", order, *amount, currency)
                .await,
        );
    }
    let engine = s.app.engine.clone();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let mut out = Vec::new();
    for (p, (_, _, _, status)) in made.iter().zip(wanted) {
        let mut intents = s.stripe.intents.lock().unwrap();
        let (id, intent) = intents
            .iter_mut()
            .find(|(_, i)| i["metadata"]["payment_no"] == p.as_str())
            .unwrap();
        intent["status"] = (*status).into();
        out.push((p.clone(), id.clone()));
    }
    s.clock.advance_secs(61);
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    out
}

/// A balance transaction as Stripe keeps it, its source expanded.
fn txn(id: &str, kind: &str, category: &str, amount: i64, at: i64, source: Value) -> Value {
    json!({
        "id": id, "object": "balance_transaction", "amount": amount, "available_on": at + 2 * 86_400,
        "balance_type": "payments", "created": at, "currency": "eur", "description": null,
        "exchange_rate": null, "fee": 0, "fee_details": [], "net": amount,
        "reporting_category": category, "source": source, "status": "pending", "type": kind,
    })
}

fn charge(id: &str, intent: &str, payment_no: &str, amount: i64, currency: &str) -> Value {
    let metadata = if payment_no.is_empty() {
        json!({})
    } else {
        json!({ "payment_no": payment_no })
    };
    json!({
        "id": id, "object": "charge", "amount": amount, "amount_captured": amount,
        "currency": currency, "payment_intent": intent, "metadata": metadata, "status": "succeeded",
    })
}

async fn tickets(s: &StripeApp) -> Vec<(String, String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT class, severity, status, payment_no FROM discrepancies WHERE source = 'recon' ORDER BY class, payment_no",
    )
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap()
}

async fn a_stripe_day_pulled_through_balance_transactions_makes_exactly_its_tickets(b: Backend) {
    let s = spawn(b, |_| {}).await;
    let made = payments(
        &s,
        &[
            ("SP-A", 4200, "EUR", "succeeded"),
            ("SP-B", 2000, "EUR", "processing"),
            ("SP-D", 3000, "EUR", "succeeded"),
            ("SP-E", 1000, "EUR", "succeeded"),
            ("SP-F", 1000, "USD", "succeeded"),
        ],
    )
    .await;
    let [a, lag, local_only, amount, converted] = &made[..] else {
        unreachable!()
    };
    assert_eq!(s.app.payment_state(&lag.0).await.0, "PENDING");
    // STATUS_LAG: succeeded at Stripe, its event lost.
    s.stripe.intents.lock().unwrap().get_mut(&lag.1).unwrap()["status"] = "succeeded".into();

    // A refund of A, asked through Reckon and settled by its event.
    let engine = s.app.engine.clone();
    let req = reckon::engine::CreateRefund {
        amount_minor: 1200,
        currency: None,
        reason: "requested_by_customer".into(),
    };
    let refund = engine
        .request_refund("test", "sp-r1", &a.0, &req)
        .await
        .unwrap();
    assert!(refund["refund_no"].is_string(), "{refund}");
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    let mut re = s
        .stripe
        .refunds
        .lock()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    re["status"] = "succeeded".into();
    let updated = json!({"id": "evt_sp_r1", "object": "event", "type": "refund.updated",
        "data": {"object": re.clone()}})
    .to_string();
    let status = s
        .post(&updated, &sign(SECRET, s.now(), &updated))
        .await
        .status();
    assert_eq!(status, 200);
    re["charge"] = "ch_a".into();

    let t = NOW;
    let mut converted_txn = txn(
        "txn_f",
        "charge",
        "charge",
        921,
        t + 5,
        charge("ch_f", &converted.1, &converted.0, 1000, "usd"),
    );
    converted_txn["exchange_rate"] = json!(0.921);
    let mut charge_a = txn(
        "txn_a",
        "charge",
        "charge",
        4200,
        t + 1,
        charge("ch_a", &a.1, &a.0, 4200, "eur"),
    );
    // The charge's fee: the row's `fee`, `net` after it.
    charge_a["fee"] = json!(152);
    charge_a["net"] = json!(4048);
    *s.stripe.balance.lock().unwrap() = vec![
        charge_a,
        txn("txn_ra", "refund", "refund", -1200, t + 2, re),
        txn(
            "txn_b",
            "charge",
            "charge",
            2000,
            t + 3,
            charge("ch_b", &lag.1, &lag.0, 2000, "eur"),
        ),
        // AMOUNT_MISMATCH: Stripe has 9.00 of the 10.00 payment.
        txn(
            "txn_e",
            "charge",
            "charge",
            900,
            t + 4,
            charge("ch_e", &amount.1, &amount.0, 900, "eur"),
        ),
        converted_txn,
        // PROVIDER_ONLY: a charge Reckon never made.
        txn(
            "txn_c",
            "payment",
            "charge",
            1234,
            t + 6,
            charge("ch_c", "pi_stranger", "", 1234, "eur"),
        ),
        // REFUND_MISMATCH: a refund made in the dashboard.
        txn(
            "txn_dash",
            "refund",
            "refund",
            -500,
            t + 7,
            json!({"id": "re_dash", "object": "refund",
            "amount": 500, "currency": "eur", "charge": "ch_a", "payment_intent": a.1,
            "metadata": {}, "status": "succeeded"}),
        ),
        // DISPUTE: E's money taken back by a dispute no notification told of.
        txn(
            "txn_dp",
            "adjustment",
            "dispute",
            -900,
            t + 8,
            json!({"id": "dp_e", "object": "dispute",
            "amount": 900, "currency": "eur", "charge": "ch_e", "payment_intent": amount.1,
            "metadata": {}, "reason": "fraudulent", "status": "needs_response"}),
        ),
        // Not Reckon's business: a fee and a payout.
        txn("txn_fee", "stripe_fee", "fee", -500, t + 9, Value::Null),
        txn(
            "txn_po",
            "payout",
            "payout",
            -9000,
            t + 10,
            json!({"id": "po_1", "object": "payout",
            "amount": 9000, "currency": "eur", "metadata": {}}),
        ),
        // Outside the day in Shanghai (inside it in UTC): not listed.
        txn(
            "txn_before",
            "charge",
            "charge",
            777,
            DAY_START - 1,
            charge("ch_x", "pi_x", "", 777, "eur"),
        ),
        txn(
            "txn_after",
            "charge",
            "charge",
            778,
            DAY_END,
            charge("ch_y", "pi_y", "", 778, "eur"),
        ),
    ];
    s.stripe.listing.lock().unwrap().page_size = 3;

    let run = reckon::recon::pull_statement(&engine, "stripe-eu", DAY, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(
        run.rows_read, 8,
        "10 listed, the fee and the payout skipped"
    );

    // Four pages of three, each after the last id of the one before.
    let asked = s.stripe.listing.lock().unwrap().asked.clone();
    assert_eq!(asked.len(), 4, "{asked:?}");
    let arg =
        |q: &Vec<(String, String)>, k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    for (i, q) in asked.iter().enumerate() {
        assert_eq!(arg(q, "created[gte]"), Some(DAY_START.to_string()));
        assert_eq!(arg(q, "created[lt]"), Some(DAY_END.to_string()));
        assert_eq!(arg(q, "limit").as_deref(), Some("100"));
        assert_eq!(arg(q, "expand[]").as_deref(), Some("data.source"));
        let after = ["txn_dp", "txn_f", "txn_ra"];
        assert_eq!(
            arg(q, "starting_after").as_deref(),
            i.checked_sub(1).map(|p| after[p]),
            "page {}",
            i + 1
        );
    }
    let summary: String = crate::reads::run_summary(&s.app.accounts.db.pool, &run.run_id).await;
    let summary: Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        summary["checks"],
        json!([
            {"what": "rows", "stated": 8, "read": 8},
            {"what": "total_minor", "stated": 4200 + 1200 + 2000 + 900 + 1000 + 1234 + 500 + 900,
             "read": 4200 + 1200 + 2000 + 900 + 1000 + 1234 + 500 + 900},
        ]),
        "{summary}"
    );

    let found = tickets(&s).await;
    let by_class: Vec<(&str, &str, &str, Option<&str>)> = found
        .iter()
        .map(|(c, sev, st, p)| (c.as_str(), sev.as_str(), st.as_str(), p.as_deref()))
        .collect();
    assert_eq!(
        by_class,
        [
            ("AMOUNT_MISMATCH", "HIGH", "OPEN", Some(amount.0.as_str())),
            ("DISPUTE", "HIGH", "OPEN", None),
            (
                "LOCAL_ONLY",
                "CRITICAL",
                "OPEN",
                Some(local_only.0.as_str())
            ),
            ("PROVIDER_ONLY", "HIGH", "OPEN", None),
            ("REFUND_MISMATCH", "HIGH", "OPEN", None),
            ("STATUS_LAG", "MEDIUM", "OPEN", Some(lag.0.as_str())),
        ],
        "{found:?}"
    );
    let figures: Value = serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(
        figures["matched"], 3,
        "A, A's refund and the converted F: {figures}"
    );
    // The refund Reckon did not ask for (the dashboard's) and the dispute
    // carry no payment_no: each ticket names the charge's intent.
    let txns: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT class, provider_txn_id FROM discrepancies WHERE class IN ('REFUND_MISMATCH', 'DISPUTE') ORDER BY class",
    )
    .fetch_all(&s.app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        txns,
        [
            ("DISPUTE".to_owned(), Some(amount.1.clone())),
            ("REFUND_MISMATCH".to_owned(), Some(a.1.clone()))
        ]
    );
}

/// The seed's drill 7 on Stripe: page 2 answers 500, the run fails with its
/// cursor; a 429 fails the resume; the next resume finishes, each row once.
async fn a_stripe_pull_broken_on_page_two_resumes_without_counting_a_row_twice(b: Backend) {
    let s = spawn(b, |_| {}).await;
    let wanted: Vec<(String, i64)> = (0..5).map(|i| (format!("SP-P{i}"), 1000 + i)).collect();
    let spec: Vec<(&str, i64, &str, &str)> = wanted
        .iter()
        .map(|(o, a)| (o.as_str(), *a, "EUR", "succeeded"))
        .collect();
    let made = payments(&s, &spec).await;
    *s.stripe.balance.lock().unwrap() = made
        .iter()
        .zip(&wanted)
        .enumerate()
        .map(|(i, ((p, intent), (_, amount)))| {
            let id = format!("txn_p{i}");
            txn(
                &id,
                "charge",
                "charge",
                *amount,
                NOW + i as i64,
                charge(&format!("ch_p{i}"), intent, p, *amount, "eur"),
            )
        })
        .collect();
    {
        let mut l = s.stripe.listing.lock().unwrap();
        l.page_size = 2;
        l.fail_calls = vec![(2, 500), (3, 429)];
    }
    let engine = s.app.engine.clone();
    let err = reckon::recon::pull_statement(&engine, "stripe-eu", DAY, "test")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("pull interrupted after 2 rows"), "{err}");
    assert!(err.contains("500"), "{err}");
    let run_id = err
        .split_whitespace()
        .find(|w| w.starts_with("RUN"))
        .unwrap()
        .trim_end_matches(':')
        .to_owned();
    let pool = &s.app.accounts.db.pool;
    let (status, cursor): (String, Option<String>) =
        sqlx::query_as("SELECT status, cursor FROM recon_runs WHERE run_id = $1")
            .bind(&run_id)
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(status, "FAILED");
    // Newest first: the first page was txn_p4 and txn_p3.
    assert_eq!(cursor.as_deref(), Some("txn_p3;rows=2;total_minor=2007"));
    let again = reckon::recon::resume_run(&engine, &run_id)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        again.contains("429") && again.contains("after 2 rows"),
        "{again}"
    );
    let run = reckon::recon::resume_run(&engine, &run_id).await.unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(run.rows_read, 5);
    let (rows, distinct, total): (i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT provider_txn_id), CAST(SUM(amount_minor) AS BIGINT) FROM recon_rows WHERE run_id = $1",
    )
    .bind(&run_id)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!((rows, distinct, total), (5, 5, 5010), "no row twice");
    let asked = s.stripe.listing.lock().unwrap().asked.clone();
    let after: Vec<Option<&str>> = asked
        .iter()
        .map(|q| {
            q.iter()
                .find(|(k, _)| k == "starting_after")
                .map(|(_, v)| v.as_str())
        })
        .collect();
    assert_eq!(
        after,
        [
            None,
            Some("txn_p3"),
            Some("txn_p3"),
            Some("txn_p3"),
            Some("txn_p1")
        ],
        "each resume goes on from the saved cursor"
    );
    let figures: Value = serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(figures["matched"], 5, "{figures}");
    assert!(tickets(&s).await.is_empty());
}

/// A key Stripe refuses fails the run naming the key; a slow answer is a
/// timeout the run fails with, resumable.
async fn a_refused_key_and_a_slow_answer_fail_the_stripe_pull_clearly(b: Backend) {
    let s = spawn(b, |c| {
        if let Some(reckon::config::ProviderConfig::Stripe(p)) = c.providers.first_mut() {
            p.api_key = "sk_test_wrong".into();
        }
    })
    .await;
    let engine = s.app.engine.clone();
    let err = reckon::recon::pull_statement(&engine, "stripe-eu", DAY, "test")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refused the api_key of provider stripe-eu")
            && err.contains("401")
            && err.contains("Invalid API Key"),
        "{err}"
    );
    let staged: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM recon_rows")
        .fetch_one(&s.app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(staged, 0);

    let s = spawn(b, |c| {
        if let Some(reckon::config::ProviderConfig::Stripe(p)) = c.providers.first_mut() {
            p.timeout_ms = Some(300);
        }
    })
    .await;
    s.stripe.listing.lock().unwrap().delay_ms = 2_000;
    let engine = s.app.engine.clone();
    let err = reckon::recon::pull_statement(&engine, "stripe-eu", DAY, "test")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("timed out") && err.contains("resume"), "{err}");
}

/// `reckon recon pull --provider stripe-eu --date D`: the command pulls
/// the day through the API key of the configured account and prints the
/// completed run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reckon_recon_pull_pulls_a_stripe_day_from_the_command_line() {
    let stripe = FakeStripe::default();
    *stripe.balance.lock().unwrap() = vec![
        txn(
            "txn_cli",
            "charge",
            "charge",
            1234,
            DAY_START + 60,
            charge("ch_cli", "pi_cli", "", 1234, "eur"),
        ),
        txn(
            "txn_cli_fee",
            "stripe_fee",
            "fee",
            -40,
            DAY_START + 61,
            Value::Null,
        ),
    ];
    let base = serve(stripe.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("reckon.toml");
    std::fs::write(
        &config,
        format!(
            "[[providers]]\nname = \"stripe-eu\"\nkind = \"stripe\"\nbase_url = \"{base}\"\nsecret = \"{SECRET}\"\napi_key = \"{API_KEY}\"\n"
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
            .args(["recon", "pull", "--provider", "stripe-eu", "--date", DAY])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RECKON_CONFIG", &config)
            .env("RECKON_DATA_DIR", &data)
            .env("RECKON_TIMEZONE", "Asia/Shanghai")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["status"], "COMPLETED", "{run}");
    assert_eq!(run["source"], "pull");
    assert_eq!(run["rows_read"], 1, "{run}");
    let asked = stripe.listing.lock().unwrap().asked.clone();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].contains(&("created[gte]".into(), DAY_START.to_string())));
}

/// Events Stripe failed to deliver, listed by `GET /v1/events` before the
/// day's pull and taken in through intake: the payment whose event was lost
/// is paid before the run (no STATUS_LAG), once; an event Reckon already
/// had (another endpoint failed it) changes nothing; the retry Stripe
/// finally delivers is a duplicate; a warning says how many were missing.
async fn events_stripe_failed_to_deliver_are_taken_in_before_the_pull(b: Backend) {
    let s = spawn(b, |_| {}).await;
    let made = payments(
        &s,
        &[
            ("SP-GA", 2500, "EUR", "succeeded"),
            ("SP-GB", 3100, "EUR", "processing"),
        ],
    )
    .await;
    let [known, lost] = &made[..] else {
        unreachable!()
    };
    assert_eq!(s.app.payment_state(&lost.0).await.0, "PENDING");
    let intent = |id: &str, status: &str| {
        let mut i = s.stripe.intents.lock().unwrap()[id].clone();
        i["status"] = status.into();
        i
    };
    let event = |id: &str, kind: &str, object: Value, at: i64| {
        json!({"id": id, "object": "event", "type": kind, "created": at,
            "api_version": "2024-06-20", "livemode": false,
            "data": {"object": object}})
    };
    let succeeded = event(
        "evt_lost",
        "payment_intent.succeeded",
        intent(&lost.1, "succeeded"),
        NOW + 30,
    );
    // The known payment's event, delivered to Reckon as a webhook but
    // failed at another endpoint of the account: still listed.
    let known_event = event(
        "evt_known",
        "payment_intent.succeeded",
        intent(&known.1, "succeeded"),
        NOW + 10,
    );
    let body = known_event.to_string();
    assert_eq!(
        s.post(&body, &sign(SECRET, s.now(), &body)).await.status(),
        200
    );
    *s.stripe.events.lock().unwrap() = vec![
        (succeeded.clone(), false),
        (known_event, false),
        // Delivered everywhere: not listed.
        (
            event(
                "evt_fine",
                "payment_intent.succeeded",
                intent(&known.1, "succeeded"),
                NOW + 20,
            ),
            true,
        ),
        // Not an event Reckon reads.
        (
            event(
                "evt_cust",
                "customer.created",
                json!({"id": "cus_1", "object": "customer"}),
                NOW + 40,
            ),
            false,
        ),
        // The day before (in Shanghai): another day's sweep.
        (
            event(
                "evt_before",
                "payment_intent.succeeded",
                intent(&known.1, "succeeded"),
                DAY_START - 1,
            ),
            false,
        ),
    ];
    s.stripe.intents.lock().unwrap().get_mut(&lost.1).unwrap()["status"] = "succeeded".into();
    *s.stripe.balance.lock().unwrap() = vec![
        txn(
            "txn_ga",
            "charge",
            "charge",
            2500,
            NOW + 11,
            charge("ch_ga", &known.1, &known.0, 2500, "eur"),
        ),
        txn(
            "txn_gb",
            "charge",
            "charge",
            3100,
            NOW + 31,
            charge("ch_gb", &lost.1, &lost.0, 3100, "eur"),
        ),
    ];

    let engine = s.app.engine.clone();
    let run = reckon::recon::pull_statement(&engine, "stripe-eu", DAY, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");

    // One list call, for the day's undelivered events of the kinds Reckon reads.
    let asked = s.stripe.events_asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let q = &asked[0];
    let arg = |k: &str| q.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(arg("delivery_success"), Some("false"));
    assert_eq!(arg("created[gte]"), Some(DAY_START.to_string().as_str()));
    assert_eq!(arg("created[lt]"), Some(DAY_END.to_string().as_str()));
    let types: Vec<&str> = q
        .iter()
        .filter(|(n, _)| n == "types[]")
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(
        types.contains(&"payment_intent.succeeded") && types.contains(&"refund.updated"),
        "{types:?}"
    );

    // Paid before the run looked: matched, no ticket.
    assert_eq!(s.app.payment_state(&lost.0).await.0, "SUCCEEDED");
    assert_eq!(tickets(&s).await, vec![], "every row matched");
    let figures: Value = serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(figures["matched"], 2, "{figures}");
    let pool = &s.app.accounts.db.pool;
    let headers: String = sqlx::query_scalar(
        "SELECT headers_json FROM payment_callbacks WHERE provider = 'stripe-eu' AND callback_id = 'evt_lost'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(headers.contains("x-reckon-fetched"), "{headers}");
    let alerts: Vec<String> =
        sqlx::query_scalar("SELECT message FROM alerts WHERE kind = 'events_undelivered'")
            .fetch_all(pool)
            .await
            .unwrap();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert!(
        alerts[0].contains("had not delivered 1 notification(s) of 2026-12-01"),
        "{alerts:?}"
    );

    // Stripe's own retry arrives at last: the same facts, no second effect.
    let late = succeeded.to_string();
    assert_eq!(
        s.post(&late, &sign(SECRET, s.now(), &late)).await.status(),
        200
    );
    for p in [&known.0, &lost.0] {
        let effects: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = $1 AND event_type = 'payment.succeeded'",
        )
        .bind(p)
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(effects, 1, "{p}");
    }
    assert_eq!(s.app.redeliveries("stripe-eu", "evt_lost").await.0, 1);
    assert_eq!(s.app.alert_count("callback_conflict").await, 0);
}

both_databases!(
    a_stripe_day_pulled_through_balance_transactions_makes_exactly_its_tickets,
    a_stripe_pull_broken_on_page_two_resumes_without_counting_a_row_twice,
    a_refused_key_and_a_slow_answer_fail_the_stripe_pull_clearly,
    events_stripe_failed_to_deliver_are_taken_in_before_the_pull,
);
