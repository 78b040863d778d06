//! The matching rules and the dry run, against a real server on SQLite and
//! PostgreSQL: a change of a rule is proposed with its preview (each
//! provider's latest statement under both rule sets), takes effect only
//! once another supervisor approves it, and the run after it finds what the
//! preview said; an amount within the tolerance is a LOW AMOUNT_MISMATCH
//! offering ACCEPT, never a match; the payment_no key and its date window
//! include and exclude a row; a preview writes nothing anywhere.

use crate::both_databases;
use crate::config_versions::{decide, propose, view};
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use app::types::Role;
use serde_json::{Value, json};

/// The clock at noon UTC today, far from the day's cuts.
fn at_noon(app: &EngineApp) {
    let now = jiff::Timestamp::from_microsecond(app.app.engine.now()).unwrap();
    let noon: jiff::Timestamp = format!("{}T12:00:00Z", now.strftime("%Y-%m-%d"))
        .parse()
        .unwrap();
    app.clock.set(noon.as_microsecond());
}

/// Every table's row count, and the payments' and tickets' states: what a
/// preview must leave as it found.
async fn everything(app: &EngineApp, b: Backend) -> Vec<(String, String)> {
    let tables: Vec<String> = match b {
        Backend::Sqlite => {
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        }
        Backend::Postgres => sqlx::query_scalar(
            "SELECT CAST(table_name AS TEXT) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name",
        ),
    }
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert!(tables.iter().any(|t| t == "recon_runs"), "{tables:?}");
    let mut out = Vec::new();
    for t in tables {
        let n: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {t}"))
            .fetch_one(app.pool())
            .await
            .unwrap();
        out.push((t, n.to_string()));
    }
    let payments: Vec<(String, String, i64, Option<String>)> = sqlx::query_as(
        "SELECT p.payment_no, p.status, p.amount_minor, h.reason FROM payments p \
         LEFT JOIN payment_holds h ON h.payment_no = p.payment_no ORDER BY p.payment_no",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    out.push(("payments'".into(), format!("{payments:?}")));
    let tickets: Vec<(String, String, String, Option<i64>, String)> = sqlx::query_as(
        "SELECT discrepancy_id, severity, status, updated_at, details FROM discrepancies ORDER BY discrepancy_id",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    out.push(("tickets'".into(), format!("{tickets:?}")));
    out
}

/// (id, class, severity, status, details) of a payment's ticket.
async fn ticket(app: &EngineApp, payment_no: &str) -> (String, String, String, String, String) {
    sqlx::query_as(
        "SELECT discrepancy_id, class, severity, status, details FROM discrepancies WHERE payment_no = $1",
    )
    .bind(payment_no)
    .fetch_one(app.pool())
    .await
    .unwrap()
}

async fn preview_of_run(app: &EngineApp, token: &str, run_id: &str) -> Value {
    let res = app
        .app
        .client
        .post(format!(
            "{}/api/v1/recon/runs/{run_id}/preview",
            app.app.base
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn preview_file(app: &EngineApp, token: &str, date: &str, file: &str) -> (u16, Value) {
    let form = reqwest::multipart::Form::new()
        .text("provider", "sandbox")
        .text("business_date", date.to_owned())
        .part(
            "file",
            reqwest::multipart::Part::bytes(file.as_bytes().to_vec()).file_name("preview.csv"),
        );
    let res = app
        .app
        .client
        .post(format!("{}/api/v1/recon/previews", app.app.base))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.json().await.unwrap_or_default())
}

/// A tolerance proposed is previewed on the latest statement (one HIGH
/// mismatch becomes LOW, nothing else moves), is not in force until a
/// second supervisor approves, and then makes the next day's mismatch
/// within it a LOW AMOUNT_MISMATCH offering ACCEPT — the payment not
/// matched, its amount untouched — while one beyond it stays HIGH.
async fn a_tolerance_is_previewed_approved_and_only_proposes(b: Backend) {
    let app = spawn_engine_app(b).await;
    at_noon(&app);
    let token = app.token().await;
    let (date, at) = app.today();
    let a = app.paid_with("MR-A", 1000, "10.00", "SBX-MR-A").await;
    let p2 = app.paid_with("MR-B", 1000, "10.00", "SBX-MR-B").await;
    let p3 = app.paid_with("MR-C", 1000, "10.00", "SBX-MR-C").await;
    let rows = [
        row("payment", "SBX-MR-A", &a, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-MR-B", &p2, ("", ""), "10.03", "CNY", &at),
        row("payment", "SBX-MR-C", &p3, ("", ""), "10.50", "CNY", &at),
    ];
    let (status, run) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let figures: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(figures["matched"], 1, "{figures}");
    assert_eq!(figures["classes"]["AMOUNT_MISMATCH"], 2, "{figures}");
    assert_eq!(ticket(&app, &p2).await.2, "HIGH");

    let sup1 = app.app.signed_in("sup1", Role::Supervisor).await;
    let sup2 = app.app.signed_in("sup2", Role::Supervisor).await;
    let (status, body) = propose(&app, &sup1, &[("amount_tolerance", "sandbox:CNY=5")]).await;
    assert_eq!(status, 200, "{body}");
    let page = view(&app, &sup2).await;
    assert_eq!(
        page["pending"]["preview"],
        json!([{
            "provider": "sandbox",
            "business_date": date,
            "run_id": run_id,
            "matched_now": 1,
            "tickets_now": 2,
            "matched_proposed": 1,
            "tickets_proposed": 2,
            "classes_more": {},
            "tickets_more": { "AMOUNT_MISMATCH HIGH": -1, "AMOUNT_MISMATCH LOW": 1 },
            "error": null,
        }]),
        "{page}"
    );
    assert!(
        page["pending"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["setting"] == "matching.amount_tolerance_minor.sandbox:CNY"),
        "{page}"
    );
    // Not in force before it is approved: a preview under the rules in
    // force still finds two HIGH mismatches.
    assert_eq!(
        app.app
            .engine
            .settings()
            .matching
            .tolerance("sandbox", "CNY"),
        0
    );
    let now = preview_of_run(&app, &token, &run_id).await;
    assert_eq!(
        now["tickets"],
        json!({ "AMOUNT_MISMATCH": { "HIGH": 2 } }),
        "{now}"
    );
    assert_eq!(now["against"]["run_id"], run_id.as_str(), "{now}");
    assert_eq!(now["against"]["matched_more"], 0, "{now}");
    assert_eq!(now["against"]["classes_more"], json!({}), "{now}");

    let (status, body) = decide(&app, &sup1, "approve").await;
    assert_ne!(status, 200, "the proposer cannot approve: {body}");
    let (status, body) = decide(&app, &sup2, "approve").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        app.app
            .engine
            .settings()
            .matching
            .tolerance("sandbox", "CNY"),
        5
    );
    let after = preview_of_run(&app, &token, &run_id).await;
    assert_eq!(
        after["tickets"],
        json!({ "AMOUNT_MISMATCH": { "HIGH": 1, "LOW": 1 } }),
        "{after}"
    );

    // The next day, under the tolerance: 3 fen off is LOW, 10 fen is not.
    app.clock.advance_secs(24 * 3600);
    let (date, at) = app.today();
    let d = app.paid_with("MR-D", 1000, "10.00", "SBX-MR-D").await;
    let e = app.paid_with("MR-E", 1000, "10.00", "SBX-MR-E").await;
    let rows = [
        row("payment", "SBX-MR-D", &d, ("", ""), "10.03", "CNY", &at),
        row("payment", "SBX-MR-E", &e, ("", ""), "9.90", "CNY", &at),
    ];
    let figures = app.reconcile_day(&token, &date, &rows, 0).await;
    assert_eq!(
        figures["matched"], 0,
        "a tolerance never matches: {figures}"
    );
    assert_eq!(figures["classes"]["AMOUNT_MISMATCH"], 2, "{figures}");
    let (id, class, severity, status, reason) = ticket(&app, &d).await;
    assert_eq!(
        (class.as_str(), severity.as_str(), status.as_str()),
        ("AMOUNT_MISMATCH", "LOW", "OPEN")
    );
    assert!(reason.contains("within the tolerance of"), "{reason}");
    let (_, class, severity, _, _) = ticket(&app, &e).await;
    assert_eq!(
        (class.as_str(), severity.as_str()),
        ("AMOUNT_MISMATCH", "HIGH")
    );
    let res = app
        .app
        .call_with(&sup1, "tickets/show", &[("id", &id)])
        .await;
    assert_eq!(res.status(), 200);
    let detail: Value = res.json().await.unwrap();
    assert!(
        detail["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "ACCEPT_AMOUNT"),
        "{detail}"
    );
    let amount: i64 = sqlx::query_scalar("SELECT amount_minor FROM payments WHERE payment_no = $1")
        .bind(&d)
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(amount, 1000, "nothing took the provider's amount by itself");
}

/// A row whose transaction id names no payment is found by its
/// payment_no within the window of the payment's creation: a window of one
/// hour excludes a row two hours later, the keys without payment_no
/// exclude it too — each previewed exactly — and the run after the change
/// is approved finds what its preview said.
async fn the_payment_no_key_and_its_window_include_and_exclude(b: Backend) {
    let app = spawn_engine_app(b).await;
    at_noon(&app);
    let token = app.token().await;
    let a = app.paid_with("MR-W1", 1000, "10.00", "SBX-MR-W1").await;
    let p = app.payment("MR-W2", 2000, "CNY").await;
    app.clock.advance_secs(2 * 3600);
    let (date, at) = app.today();
    let rows = [
        row("payment", "SBX-MR-W1", &a, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-MR-W2", &p, ("", ""), "20.00", "CNY", &at),
    ];
    let (status, run) = app.upload_only(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let before: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    // Within the default 72 hours: found, paid there and CREATED here.
    assert_eq!(before["classes"]["STATUS_LAG"], 1, "{before}");
    assert_eq!(before["matched"], 1, "{before}");

    let sup1 = app.app.signed_in("sup1", Role::Supervisor).await;
    let sup2 = app.app.signed_in("sup2", Role::Supervisor).await;
    let excluded = json!({
        "provider": "sandbox",
        "business_date": date,
        "run_id": run_id,
        "matched_now": 1,
        "tickets_now": 1,
        "matched_proposed": 1,
        "tickets_proposed": 1,
        "classes_more": { "PROVIDER_ONLY": 1, "STATUS_LAG": -1 },
        "tickets_more": { "PROVIDER_ONLY HIGH": 1, "STATUS_LAG MEDIUM": -1 },
        "error": null,
    });
    // A window of one hour: the row is two hours after the payment.
    let (status, body) = propose(&app, &sup1, &[("match_window_hours", "1")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        view(&app, &sup2).await["pending"]["preview"],
        json!([excluded])
    );
    let (status, body) = decide(&app, &sup1, "reject").await;
    assert_eq!(status, 200, "{body}");
    // Three hours includes it again: nothing would change.
    let (status, body) = propose(&app, &sup1, &[("match_window_hours", "3")]).await;
    assert_eq!(status, 200, "{body}");
    let pending = view(&app, &sup2).await["pending"]["preview"][0].clone();
    assert_eq!(pending["classes_more"], json!({}), "{pending}");
    assert_eq!(pending["tickets_more"], json!({}), "{pending}");
    let (status, body) = decide(&app, &sup1, "reject").await;
    assert_eq!(status, 200, "{body}");

    // Without the payment_no key, the same; then approved, the next run of
    // the day (the same rows, another file) finds what the preview said.
    let (status, body) = propose(&app, &sup1, &[("match_keys", "txn")]).await;
    assert_eq!(status, 200, "{body}");
    let preview = view(&app, &sup2).await["pending"]["preview"][0].clone();
    assert_eq!(
        preview["classes_more"], excluded["classes_more"],
        "{preview}"
    );
    assert_eq!(
        preview["tickets_more"], excluded["tickets_more"],
        "{preview}"
    );
    assert!(app.app.engine.settings().matching.by_payment_no());
    let (status, body) = decide(&app, &sup2, "approve").await;
    assert_eq!(status, 200, "{body}");
    assert!(!app.app.engine.settings().matching.by_payment_no());
    let file = statement(&rows) + "\n";
    let (status, run) = app.upload_only(&token, &date, &file).await;
    assert_eq!(status, 201, "{run}");
    let after: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    let mut expected = before["classes"].as_object().unwrap().clone();
    for (class, more) in preview["classes_more"].as_object().unwrap() {
        let n = expected.get(class).and_then(Value::as_i64).unwrap_or(0) + more.as_i64().unwrap();
        if n == 0 {
            expected.remove(class);
        } else {
            expected.insert(class.clone(), n.into());
        }
    }
    assert_eq!(after["classes"], Value::Object(expected), "{after}");
    assert_eq!(after["matched"], preview["matched_proposed"], "{after}");
}

/// A preview — of a new file, of a completed run, and of a rule change —
/// writes nothing: every table's rows, every payment and ticket as they
/// were. Its difference from the day's last run is exact: the same
/// statement differs in nothing, one listing a paid payment more matches
/// one more row and leaves one LOCAL_ONLY fewer.
async fn a_preview_writes_nothing(b: Backend) {
    let app = spawn_engine_app(b).await;
    at_noon(&app);
    let token = app.token().await;
    let (date, at) = app.today();
    let a = app.paid_with("MR-N1", 1000, "10.00", "SBX-MR-N1").await;
    let m = app.paid_with("MR-N2", 1000, "10.00", "SBX-MR-N2").await;
    let q = app.paid_with("MR-N3", 3000, "30.00", "SBX-MR-N3").await;
    let rows = [
        row("payment", "SBX-MR-N1", &a, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-MR-N2", &m, ("", ""), "10.01", "CNY", &at),
        row("payment", "SBX-MR-GONE", "", ("", ""), "5.00", "CNY", &at),
    ];
    let (status, run) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    let figures: Value = serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(figures["classes"]["LOCAL_ONLY"], 1, "{figures}");
    let hold: Option<String> =
        sqlx::query_scalar("SELECT reason FROM payment_holds WHERE payment_no = $1")
            .bind(&q)
            .fetch_optional(app.pool())
            .await
            .unwrap();
    assert!(hold.is_some(), "a LOCAL_ONLY payment is held");
    let was = everything(&app, b).await;

    // The same statement: no difference from the run.
    let same = preview_of_run(&app, &token, &run_id).await;
    assert_eq!(same["of_run"], run_id.as_str(), "{same}");
    assert_eq!(same["against"]["matched_more"], 0, "{same}");
    assert_eq!(same["against"]["classes_more"], json!({}), "{same}");
    assert_eq!(same["classes"], figures["classes"], "{same}");

    // A statement that also lists the held payment.
    let mut more = rows.to_vec();
    more.push(row(
        "payment",
        "SBX-MR-N3",
        &q,
        ("", ""),
        "30.00",
        "CNY",
        &at,
    ));
    let (status, p) = preview_file(&app, &token, &date, &statement(&more)).await;
    assert_eq!(status, 200, "{p}");
    assert_eq!(p["matched"], 2, "{p}");
    assert_eq!(p["against"]["run_id"], run_id.as_str(), "{p}");
    assert_eq!(p["against"]["matched_more"], 1, "{p}");
    assert_eq!(
        p["against"]["classes_more"],
        json!({ "LOCAL_ONLY": -1, "MATCHED": 1 }),
        "{p}"
    );
    assert_eq!(
        p["tickets"],
        json!({ "AMOUNT_MISMATCH": { "HIGH": 1 }, "PROVIDER_ONLY": { "HIGH": 1 } }),
        "{p}"
    );
    // Refused as the run would be: its figures disagree.
    let broken = statement(&more).replace("rows=4", "rows=5");
    let (status, e) = preview_file(&app, &token, &date, &broken).await;
    assert_eq!(status, 422, "{e}");

    // Under other rules, by the library call a rule change uses.
    let engine = app.app_engine();
    let mut rules = engine.settings().matching.clone();
    rules.tolerances.insert(("*".into(), "CNY".into()), 1);
    let low = reckon::recon::preview_run(&engine, &run_id, Some(&rules))
        .await
        .unwrap();
    assert_eq!(
        low.tickets["AMOUNT_MISMATCH"],
        [("LOW".to_owned(), 1)].into_iter().collect(),
        "{low:?}"
    );
    reckon::recon::preview_rules(&engine, &rules).await.unwrap();

    assert_eq!(everything(&app, b).await, was, "a preview wrote something");
}

both_databases!(
    a_tolerance_is_previewed_approved_and_only_proposes,
    the_payment_no_key_and_its_window_include_and_exclude,
    a_preview_writes_nothing,
);
