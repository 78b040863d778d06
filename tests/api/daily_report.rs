//! The daily report, on SQLite and PostgreSQL: its figures are the signed
//! close's, its value at risk the day's open tickets', and `reckon report
//! daily` prints it.

use crate::both_databases;
use crate::engine_helpers::spawn_engine_app;
use crate::helpers::Backend;
use crate::recon::{row, statement};

async fn the_daily_report_states_the_close_figures(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, at) = app.today();
    let m = app.paid_with("DR-M", 10000, "100.00", "SBX-M").await;
    let e = app.paid_with("DR-E", 1000, "10.00", "SBX-E").await;
    let rows = vec![
        row("payment", "SBX-M", &m, ("", ""), "100.00", "CNY", &at),
        row("payment", "SBX-E", &e, ("", ""), "9.00", "CNY", &at),
    ];
    let (status, run) = app.upload(&token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    let engine = app.app_engine();

    // Not closed yet: the run's figures, the day OPEN.
    let open = reckon::recon::daily_report(&engine, &date).await.unwrap();
    let sandbox = open
        .providers
        .iter()
        .find(|p| p.provider == "sandbox")
        .unwrap();
    assert_eq!(sandbox.close_state, "OPEN");
    let run_figures: serde_json::Value =
        serde_json::from_str(run["figures_json"].as_str().unwrap()).unwrap();
    assert_eq!(sandbox.figures.as_ref(), Some(&run_figures));

    let close = reckon::recon::close_by_supervisor(&engine, "sandbox", &date, "sam", "month end")
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_str(&close.body_json).unwrap();
    let report = reckon::recon::daily_report(&engine, &date).await.unwrap();
    let sandbox = report
        .providers
        .iter()
        .find(|p| p.provider == "sandbox")
        .unwrap();
    assert_eq!(sandbox.close_state, "CLOSED");
    assert_eq!(sandbox.close_hash.as_deref(), Some(close.hash.as_str()));
    assert_eq!(sandbox.figures.as_ref(), Some(&body["figures"]));
    // The AMOUNT_MISMATCH ticket's 10.00 is what is at risk.
    assert_eq!(sandbox.at_risk, vec![("CNY".to_owned(), 1000)]);
    assert_eq!(sandbox.open_tickets, 1);

    let csv = report.csv();
    let gross = body["figures"]["fees_and_net"]["currencies"]["CNY"]["gross_minor"]
        .as_i64()
        .unwrap();
    assert_eq!(gross, 10900);
    for line in [
        format!("{date},sandbox,,close_state,CLOSED"),
        format!("{date},sandbox,,statement_rows,2"),
        format!("{date},sandbox,,rows_MATCHED,1"),
        format!("{date},sandbox,,rows_AMOUNT_MISMATCH,1"),
        format!("{date},sandbox,CNY,gross,109.00"),
        format!("{date},sandbox,CNY,value_at_risk,10.00"),
        format!("{date},,,open_AMOUNT_MISMATCH_up_to_1_day,1"),
    ] {
        assert!(
            csv.lines().any(|l| l == line),
            "{line} missing from:\n{csv}"
        );
    }
    let html = report.html();
    assert!(html.contains("<td>value_at_risk</td><td>CNY</td><td class=\"n\">10.00</td>"));

    // The command prints the same CSV, with the provider configured as
    // for the server.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("reckon.toml");
    std::fs::write(
        &config,
        "[[providers]]\nname = \"sandbox\"\nkind = \"sandbox\"\nbase_url = \"http://127.0.0.1:9\"\nsecret = \"whsec_MDEyMzQ1Njc4OWFiY2RlZg==\"\n",
    )
    .unwrap();
    let cfg = app.app.config.clone();
    let day = date.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
            .args(["report", "daily", "--date", &day])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RECKON_CONFIG", &config)
            .env("DATABASE_URL", &cfg.database_url)
            .env("RECKON_DATA_DIR", &cfg.data_dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(
        printed.contains(&format!("{date},sandbox,,close_hash,{}", close.hash)),
        "{printed}"
    );
}

both_databases!(the_daily_report_states_the_close_figures);
