//! The bank side: Stripe payouts pulled from the balance transactions
//! list (the fake in `stripe`), a bank's camt.053 statement uploaded over
//! HTTP and a CSV imported by the CLI, matched with one of each outcome.
//! Each on SQLite and PostgreSQL.

use crate::both_databases;
use crate::helpers::{Backend, TestApp, spawn_app_with};
use crate::stripe::{StripeApp, spawn_stripe_app_with};
use app::types::Role;
use reckon::startup::Options;
use serde_json::{Value, json};

/// 2026-12-01, the day the payouts were created (the zone is UTC).
const DAY: &str = "2026-12-01";
const DAY_START: i64 = 1_796_083_200;
/// Midnight UTC of 2026-12-02 and 2026-12-03: Stripe's arrival dates.
const DEC_2: i64 = DAY_START + 86_400;
const DEC_3: i64 = DAY_START + 2 * 86_400;

pub(crate) fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bank")
            .join(name),
    )
    .unwrap()
}

/// A `payout` balance transaction, its payout expanded as Stripe gives it.
pub(crate) fn payout_txn(
    id: &str,
    amount: i64,
    arrival: i64,
    descriptor: Option<&str>,
    at: i64,
) -> Value {
    json!({
        "id": format!("txn_{id}"), "object": "balance_transaction", "amount": -amount,
        "available_on": at, "balance_type": "payments", "created": at, "currency": "eur",
        "description": "STRIPE PAYOUT", "exchange_rate": null, "fee": 0, "fee_details": [],
        "net": -amount, "reporting_category": "payout", "status": "available", "type": "payout",
        "source": {
            "id": id, "object": "payout", "amount": amount, "arrival_date": arrival,
            "automatic": true, "balance_transaction": format!("txn_{id}"), "created": at,
            "currency": "eur", "description": "STRIPE PAYOUT", "destination": "ba_1QaBANK",
            "method": "standard", "source_type": "card", "statement_descriptor": descriptor,
            "status": "in_transit", "type": "bank_account", "metadata": {},
        },
    })
}

pub(crate) async fn token(app: &TestApp) -> String {
    app.api_token("bank").await
}

pub(crate) async fn upload(
    app: &TestApp,
    token: &str,
    name: &str,
    bytes: Vec<u8>,
) -> reqwest::Response {
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
    );
    app.client
        .post(format!("{}/api/v1/bank/statements", app.base))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn count(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap()
}

