//! Reconciliation against a real server and the sandbox provider, each on
//! SQLite and PostgreSQL: a day seeded with one case of every class, the
//! seed's drill 5 among them, uploaded as the sandbox's statement; a re-run
//! changes nothing; STATUS_LAG is repaired with exactly one effect; broken
//! and incomplete statements are refused with the reason.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use serde_json::json;

const HEADER: &str =
    "kind,txn_id,payment_no,refund_id,refund_no,status,amount,currency,occurred_at";

/// A sandbox statement: rows and a summary that agrees with them.
pub(crate) fn statement(rows: &[String]) -> String {
    let total: i64 = rows
        .iter()
        .map(|r| {
            let f: Vec<&str> = r.split(',').collect();
            let (major, minor) = f[6].split_once('.').unwrap();
            major.parse::<i64>().unwrap() * 100 + minor.parse::<i64>().unwrap()
        })
        .sum();
    format!(
        "{HEADER}\n{}\n#summary,rows={},total_minor={total}\n",
        rows.join("\n"),
        rows.len()
    )
}

pub(crate) fn row(
    kind: &str,
    txn: &str,
    payment_no: &str,
    refund: (&str, &str),
    amount: &str,
    currency: &str,
    at: &str,
) -> String {
    format!(
        "{kind},{txn},{payment_no},{},{},SUCCEEDED,{amount},{currency},{at}",
        refund.0, refund.1
    )
}

impl EngineApp {
    /// A payment made SUCCEEDED by a signed notification with `txn`.
    pub(crate) async fn paid_with(
        &self,
        order: &str,
        minor: i64,
        major: &str,
        txn: &str,
    ) -> String {
        let p = self.payment(order, minor, "CNY").await;
        let id = format!("evt-{order}");
        let body = self.notice(&id, &p, "SUCCEEDED", major, "CNY", txn);
        assert_eq!(self.post_signed(&id, &body).await.status(), 200);
        p
    }

    /// Uploads a statement, then lets the worker do what the run queued
    /// (its STATUS_LAG repairs), as the server's would.
    pub(crate) async fn upload(
        &self,
        token: &str,
        date: &str,
        file: &str,
    ) -> (u16, serde_json::Value) {
        let answer = self.upload_only(token, date, file).await;
        let engine = &self.app.engine;
        while reckon::workers::run_provider_tasks(engine, engine.now())
            .await
            .unwrap()
            > 0
        {}
        answer
    }

    /// Reconciles `date` against a statement of `rows` (and `variant`
    /// blank lines at its end: the same rows, another file — a re-run, not
    /// the run already made); the run's figures.
    pub(crate) async fn reconcile_day(
        &self,
        token: &str,
        date: &str,
        rows: &[String],
        variant: usize,
    ) -> serde_json::Value {
        let file = statement(rows) + &"\n".repeat(variant);
        let (status, run) = self.upload(token, date, &file).await;
        assert_eq!(status, 201, "{run}");
        assert_eq!(run["status"], "COMPLETED", "{run}");
        serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap()
    }

    pub(crate) async fn upload_only(
        &self,
        token: &str,
        date: &str,
        file: &str,
    ) -> (u16, serde_json::Value) {
        let file = ("sandbox-statement.csv", file.as_bytes().to_vec());
        self.upload_bill(token, "sandbox", date, file).await
    }

    /// Uploads a statement file for `provider`'s account.
    pub(crate) async fn upload_bill(
        &self,
        token: &str,
        provider: &str,
        date: &str,
        (name, bytes): (&str, Vec<u8>),
    ) -> (u16, serde_json::Value) {
        let form = reqwest::multipart::Form::new()
            .text("provider", provider.to_owned())
            .text("business_date", date.to_owned())
            .part(
                "file",
                reqwest::multipart::Part::bytes(bytes).file_name(name.to_owned()),
            );
        let res = self
            .app
            .client
            .post(format!("{}/api/v1/recon/runs", self.app.base))
            .bearer_auth(token)
            .multipart(form)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or_default())
    }

    async fn tickets(&self) -> Vec<(String, String, String, Option<String>)> {
        sqlx::query_as(
            "SELECT class, severity, status, payment_no FROM discrepancies WHERE source = 'recon' ORDER BY class",
        )
        .fetch_all(self.pool())
        .await
        .unwrap()
    }

    /// The payment's one ticket is closed, and says the repair did it.
    async fn assert_auto_repaired(&self, payment_no: &str) {
        let (status, conclusion): (String, Option<String>) =
            sqlx::query_as("SELECT status, conclusion FROM discrepancies WHERE payment_no = $1")
                .bind(payment_no)
                .fetch_one(self.pool())
                .await
                .unwrap();
        assert_eq!(status, "CLOSED");
        assert!(conclusion.unwrap().contains("auto-repaired"));
    }

    pub(crate) fn today(&self) -> (String, String) {
        let now = jiff::Timestamp::from_microsecond(self.app.engine.now()).unwrap();
        (
            now.strftime("%Y-%m-%d").to_string(),
            now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        )
    }
}

