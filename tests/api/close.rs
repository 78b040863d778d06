//! The signed daily close against a real server and the sandbox provider,
//! on SQLite and PostgreSQL: a day whose run leaves nothing open closes by
//! itself; a day with a LOCAL_ONLY does not, and a supervisor closes it
//! with a reason (an operator may not); a closed day refuses a statement;
//! reopening is proposed by one supervisor and approved by another (the
//! proposer cannot), after which the next run closes the day again with a
//! record chained to the previous one; the signed report verifies, and
//! fails once altered.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use app::types::Role;
use serde_json::Value;

/// `closes/act` as a console user: the answer's status and body.
async fn act(
    app: &EngineApp,
    who: &reqwest::Client,
    action: &str,
    date: &str,
    reason: &str,
) -> (u16, String) {
    let res = app
        .app
        .call_with(
            who,
            "closes/act",
            &[
                ("what", action),
                ("provider", "sandbox"),
                ("day", date),
                ("reason", reason),
            ],
        )
        .await;
    (res.status().as_u16(), res.text().await.unwrap())
}

/// The day's signed report through the API, and the record's state.
async fn report(app: &EngineApp, token: &str, date: &str) -> (u16, Option<String>, Value) {
    let res = app
        .app
        .client
        .get(format!(
            "{}/api/v1/recon/closes/sandbox/{date}",
            app.app.base
        ))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let state = res
        .headers()
        .get("x-close-state")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, state, res.json().await.unwrap_or_default())
}

async fn verify(app: &EngineApp, token: &str, doc: &Value) -> Value {
    let res = app
        .app
        .client
        .post(format!("{}/api/v1/recon/closes/verify", app.app.base))
        .bearer_auth(token)
        .json(doc)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

async fn audit_actions(app: &EngineApp) -> Vec<String> {
    sqlx::query_scalar("SELECT action FROM audit_log WHERE object_type = 'day' ORDER BY seq")
        .fetch_all(app.pool())
        .await
        .unwrap()
}

/// Two payments, both in the statement: the run leaves no ticket and the
/// day closes by itself, with the run's figures and statement hash; a
/// second statement for the closed day is refused, naming the close.
async fn a_day_without_open_tickets_closes_by_itself(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let p1 = app.paid_with("CL-1", 1000, "10.00", "SBX-CL-1").await;
    let p2 = app.paid_with("CL-2", 250, "2.50", "SBX-CL-2").await;
    let rows = [
        row("payment", "SBX-CL-1", &p1, ("", ""), "10.00", "CNY", &at),
        row("payment", "SBX-CL-2", &p2, ("", ""), "2.50", "CNY", &at),
    ];
    let (status, run) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");

    let (status, state, doc) = report(&app, &token, &date).await;
    assert_eq!(status, 200, "{doc}");
    assert_eq!(state.as_deref(), Some("CLOSED"));
    let r = &doc["report"];
    assert_eq!(r["how"], "auto", "{doc}");
    assert_eq!(r["seq"], 1, "{doc}");
    assert_eq!(r["prev_hash"], "0".repeat(64), "the provider's first close");
    assert_eq!(r["business_date"], date.as_str());
    assert_eq!(r["figures"]["matched"], 2, "{doc}");
    assert_eq!(
        r["statements"][0]["statement_sha256"], run["file_hash"],
        "{doc}"
    );
    assert_eq!(doc["signature"]["alg"], "HMAC-SHA256");
    let v = verify(&app, &token, &doc).await;
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(
        (v["recorded"].clone(), v["chained"].clone()),
        (true.into(), true.into())
    );

    // A new statement for the closed day: refused, nothing run.
    let more = [rows[0].clone()];
    let (status, refused) = app.upload(&token, &date, &statement(&more)).await;
    assert_eq!(status, 409, "{refused}");
    let message = refused["error"].as_str().unwrap();
    assert!(
        message.contains("is closed") && message.contains("reopen"),
        "{message}"
    );
    // Its run says why, as the console shows it.
    let runs: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT status, error FROM recon_runs ORDER BY started_at, run_id")
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0].0, "COMPLETED");
    assert_eq!(runs[1].0, "FAILED");
    assert!(
        runs[1].1.as_deref().unwrap().contains("is closed"),
        "{runs:?}"
    );
    assert_eq!(audit_actions(&app).await, vec!["day.close"]);

    // An empty statement does not close its day by itself (a bill not
    // ready yet looks the same); a supervisor may.
    let yesterday = date
        .parse::<jiff::civil::Date>()
        .unwrap()
        .yesterday()
        .unwrap()
        .to_string();
    let (status, run) = app.upload(&token, &yesterday, &statement(&[])).await;
    assert_eq!(
        (status, run["status"].as_str()),
        (201, Some("COMPLETED")),
        "{run}"
    );
    let (status, _, _) = report(&app, &token, &yesterday).await;
    assert_eq!(status, 404, "an empty day stays open");
}