pub(crate) async fn payout_states(app: &TestApp) -> Vec<(String, String)> {
    sqlx::query_as("SELECT payout_id, state FROM payouts ORDER BY payout_id")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

pub(crate) async fn bank_tickets(app: &TestApp) -> Vec<(String, String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT class, severity, status, provider_txn_id FROM discrepancies WHERE source = 'bank' AND provider = 'stripe-eu' ORDER BY class",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

pub(crate) async fn stripe_with_payouts(b: Backend) -> StripeApp {
    let s = spawn_stripe_app_with(b, |c| c.timezone = "UTC".into()).await;
    s.clock.set((DAY_START + 8 * 3600) * 1_000_000);
    let t = DAY_START + 3600;
    *s.stripe.balance.lock().unwrap() = vec![
        payout_txn("po_1QaPAYOUTmatched", 904_800, DEC_3, None, t),
        payout_txn("po_1QaPAYOUTshort", 500_000, DEC_3, None, t + 1),
        payout_txn(
            "po_1QaPAYOUTbydate",
            250_000,
            DEC_3,
            Some("RECKON DEMO"),
            t + 2,
        ),
        payout_txn("po_1QaPAYOUTmissing", 150_000, DEC_2, None, t + 3),
    ];
    // What each payout settles: charges net of their fees, a refund; the
    // "short" payout's transactions net 10.00 more than it pays out.
    {
        let mut settled = s.stripe.settled.lock().unwrap();
        for (po, amount, nets) in [
            (
                "po_1QaPAYOUTmatched",
                904_800,
                vec![500_000, 410_000, -5_200],
            ),
            ("po_1QaPAYOUTshort", 500_000, vec![501_000]),
            ("po_1QaPAYOUTbydate", 250_000, vec![250_000]),
            ("po_1QaPAYOUTmissing", 150_000, vec![150_000]),
        ] {
            let mut txns: Vec<Value> = nets
                .iter()
                .enumerate()
                .map(|(i, net)| {
                    json!({"id": format!("txn_{po}_{i}"), "object": "balance_transaction",
                    "amount": net, "fee": 0, "net": net, "currency": "eur", "created": t - 86_400,
                    "type": if *net < 0 { "refund" } else { "charge" }, "source": null})
                })
                .collect();
            txns.push(payout_txn(po, amount, DEC_3, None, t));
            settled.insert(po.to_owned(), txns);
        }
    }
    let run = reckon::recon::pull_statement(&s.app.engine, "stripe-eu", DAY, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(run.rows_read, 0, "payouts move no payment");
    s
}

async fn a_camt053_statement_matches_stripe_payouts_with_one_of_each_outcome(b: Backend) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    assert_eq!(
        payout_states(app).await,
        [
            ("po_1QaPAYOUTbydate".into(), "PENDING".into()),
            ("po_1QaPAYOUTmatched".into(), "PENDING".into()),
            ("po_1QaPAYOUTmissing".into(), "PENDING".into()),
            ("po_1QaPAYOUTshort".into(), "PENDING".into()),
        ]
    );
    let token = token(app).await;
    let camt = fixture("camt053_v02_stripe.xml");
    let res = upload(app, &token, "camt053_v02_stripe.xml", camt.clone()).await;
    assert_eq!(res.status(), 201);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["duplicate"], false, "{body}");
    assert_eq!(body["statement"]["format"], "camt.053");
    assert_eq!(
        body["statement"]["entries"], 6,
        "the pending entry is left out"
    );
    assert_eq!(body["statement"]["credits"], 5);
    assert_eq!(
        body["matching"],
        json!({"matched": 2, "amount_mismatch": 1, "missing": 0, "bank_only": 0, "net_differs": 1, "late": 0}),
        "inside the window nothing is missing yet; the short payout's transactions net more: {body}"
    );

    // The same file again: recognised, nothing stored twice.
    let again = upload(app, &token, "copy.xml", camt).await;
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["duplicate"], true);
    assert_eq!(
        again["statement"]["statement_id"],
        body["statement"]["statement_id"]
    );
    assert_eq!(count(app, "bank_statements").await, 1);
    assert_eq!(count(app, "bank_entries").await, 6);

    // A week on, past the 3-day window: the payout with no credit is
    // missing, the Stripe credit with no payout is the bank's only.
    s.clock.set((DAY_START + 8 * 86_400) * 1_000_000);
    let res = app
        .client
        .post(format!("{}/api/v1/bank/match", app.base))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let figures: Value = res.json().await.unwrap();
    assert_eq!(
        figures,
        json!({"matched": 0, "amount_mismatch": 0, "missing": 1, "bank_only": 1, "net_differs": 0, "late": 0})
    );
    assert_eq!(
        payout_states(app).await,
        [
            ("po_1QaPAYOUTbydate".into(), "PAYOUT_MATCHED".into()),
            ("po_1QaPAYOUTmatched".into(), "PAYOUT_MATCHED".into()),
            ("po_1QaPAYOUTmissing".into(), "PAYOUT_MISSING".into()),
            ("po_1QaPAYOUTshort".into(), "PAYOUT_AMOUNT_MISMATCH".into()),
        ]
    );
    let tickets = bank_tickets(app).await;
    let shown: Vec<(&str, &str, &str, Option<&str>)> = tickets
        .iter()
        .map(|(c, s, st, t)| (c.as_str(), s.as_str(), st.as_str(), t.as_deref()))
        .collect();
    assert_eq!(
        shown,
        [
            ("BANK_ONLY", "MEDIUM", "OPEN", Some("20261204-0002")),
            // One for the bank's credit, one for the transactions it settles.
            (
                "PAYOUT_AMOUNT_MISMATCH",
                "HIGH",
                "OPEN",
                Some("po_1QaPAYOUTshort")
            ),
            (
                "PAYOUT_AMOUNT_MISMATCH",
                "HIGH",
                "OPEN",
                Some("po_1QaPAYOUTshort")
            ),
            (
                "PAYOUT_MISSING",
                "HIGH",
                "OPEN",
                Some("po_1QaPAYOUTmissing")
            ),
        ]
    );
    let nets: Vec<(String, String, Option<i64>)> = sqlx::query_as(
        "SELECT payout_id, net_state, settled_net_minor FROM payouts ORDER BY payout_id",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap();
    assert_eq!(
        nets,
        [
            ("po_1QaPAYOUTbydate".into(), "EQUAL".into(), Some(250_000)),
            ("po_1QaPAYOUTmatched".into(), "EQUAL".into(), Some(904_800)),
            ("po_1QaPAYOUTmissing".into(), "EQUAL".into(), Some(150_000)),
            ("po_1QaPAYOUTshort".into(), "DIFFERS".into(), Some(501_000)),
        ]
    );
    let asked = s.stripe.listing.lock().unwrap().asked.clone();
    let per_payout = asked
        .iter()
        .filter(|q| q.iter().any(|(k, _)| k == "payout"))
        .count();
    assert_eq!(per_payout, 4, "each payout's transactions asked for once");
    // The customer's transfer and the rent are no provider's: no ticket.
    let states: Vec<(i64, String)> =
        sqlx::query_as("SELECT line_no, state FROM bank_entries ORDER BY line_no")
            .fetch_all(&app.accounts.db.pool)
            .await
            .unwrap();
    let states: Vec<(i64, &str)> = states.iter().map(|(n, s)| (*n, s.as_str())).collect();
    assert_eq!(
        states,
        [
            (1, "MATCHED"),
            (2, "MATCHED"),
            (3, "MATCHED"),
            (4, "BANK_ONLY"),
            (5, "OUT_OF_SCOPE"),
            (6, "OUT_OF_SCOPE"),
        ]
    );
    // A second pass decides nothing again.
    let again = reckon::bank::match_payouts(&app.engine, app.engine.now())
        .await
        .unwrap();
    assert_eq!((again.matched, again.missing, again.bank_only), (0, 0, 0));
    assert_eq!(bank_tickets(app).await.len(), 4);

    // Settled to bank on 2026-12-03: the two matched payouts.
    let settled =
        reckon::store::bank::settled_by_day(&app.accounts.db.pool, "2026-12-03", "2026-12-03")
            .await
            .unwrap();
    assert_eq!(
        settled,
        [(
            "2026-12-03".into(),
            "stripe-eu".into(),
            "EUR".into(),
            2,
            904_800 + 250_000
        )]
    );
    // The console: the dashboard's day shows it settled to the bank, the
    // bank page each payout's state.
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
    let html = app.get("/?day=2026-12-03").await.text().await.unwrap();
    let at = html
        .find("id=\"settled-to-bank\"")
        .expect("the settled-to-bank section");
    let section = &html[at..html[at..]
        .find("</section>")
        .map_or(html.len(), |end| at + end)];
    assert!(section.contains("data-provider=\"stripe-eu\""), "{section}");
    assert!(section.contains("11548.00"), "{section}");
    let html = app.get("/bank").await.text().await.unwrap();
    for (payout, state) in [
        ("po_1QaPAYOUTmatched", "PAYOUT_MATCHED"),
        ("po_1QaPAYOUTshort", "PAYOUT_AMOUNT_MISMATCH"),
        ("po_1QaPAYOUTmissing", "PAYOUT_MISSING"),
    ] {
        assert!(
            html.contains(&format!("data-payout=\"{payout}\" data-state=\"{state}\"")),
            "{payout} {state} on the bank page"
        );
    }
    assert!(
        html.contains("camt053_v02_stripe.xml"),
        "the statement is listed"
    );
    // The import is in the audit log.
    let audited: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM audit_log WHERE action = 'bank.statement.import'")
            .fetch_one(&app.accounts.db.pool)
            .await
            .unwrap();
    assert_eq!(audited, 1);
}

async fn a_malformed_bank_statement_is_refused_and_nothing_is_stored(b: Backend) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    let token = token(app).await;
    let camt = fixture("camt053_v02_stripe.xml");
    let cut = camt[..camt.len() - 200].to_vec();
    let res = upload(app, &token, "cut.xml", cut).await;
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    let error = body["error"].as_str().unwrap();
    assert!(
        error.starts_with("not a readable camt.053 document"),
        "{error}"
    );
    // One bad amount in the fourth entry refuses the whole file.
    let text = String::from_utf8(camt).unwrap();
    let bad = text.replacen(">777.77<", ">777,77<", 1);
    let res = upload(app, &token, "bad.xml", bad.into_bytes()).await;
    assert_eq!(res.status(), 400);
    let body: Value = res.json().await.unwrap();
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .starts_with("Stmt 1 Ntry 4: Amt \"777,77\""),
        "{body}"
    );
    assert_eq!(count(app, "bank_statements").await, 0);
    assert_eq!(count(app, "bank_entries").await, 0);
    assert!(payout_states(app).await.iter().all(|(_, s)| s == "PENDING"));
}