async fn a_day_with_every_class_makes_exactly_its_tickets_and_a_rerun_changes_nothing(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    // MATCHED, with a refund that matches too.
    let a = app.paid_with("RC-A", 10000, "100.00", "SBX-A").await;
    let (status, refund) = {
        let res = app
            .app
            .client
            .post(format!("{}/api/v1/payments/{a}/refunds", app.app.base))
            .bearer_auth(&token)
            .header("idempotency-key", "rc-refund")
            .json(&json!({"amount_minor": 2500, "reason": "returned"}))
            .send()
            .await
            .unwrap();
        (
            res.status().as_u16(),
            res.json::<serde_json::Value>().await.unwrap(),
        )
    };
    assert_eq!(status, 201, "{refund}");
    let refund_no = refund["refund_no"].as_str().unwrap().to_owned();
    app.sandbox.put(reckon::providers::sandbox::PaymentData {
        payment_no: a.clone(),
        txn_id: "SBX-A".into(),
        status: "SUCCEEDED".into(),
        amount: "100.00".into(),
        currency: "CNY".into(),
    });
    let engine = app.app_engine();
    reckon::workers::run_provider_tasks(&engine, engine.now())
        .await
        .unwrap();
    app.sandbox.settle_refund(&refund_no, true);
    for _ in 0..100 {
        let s: String = crate::reads::refund_status(app.pool(), &refund_no).await;
        if s == "SUCCEEDED" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let refund_id = app.sandbox.refund(&refund_no).unwrap().refund_id;
    // STATUS_LAG: paid at the provider, its notification lost.
    let lag = app.payment("RC-B", 2000, "CNY").await;
    app.sandbox.put(reckon::providers::sandbox::PaymentData {
        payment_no: lag.clone(),
        txn_id: "SBX-B".into(),
        status: "SUCCEEDED".into(),
        amount: "20.00".into(),
        currency: "CNY".into(),
    });
    // LOCAL_ONLY: paid here, absent from the statement.
    let local_only = app.paid_with("RC-D", 3000, "30.00", "SBX-D").await;
    // AMOUNT_MISMATCH and CURRENCY_MISMATCH.
    let amount = app.paid_with("RC-E", 1000, "10.00", "SBX-E").await;
    let currency = app.paid_with("RC-F", 1000, "10.00", "SBX-F").await;
    // DUPLICATE: the statement lists one transaction twice.
    let dup = app.paid_with("RC-G", 500, "5.00", "SBX-G").await;
    // ONE_TO_MANY: the statement ties payment H to another transaction.
    let one_to_many = app.paid_with("RC-H", 700, "7.00", "SBX-H").await;

    let rows = vec![
        row("payment", "SBX-A", &a, ("", ""), "100.00", "CNY", &at),
        row(
            "refund",
            "SBX-A",
            &a,
            (&refund_id, &refund_no),
            "25.00",
            "CNY",
            &at,
        ),
        row("payment", "SBX-B", &lag, ("", ""), "20.00", "CNY", &at),
        // The seed's drill 5: a provider row with no local payment.
        row(
            "payment",
            "SBX-C",
            "PAYNOTHERE",
            ("", ""),
            "12.34",
            "CNY",
            &at,
        ),
        row("payment", "SBX-E", &amount, ("", ""), "9.00", "CNY", &at),
        row("payment", "SBX-F", &currency, ("", ""), "10.00", "USD", &at),
        row("payment", "SBX-G", &dup, ("", ""), "5.00", "CNY", &at),
        row("payment", "SBX-G", &dup, ("", ""), "5.00", "CNY", &at),
        row(
            "payment",
            "SBX-X",
            &one_to_many,
            ("", ""),
            "7.00",
            "CNY",
            &at,
        ),
        row(
            "refund",
            "SBX-A",
            &a,
            ("SBXR-DASH", "DASHBOARD-1"),
            "1.00",
            "CNY",
            &at,
        ),
    ];
    let file = statement(&rows);
    let (status, run) = app.upload(&token, &date, &file).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    assert_eq!(run["rows_read"], 10);

    let tickets = app.tickets().await;
    let classes: Vec<(&str, &str, &str)> = tickets
        .iter()
        .map(|(c, s, st, _)| (c.as_str(), s.as_str(), st.as_str()))
        .collect();
    assert_eq!(
        classes,
        [
            ("AMOUNT_MISMATCH", "HIGH", "OPEN"),
            ("CURRENCY_MISMATCH", "HIGH", "OPEN"),
            ("DUPLICATE", "HIGH", "OPEN"),
            ("LOCAL_ONLY", "CRITICAL", "OPEN"),
            ("ONE_TO_MANY", "HIGH", "OPEN"),
            ("PROVIDER_ONLY", "HIGH", "OPEN"),
            ("REFUND_MISMATCH", "HIGH", "OPEN"),
            ("STATUS_LAG", "MEDIUM", "CLOSED"),
        ],
        "{tickets:?}"
    );
    let named = |class: &str| tickets.iter().find(|t| t.0 == class).unwrap().3.clone();
    assert_eq!(named("LOCAL_ONLY").as_deref(), Some(local_only.as_str()));
    assert_eq!(named("ONE_TO_MANY").as_deref(), Some(one_to_many.as_str()));
    assert_eq!(named("PROVIDER_ONLY").as_deref(), Some("PAYNOTHERE"));
    // Each ticket of a local payment carries that payment's order, whether
    // its row named the payment or the payment had no row.
    let orders: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT class, order_no FROM discrepancies WHERE payment_no IS NOT NULL \
           AND class <> 'PROVIDER_ONLY' ORDER BY class",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    let orders: Vec<(&str, Option<&str>)> = orders
        .iter()
        .map(|(c, o)| (c.as_str(), o.as_deref()))
        .collect();
    assert_eq!(
        orders,
        [
            ("AMOUNT_MISMATCH", Some("RC-E")),
            ("CURRENCY_MISMATCH", Some("RC-F")),
            ("DUPLICATE", Some("RC-G")),
            ("LOCAL_ONLY", Some("RC-D")),
            ("ONE_TO_MANY", Some("RC-H")),
            ("REFUND_MISMATCH", Some("RC-A")),
            ("STATUS_LAG", Some("RC-B")),
        ]
    );
    // STATUS_LAG repaired through apply: one effect, the ticket says how.
    assert_eq!(app.status(&lag).await, "SUCCEEDED");
    assert_eq!(app.count("payment_effects", &lag).await, 1);
    let (actions, conclusion): (String, Option<String>) =
        sqlx::query_as("SELECT actions, conclusion FROM discrepancies WHERE class = 'STATUS_LAG'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert!(actions.contains("status query"), "{actions}");
    let actions: serde_json::Value = serde_json::from_str(&actions).unwrap();
    assert_eq!(actions[0]["action"], "status query", "{actions}");
    assert!(conclusion.unwrap().contains("auto-repaired"));
    assert_eq!(app.alert_kinds(&local_only).await, ["local_only"]);
    // LOCAL_ONLY and ONE_TO_MANY hold their payments until a person decides:
    // no outbox delivery, no refund, no status change.
    let held: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT payment_no, reason FROM payment_holds ORDER BY payment_no")
            .fetch_all(app.pool())
            .await
            .unwrap();
    let mut expected = vec![local_only.clone(), one_to_many.clone()];
    expected.sort();
    assert_eq!(
        held.iter().map(|h| h.0.clone()).collect::<Vec<_>>(),
        expected
    );
    let http = reqwest::Client::new();
    reckon::outbox::relay_outbox(&engine, &http, engine.now())
        .await
        .unwrap();
    let delivered = |who: &str| app.sink.seen().iter().any(|(_, body)| body.contains(who));
    assert!(delivered(&a), "others are delivered");
    assert!(!delivered(&local_only), "the held payment's effect waits");
    let res = app
        .app
        .client
        .post(format!(
            "{}/api/v1/payments/{local_only}/refunds",
            app.app.base
        ))
        .bearer_auth(&token)
        .header("idempotency-key", "held-refund")
        .json(&json!({"amount_minor": 100, "reason": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    let late = app.notice("evt-late-h", &one_to_many, "CLOSED", "7.00", "CNY", "SBX-H");
    assert_eq!(app.post_signed("evt-late-h", &late).await.status(), 200);
    assert_eq!(app.status(&one_to_many).await, "SUCCEEDED", "locked");
    // The command line asks for the release: a proposal, nothing released
    // yet; a supervisor approves it in the console, and the effect goes out.
    let out = app.app.cli(
        &[
            "payment",
            "release",
            &local_only,
            "--note",
            "confirmed paid with the provider",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    reckon::outbox::relay_outbox(&engine, &http, engine.now())
        .await
        .unwrap();
    assert!(!delivered(&local_only), "held until a supervisor approves");
    app.app
        .add_user("sue", app::types::Role::Supervisor, "correct horse battery")
        .await;
    assert_eq!(
        app.app.login("sue", "correct horse battery").await.status(),
        200
    );
    let proposal: String = sqlx::query_scalar(
        "SELECT proposal_id FROM fix_proposals WHERE payment_no = $1 AND status = 'PENDING'",
    )
    .bind(&local_only)
    .fetch_one(app.pool())
    .await
    .unwrap();
    let res = app
        .app
        .call(
            "fixes/approve",
            &[("proposal", &proposal), ("comment", "the provider agrees")],
        )
        .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    reckon::outbox::relay_outbox(&engine, &http, engine.now())
        .await
        .unwrap();
    assert!(delivered(&local_only));
    let out = app.app.cli(
        &["payment", "release", &local_only, "--note", "again"],
        None,
    );
    assert_eq!(out.status.code(), Some(2), "not held any more");
    let out = app.app.cli(&["audit", "verify"], None);
    assert!(out.status.success());
    // Nothing automatic changed an amount or a currency.
    let kept: (i64, String, String) =
        sqlx::query_as("SELECT amount_minor, currency, status FROM payments WHERE payment_no = $1")
            .bind(&amount)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(kept, (1000, "CNY".to_string(), "SUCCEEDED".to_string()));

    let (status, days) = {
        let res = app
            .app
            .client
            .get(format!(
                "{}/api/v1/recon/days?from={date}&to={date}",
                app.app.base
            ))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        (
            res.status().as_u16(),
            res.json::<serde_json::Value>().await.unwrap(),
        )
    };
    assert_eq!(status, 200);
    let f = &days["days"][0]["figures"];
    assert_eq!(f["statement_rows"], 10, "{days}");
    assert_eq!(f["matched"], 2, "the payment and its refund: {days}");
    assert_eq!(f["repaired"], 1, "{days}");
    // Open tickets: the LOCAL_ONLY one closed when its release was approved.
    assert_eq!(f["unknown"], 6, "{days}");
    assert_eq!(
        f["to_process"], 11,
        "10 rows and one local payment without a row: {days}"
    );
    assert_eq!(f["classes"]["DUPLICATE"], 2, "both copies: {days}");

    // The same file again: recognised, saying so, nothing duplicated.
    let (status, again) = app.upload(&token, &date, &file).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["run_id"], run["run_id"]);
    assert!(
        again["note"]
            .as_str()
            .unwrap()
            .contains("already reconciled"),
        "{again}"
    );
    let runs: i64 = crate::reads::runs(app.pool()).await;
    assert_eq!(runs, 1, "no second run left behind");
    // A new file for the same day with the same facts: a new run that
    // updates the open tickets and leaves the closed one closed.
    let mut reordered = rows.clone();
    reordered.reverse();
    let (status, rerun) = app.upload(&token, &date, &statement(&reordered)).await;
    assert_eq!(status, 201, "{rerun}");
    assert_ne!(rerun["run_id"], run["run_id"]);
    let after = app.tickets().await;
    assert_eq!(after.len(), tickets.len(), "{after:?}");
    assert_eq!(
        after.iter().filter(|t| t.2 == "CLOSED").count(),
        2,
        "the repaired one and the released one stay closed"
    );
    assert_eq!(app.count("payment_effects", &lag).await, 1);
}

async fn broken_or_incomplete_statements_are_refused_with_the_reason(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let p = app.paid_with("RC-Z", 1000, "10.00", "SBX-Z").await;
    let good = row("payment", "SBX-Z", &p, ("", ""), "10.00", "CNY", &at);
    let bad = format!(
        "{HEADER}\n{good}\npayment,SBX-Y,PAYY,,,SUCCEEDED,ten,CNY,{at}\n#summary,rows=2,total_minor=2000\n"
    );
    let (status, answer) = app.upload(&token, &date, &bad).await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("line 3"),
        "{answer}"
    );
    let short = format!("{HEADER}\n{good}\n#summary,rows=2,total_minor=2000\n");
    let (status, answer) = app.upload(&token, &date, &short).await;
    assert_eq!(status, 422, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("rows: the statement says 2, 1 read"),
        "{answer}"
    );
    // The total is money: in major units, with its currency.
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("total: the statement says 20.00 CNY, 10.00 CNY read"),
        "{answer}"
    );
    let runs: Vec<String> = sqlx::query_scalar("SELECT status FROM recon_runs ORDER BY started_at")
        .fetch_all(app.pool())
        .await
        .unwrap();
    assert_eq!(runs, ["FAILED", "FAILED"]);
    let tickets: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies")
        .fetch_one(app.pool())
        .await
        .unwrap();
    assert_eq!(tickets, 0, "a refused statement reports nothing");
    let (status, _) = app.upload(&token, "2026-13-01", &short).await;
    assert_eq!(status, 400);
    // The operator accepts one bad line: skipped and listed, the row count
    // still checked (read + skipped), the total not checkable.
    let form = reqwest::multipart::Form::new()
        .text("provider", "sandbox")
        .text("business_date", date.clone())
        .text("accept_bad_lines", "1")
        .part(
            "file",
            reqwest::multipart::Part::bytes(bad.into_bytes()).file_name("s.csv"),
        );
    let res = app
        .app
        .client
        .post(format!("{}/api/v1/recon/runs", app.app.base))
        .bearer_auth(&token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let run: serde_json::Value = res.json().await.unwrap();
    assert_eq!(run["status"], "COMPLETED");
    let summary: serde_json::Value =
        serde_json::from_str(run["summary_json"].as_str().unwrap()).unwrap();
    assert_eq!(summary["skipped"][0]["line"], 3, "{summary}");
    assert!(
        summary["checks"][1]["waived"]
            .as_str()
            .unwrap()
            .contains("not checked"),
        "{summary}"
    );
    assert_eq!(summary["checks"][0]["read"], 2, "{summary}");
}

/// The seed's drill 7: a pull breaks on page 3 of 5; the run fails with its
/// cursor; resume completes it; the totals agree; nothing is counted twice.
async fn a_pull_broken_on_page_three_resumes_from_its_cursor(b: Backend) {
    let app = spawn_engine_app(b).await;
    let (date, _) = app.today();
    let mut paid = Vec::new();
    for i in 0..10 {
        let p = app.payment(&format!("PULL-{i}"), 1000 + i, "CNY").await;
        let major = format!("{}.{:02}", (1000 + i) / 100, (1000 + i) % 100);
        app.sandbox_knows(&p, "SUCCEEDED", &major, "CNY");
        let id = format!("evt-pull-{i}");
        let body = app.notice(&id, &p, "SUCCEEDED", &major, "CNY", &format!("SBX-{p}"));
        assert_eq!(app.post_signed(&id, &body).await.status(), 200);
        paid.push(p);
    }
    app.sandbox.set_chaos(reckon::sandbox_server::Chaos {
        settle_ms: 3_600_000,
        statement_page_size: 2,
        statement_fail_page: Some(3),
        ..Default::default()
    });
    let engine = app.app_engine();
    let err = reckon::recon::pull_statement(&engine, "sandbox", &date, "test")
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("pull interrupted after 4 rows"),
        "{message}"
    );
    let run_id = message
        .split_whitespace()
        .find(|w| w.starts_with("RUN"))
        .unwrap()
        .trim_end_matches(':')
        .to_owned();
    let run = reckon::recon::find_run(&engine, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.status, "FAILED");
    assert_eq!(run.rows_read, 4);
    let cursor: Option<String> =
        sqlx::query_scalar("SELECT cursor FROM recon_runs WHERE run_id = $1")
            .bind(&run_id)
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(cursor.as_deref(), Some("4"));
    // Still broken: resuming fails again, loses and repeats nothing.
    assert!(reckon::recon::resume_run(&engine, &run_id).await.is_err());
    assert_eq!(
        reckon::recon::find_run(&engine, &run_id)
            .await
            .unwrap()
            .unwrap()
            .rows_read,
        4
    );
    // A process that stopped mid-pull leaves the run RUNNING: not resumable
    // while it may still be going, resumable after an hour of silence.
    sqlx::query("UPDATE recon_runs SET status = 'RUNNING', updated_at = $1 WHERE run_id = $2")
        .bind(engine.now())
        .bind(&run_id)
        .execute(app.pool())
        .await
        .unwrap();
    let busy = reckon::recon::resume_run(&engine, &run_id)
        .await
        .unwrap_err()
        .to_string();
    assert!(busy.contains("running"), "{busy}");
    app.clock.advance_secs(3601);
    // Mended: resume completes the run.
    app.sandbox.set_chaos(reckon::sandbox_server::Chaos {
        settle_ms: 3_600_000,
        statement_page_size: 2,
        ..Default::default()
    });
    let run = reckon::recon::resume_run(&engine, &run_id).await.unwrap();
    assert_eq!(run.status, "COMPLETED", "{run:?}");
    assert_eq!(run.rows_read, 10);
    let (rows, distinct, total): (i64, i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT provider_txn_id), CAST(SUM(amount_minor) AS BIGINT) FROM recon_rows WHERE run_id = $1",
    )
    .bind(&run_id)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!((rows, distinct), (10, 10), "no row twice");
    assert_eq!(total, (0..10).map(|i| 1000 + i).sum::<i64>());
    let summary: String = crate::reads::run_summary(app.pool(), &run_id).await;
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let checks = summary["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c["stated"] == c["read"]), "{summary}");
    let figures: serde_json::Value = serde_json::from_str(&run.figures_json.unwrap()).unwrap();
    assert_eq!(figures["matched"], 10, "{figures}");
    assert!(app.tickets().await.is_empty());
    // A completed run does not resume.
    assert!(reckon::recon::resume_run(&engine, &run_id).await.is_err());
}

async fn the_daily_schedule_pulls_yesterday_once(b: Backend) {
    // Yesterday only: the catch-up of earlier days is tests/api/schedule.rs'.
    let app = crate::engine_helpers::spawn_engine_app_with(b, |c| c.pull_catch_up_days = 1).await;
    let (date, _) = app.today();
    for i in 0..2 {
        let p = app.payment(&format!("SCHED-{i}"), 500, "CNY").await;
        app.sandbox_knows(&p, "SUCCEEDED", "5.00", "CNY");
        let id = format!("evt-sched-{i}");
        let body = app.notice(&id, &p, "SUCCEEDED", "5.00", "CNY", &format!("SBX-{p}"));
        assert_eq!(app.post_signed(&id, &body).await.status(), 200);
    }
    let engine = app.app_engine();
    // Today is not over: nothing to pull for it yet.
    let today: jiff::civil::Date = date.parse().unwrap();
    let at = |d: jiff::civil::Date, h: i8| {
        d.at(h, 0, 0, 0)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_microsecond()
    };
    let tomorrow = today.tomorrow().unwrap();
    // Before 02:00 the latest ready day is the one before.
    reckon::recon::scheduled_pulls(&engine, at(tomorrow, 1))
        .await
        .unwrap();
    let today_pulled: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM recon_runs WHERE business_date = $1 AND source = 'pull'",
    )
    .bind(&date)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(today_pulled, 0, "before 02:00");
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, at(tomorrow, 3))
            .await
            .unwrap(),
        1
    );
    let status: String = sqlx::query_scalar(
        "SELECT status FROM recon_runs WHERE business_date = $1 AND source = 'pull'",
    )
    .bind(&date)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(status, "COMPLETED");
    assert_eq!(
        reckon::recon::scheduled_pulls(&engine, at(tomorrow, 4))
            .await
            .unwrap(),
        0,
        "done once"
    );
}

async fn a_payment_made_yesterday_and_paid_today_belongs_to_today(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (today, at) = app.today();
    let p = app.payment("RC-LATE", 1500, "CNY").await;
    sqlx::query("UPDATE payments SET created_at = created_at - 86400000000 WHERE payment_no = $1")
        .bind(&p)
        .execute(app.pool())
        .await
        .unwrap();
    let body = app.notice("evt-late", &p, "SUCCEEDED", "15.00", "CNY", "SBX-LATE");
    assert_eq!(app.post_signed("evt-late", &body).await.status(), 200);
    let yesterday = today
        .parse::<jiff::civil::Date>()
        .unwrap()
        .yesterday()
        .unwrap()
        .to_string();
    let (status, run) = app.upload(&token, &yesterday, &statement(&[])).await;
    assert_eq!(status, 201, "{run}");
    assert!(
        app.tickets().await.is_empty(),
        "made yesterday, paid today: not yesterday's"
    );
    let rows = [row(
        "payment",
        "SBX-LATE",
        &p,
        ("", ""),
        "15.00",
        "CNY",
        &at,
    )];
    let (status, run) = app.upload(&token, &today, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    assert!(app.tickets().await.is_empty(), "{:?}", app.tickets().await);
    let figures: serde_json::Value =
        serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(figures["matched"], 1, "{figures}");
}

/// The run queues its STATUS_LAG repairs for the worker (durably, as
/// provider tasks): the run's answer does not wait on the provider, the
/// ticket stays open until the worker repairs it, and the repair counts in
/// the run's figures then. A second run of the same facts queues again, and
/// the second repair changes nothing.
async fn status_lag_repairs_are_queued_for_the_worker(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let lag = app.payment("RQ-A", 2000, "CNY").await;
    let engine = &app.app.engine;
    app.sandbox.put(reckon::providers::sandbox::PaymentData {
        payment_no: lag.clone(),
        txn_id: "SBX-RQ".into(),
        status: "SUCCEEDED".into(),
        amount: "20.00".into(),
        currency: "CNY".into(),
    });
    let rows = [row(
        "payment",
        "SBX-RQ",
        &lag,
        ("", ""),
        "20.00",
        "CNY",
        &at,
    )];
    let (status, run) = app.upload_only(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let figures: serde_json::Value =
        serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(
        (figures["repaired"].as_i64(), figures["pending"].as_i64()),
        (Some(0), Some(1)),
        "{run}"
    );
    assert_eq!(app.status(&lag).await, "CREATED");
    let open: Vec<(String, String)> =
        sqlx::query_as("SELECT class, status FROM discrepancies WHERE payment_no = $1")
            .bind(&lag)
            .fetch_all(app.pool())
            .await
            .unwrap();
    assert_eq!(open, [("STATUS_LAG".to_owned(), "OPEN".to_owned())]);
    let queued: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM provider_tasks WHERE kind = 'recon_repair' AND payment_no = $1 AND status = 'PENDING'",
    )
    .bind(&lag)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(queued, 1);

    // The worker's turn: repaired through apply, once.
    reckon::workers::run_provider_tasks(engine, engine.now())
        .await
        .unwrap();
    assert_eq!(app.status(&lag).await, "SUCCEEDED");
    assert_eq!(app.count("payment_effects", &lag).await, 1);
    app.assert_auto_repaired(&lag).await;
    let figures: String =
        sqlx::query_scalar("SELECT figures_json FROM recon_runs WHERE run_id = $1")
            .bind(run["run_id"].as_str().unwrap())
            .fetch_one(app.pool())
            .await
            .unwrap();
    let figures: serde_json::Value = serde_json::from_str(&figures).unwrap();
    assert_eq!(
        (figures["repaired"].as_i64(), figures["pending"].as_i64()),
        (Some(1), Some(0))
    );
    let task: (String, Option<String>) = sqlx::query_as(
        "SELECT status, last_error FROM provider_tasks WHERE kind = 'recon_repair' AND payment_no = $1",
    )
    .bind(&lag)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(task, ("DONE".to_owned(), None));
    assert_eq!(
        reckon::workers::run_provider_tasks(engine, engine.now())
            .await
            .unwrap(),
        0
    );
}

/// The lag is gone by the time the worker repairs it — the notification
/// came after all, or a status query of another lane paid it: the repair
/// finds the payment paid, changes nothing, and closes the ticket.
async fn a_status_lag_paid_meanwhile_closes_at_its_repair(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let lag = app.payment("RQ-M", 2000, "CNY").await;
    app.sandbox_knows(&lag, "SUCCEEDED", "20.00", "CNY");
    let txn = format!("SBX-{lag}");
    let rows = [row("payment", &txn, &lag, ("", ""), "20.00", "CNY", &at)];
    let (status, run) = app.upload_only(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let body = app.notice("evt-rq-m", &lag, "SUCCEEDED", "20.00", "CNY", &txn);
    assert_eq!(app.post_signed("evt-rq-m", &body).await.status(), 200);
    assert_eq!(app.status(&lag).await, "SUCCEEDED");
    let engine = &app.app.engine;
    while reckon::workers::run_provider_tasks(engine, engine.now())
        .await
        .unwrap()
        > 0
    {}
    assert_eq!(app.count("payment_effects", &lag).await, 1);
    app.assert_auto_repaired(&lag).await;
}

/// A transaction Reckon does not know, listed twice: both rows DUPLICATE
/// (not PROVIDER_ONLY), one ticket.
async fn an_unknown_transaction_listed_twice_is_one_duplicate_ticket(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let ghost = row(
        "payment",
        "SBX-GHOST",
        "PAYGHOST1",
        ("", ""),
        "5.00",
        "CNY",
        &at,
    );
    let (status, run) = app
        .upload(&token, &date, &statement(&[ghost.clone(), ghost]))
        .await;
    assert_eq!(status, 201, "{run}");
    let figures: serde_json::Value =
        serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(figures["classes"], json!({"DUPLICATE": 2}), "{run}");
    let tickets: Vec<(String, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT class, provider_txn_id, line_no FROM discrepancies WHERE source = 'recon'",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    assert_eq!(
        tickets,
        [(
            "DUPLICATE".to_owned(),
            Some("SBX-GHOST".to_owned()),
            Some(3)
        )]
    );
}

/// A run reads its day, not the provider's history: with fifty days of
/// payments and refunds behind it (and the planner's statistics), the
/// day's payments and refunds are found by their day indexes.
async fn the_days_payments_and_refunds_are_read_by_their_day_indexes(b: Backend) {
    let app = spawn_engine_app(b).await;
    let pool = app.pool();
    let day = 86_400_000_000i64;
    let insert = |head: &'static str, values: Vec<String>| async move {
        sqlx::query(&format!("{head} VALUES {}", values.join(", ")))
            .execute(pool)
            .await
            .unwrap();
    };
    for d in 0..50i64 {
        let at = |k: i64| 1_790_000_000_000_000 + d * day + k * 1_000_000;
        insert(
            "INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
               currency, status, version, created_by, awaiting_recon, created_at, updated_at, paid_at)",
            (0..100i64)
                .map(|k| {
                    let at = at(k);
                    format!(
                        "('H{d}-{k}', 'H{d}-{k}', 1, 'sandbox', 'SBX-H{d}-{k}', 100, 'CNY', 'SUCCEEDED', 1, 't', 0, \
                          {at}, {at}, {at})"
                    )
                })
                .collect(),
        )
        .await;
        // Ten made that day and never paid.
        insert(
            "INSERT INTO payments (payment_no, order_no, attempt_no, provider, amount_minor, \
               currency, status, version, created_by, awaiting_recon, created_at, updated_at)",
            (0..10i64)
                .map(|k| {
                    let at = at(k);
                    format!(
                        "('U{d}-{k}', 'U{d}-{k}', 1, 'sandbox', 100, 'CNY', 'CREATED', 1, 't', 0, {at}, {at})"
                    )
                })
                .collect(),
        )
        .await;
        insert(
            "INSERT INTO refunds (refund_no, payment_no, provider, amount_minor, currency, status, \
               provider_refund_id, idem_scope, idem_key, reason, requested_by, created_at, updated_at, finished_at)",
            (0..20i64)
                .map(|k| {
                    let at = at(k);
                    format!(
                        "('R{d}-{k}', 'H{d}-{k}', 'sandbox', 100, 'CNY', 'SUCCEEDED', 'RF-H{d}-{k}', 't', 'R{d}-{k}', \
                          'test', 't', {at}, {at}, {at})"
                    )
                })
                .collect(),
        )
        .await;
    }
    // Made the day before and paid that day (counts), made that day and
    // paid the day after (does not).
    let (start, end) = (
        1_790_000_000_000_000 + 7 * day,
        1_790_000_000_000_000 + 8 * day,
    );
    for (no, made, paid) in [
        ("LATE6", start - 1_000_000, start + 1_000_000),
        ("EARLY7", end - 1_000_000, end + 1_000_000),
    ] {
        insert(
            "INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
               currency, status, version, created_by, awaiting_recon, created_at, updated_at, paid_at)",
            vec![format!(
                "('{no}', '{no}', 1, 'sandbox', 'SBX-{no}', 100, 'CNY', 'SUCCEEDED', 1, 't', 0, \
                  {made}, {paid}, {paid})"
            )],
        )
        .await;
    }
    sqlx::query("ANALYZE").execute(pool).await.unwrap();
    let [paid, unpaid] = reckon::store::recon_reads::DAY_PAYMENTS;
    for (sql, index, table) in [
        (paid, "payments_day", "payments"),
        (unpaid, "payments_day", "payments"),
        (
            reckon::store::recon_reads::DAY_REFUNDS,
            "refunds_day",
            "refunds",
        ),
    ] {
        let (explain, column) = match b {
            Backend::Sqlite => (format!("EXPLAIN QUERY PLAN {sql}"), "detail"),
            Backend::Postgres => (format!("EXPLAIN {sql}"), "QUERY PLAN"),
        };
        let plan: Vec<String> = sqlx::query(&explain)
            .bind("sandbox")
            .bind(start)
            .bind(end)
            .fetch_all(pool)
            .await
            .unwrap()
            .iter()
            .map(|r| sqlx::Row::get::<String, _>(r, column))
            .collect();
        let plan = plan.join("\n");
        assert!(plan.contains(index), "{table} not by {index}:\n{plan}");
        assert!(
            !plan.contains(&format!("SCAN {table}")) && !plan.contains("Seq Scan"),
            "{table} walked whole:\n{plan}"
        );
    }
    // And the day's payments are exactly that day's: the hundred paid
    // that day (one made the day before among them), and the ten made
    // that day and never paid.
    let mut found = Vec::new();
    for sql in [paid, unpaid] {
        let nos: Vec<String> = sqlx::query_scalar(&format!("SELECT payment_no FROM ({sql}) d"))
            .bind("sandbox")
            .bind(start)
            .bind(end)
            .fetch_all(pool)
            .await
            .unwrap();
        found.push(nos);
    }
    assert_eq!(found[0].len(), 101, "{:?}", found[0]);
    assert!(
        found[0]
            .iter()
            .all(|no| no.starts_with("H7-") || no == "LATE6"),
        "{:?}",
        found[0]
    );
    assert!(found[0].contains(&"LATE6".to_owned()));
    let mut unpaid_nos = found[1].clone();
    unpaid_nos.sort();
    let mut expected: Vec<String> = (0..10).map(|k| format!("U7-{k}")).collect();
    expected.sort();
    assert_eq!(unpaid_nos, expected);
}

