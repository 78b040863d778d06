//! A run's results for finance's tools, each on SQLite and PostgreSQL: a
//! day with a matched, a mismatched and a provider-only row and a local-only
//! payment, exported as CSV (exactly those rows and values), as Parquet
//! (read back by the same crate, equal to the CSV), from the API under its
//! scope, from the console, and by `reckon recon export`.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app};
use crate::helpers::Backend;
use crate::recon::{row, statement};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

/// The day: M matched, E paid 10.00 and listed at 9.00, a row for a
/// payment Reckon never had, and D paid here but absent from the file.
async fn a_run(app: &EngineApp, token: &str) -> (String, [String; 3]) {
    let (date, at) = app.today();
    let m = app.paid_with("RR-M", 10000, "100.00", "SBX-M").await;
    let e = app.paid_with("RR-E", 1000, "10.00", "SBX-E").await;
    let d = app.paid_with("RR-D", 3000, "30.00", "SBX-D").await;
    let rows = vec![
        row("payment", "SBX-M", &m, ("", ""), "100.00", "CNY", &at),
        row("payment", "SBX-E", &e, ("", ""), "9.00", "CNY", &at),
        row(
            "payment",
            "SBX-C",
            "=PAYNOTHERE",
            ("", ""),
            "12.34",
            "CNY",
            &at,
        ),
    ];
    let (status, run) = app.upload(token, &date, &statement(&rows)).await;
    assert_eq!(status, 201, "{run}");
    assert_eq!(run["status"], "COMPLETED", "{run}");
    (run["run_id"].as_str().unwrap().to_owned(), [m, e, d])
}

/// The ticket of `class` the run opened: its id.
async fn ticket(app: &EngineApp, class: &str) -> String {
    sqlx::query_scalar("SELECT discrepancy_id FROM discrepancies WHERE class = $1")
        .bind(class)
        .fetch_one(app.pool())
        .await
        .unwrap()
}

async fn get(app: &EngineApp, token: Option<&str>, path: &str) -> reqwest::Response {
    let mut req = app.app.client.get(format!("{}{path}", app.app.base));
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.unwrap()
}