/// A paid payment missing from the statement is a CRITICAL LOCAL_ONLY:
/// the day stays open. An operator may not close it; a supervisor must
/// give a reason, and then closes it: the record says who and why.
async fn a_supervisor_closes_a_day_with_a_reason(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let p1 = app.paid_with("SV-1", 1000, "10.00", "SBX-SV-1").await;
    app.paid_with("SV-2", 700, "7.00", "SBX-SV-2").await;
    let rows = [row(
        "payment",
        "SBX-SV-1",
        &p1,
        ("", ""),
        "10.00",
        "CNY",
        &at,
    )];
    let (status, run) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let (status, _, _) = report(&app, &token, &date).await;
    assert_eq!(status, 404, "a CRITICAL ticket is open: not closed");

    let olga = app.app.signed_in("olga", Role::Operator).await;
    let (status, body) = act(&app, &olga, "close", &date, "month end").await;
    assert_eq!(status, 403, "{body}");
    let sam = app.app.signed_in("sam", Role::Supervisor).await;
    let (status, body) = act(&app, &sam, "close", &date, "  ").await;
    assert_eq!(status, 400, "a reason is required: {body}");
    let (status, body) = act(
        &app,
        &sam,
        "close",
        &date,
        "SV-2 confirmed by the provider by phone",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = act(&app, &sam, "close", &date, "again").await;
    assert_eq!(status, 409, "already closed: {body}");

    let (status, state, doc) = report(&app, &token, &date).await;
    assert_eq!((status, state.as_deref()), (200, Some("CLOSED")));
    let r = &doc["report"];
    assert_eq!(r["how"], "supervisor");
    assert_eq!(r["closed_by"], "sam");
    assert_eq!(r["reason"], "SV-2 confirmed by the provider by phone");
    assert_eq!(
        r["open_tickets"]["CRITICAL"], 1,
        "what was open is recorded: {doc}"
    );
    // The console's section shows it closed, with the hash's prefix.
    let res = app
        .app
        .call_with(&sam, "closes/list", &[("day", &date)])
        .await;
    let list: Value = res.json().await.unwrap();
    assert_eq!(list[0]["state"], "CLOSED", "{list}");
    assert_eq!(list[0]["close"]["hash"], doc["hash"], "{list}");
    // The download link of the dashboard gives the same report.
    let res = sam
        .get(format!("{}/closes/sandbox/{date}", app.app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("attachment")
    );
    let downloaded: Value = res.json().await.unwrap();
    assert_eq!(downloaded, doc);
}

/// Reopening: proposed by one supervisor, who cannot approve it; approved
/// by a second. The day then takes a statement again (the bank's copy of
/// the same bill, CRLF line ends), and its run closes it anew: seq 2,
/// chained to the first close's hash. Every step audited.
async fn reopening_needs_a_second_supervisor_and_the_next_close_is_chained(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let p1 = app.paid_with("RO-1", 1000, "10.00", "SBX-RO-1").await;
    let rows = [row(
        "payment",
        "SBX-RO-1",
        &p1,
        ("", ""),
        "10.00",
        "CNY",
        &at,
    )];
    let (status, _) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201);
    let (status, _, closed) = report(&app, &token, &date).await;
    assert_eq!(status, 200, "closed by itself");
    let sam = app.app.signed_in("sam", Role::Supervisor).await;
    let sue = app.app.signed_in("sue", Role::Supervisor).await;

    // Nothing pending to approve yet; a proposal needs a reason.
    let (status, _) = act(&app, &sue, "approve_reopen", &date, "").await;
    assert_eq!(status, 400);
    let (status, _) = act(&app, &sam, "propose_reopen", &date, "").await;
    assert_eq!(status, 400);
    let (status, body) = act(
        &app,
        &sam,
        "propose_reopen",
        &date,
        "the provider sent a corrected bill",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = act(&app, &sue, "propose_reopen", &date, "twice").await;
    assert_eq!(status, 409, "one pending proposal per day");
    let (status, body) = act(&app, &sam, "approve_reopen", &date, "").await;
    assert_eq!(status, 403, "the proposer cannot approve: {body}");
    let (_, state, _) = report(&app, &token, &date).await;
    assert_eq!(state.as_deref(), Some("CLOSED"), "still closed");
    let crlf = statement(&rows).replace('\n', "\r\n");
    let (status, _) = app.upload(&token, &date, &crlf).await;
    assert_eq!(status, 409, "not before the second supervisor approves");
    let (status, body) = act(&app, &sue, "approve_reopen", &date, "").await;
    assert_eq!(status, 200, "{body}");
    let (_, state, _) = report(&app, &token, &date).await;
    assert_eq!(state.as_deref(), Some("REOPENED"));

    let (status, run) = app.upload(&token, &date, &crlf).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    let (status, state, again) = report(&app, &token, &date).await;
    assert_eq!((status, state.as_deref()), (200, Some("CLOSED")));
    assert_eq!(again["report"]["seq"], 2, "{again}");
    assert_eq!(
        again["report"]["prev_hash"], closed["hash"],
        "chained: {again}"
    );
    assert_ne!(again["hash"], closed["hash"]);
    assert_eq!(
        again["report"]["statements"].as_array().unwrap().len(),
        2,
        "both runs: {again}"
    );
    let v = verify(&app, &token, &again).await;
    assert_eq!(
        (v["valid"].clone(), v["chained"].clone()),
        (true.into(), true.into()),
        "{v}"
    );
    // The first record stays as signed, and still verifies.
    let v = verify(&app, &token, &closed).await;
    assert_eq!(
        (v["valid"].clone(), v["recorded"].clone()),
        (true.into(), true.into()),
        "{v}"
    );
    assert_eq!(
        audit_actions(&app).await,
        vec![
            "day.close",
            "day.reopen.propose",
            "day.reopen.approve",
            "day.close"
        ]
    );
}

/// The signature holds only for the report as signed: a figure changed, or
/// the figure and the hash changed together, or another key named, fails.
async fn a_close_report_verifies_and_fails_once_altered(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let p1 = app.paid_with("VF-1", 1000, "10.00", "SBX-VF-1").await;
    let rows = [row(
        "payment",
        "SBX-VF-1",
        &p1,
        ("", ""),
        "10.00",
        "CNY",
        &at,
    )];
    let (status, _) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201);
    let (status, _, doc) = report(&app, &token, &date).await;
    assert_eq!(status, 200);
    assert_eq!(verify(&app, &token, &doc).await["valid"], true);

    let mut altered = doc.clone();
    altered["report"]["figures"]["matched"] = 3.into();
    let v = verify(&app, &token, &altered).await;
    assert_eq!(v["valid"], false, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("altered"), "{v}");

    // Rehashed by someone without the key: the signature gives it away.
    let mut rehashed = altered.clone();
    let forged = {
        use sha2::Digest;
        fn sorted(v: &Value) -> Value {
            match v {
                Value::Object(m) => {
                    let mut keys: Vec<_> = m.keys().cloned().collect();
                    keys.sort();
                    Value::Object(
                        keys.into_iter()
                            .map(|k| (k.clone(), sorted(&m[&k])))
                            .collect(),
                    )
                }
                Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
                o => o.clone(),
            }
        }
        hex::encode(sha2::Sha256::digest(
            sorted(&rehashed["report"]).to_string(),
        ))
    };
    rehashed["hash"] = forged.into();
    let v = verify(&app, &token, &rehashed).await;
    assert_eq!(v["valid"], false, "{v}");
    assert!(v["reason"].as_str().unwrap().contains("signature"), "{v}");

    let mut other_key = doc.clone();
    other_key["signature"]["key_id"] = "0000000000000000".into();
    assert_eq!(verify(&app, &token, &other_key).await["valid"], false);
}

both_databases!(
    a_day_without_open_tickets_closes_by_itself,
    a_supervisor_closes_a_day_with_a_reason,
    reopening_needs_a_second_supervisor_and_the_next_close_is_chained,
    a_close_report_verifies_and_fails_once_altered,
);
