//! Pulls of providers' statements through their APIs: Stripe's balance
//! transactions (`stripe`), and WeChat Pay's and Alipay's bills through
//! their bill APIs, each against the local server of tests/api/wechatpay.rs
//! or alipay.rs, which also plays the bill API in the provider's published
//! wire format (signed applications, a gzipped bill with its SHA1, a zip of
//! the 业务明细 and its 汇总), with its faults: no bill yet, a 500 on the
//! download, a wrong digest, a forged answer, a slow answer. Each on SQLite
//! and PostgreSQL.

pub(crate) mod alipay;
pub(crate) mod stripe;
pub(crate) mod wechat;

use crate::helpers::TestApp;
use reckon::recon::ReconError;
use reckon::store::statement_pulls;

/// The run an error of `pull_statement` or `resume_run` names.
fn run_of(err: &ReconError) -> String {
    err.to_string()
        .split_whitespace()
        .find(|w| w.starts_with("RUN"))
        .expect("the error names its run")
        .trim_end_matches(':')
        .to_owned()
}

/// A run's status, rows read, error, and rows kept behind it.
async fn run_state(app: &TestApp, run_id: &str) -> (String, i64, String, i64) {
    let run = reckon::recon::find_run(&app.engine, run_id)
        .await
        .unwrap()
        .expect("the run is kept");
    let kept: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM recon_rows WHERE run_id = $1")
        .bind(run_id)
        .fetch_one(&app.accounts.db.pool)
        .await
        .unwrap();
    (
        run.status,
        run.rows_read,
        run.error.unwrap_or_default(),
        kept,
    )
}

/// Reconciliation's tickets: class and status, by class.
async fn tickets(app: &TestApp) -> Vec<(String, String, Option<String>)> {
    sqlx::query_as(
        "SELECT class, status, payment_no FROM discrepancies WHERE source = 'recon' ORDER BY class",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

/// A pull that fails: its run FAILED with nothing read; the run and
/// its error.
async fn pull_fails(app: &TestApp, provider: &str, date: &str) -> (String, String) {
    let err = reckon::recon::pull_statement(&app.engine, provider, date, "test")
        .await
        .unwrap_err();
    let run_id = run_of(&err);
    let error = failed_reading_nothing(app, &run_id).await;
    (run_id, error)
}

/// A resume that fails again, reading nothing: the run's error.
async fn resume_fails(app: &TestApp, run_id: &str) -> String {
    let err = reckon::recon::resume_run(&app.engine, run_id)
        .await
        .unwrap_err();
    assert_eq!(run_of(&err), run_id);
    failed_reading_nothing(app, run_id).await
}

async fn failed_reading_nothing(app: &TestApp, run_id: &str) -> String {
    let (status, rows, error, kept) = run_state(app, run_id).await;
    assert_eq!((status.as_str(), rows, kept), ("FAILED", 0, 0), "{error}");
    error
}

/// A resume that completes the run with the day's one row, no ticket.
async fn resume_completes(app: &TestApp, run_id: &str) {
    let run = reckon::recon::resume_run(&app.engine, run_id)
        .await
        .unwrap();
    assert_eq!(
        (run.status.as_str(), run.rows_read),
        ("COMPLETED", 1),
        "{run:?}"
    );
    assert!(tickets(app).await.is_empty());
}

/// What the worker would do next (the STATUS_LAG repairs a run queued).
async fn settle(app: &TestApp) {
    let engine = &app.engine;
    while reckon::workers::run_provider_tasks(engine, engine.now())
        .await
        .unwrap()
        > 0
    {}
}

/// A pulled day with one case of every class the bill can carry made
/// exactly its tickets (the STATUS_LAG repaired by the worker), one
/// match, and a summary that agrees.
async fn assert_every_class(
    app: &TestApp,
    run: &reckon::recon::RunRow,
    with_currency: bool,
    local_only: &str,
    lag: &str,
) {
    settle(app).await;
    let found = tickets(app).await;
    let classes: Vec<(&str, &str)> = found
        .iter()
        .map(|(c, s, _)| (c.as_str(), s.as_str()))
        .collect();
    let mut expected = vec![
        ("AMOUNT_MISMATCH", "OPEN"),
        ("CURRENCY_MISMATCH", "OPEN"),
        ("DUPLICATE", "OPEN"),
        ("LOCAL_ONLY", "OPEN"),
        ("ONE_TO_MANY", "OPEN"),
        ("PROVIDER_ONLY", "OPEN"),
        ("REFUND_MISMATCH", "OPEN"),
        ("STATUS_LAG", "CLOSED"),
    ];
    if !with_currency {
        expected.retain(|(c, _)| *c != "CURRENCY_MISMATCH");
    }
    assert_eq!(classes, expected, "{found:?}");
    let named = |class: &str| found.iter().find(|t| t.0 == class).unwrap().2.clone();
    assert_eq!(named("LOCAL_ONLY").as_deref(), Some(local_only));
    assert_eq!(named("PROVIDER_ONLY").as_deref(), Some("PAYNOTHERE"));
    assert_eq!(app.payment_state(lag).await, ("SUCCEEDED".to_string(), 1));
    let figures: serde_json::Value =
        serde_json::from_str(run.figures_json.as_deref().unwrap()).unwrap();
    assert_eq!(figures["matched"], 1, "{figures}");
    let summary: serde_json::Value =
        serde_json::from_str(run.summary_json.as_deref().unwrap()).unwrap();
    let checks = summary["checks"].as_array().unwrap();
    assert!(
        !checks.is_empty() && checks.iter().all(|c| c["stated"] == c["read"]),
        "{summary}"
    );
}

/// `reckon recon pull --provider P --date D` as a process, configured by a
/// file holding the app's provider section (`section`, TOML): before the
/// bill is made it says "not ready" and exits 1; while another instance
/// holds the day's lease it says "busy", naming it, and exits 75 with no
/// run started; once `make_bill` made it, it completes the run with the
/// day's one row.
async fn cli_pulls_once_ready(
    app: &TestApp,
    section: &str,
    provider: &str,
    date: &str,
    make_bill: impl FnOnce(),
) {
    let file = app._dir.path().join("reckon.toml");
    std::fs::write(&file, format!("timezone = \"UTC\"\n\n{section}")).unwrap();
    let pull = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
            .args(["recon", "pull", "--provider", provider, "--date", date])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RECKON_CONFIG", &file)
            .env("DATABASE_URL", &app.config.database_url)
            .env("RECKON_DATA_DIR", &app.config.data_dir)
            .output()
            .unwrap()
    };
    let out = pull();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "no bill yet: {stderr}");
    assert!(stderr.contains("not ready:"), "{stderr}");
    let pool = &app.engine.db.pool;
    let count_runs = || async { crate::reads::runs(pool).await };
    let runs = count_runs().await;
    let now = jiff::Timestamp::now().as_microsecond();
    let held = "instance-b";
    let until = now + 3_600_000_000;
    let taken = statement_pulls::take(pool, provider, date, held, until, now, false).await;
    assert!(taken.unwrap().is_some());
    let out = pull();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(75), "busy: {stderr}");
    assert!(
        stderr.contains("busy:") && stderr.contains(held),
        "{stderr}"
    );
    assert_eq!(count_runs().await, runs, "no run started");
    let ended = statement_pulls::Tried {
        run_id: None,
        error: None,
        done: false,
        next_at: None,
        now,
    };
    statement_pulls::release(pool, provider, date, held, &ended)
        .await
        .unwrap();
    make_bill();
    let out = pull();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["status"], "COMPLETED", "{run}");
    assert_eq!(run["rows_read"], 1, "{run}");
}

