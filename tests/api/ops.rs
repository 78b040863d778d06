//! Health, readiness, metrics, migrations, storage settings, API tokens and
//! the command line against each database.

use crate::both_databases;
use crate::helpers::{Backend, spawn_app};
use app::types::Role;
use reckon::store::{Db, DbKind};

const PW: &str = "correct horse battery";

async fn health_ready_and_metrics_answer(b: Backend) {
    let app = spawn_app(b).await;
    let health = app.get("/healthz").await;
    assert_eq!(health.status(), 200);
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status(), 200);
    app.login("nobody", "wrong horse battery").await;
    let metrics = app.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("reckon_login_attempts_total{outcome=\"bad_credentials\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("reckon_http_requests_total{method=\"GET\",status=\"200\"}"));
    assert!(metrics.contains("reckon_build_info{version="));
}

async fn readyz_fails_when_the_database_is_gone(b: Backend) {
    let app = spawn_app(b).await;
    assert_eq!(app.get("/readyz").await.status(), 200);
    match b {
        Backend::Sqlite => {
            // Deleted, and (as a fresh connection would) created again
            // empty: the open connections still hold the old file.
            let path = app.config.sqlite_path().unwrap();
            std::fs::remove_file(&path).unwrap();
            std::fs::write(&path, b"").unwrap();
        }
        Backend::Postgres => {
            use sqlx::Connection;
            let admin = std::env::var("RECKON_TEST_PG").unwrap();
            let name = app
                .config
                .database_url
                .rsplit('/')
                .next()
                .unwrap()
                .to_owned();
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
    let res = app.get("/readyz").await;
    assert_eq!(res.status(), 503);
    assert!(res.text().await.unwrap().starts_with("not ready: "));
    assert_eq!(
        app.get("/healthz").await.status(),
        200,
        "the process is still up"
    );
}

async fn migrations_apply_twice_without_error(b: Backend) {
    let app = spawn_app(b).await;
    for _ in 0..2 {
        let out = app.cli(&["migrate"], None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let db = Db::connect(&app.config.database_url).await.unwrap();
    db.migrate().await.unwrap();
    db.migrate().await.unwrap();
    db.readiness().await.unwrap();
}

async fn the_cli_adds_a_user_who_can_then_sign_in(b: Backend) {
    let app = spawn_app(b).await;
    let out = app.cli(
        &["user", "add", "--username", "ada", "--role", "supervisor"],
        Some("a password from stdin\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "created user ada (supervisor)"
    );
    assert_eq!(
        app.login("ada", "a password from stdin").await.status(),
        200
    );
    assert_eq!(app.session_user().await.unwrap().role, Role::Supervisor);

    let out = app.cli(
        &["user", "passwd", "--username", "ada"],
        Some("the next password\n"),
    );
    assert!(out.status.success());
    assert_eq!(
        app.login("ada", "a password from stdin").await.status(),
        401
    );
    assert_eq!(app.login("ada", "the next password").await.status(), 200);

    let out = app.cli(&["user", "disable", "--username", "ada"], None);
    assert!(out.status.success());
    assert_eq!(app.session_user().await, None);

    // A password on the command line is not an option at all.
    let out = app.cli(
        &[
            "user",
            "add",
            "--username",
            "eve",
            "--role",
            "admin",
            "--password",
            "x",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let out = app.cli(
        &["user", "add", "--username", "eve", "--role", "admin"],
        Some(""),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no password given"));
    let out = app.cli(
        &["user", "add", "--username", "eve", "--role", "root"],
        Some(PW),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(app.accounts.by_username("eve").await.is_err());
}

async fn an_api_token_is_printed_once_and_stored_hashed(b: Backend) {
    let app = spawn_app(b).await;
    let out = app.cli(&["token", "create", "--name", "shop-eu"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.trim();
    assert_eq!(stdout.lines().count(), 1, "the token alone on stdout");
    assert!(token.starts_with("rk_") && token.len() == 67);
    let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM api_tokens")
        .fetch_all(&app.accounts.db.pool)
        .await
        .unwrap();
    assert_eq!(stored, [reckon::auth::token_hash(token)]);

    let call = |auth: String| {
        app.client
            .get(format!("{}/api/v1/whoami", app.base))
            .header("authorization", auth)
            .send()
    };
    let ok = call(format!("Bearer {token}")).await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.json::<serde_json::Value>().await.unwrap()["token"],
        "shop-eu"
    );
    assert_eq!(call("Bearer rk_forged".into()).await.unwrap().status(), 401);
    let dup = app.cli(&["token", "create", "--name", "shop-eu"], None);
    assert!(!dup.status.success());
}

async fn sqlite_runs_in_wal_with_full_sync(b: Backend) {
    let app = spawn_app(b).await;
    let db = &app.accounts.db;
    match db.kind {
        DbKind::Sqlite => {
            let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert_eq!(mode, "wal");
            let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert_eq!(sync, 2, "FULL");
            let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout")
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert_eq!(busy, 5000);
            // The log is copied back by the checkpointer, not by commits:
            // 2 MiB written show up in the database file within seconds.
            let auto: i64 = sqlx::query_scalar("PRAGMA wal_autocheckpoint")
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert_eq!(auto, 0, "no commit checkpoints");
            let path = db.sqlite_path.clone().unwrap();
            let before = std::fs::metadata(&path).unwrap().len();
            sqlx::query("CREATE TABLE ballast (b BLOB)")
                .execute(&db.pool)
                .await
                .unwrap();
            sqlx::query("INSERT INTO ballast VALUES (zeroblob(2097152))")
                .execute(&db.pool)
                .await
                .unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            loop {
                let now = std::fs::metadata(&path).unwrap().len();
                if now >= before + 2 * 1024 * 1024 {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the database file stayed at {now} bytes (from {before}): nothing checkpointed"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        DbKind::Postgres => {
            let version: String = sqlx::query_scalar("SHOW server_version")
                .fetch_one(&db.pool)
                .await
                .unwrap();
            assert!(version.starts_with("15"), "{version}");
        }
    }
}

/// The README's run command: the demo's in-process sandbox and traffic
/// move payments to a result and refund some of them, with real workers.
async fn the_demo_moves_payments_and_refunds_some(b: Backend) {
    let app = crate::helpers::spawn_app_with(
        b,
        |_| {},
        reckon::startup::Options {
            demo: true,
            demo_recon_after: std::time::Duration::from_secs(12),
            ..reckon::startup::Options::default()
        },
    )
    .await;
    let pool = &app.accounts.db.pool;
    let mut settled = (0, 0);
    for _ in 0..300 {
        settled = sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM payments WHERE status IN ('SUCCEEDED', 'FAILED', 'REFUNDING', 'REFUNDED') \
                      AND description = 'demo order'), \
                    (SELECT COUNT(*) FROM refunds WHERE status = 'SUCCEEDED')",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if settled.0 >= 2 && settled.1 >= 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(settled.0 >= 2 && settled.1 >= 1, "{settled:?}");
    // A month of history: each of the last 30 days reconciled (yesterday's
    // by the daily pull, once it is past 02:00).
    let today = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let days: i64 = sqlx::query_scalar(
        "SELECT COUNT(DISTINCT business_date) FROM recon_runs WHERE status = 'COMPLETED' AND business_date < $1",
    )
    .bind(&today)
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(days >= 29, "{days} days of history");
    // Today reconciled too, with tickets of several classes to triage (a
    // run writes its tickets in batches: wait for the three staged ones,
    // not for any three).
    let staged = ["AMOUNT_MISMATCH", "LOCAL_ONLY", "PROVIDER_ONLY"];
    let mut classes: Vec<String> = Vec::new();
    for _ in 0..300 {
        classes = sqlx::query_scalar(
            "SELECT DISTINCT class FROM discrepancies WHERE source = 'recon' AND business_date = $1 ORDER BY class",
        )
        .bind(&today)
        .fetch_all(pool)
        .await
        .unwrap();
        if staged.iter().all(|s| classes.iter().any(|c| c == s)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for class in staged {
        assert!(classes.iter().any(|c| c == class), "{classes:?}");
    }
    let ledger: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM refund_ledger")
        .fetch_one(pool)
        .await
        .unwrap();
    assert!(ledger >= 1);
}

both_databases!(
    the_demo_moves_payments_and_refunds_some,
    health_ready_and_metrics_answer,
    readyz_fails_when_the_database_is_gone,
    migrations_apply_twice_without_error,
    the_cli_adds_a_user_who_can_then_sign_in,
    an_api_token_is_printed_once_and_stored_hashed,
    sqlite_runs_in_wal_with_full_sync,
);