/// A statement with thousands of exceptions has the payments they name
/// looked up while it is still read (SQLite), the last ones after: a
/// payment named in the first chunk and one named in the last are each
/// found (ONE_TO_MANY), exactly as in a small statement.
async fn payments_named_early_and_late_in_a_long_statement_are_found_alike(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let first = app.paid_with("RC-EARLY", 700, "7.00", "SBX-EARLY").await;
    let last = app.paid_with("RC-LATE2", 800, "8.00", "SBX-LATE2").await;
    let mut rows = vec![row(
        "payment",
        "SBX-X1",
        &first,
        ("", ""),
        "7.00",
        "CNY",
        &at,
    )];
    for k in 0..4200 {
        rows.push(row(
            "payment",
            &format!("SBX-FILL-{k}"),
            "",
            ("", ""),
            "1.00",
            "CNY",
            &at,
        ));
    }
    rows.push(row(
        "payment",
        "SBX-X2",
        &last,
        ("", ""),
        "8.00",
        "CNY",
        &at,
    ));
    let (status, run) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    let named: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT class, payment_no FROM discrepancies WHERE class <> 'PROVIDER_ONLY' ORDER BY payment_no",
    )
    .fetch_all(app.pool())
    .await
    .unwrap();
    let mut expected = vec![
        ("ONE_TO_MANY".to_owned(), Some(first)),
        ("ONE_TO_MANY".to_owned(), Some(last)),
    ];
    expected.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(named, expected);
    let provider_only: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM discrepancies WHERE class = 'PROVIDER_ONLY'")
            .fetch_one(app.pool())
            .await
            .unwrap();
    assert_eq!(provider_only, 4200);
}