/// The day's settlement against its balance bill: its state and error.
async fn settlement(app: &TestApp, provider: &str, date: &str) -> (String, String) {
    let s = reckon::store::settlements::of_day(&app.accounts.db.pool, provider, date)
        .await
        .unwrap()
        .expect("the day was settled");
    (s.state, s.error.unwrap_or_default())
}

/// The balance side's tickets: class, status, day, trade net, balance net.
async fn settlement_tickets(app: &TestApp) -> Vec<(String, String, Option<String>, i64, i64)> {
    sqlx::query_as(
        "SELECT class, status, business_date, local_amount_minor, provider_amount_minor \
         FROM discrepancies WHERE source = 'settlement' ORDER BY dedupe_key",
    )
    .fetch_all(&app.accounts.db.pool)
    .await
    .unwrap()
}

/// The payouts the providers reported: id, amount, state.
async fn payouts(app: &TestApp) -> Vec<(String, i64, String)> {
    sqlx::query_as("SELECT payout_id, amount_minor, state FROM payouts ORDER BY payout_id")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap()
}

/// The day's close, if it is closed: its signed body.
async fn closed_body(app: &TestApp, provider: &str, date: &str) -> Option<serde_json::Value> {
    reckon::store::closes::closed(&app.accounts.db.pool, provider, date)
        .await
        .unwrap()
        .map(|c| serde_json::from_str(&c.body_json).unwrap())
}

/// A bank statement (CSV) with one credit from `payer`, imported; the
/// matching pass after it runs.
async fn bank_credit(app: &TestApp, booked_on: &str, amount: &str, text: &str, payer: &str) {
    let csv = format!(
        "Buchungstag,Betrag,Waehrung,Verwendungszweck,Auftraggeber,Soll/Haben\n{booked_on},{amount},CNY,{text},{payer},H\n"
    );
    reckon::bank::import(
        &app.engine,
        reckon::bank::BankImport {
            bytes: csv.as_bytes(),
            file_name: Some("bank.csv"),
            format: Some("csv"),
            csv_columns: Some(
                "date=Buchungstag;amount=Betrag;currency=Waehrung;reference=Verwendungszweck;counterparty=Auftraggeber;direction=Soll/Haben",
            ),
            actor: "test",
        },
    )
    .await
    .unwrap();
}