/// The CSV's cells, line by line (the test's values hold no quotes).
fn cells(csv: &str) -> Vec<Vec<String>> {
    csv.lines()
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

async fn a_runs_results_are_every_row_with_its_outcome_as_csv_and_parquet(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, _) = app.today();
    let (run, [m, e, d]) = a_run(&app, &token).await;
    let (amount, provider_only, local_only) = (
        ticket(&app, "AMOUNT_MISMATCH").await,
        ticket(&app, "PROVIDER_ONLY").await,
        ticket(&app, "LOCAL_ONLY").await,
    );

    let res = get(
        &app,
        Some(&token),
        &format!("/api/v1/recon/runs/{run}/results.csv"),
    )
    .await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains(".csv")
    );
    let csv = res.text().await.unwrap();
    // The sandbox's header is line 1: its rows are lines 2 to 4.
    let expected = format!(
        "run_id,provider_account,business_date,line_no,kind,provider_txn_id,payment_no,refund_no,amount,amount_minor,fee,fee_minor,currency,provider_status,reckon_status,outcome,matched_by,ticket_id,ticket_severity,ticket_status\n\
         {run},sandbox,{date},2,payment,SBX-M,{m},,100.00,10000,,,CNY,SUCCEEDED,SUCCEEDED,MATCHED,provider_txn_id,,,\n\
         {run},sandbox,{date},3,payment,SBX-E,{e},,9.00,900,,,CNY,SUCCEEDED,SUCCEEDED,AMOUNT_MISMATCH,,{amount},HIGH,OPEN\n\
         {run},sandbox,{date},4,payment,SBX-C,'=PAYNOTHERE,,12.34,1234,,,CNY,SUCCEEDED,,PROVIDER_ONLY,,{provider_only},HIGH,OPEN\n\
         {run},sandbox,{date},,local,SBX-D,{d},,30.00,3000,,,CNY,,SUCCEEDED,LOCAL_ONLY,,{local_only},CRITICAL,OPEN\n"
    );
    assert_eq!(csv, expected);
    // Compressed for a browser that asks: whole, the stream's end read once.
    let res = app
        .app
        .client
        .get(format!(
            "{}/api/v1/recon/runs/{run}/results.csv",
            app.app.base
        ))
        .bearer_auth(&token)
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let gz = res.bytes().await.expect("the whole compressed body");
    let mut unzipped = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&gz[..]), &mut unzipped)
        .unwrap();
    assert_eq!(unzipped, expected);

    // The Parquet file, read back, holds the same cells (a leading `=`
    // needs no neutralising there).
    let res = get(
        &app,
        Some(&token),
        &format!("/api/v1/recon/runs/{run}/results.parquet"),
    )
    .await;
    assert_eq!(res.status(), 200);
    let bytes = res.bytes().await.unwrap();
    assert_eq!(&bytes[..4], b"PAR1");
    let reader = SerializedFileReader::new(bytes).unwrap();
    let names: Vec<String> = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .map(|c| c.name().to_owned())
        .collect();
    let csv_cells = cells(&csv.replace("'=PAYNOTHERE", "=PAYNOTHERE"));
    assert_eq!(names, csv_cells[0]);
    let mut read = Vec::new();
    for r in reader.get_row_iter(None).unwrap() {
        let r = r.unwrap();
        read.push(
            r.get_column_iter()
                .map(|(_, f)| match f {
                    Field::Null => String::new(),
                    Field::Str(s) => s.clone(),
                    Field::Long(n) => n.to_string(),
                    other => panic!("unexpected {other:?}"),
                })
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(read, csv_cells[1..]);
    // Whole numbers are INT64: BI tools sum them.
    let amount_minor = reader
        .metadata()
        .file_metadata()
        .schema_descr()
        .column(9)
        .physical_type();
    assert_eq!(amount_minor, parquet::basic::Type::INT64);

    // Each download was audited: CSV twice, Parquet once.
    let audited: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'results.download' AND object_id = $1",
    )
    .bind(&run)
    .fetch_one(app.pool())
    .await
    .unwrap();
    assert_eq!(audited, 3);
}

async fn the_results_need_recon_read_and_a_completed_run(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (run, _) = a_run(&app, &token).await;
    let path = format!("/api/v1/recon/runs/{run}/results.csv");
    assert_eq!(get(&app, None, &path).await.status(), 401);
    let payments_only = app
        .app
        .api_token_with("payments-only", &[app::tokens::Scope::PaymentsRead])
        .await;
    for ext in ["csv", "parquet"] {
        let path = format!("/api/v1/recon/runs/{run}/results.{ext}");
        let res = get(&app, Some(&payments_only), &path).await;
        assert_eq!(res.status(), 403);
        assert!(res.text().await.unwrap().contains("recon:read"));
    }
    let reader = app
        .app
        .api_token_with("recon-reader", &[app::tokens::Scope::ReconRead])
        .await;
    assert_eq!(get(&app, Some(&reader), &path).await.status(), 200);
    assert_eq!(
        get(
            &app,
            Some(&reader),
            "/api/v1/recon/runs/RUNNOSUCH/results.csv"
        )
        .await
        .status(),
        404
    );
    // A run whose file is past its retention cannot be read again: said,
    // not answered with its tickets' rows alone.
    sqlx::query("DELETE FROM statement_files WHERE run_id = $1")
        .bind(&run)
        .execute(app.pool())
        .await
        .unwrap();
    let res = get(&app, Some(&reader), &path).await;
    assert_eq!(res.status(), 400);
    assert!(res.text().await.unwrap().contains("kept no statement file"));
}