/// A field of megabytes is refused with a short quote of it, whichever
/// field and format: the answer stays small and nothing is stored.
async fn a_huge_field_is_refused_with_a_short_quote(b: Backend) {
    let s = stripe_with_payouts(b).await;
    let app = &s.app;
    let token = token(app).await;
    let huge = "x".repeat(5 * 1024 * 1024);
    let header = "date,amount,currency,reference,counterparty,direction\n";
    let cases = [
        (
            "reference.csv",
            format!("{header}2026-12-03,10.00,EUR,{huge},Stripe,C\n"),
            "line 2: remittance \"xxx",
        ),
        (
            "date.csv",
            format!("{header}{huge},10.00,EUR,po_1,Stripe,C\n"),
            "line 2: date \"xxx",
        ),
        (
            "amount.xml",
            String::from_utf8(fixture("camt053_v02_stripe.xml"))
                .unwrap()
                .replacen(">777.77<", &format!(">{huge}<"), 1),
            "Stmt 1 Ntry 4: Amt \"xxx",
        ),
    ];
    for (name, file, start) in cases {
        let res = upload(app, &token, name, file.into_bytes()).await;
        assert_eq!(res.status(), 400, "{name}");
        let body: Value = res.json().await.unwrap();
        let error = body["error"].as_str().unwrap();
        assert!(error.starts_with(start), "{name}: {error}");
        assert!(error.contains("(5,242,880 bytes)"), "{name}: {error}");
        assert!(error.len() < 400, "{name}: {} bytes", error.len());
    }
    assert_eq!(count(app, "bank_statements").await, 0);
    assert_eq!(count(app, "bank_entries").await, 0);
}