both_databases!(
    a_status_lag_paid_meanwhile_closes_at_its_repair,
    payments_named_early_and_late_in_a_long_statement_are_found_alike,
    the_days_payments_and_refunds_are_read_by_their_day_indexes,
    an_unknown_transaction_listed_twice_is_one_duplicate_ticket,
    status_lag_repairs_are_queued_for_the_worker,
    a_payment_made_yesterday_and_paid_today_belongs_to_today,
    the_daily_schedule_pulls_yesterday_once,
    a_pull_broken_on_page_three_resumes_from_its_cursor,
    a_day_with_every_class_makes_exactly_its_tickets_and_a_rerun_changes_nothing,
    broken_or_incomplete_statements_are_refused_with_the_reason,
);

/// Real bills uploaded through the API for WeChat Pay and Alipay accounts:
/// a REFUND trade bill (its refund ids once read as amounts) and an Alipay
/// 业务明细 exported as UTF-8, with and without a byte-order mark (once
/// refused as not GBK); each read, its fees kept with its rows, and its
/// rows made into the tickets they are.
pub(crate) mod bills {
    use super::*;
    use crate::engine_helpers::spawn_engine_app_with;
    use reckon::config::ProviderConfig;
    use reckon::providers::alipay::AlipayConfig;
    use reckon::providers::wechatpay::WechatPayConfig;
    use rsa::pkcs8::EncodePublicKey;

