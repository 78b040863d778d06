//! Drill 3: the service is killed (SIGKILL, a real process) while callbacks
//! are in flight; after a restart, retries and status queries complete every
//! payment, each with exactly one effect. And killed while the outbox relay
//! has a batch out to a sink: after a restart every message reaches the
//! sink, and only what was sent but not yet recorded comes again.

use crate::both_databases;
use crate::engine_helpers::serve;
use crate::helpers::{Backend, run_cli, test_config};
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use reckon::providers::signing::Secret;
use reckon::sandbox_server::{Chaos, SandboxServer};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
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

/// `reckon serve` on `port`, configured by `config` and `extra` (more
/// environment), with the sandbox at `sandbox_url`.
fn start(
    config: &reckon::Config,
    port: u16,
    sandbox_url: &str,
    secret: &Secret,
    extra: &[(&str, String)],
) -> Server {
    let child = Command::new(env!("CARGO_BIN_EXE_reckon"))
        .arg("serve")
        .env_clear()
        .envs(extra.iter().map(|(k, v)| (k, v)))
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

/// A database with a merchant token, the sandbox provider on 127.0.0.1
/// calling back to `base`, and a free port for `reckon serve`.
struct Drill {
    dir: tempfile::TempDir,
    config: reckon::Config,
    token: String,
    secret: Secret,
    sandbox_url: String,
    port: u16,
    base: String,
}

async fn drill(b: Backend) -> Drill {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(b, dir.path()).await;
    let out = run_cli(
        &config,
        &["token", "create", "--name", "shop", "--scope", "all"],
        None,
    );
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
    Drill {
        dir,
        config,
        token,
        secret,
        sandbox_url,
        port,
        base,
    }
}

impl Drill {
    fn start(&self, extra: &[(&str, String)]) -> Server {
        start(
            &self.config,
            self.port,
            &self.sandbox_url,
            &self.secret,
            extra,
        )
    }

    /// Creates `n` sandbox payments (each settled by a callback ~300 ms
    /// later); returns their numbers.
    async fn create_payments(&self, n: i64) -> Vec<String> {
        let http = reqwest::Client::new();
        let mut created = Vec::new();
        for i in 0..n {
            let res = http
                .post(format!("{}/api/v1/payments", self.base))
                .bearer_auth(&self.token)
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
        created
    }
}

/// Each payment has exactly one effect and one outbox message.
async fn each_once(db: &reckon::store::Db, created: &[String]) {
    for p in created {
        let effects: i64 = crate::reads::effects_of(&db.pool, p).await;
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

async fn a_killed_server_completes_every_payment_once_after_restart(b: Backend) {
    let d = drill(b).await;
    let (config, base) = (&d.config, &d.base);
    let mut server = d.start(&[]);
    wait_ready(base).await;
    let created = d.create_payments(N).await;
    // Callbacks arrive ~300 ms after each create: kill at the first result,
    // with the rest in flight.
    let db = reckon::store::Db::connect(&config.database_url)
        .await
        .unwrap();
    let succeeded = || async { crate::reads::succeeded_payments(&db.pool).await };
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

    let _server = d.start(&[]);
    wait_ready(base).await;

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
    each_once(&db, &created).await;
}

/// Messages the relay sends to the sink at once.
const IN_FLIGHT: usize = 4;

/// What a lane leases and then records in one transaction (eight per
/// message in flight): the most a kill can leave sent but not recorded, so
/// the most messages that may come twice.
const BATCH: usize = IN_FLIGHT * 8;

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Got {
    id: String,
    body: String,
    /// It came from the restarted server.
    after_restart: bool,
    /// The receiver answered it 204 (a request whose connection died
    /// with the server while it waited is never answered).
    answered: bool,
}

/// A sink on 127.0.0.1 that records every request in arrival order and
/// answers 204 after 100 ms, so a batch is out for a while.
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<Got>>>,
    restarted: Arc<AtomicBool>,
}

impl Receiver {
    fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    fn answered(&self) -> usize {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|g| g.answered)
            .count()
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: String) -> StatusCode {
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let at = {
        let mut got = r.got.lock().unwrap();
        got.push(Got {
            id,
            body,
            after_restart: r.restarted.load(Ordering::SeqCst),
            answered: false,
        });
        got.len() - 1
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    r.got.lock().unwrap()[at].answered = true;
    StatusCode::NO_CONTENT
}

async fn ids_where(db: &reckon::store::Db, sql: &str) -> BTreeSet<String> {
    sqlx::query_scalar::<_, String>(sql)
        .fetch_all(&db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect()
}

/// SIGKILL while the relay has a batch out (some answered, some in flight,
/// none recorded): after a restart on the same database every message
/// reaches the sink with a 2xx, each under its one `webhook-id` with its
/// one body, every delivery ends DELIVERED, and a message comes twice only
/// if the killed server had it leased and unrecorded — one batch at most.
/// The killed server's lease must lapse first: with the sink's 2 s timeout
/// it is 8 rounds × 2 s + 30 s = 46 s, so this drill takes about a minute.
async fn a_kill_mid_batch_loses_no_message_and_repeats_only_the_unrecorded(b: Backend) {
    const MESSAGES: i64 = 60;
    let d = drill(b).await;
    let receiver = Receiver::default();
    let sink_url = serve(
        Router::new()
            .route("/fulfilment", post(receive))
            .with_state(receiver.clone()),
    )
    .await;
    let file = d.dir.path().join("reckon.toml");
    std::fs::write(
        &file,
        format!(
            "[[sinks]]\nname = \"fulfilment\"\nurl = \"{sink_url}/fulfilment\"\n\
             timeout = \"2s\"\nin_flight = {IN_FLIGHT}\n"
        ),
    )
    .unwrap();
    let env = [("RECKON_CONFIG", file.to_str().unwrap().to_owned())];
    let mut server = d.start(&env);
    wait_ready(&d.base).await;
    let http = reqwest::Client::new();
    let sink_op = |op: &'static str| {
        let req = http
            .post(format!("{}/api/v1/sinks/fulfilment/{op}", d.base))
            .bearer_auth(&d.token)
            .json(&serde_json::json!({ "reason": "crash drill" }));
        async move {
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), 200, "{op}: {}", res.text().await.unwrap());
        }
    };

    // The sink paused while every payment settles, so the relay starts on
    // a full backlog: its first lease is a whole batch.
    sink_op("pause").await;
    let created = d.create_payments(MESSAGES).await;
    let db = reckon::store::Db::connect(&d.config.database_url)
        .await
        .unwrap();
    let count = |sql: &'static str| {
        let pool = db.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let mut settled = false;
    for _ in 0..600 {
        if count("SELECT COUNT(*) FROM outbox_deliveries WHERE status = 'PENDING'").await
            == MESSAGES
        {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(settled, "every payment settles, each with its message");
    assert!(receiver.got().is_empty(), "a paused sink gets nothing");

    // Resumed: kill once a few rounds of the first batch are answered.
    sink_op("resume").await;
    for _ in 0..15_000 {
        if receiver.answered() >= 3 * IN_FLIGHT {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    drop(server);
    // Requests cut off by the kill end (unanswered) or finish answering.
    tokio::time::sleep(Duration::from_millis(300)).await;
    receiver.restarted.store(true, Ordering::SeqCst);
    let before = receiver.got();
    let answered_before: BTreeSet<String> = before
        .iter()
        .filter(|g| g.answered)
        .map(|g| g.id.clone())
        .collect();
    let recorded_at_kill = ids_where(
        &db,
        "SELECT message_id FROM outbox_deliveries WHERE status = 'DELIVERED'",
    )
    .await;
    let leased_at_kill = ids_where(
        &db,
        "SELECT message_id FROM outbox_deliveries WHERE status = 'PENDING' AND lease_until IS NOT NULL",
    )
    .await;
    assert!(
        !answered_before.is_empty() && answered_before.len() < MESSAGES as usize,
        "the kill lands with some messages answered, not all ({})",
        answered_before.len()
    );
    assert!(leased_at_kill.len() <= BATCH, "one batch leased at a time");

    let _server = d.start(&env);
    wait_ready(&d.base).await;
    // Bounded: the killed server's lease (46 s) lapses, then its batch goes.
    let mut done = false;
    for _ in 0..900 {
        if count("SELECT COUNT(*) FROM outbox_deliveries WHERE status = 'DELIVERED'").await
            == MESSAGES
        {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(done, "every delivery is DELIVERED after the restart");
    each_once(&db, &created).await;

    let events: HashMap<String, String> =
        sqlx::query_as::<_, (String, String)>("SELECT message_id, payload FROM outbox_events")
            .fetch_all(&db.pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    assert_eq!(events.len(), MESSAGES as usize);
    let deliveries = count("SELECT COUNT(*) FROM outbox_deliveries").await;
    assert_eq!(deliveries, MESSAGES, "one delivery row per message");
    // The last requests of the restarted server are answered before it
    // records them; give the receiver a moment to mark them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = receiver.got();
    let mut taken: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &got {
        let payload = events
            .get(&g.id)
            .unwrap_or_else(|| panic!("a request with webhook-id {:?}, no message's id", g.id));
        assert_eq!(&g.body, payload, "{}: the one body on every attempt", g.id);
        if g.answered {
            *taken.entry(g.id.as_str()).or_default() += 1;
        }
    }
    let lost: Vec<&String> = events
        .keys()
        .filter(|id| !taken.contains_key(id.as_str()))
        .collect();
    assert!(lost.is_empty(), "never answered 2xx: {lost:?}");
    let twice: BTreeSet<&str> = taken
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| *id)
        .collect();
    assert!(
        taken.values().all(|n| *n <= 2),
        "once before the kill, once after at most: {taken:?}"
    );
    assert!(
        twice.len() <= BATCH,
        "{} messages twice: more than one batch ({BATCH})",
        twice.len()
    );
    for id in &twice {
        assert!(
            !recorded_at_kill.contains(*id),
            "{id} was recorded DELIVERED before the kill, yet sent again"
        );
    }
    let resent: BTreeSet<&str> = got
        .iter()
        .filter(|g| g.after_restart && answered_before.contains(&g.id))
        .map(|g| g.id.as_str())
        .collect();
    assert_eq!(
        resent, twice,
        "the repeats are the answered-but-unrecorded messages sent again"
    );
    // The drill did what it says: the kill fell between a batch's answers
    // and their record, and those messages were leased, then sent again.
    let unrecorded: BTreeSet<&str> = answered_before
        .difference(&recorded_at_kill)
        .map(String::as_str)
        .collect();
    assert!(
        !unrecorded.is_empty(),
        "the kill lands mid-batch: answered but not yet recorded"
    );
    assert!(
        unrecorded.iter().all(|id| leased_at_kill.contains(*id)),
        "what was answered and not recorded was leased"
    );
    assert_eq!(unrecorded, twice, "each of them came twice");
}

both_databases!(
    a_killed_server_completes_every_payment_once_after_restart,
    a_kill_mid_batch_loses_no_message_and_repeats_only_the_unrecorded,
);