async fn a_bank_csv_imported_by_the_cli_matches_through_its_column_mapping(b: Backend) {
    let app = spawn_app_with(
        b,
        |_| {},
        Options {
            workers: false,
            ..Options::default()
        },
    )
    .await;
    let eur = reckon::domain::Currency::parse("EUR").unwrap();
    let seen = |id: &str, minor: i64, descriptor: Option<&str>| reckon::providers::PayoutSeen {
        kind: "stripe",
        payout_id: id.into(),
        money: reckon::domain::Money::new(minor, eur),
        arrival_on: "2026-12-03".into(),
        descriptor: descriptor.map(str::to_owned),
        status: "paid".into(),
        automatic: false,
    };
    reckon::bank::payouts_seen(
        &app.engine,
        "stripe-eu",
        None,
        &[
            seen("po_1QaPAYOUTmatched", 904_800, None),
            seen("po_1QaPAYOUTshort", 500_000, None),
            seen("po_1QaPAYOUTbydate", 250_000, Some("RECKON DEMO")),
        ],
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("umsaetze.csv");
    std::fs::write(&file, fixture("bank_statement.csv")).unwrap();
    let path = file.to_str().unwrap();
    let mapping = "date=Buchungstag;amount=Betrag;currency=Waehrung;reference=Verwendungszweck;counterparty=Auftraggeber;direction=Soll/Haben";

    // Without the mapping the CSV's columns are not found: refused, named.
    let out = app.cli(&["bank", "import", path], None);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no column \"date\""), "{stderr}");
    assert_eq!(count(&app, "bank_statements").await, 0);

    let out = app.cli(&["bank", "import", path, "--csv-columns", mapping], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let imported: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(imported["statement"]["format"], "csv");
    assert_eq!(imported["statement"]["entries"], 6);
    assert_eq!(imported["matching"]["matched"], 2, "{imported}");
    assert_eq!(imported["matching"]["amount_mismatch"], 1, "{imported}");

    let out = app.cli(&["bank", "import", path, "--csv-columns", mapping], None);
    assert!(out.status.success());
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["duplicate"], true);
    assert_eq!(count(&app, "bank_statements").await, 1);
    assert_eq!(count(&app, "bank_entries").await, 6);
    assert_eq!(
        payout_states(&app).await,
        [
            ("po_1QaPAYOUTbydate".into(), "PAYOUT_MATCHED".into()),
            ("po_1QaPAYOUTmatched".into(), "PAYOUT_MATCHED".into()),
            ("po_1QaPAYOUTshort".into(), "PAYOUT_AMOUNT_MISMATCH".into()),
        ]
    );
}

