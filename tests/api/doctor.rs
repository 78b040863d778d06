//! `reckon doctor` as an operator runs it (the binary, its exit code and
//! its lines) against a real database, a local server speaking Stripe's
//! wire format for `GET /v1/balance`, and a local outbox sink.

use crate::helpers::{Backend, fresh_postgres_url};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use reckon::config::sqlite_url;
use std::path::Path;
use std::process::{Command, Output};

const API_KEY: &str = "sk_test_doctor_key";

/// `GET /v1/balance` as Stripe answers it: the balance object for the
/// account's key (docs.stripe.com/api/balance/balance_object), else 401
/// with Stripe's error object (docs.stripe.com/api/errors: `error.type`
/// `invalid_request_error`, `error.message`).
async fn balance(headers: HeaderMap) -> axum::response::Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok())
        != Some(&format!("Bearer {API_KEY}"))
    {
        let body = serde_json::json!({"error": {
            "message": "Invalid API Key provided: sk_test_****_bad",
            "type": "invalid_request_error"
        }});
        return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
    }
    Json(serde_json::json!({
        "object": "balance",
        "available": [{"amount": 0, "currency": "usd", "source_types": {"card": 0}}],
        "livemode": false,
        "pending": [{"amount": 0, "currency": "usd", "source_types": {"card": 0}}]
    }))
    .into_response()
}

/// A local Stripe (its URL) and a local sink (its URL; `sink_up: false`: a
/// port nothing listens on any more).
async fn servers(sink_up: bool) -> (String, String, Option<tokio::net::TcpListener>) {
    let stripe = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stripe_url = format!("http://{}", stripe.local_addr().unwrap());
    tokio::spawn(async move {
        axum::serve(stripe, Router::new().route("/v1/balance", get(balance)))
            .await
            .unwrap()
    });
    let sink = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sink_url = format!("http://{}/hook", sink.local_addr().unwrap());
    let sink = sink_up.then_some(sink);
    (stripe_url, sink_url, sink)
}

struct Setup {
    _dir: tempfile::TempDir,
    env: Vec<(String, String)>,
    database_url: String,
}

async fn setup(backend: Backend, stripe_url: &str, api_key: &str, sink_url: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let database_url = match backend {
        Backend::Sqlite => sqlite_url(&data.join("reckon.db")),
        Backend::Postgres => fresh_postgres_url().await,
    };
    let toml = dir.path().join("reckon.toml");
    std::fs::write(
        &toml,
        format!(
            "[[providers]]\nname = \"stripe-eu\"\nkind = \"stripe\"\nbase_url = \"{stripe_url}\"\n\
             secret = \"whsec_doctor\"\napi_key = \"{api_key}\"\n\n\
             [[sinks]]\nname = \"shop\"\nurl = \"{sink_url}\"\n"
        ),
    )
    .unwrap();
    let env = vec![
        ("DATABASE_URL".into(), database_url.clone()),
        ("RECKON_DATA_DIR".into(), path(&data)),
        ("RECKON_CONFIG".into(), path(&toml)),
    ];
    let setup = Setup {
        _dir: dir,
        env,
        database_url,
    };
    // Migrated, with its audit key written, as after a first start.
    let out = reckon(&setup, &["migrate"]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    setup
}

fn path(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn reckon(setup: &Setup, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reckon"));
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(setup.env.iter().map(|(k, v)| (k, v)));
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

/// The finding lines (not the count at the end).
fn findings(out: &Output) -> Vec<String> {
    text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("OK") || l.starts_with("WARN") || l.starts_with("FAIL"))
        .map(str::to_owned)
        .collect()
}

async fn a_healthy_setup_is_all_ok(backend: Backend) {
    let (stripe, sink_url, _sink) = servers(true).await;
    let setup = setup(backend, &stripe, API_KEY, &sink_url).await;
    let out = reckon(&setup, &["doctor"]).await;
    let lines = findings(&out);
    let all = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{all}");
    for (what, said) in [
        ("config", "valid"),
        ("database", "connected"),
        ("migrations", "applied"),
        ("audit key", "signs"),
        ("provider stripe-eu (stripe)", "GET /v1/balance) accepted"),
        ("outbox sink shop", "accepts connections"),
        ("clock", "within"),
    ] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("OK   {what}: ")) && l.contains(said)),
            "no OK {what}: {all}"
        );
    }
    assert!(lines.iter().all(|l| l.starts_with("OK")), "{all}");
    assert!(all.contains(" 0 WARN, 0 FAIL"), "{all}");
}

async fn a_wrong_stripe_key_fails_naming_the_account(backend: Backend) {
    let (stripe, sink_url, _sink) = servers(true).await;
    let setup = setup(backend, &stripe, "sk_test_wrong", &sink_url).await;
    let out = reckon(&setup, &["doctor"]).await;
    let all = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let fail: Vec<_> = findings(&out)
        .into_iter()
        .filter(|l| l.starts_with("FAIL"))
        .collect();
    assert_eq!(fail.len(), 1, "{all}");
    assert!(
        fail[0].starts_with("FAIL provider stripe-eu (stripe): ")
            && fail[0].contains("401")
            && fail[0].contains("Invalid API Key provided")
            && fail[0].contains("set api_key"),
        "{all}"
    );
}

async fn an_unapplied_migration_and_an_unreachable_sink_fail(backend: Backend) {
    let (stripe, sink_url, _none) = servers(false).await;
    let setup = setup(backend, &stripe, API_KEY, &sink_url).await;
    let last = reckon::store::MIGRATOR
        .iter()
        .max_by_key(|m| m.version)
        .unwrap();
    let db = reckon::store::Db::connect(&setup.database_url)
        .await
        .unwrap();
    sqlx::query(&format!(
        "DELETE FROM _sqlx_migrations WHERE version = {}",
        last.version
    ))
    .execute(&db.pool)
    .await
    .unwrap();
    db.pool.close().await;
    let out = reckon(&setup, &["doctor"]).await;
    let all = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let lines = findings(&out);
    let named = format!("{:04}_{}", last.version, last.description.replace(' ', "_"));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("FAIL migrations: 1 not applied: ")
                && l.contains(&named)
                && l.contains("reckon migrate")),
        "{named}: {all}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("FAIL outbox sink shop: ") && l.contains("refused")),
        "{all}"
    );
    // The rest is still checked and fine.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("OK   provider stripe-eu (stripe): ")),
        "{all}"
    );
}

crate::both_databases!(
    a_healthy_setup_is_all_ok,
    a_wrong_stripe_key_fails_naming_the_account,
    an_unapplied_migration_and_an_unreachable_sink_fail,
);