    pub(crate) fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/bills/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The sandbox's app with a WeChat Pay and an Alipay account beside it
    /// (notifications only: an upload needs no API).
    pub(crate) async fn spawn(b: Backend) -> EngineApp {
        let key = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
        let public = key.to_public_key();
        let pem = public
            .to_public_key_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap();
        let der = base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            public.to_public_key_der().unwrap().as_bytes(),
        );
        spawn_engine_app_with(b, move |c| {
            c.providers.push(ProviderConfig::WechatPay(WechatPayConfig {
                name: "wechat".into(),
                api_key: "0123456789abcdef0123456789ABCDEF".into(),
                platform_keys: [("5157F09EFDC096DE15EBE81A47057A72".to_string(), pem)]
                    .into_iter()
                    .collect(),
                ..WechatPayConfig::default()
            }));
            c.providers.push(ProviderConfig::Alipay(AlipayConfig {
                name: "alipay".into(),
                base_url: String::new(),
                app_id: "2021000000000001".into(),
                seller_id: None,
                public_key: der,
                private_key: None,
                timeout_ms: None,
                query_on_unverified: false,
                fees: None,
                max_bill_bytes: None,
            }));
        })
        .await
    }

    impl EngineApp {
        /// A run's tickets: class, key, the provider's amount.
        async fn run_tickets(&self, provider: &str) -> Vec<(String, Option<i64>)> {
            sqlx::query_as(
                "SELECT class, provider_amount_minor FROM discrepancies WHERE provider = $1 ORDER BY line_no",
            )
            .bind(provider)
            .fetch_all(self.pool())
            .await
            .unwrap()
        }

        async fn fees(&self, run: &serde_json::Value) -> Vec<Option<i64>> {
            sqlx::query_scalar(
                "SELECT fee_minor FROM recon_rows WHERE run_id = $1 ORDER BY line_no",
            )
            .bind(run["run_id"].as_str().unwrap())
            .fetch_all(self.pool())
            .await
            .unwrap()
        }
    }

    /// Every figure the bill states agrees with the rows read.
    fn completed_and_agreeing(run: &serde_json::Value, rows: i64) {
        assert_eq!(run["status"], "COMPLETED", "{run}");
        assert_eq!(run["rows_read"], rows, "{run}");
        let summary: serde_json::Value =
            serde_json::from_str(run["summary_json"].as_str().unwrap()).unwrap();
        let checks = summary["checks"].as_array().unwrap();
        assert!(!checks.is_empty(), "{summary}");
        assert!(checks.iter().all(|c| c["stated"] == c["read"]), "{summary}");
    }

    async fn a_wechat_refund_bill_feeds_refund_checks(b: Backend) {
        let app = spawn(b).await;
        let token = app.token().await;
        let (date, _) = app.today();
        let bill = ("refund.csv", fixture("wechatpay_refund.csv"));
        let (status, run) = app.upload_bill(&token, "wechat", &date, bill).await;
        assert_eq!(status, 201, "{run}");
        completed_and_agreeing(&run, 2);
        // Which bill it was: recorded on the run, in the API's run and
        // on the console's runs list.
        let refund_bill = "wechatpay trade bill (REFUND)";
        assert_eq!(run["bill_type"], refund_bill, "{run}");
        let run_id = run["run_id"].as_str().unwrap();
        let shown = app.app.api_run(&token, run_id).await;
        assert_eq!(shown["bill_type"], refund_bill, "{shown}");
        let desk = crate::schedule::signed_in(&app).await;
        let res = app.app.call_with(&desk, "runs/list", &[]).await;
        let listed: serde_json::Value = res.json().await.unwrap();
        assert_eq!(listed["items"][0]["id"], run["run_id"], "{listed}");
        assert_eq!(listed["items"][0]["bill_type"], refund_bill, "{listed}");
        // Cut before its summary: refused, and still said to be a REFUND
        // bill.
        let whole = fixture("wechatpay_refund.csv");
        let summary = "总交易单数".as_bytes();
        let at = whole
            .windows(summary.len())
            .position(|w| w == summary)
            .unwrap();
        let cut = ("cut.csv", whole[..at].to_vec());
        let (status, answer) = app.upload_bill(&token, "wechat", &date, cut).await;
        assert_eq!(status, 422, "{answer}");
        let refused: (String, Option<String>) =
            sqlx::query_as("SELECT status, bill_type FROM recon_runs WHERE file_name = 'cut.csv'")
                .fetch_one(app.pool())
                .await
                .unwrap();
        assert_eq!(refused, ("FAILED".into(), Some(refund_bill.into())));
        assert_eq!(app.fees(&run).await, [Some(-21), Some(-7)]);
        // Refunds Reckon never asked for: REFUND_MISMATCH, at the amounts
        // the bill gives back (not its refund ids).
        assert_eq!(
            app.run_tickets("wechat").await,
            [
                ("REFUND_MISMATCH".to_string(), Some(3550)),
                ("REFUND_MISMATCH".to_string(), Some(1200)),
            ]
        );
        // The fund-flow bill is refused by name.
        let fund = ("fund.csv", fixture("wechatpay_fundflow.csv"));
        let (status, answer) = app.upload_bill(&token, "wechat", &date, fund).await;
        assert_eq!(status, 422, "{answer}");
        assert!(
            answer["error"].as_str().unwrap().contains("fund-flow bill"),
            "{answer}"
        );
    }

    async fn an_alipay_export_in_utf8_is_read_with_or_without_bom(b: Backend) {
        let app = spawn(b).await;
        let token = app.token().await;
        let (date, _) = app.today();
        let export = ("业务明细.csv", fixture("alipay_detail_utf8.csv"));
        let (status, run) = app.upload_bill(&token, "alipay", &date, export).await;
        assert_eq!(status, 201, "{run}");
        completed_and_agreeing(&run, 3);
        assert_eq!(run["bill_type"], "alipay 业务明细 (UTF-8)", "{run}");
        assert_eq!(app.fees(&run).await, [Some(53), Some(27), Some(-12)]);
        // Two payments and a refund Reckon does not know.
        assert_eq!(
            app.run_tickets("alipay").await,
            [
                ("PROVIDER_ONLY".to_string(), Some(8800)),
                ("PROVIDER_ONLY".to_string(), Some(4500)),
                ("REFUND_MISMATCH".to_string(), Some(2000)),
            ]
        );
        let with_bom = ("业务明细.csv", fixture("alipay_detail_utf8_bom.csv"));
        let (status, run) = app.upload_bill(&token, "alipay", &date, with_bom).await;
        assert_eq!(status, 201, "{run}");
        completed_and_agreeing(&run, 3);
        assert_eq!(app.fees(&run).await, [Some(53), Some(27), Some(-12)]);
    }

    both_databases!(
        a_wechat_refund_bill_feeds_refund_checks,
        an_alipay_export_in_utf8_is_read_with_or_without_bom,
    );
}