/// The bank page's form: an operator imports the same CSV with its column
/// mapping; a statement without it, an empty file and a viewer without the
/// role are refused with the reason on the page; the same file again says
/// so.
async fn a_bank_statement_is_imported_from_the_bank_page(b: Backend) {
    let app = spawn_app_with(
        b,
        |_| {},
        Options {
            workers: false,
            ..Options::default()
        },
    )
    .await;
    let password = "correct horse battery";
    let mut clients = Vec::new();
    for (name, role) in [("olga", Role::Operator), ("ada", Role::Admin)] {
        app.add_user(name, role, password).await;
        let client = crate::helpers::client();
        let res = app
            .call_with(
                &client,
                "login",
                &[("username", name), ("password", password)],
            )
            .await;
        assert!(res.status().is_success() || res.status().is_redirection());
        clients.push(client);
    }
    let (olga, ada) = (&clients[0], &clients[1]);
    let mapping = "date=Buchungstag;amount=Betrag;currency=Waehrung;reference=Verwendungszweck;counterparty=Auftraggeber;direction=Soll/Haben";
    let post = |who: &reqwest::Client, bytes: Vec<u8>, columns: &str| {
        let form = reqwest::multipart::Form::new()
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name("umsaetze.csv"),
            )
            .text("format", "")
            .text("csv_columns", columns.to_owned());
        who.post(format!("{}/bank/upload", app.base))
            .headers(app.origin())
            .multipart(form)
            .send()
    };
    let location = |res: reqwest::Response| {
        assert_eq!(res.status(), 303);
        res.headers()["location"].to_str().unwrap().to_owned()
    };
    let csv = fixture("bank_statement.csv");

    // Refused, each with its reason shown on the bank page, nothing stored.
    let to = location(post(olga, csv.clone(), "").await.unwrap());
    assert!(
        to.starts_with("/bank?err=") && to.contains("errseal="),
        "{to}"
    );
    let page = olga
        .get(format!("{}{to}", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("no column"), "the reason is on the page");
    let to = location(post(olga, Vec::new(), mapping).await.unwrap());
    assert!(to.contains("empty"), "{to}");
    let to = location(post(ada, csv.clone(), mapping).await.unwrap());
    assert!(to.contains("Forbidden"), "{to}");
    assert_eq!(count(&app, "bank_statements").await, 0);

    // Imported, then the same file again: nothing changes.
    let to = location(post(olga, csv.clone(), mapping).await.unwrap());
    assert!(
        to.starts_with("/bank?statement=") && to.ends_with("&duplicate=0"),
        "{to}"
    );
    let page = olga
        .get(format!("{}{to}", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("id=\"bank-imported\""), "{page}");
    assert!(page.contains("umsaetze.csv"));
    let again = location(post(olga, csv, mapping).await.unwrap());
    assert!(again.ends_with("&duplicate=1"), "{again}");
    assert_eq!(count(&app, "bank_statements").await, 1);
    assert_eq!(count(&app, "bank_entries").await, 6);
    let imported_by: String = sqlx::query_scalar("SELECT imported_by FROM bank_statements")
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(imported_by, "olga");
}

both_databases!(
    a_bank_statement_is_imported_from_the_bank_page,
    a_camt053_statement_matches_stripe_payouts_with_one_of_each_outcome,
    a_malformed_bank_statement_is_refused_and_nothing_is_stored,
    a_huge_field_is_refused_with_a_short_quote,
    a_bank_csv_imported_by_the_cli_matches_through_its_column_mapping,
);
