//! Drill 3: the service is killed (SIGKILL, a real process) while callbacks
//! are in flight; after a restart, retries and status queries complete every
//! payment, each with exactly one effect.

use crate::both_databases;
use crate::helpers::{Backend, run_cli, test_config};
use reckon::providers::signing::Secret;
use reckon::sandbox_server::{Chaos, SandboxServer};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const N: i64 = 40;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(config: &reckon::Config, port: u16, sandbox_url: &str, secret: &Secret) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_reckon"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &config.database_url)
        .env("RECKON_DATA_DIR", &config.data_dir)
        .env("RECKON_LISTEN", format!("127.0.0.1:{port}"))
        .env("RECKON_SANDBOX_URL", sandbox_url)
        .env("RECKON_SANDBOX_SECRET", secret.to_whsec())
        .env("RECKON_QUERY_SCHEDULE", "1s,1s,1s,1s,1s,1s,1s,1s,1s,1s")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server(child)
}

async fn wait_ready(base: &str) {
    for _ in 0..200 {
        if let Ok(r) = reqwest::get(format!("{base}/readyz")).await
            && r.status() == 200
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server at {base} never became ready");
}

async fn a_killed_server_completes_every_payment_once_after_restart(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(b, dir.path()).await;
    let out = run_cli(&config, &["token", "create", "--name", "shop"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();

    let secret = Secret::random();
    let sandbox = SandboxServer::new(
        "http://127.0.0.1:9/unset",
        secret.clone(),
        Chaos {
            settle_ms: 300,
            ..Chaos::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sandbox_url = format!("http://{}", listener.local_addr().unwrap());
    let router = sandbox.router();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    sandbox.set_notify_url(&format!("{base}/webhooks/sandbox"));
    let mut server = start(&config, port, &sandbox_url, &secret);
    wait_ready(&base).await;

    let http = reqwest::Client::new();
    let mut created = Vec::new();
    for i in 0..N {
        let res = http
            .post(format!("{base}/api/v1/payments"))
            .bearer_auth(&token)
            .header("idempotency-key", format!("crash-{i}"))
            .json(&serde_json::json!({
                "order_no": format!("CRASH-{i}"), "provider": "sandbox", "amount_minor": 1000 + i, "currency": "CNY"
            }))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let body: serde_json::Value = res.json().await.unwrap();
        created.push(body["payment_no"].as_str().unwrap().to_owned());
    }
    // Callbacks arrive ~300 ms after each create: kill at the first result,
    // with the rest in flight.
    let db = reckon::store::Db::connect(&config.database_url)
        .await
        .unwrap();
    let succeeded = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM payments WHERE status = 'SUCCEEDED'")
            .fetch_one(&db.pool)
            .await
            .unwrap()
    };
    for _ in 0..2000 {
        if succeeded().await > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    drop(server);
    let at_kill = succeeded().await;
    assert!(
        at_kill < N,
        "the kill must land while work is in flight ({at_kill} done)"
    );

    let _server = start(&config, port, &sandbox_url, &secret);
    wait_ready(&base).await;

    let mut done = false;
    // Up to a lapsed lease (30 s) plus the queries after it.
    for _ in 0..750 {
        if succeeded().await == N {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(done, "every payment completes after the restart");
    for p in &created {
        let effects: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM payment_effects WHERE payment_no = $1")
                .bind(p)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert_eq!(effects, 1, "{p}");
        let events: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM outbox_events WHERE aggregate_id = $1")
                .bind(p)
                .fetch_one(&db.pool)
                .await
                .unwrap();
        assert_eq!(events, 1, "{p}");
    }
}

both_databases!(a_killed_server_completes_every_payment_once_after_restart);
