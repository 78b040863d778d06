//! Pulls of WeChat Pay's and Alipay's bills through their bill APIs, each
//! against the local server of tests/api/wechatpay.rs or alipay.rs, which
//! also plays the bill API in the provider's published wire format
//! (signed applications, a gzipped bill with its SHA1, a zip of the
//! 业务明细 and its 汇总), with its faults: no bill yet, a 500 on the
//! download, a wrong digest, a forged answer, a slow answer. Each on SQLite
//! and PostgreSQL.

pub(crate) mod alipay;
pub(crate) mod wechat;

use crate::helpers::TestApp;
use reckon::recon::ReconError;

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

/// What the worker would do next (the STATUS_LAG repairs a run queued).
async fn settle(app: &TestApp) {
    let engine = &app.engine;
    while reckon::workers::run_provider_tasks(engine, engine.now())
        .await
        .unwrap()
        > 0
    {}
}

/// The expected tickets of a day with one case of every class the bill
/// can carry, the STATUS_LAG repaired.
fn every_class(with_currency: bool) -> Vec<(&'static str, &'static str)> {
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
    expected
}

/// `reckon recon pull --provider P --date D` as a process, configured by a
/// file holding the app's provider section (`section`, TOML).
fn cli_pull(app: &TestApp, section: &str, provider: &str, date: &str) -> std::process::Output {
    let file = app._dir.path().join("reckon.toml");
    std::fs::write(&file, format!("timezone = \"UTC\"\n\n{section}")).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
        .args(["recon", "pull", "--provider", provider, "--date", date])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RECKON_CONFIG", &file)
        .env("DATABASE_URL", &app.config.database_url)
        .env("RECKON_DATA_DIR", &app.config.data_dir)
        .output()
        .unwrap()
}