async fn reckon_recon_export_writes_the_file(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (run, _) = a_run(&app, &token).await;
    let api_csv = get(
        &app,
        Some(&token),
        &format!("/api/v1/recon/runs/{run}/results.csv"),
    )
    .await
    .text()
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The command reads the statement with the provider's format: the
    // sandbox account is configured for it as for the server.
    let config = dir.path().join("reckon.toml");
    std::fs::write(
        &config,
        "[[providers]]\nname = \"sandbox\"\nkind = \"sandbox\"\nbase_url = \"http://127.0.0.1:9\"\nsecret = \"whsec_MDEyMzQ1Njc4OWFiY2RlZg==\"\n",
    )
    .unwrap();
    for format in ["csv", "parquet"] {
        let out = dir.path().join(format!("results.{format}"));
        let cfg = app.app.config.clone();
        let args = [
            "recon".to_owned(),
            "export".to_owned(),
            run.clone(),
            "--format".to_owned(),
            format.to_owned(),
            "--out".to_owned(),
            out.display().to_string(),
        ];
        let config = config.clone();
        let done = tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
                .args(&args)
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
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        match format {
            "csv" => assert_eq!(std::fs::read_to_string(&out).unwrap(), api_csv),
            _ => {
                let reader = SerializedFileReader::new(std::fs::File::open(&out).unwrap()).unwrap();
                assert_eq!(reader.metadata().file_metadata().num_rows(), 4);
            }
        }
        assert!(
            !dir.path()
                .join(format!("results.{format}.partial"))
                .exists()
        );
    }
    // An unknown run: a clear word, a failure, no file.
    let out = dir.path().join("none.csv");
    let cfg = app.app.config.clone();
    let args = [
        "recon".to_owned(),
        "export".to_owned(),
        "RUNNOSUCH".to_owned(),
        "--out".to_owned(),
        out.display().to_string(),
    ];
    let done = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_reckon"))
            .args(&args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", &cfg.database_url)
            .env("RECKON_DATA_DIR", &cfg.data_dir)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!done.status.success());
    assert!(String::from_utf8_lossy(&done.stderr).contains("no run RUNNOSUCH"));
    assert!(!out.exists());
}

async fn a_pulls_results_are_read_from_its_staged_rows(b: Backend) {
    let app = spawn_engine_app(b).await;
    let token = app.token().await;
    let (date, _) = app.today();
    let mut listed = Vec::new();
    for i in 0..3 {
        let p = app.payment(&format!("RR-PULL-{i}"), 1000 + i, "CNY").await;
        let major = format!("{}.{:02}", (1000 + i) / 100, (1000 + i) % 100);
        app.sandbox_knows(&p, "SUCCEEDED", &major, "CNY");
        let id = format!("evt-rr-pull-{i}");
        let body = app.notice(&id, &p, "SUCCEEDED", &major, "CNY", &format!("SBX-{p}"));
        assert_eq!(app.post_signed(&id, &body).await.status(), 200);
        listed.push(p);
    }
    // Pages of two: the staged rows are read back a keyset chunk at a time
    // whatever the pages were.
    app.sandbox.set_chaos(reckon::sandbox_server::Chaos {
        settle_ms: 3_600_000,
        statement_page_size: 2,
        ..Default::default()
    });
    let engine = app.app_engine();
    let run = reckon::recon::pull_statement(&engine, "sandbox", &date, "test")
        .await
        .unwrap();
    assert_eq!(run.status, "COMPLETED");
    assert_eq!(run.rows_read, 3);
    let csv = get(
        &app,
        Some(&token),
        &format!("/api/v1/recon/runs/{}/results.csv", run.run_id),
    )
    .await
    .text()
    .await
    .unwrap();
    let rows = cells(&csv);
    assert_eq!(rows.len(), 4, "{csv}");
    let mut nos: Vec<&str> = rows[1..].iter().map(|r| r[6].as_str()).collect();
    nos.sort();
    let mut want: Vec<&str> = listed.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(nos, want, "{csv}");
    for r in &rows[1..] {
        assert_eq!(
            (r[4].as_str(), r[15].as_str(), r[16].as_str()),
            ("payment", "MATCHED", "provider_txn_id"),
            "{csv}"
        );
        assert_eq!(r[14], "SUCCEEDED", "{csv}");
    }
}

both_databases!(
    a_runs_results_are_every_row_with_its_outcome_as_csv_and_parquet,
    the_results_need_recon_read_and_a_completed_run,
    reckon_recon_export_writes_the_file,
    a_pulls_results_are_read_from_its_staged_rows,
);
