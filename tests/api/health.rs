//! Health, readiness, metrics, migrations and the storage settings,
//! against each database.

use crate::both_databases;
use crate::helpers::{Backend, spawn_app};
use reckon::store::{Db, DbKind};

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

both_databases!(
    health_ready_and_metrics_answer,
    readyz_fails_when_the_database_is_gone,
    migrations_apply_twice_without_error,
    sqlite_runs_in_wal_with_full_sync,
);
