//! Callback intake throughput, measured from outside: `reckon serve` (the
//! release binary) runs as its own process, and this process is the load:
//! N pre-signed sandbox callbacks, each sent once, over C keep-alive
//! HTTP/1.1 connections. Beside it, in the same run, the fastest honest
//! reference: the same statements on the same schema through a direct
//! binding — rusqlite with prepared statements on SQLite, committing per
//! callback and per 256; pgbench running the same transaction on
//! PostgreSQL. Rounds alternate server and reference; the table gives
//! medians. Writes its figures into BENCHMARKS.md.
//!
//!     cargo bench --bench callbacks                          # SQLite
//!     RECKON_BENCH_PG=1 cargo bench --bench callbacks        # and PostgreSQL

mod support;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use reckon::config::sqlite_url;
use reckon::providers::signing::Secret;
use reckon::store::{Db, now_micros};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::postgres::Postgres;
use support::{median, write_section};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Connection counts to measure (RECKON_BENCH_CONCURRENCY, comma-separated).
fn concurrencies() -> Vec<usize> {
    std::env::var("RECKON_BENCH_CONCURRENCY")
        .unwrap_or_else(|_| "64,256".into())
        .split(',')
        .filter_map(|c| c.trim().parse().ok())
        .collect()
}

const RAW_BATCH: usize = 256;

fn payment_no(i: usize) -> String {
    format!("PAYB{i:08}")
}

fn body(i: usize) -> String {
    serde_json::json!({
        "id": format!("evt_{i}"),
        "type": "payment.succeeded",
        "data": { "payment_no": payment_no(i), "txn_id": format!("TXNB{i:08}"), "status": "SUCCEEDED",
                  "amount": "199.00", "currency": "CNY" }
    })
    .to_string()
}

/// `n` CREATED payments of 199.00 CNY, seeded in one statement (setup,
/// never timed).
async fn seed(db: &Db, n: usize) {
    let now = now_micros();
    let sql = format!(
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {n}) \
         INSERT INTO payments (payment_no, order_no, attempt_no, provider, amount_minor, currency, status, \
           version, created_by, awaiting_recon, created_at, updated_at) \
         SELECT 'PAYB' || {pad}, 'ORDB' || {pad}, 1, 'sandbox', 19900, 'CNY', 'CREATED', 1, 'bench', 0, {now}, {now} FROM k",
        pad = match db.kind {
            reckon::store::DbKind::Sqlite => "substr('0000000' || i, -8, 8)",
            reckon::store::DbKind::Postgres => "lpad(i::text, 8, '0')",
        },
    );
    sqlx::query(&sql).execute(&db.pool).await.unwrap();
}

/// A migrated, seeded database at `url`.
async fn prepare(url: &str, n: usize) {
    let db = Db::connect(url).await.unwrap();
    db.migrate().await.unwrap();
    seed(&db, n).await;
    db.pool.close().await;
}

/// Effects and stored callbacks in the database after a run.
async fn counts(url: &str) -> (i64, i64) {
    let db = Db::connect(url).await.unwrap();
    let effects: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_effects")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let stored: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_callbacks")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    db.pool.close().await;
    (effects, stored)
}

/// One `reckon serve` process.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(dir: &Path, name: &str, database_url: &str, secret: &Secret) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.join(format!("{name}.toml"));
        std::fs::write(
            &config,
            format!(
                "listen = \"127.0.0.1:{port}\"\ndatabase_url = \"{database_url}\"\ndata_dir = \"{}\"\n\
                 [[providers]]\nname = \"sandbox\"\nkind = \"sandbox\"\nbase_url = \"http://127.0.0.1:9\"\n\
                 secret = \"{}\"\n",
                dir.display(),
                secret.to_whsec()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
        // RECKON_BENCH_SERVER=PATH runs another build (two builds compared
        // in turn, in one run of the machine).
        let bin = std::env::var("RECKON_BENCH_SERVER")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_reckon").to_owned());
        let child = Command::new(bin)
            .arg("serve")
            .env("RECKON_CONFIG", &config)
            .env("RECKON_LOG_FORMAT", "json")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "reckon serve did not listen; see {}",
                dir.join(format!("{name}.log")).display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Server { child, addr }
    }

    /// CPU seconds the process has used (user + system).
    fn cpu_secs(&self) -> f64 {
        support::cpu_secs_of(self.child.id()).unwrap()
    }

    fn peak_rss_mib(&self) -> f64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            })
            .map_or(0.0, |kb| kb / 1024.0)
    }

    /// SIGTERM, then wait for the graceful stop.
    fn stop(mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.wait();
    }
}

/// One pre-signed request: webhook-id, signature, body.
type Signed = (String, String, Bytes);

fn signed(secret: &Secret, n: usize) -> (i64, Arc<Vec<Signed>>) {
    let ts = jiff::Timestamp::now().as_second();
    let requests = (0..n)
        .map(|i| {
            let b = body(i);
            let id = format!("evt_{i}");
            let sig = secret.sign(&id, ts, b.as_bytes());
            (id, sig, Bytes::from(b))
        })
        .collect();
    (ts, Arc::new(requests))
}

struct Load {
    per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// CPU the server processes used, in cores, while the load ran.
    server_cores: f64,
    /// CPU this process (the load) used meanwhile, in cores.
    load_cores: f64,
    /// CPU PostgreSQL's processes used meanwhile, in cores.
    db_cores: Option<f64>,
}

/// Sends every request once over `conns` connections, spread over the
/// servers in turn; every answer must be 200.
async fn drive(
    servers: &[Server],
    pg: Option<&Postgres>,
    conns: usize,
    ts: i64,
    requests: Arc<Vec<Signed>>,
) -> Load {
    let next = Arc::new(AtomicUsize::new(0));
    let cpu_before: f64 = servers.iter().map(Server::cpu_secs).sum();
    let (load_before, db_before) = (support::cpu_secs(), pg.map(Postgres::cpu_secs));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(conns);
    for c in 0..conns {
        let addr = servers[c % servers.len()].addr;
        let (next, requests) = (next.clone(), requests.clone());
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(conn);
            let mut latencies = Vec::new();
            let ts = ts.to_string();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((id, sig, b)) = requests.get(i) else {
                    break;
                };
                let req = http::Request::post("/webhooks/sandbox")
                    .header("host", "127.0.0.1")
                    .header("content-type", "application/json")
                    .header("webhook-id", id)
                    .header("webhook-timestamp", &ts)
                    .header("webhook-signature", sig)
                    .body(Full::new(b.clone()))
                    .unwrap();
                let t = Instant::now();
                sender.ready().await.unwrap();
                let res = sender.send_request(req).await.unwrap();
                let status = res.status();
                let _ = res.into_body().collect().await.unwrap();
                assert_eq!(status, 200, "callback {id} answered {status}");
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut latencies: Vec<Duration> = Vec::with_capacity(requests.len());
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after: f64 = servers.iter().map(Server::cpu_secs).sum();
    let (load_after, db_after) = (support::cpu_secs(), pg.map(Postgres::cpu_secs));
    latencies.sort();
    let n = latencies.len();
    Load {
        per_sec: n as f64 / elapsed,
        p50_ms: latencies[n / 2].as_secs_f64() * 1e3,
        p99_ms: latencies[n * 99 / 100].as_secs_f64() * 1e3,
        server_cores: (cpu_after - cpu_before) / elapsed,
        load_cores: (load_after - load_before) / elapsed,
        db_cores: db_after.zip(db_before).map(|(a, b)| (a - b) / elapsed),
    }
}

/// One measured intake: fresh database, `instances` servers, the load,
/// then the effects counted.
async fn intake(
    dir: &Path,
    url: &str,
    pg: Option<&Postgres>,
    n: usize,
    conns: usize,
    instances: usize,
    secret: &Secret,
) -> (Load, f64) {
    let servers: Vec<Server> = (0..instances)
        .map(|k| Server::start(dir, &format!("serve{k}"), url, secret))
        .collect();
    let (ts, requests) = signed(secret, n);
    let load = drive(&servers, pg, conns, ts, requests).await;
    let rss = servers.iter().map(Server::peak_rss_mib).fold(0.0, f64::max);
    for s in servers {
        s.stop();
    }
    // RECKON_BENCH_LOGS=DIR keeps the servers' logs (with RUST_LOG=debug
    // they time each batch the writer commits).
    if let Ok(keep) = std::env::var("RECKON_BENCH_LOGS") {
        for k in 0..instances {
            let _ = std::fs::copy(
                dir.join(format!("serve{k}.log")),
                Path::new(&keep).join(format!("serve{k}-{conns}-{}.log", now_micros())),
            );
        }
    }
    let (effects, stored) = counts(url).await;
    assert_eq!(
        effects as usize, n,
        "every callback made exactly one effect"
    );
    assert_eq!(stored as usize, n, "every callback stored once");
    (load, rss)
}

/// The statements the server's group commit runs for each new callback,
/// one row each (the server sends them as multi-row statements, one per
/// table per batch), prepared once through rusqlite, committing every
/// `batch` callbacks. The callback row is written already applied, as the
/// server writes it; the payload and headers are what the server stores.
fn raw_sqlite(path: &Path, n: usize, batch: usize) -> f64 {
    let mut conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; \
         PRAGMA cache_size = -65536;",
    )
    .unwrap();
    let bodies: Vec<String> = (0..n).map(body).collect();
    let headers = r#"{"content-type":"application/json","webhook-id":"evt_0","webhook-timestamp":"1767225600","webhook-signature":"v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#;
    let started = Instant::now();
    let mut i = 0;
    while i < n {
        let now = now_micros();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .unwrap();
        {
            let mut cb = tx
                .prepare_cached(
                    "INSERT INTO payment_callbacks (id, callback_id, provider, payment_no, provider_txn_id, callback_status, \
                       headers_json, payload, payload_hash, verify_result, trace_id, received_at, facts, processed_at, \
                       processing_status, outcome, retry_count) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?12, 'SUCCESS', 'applied', 0) \
                     ON CONFLICT (provider, callback_id) DO NOTHING",
                )
                .unwrap();
            let mut mv = tx
                .prepare_cached(&format!(
                    "UPDATE payments SET prev_status = status, status = ?1, \
                       provider_txn_id = COALESCE(provider_txn_id, ?2), version = version + 1, updated_at = ?3, \
                       paid_at = CASE WHEN ?1 = 'SUCCEEDED' THEN COALESCE(paid_at, ?3) ELSE paid_at END \
                     WHERE payment_no = ?4 AND status IN ('CREATED', 'PENDING') AND provider = ?5 \
                       AND amount_minor = ?6 AND currency = ?7 AND {} \
                       AND (?2 IS NULL OR provider_txn_id IS NULL OR provider_txn_id = ?2) \
                     RETURNING prev_status, order_no, version",
                    reckon::store::payments::NOT_HELD
                ))
                .unwrap();
            let mut effect = tx
                .prepare_cached(
                    "INSERT INTO payment_effects (effect_id, payment_no, effect_type, created_at) VALUES (?1, ?2, ?3, ?4)",
                )
                .unwrap();
            let mut event = tx
                .prepare_cached(
                    "INSERT INTO outbox_events (message_id, aggregate_type, aggregate_id, event_type, payload, available_at, created_at) \
                     VALUES (?1, 'payment', ?2, 'payment.succeeded', ?3, ?4, ?4)",
                )
                .unwrap();
            let mut history = tx
                .prepare_cached(
                    "INSERT INTO payment_status_history (id, payment_no, from_status, to_status, source, evidence_ref, trace_id, at) \
                     VALUES (?1, ?2, ?3, 'SUCCEEDED', 'callback', ?4, ?5, ?6)",
                )
                .unwrap();
            for (k, b) in bodies.iter().enumerate().take((i + batch).min(n)).skip(i) {
                let id = uuid::Uuid::now_v7().to_string();
                let trace = uuid::Uuid::new_v4().simple().to_string();
                let no = payment_no(k);
                let txn = format!("TXNB{k:08}");
                let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b.as_bytes()));
                let facts = format!("payment|{no}|{txn}|SUCCEEDED|19900|CNY|-");
                cb.execute(rusqlite::params![
                    id,
                    format!("evt_{k}"),
                    "sandbox",
                    no,
                    txn,
                    "SUCCEEDED",
                    headers,
                    b.as_bytes(),
                    hash,
                    "VERIFIED",
                    trace,
                    now,
                    facts
                ])
                .unwrap();
                let (prev, order_no, version): (String, String, i64) = mv
                    .query_row(
                        rusqlite::params!["SUCCEEDED", txn, now, no, "sandbox", 19900, "CNY"],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .unwrap();
                effect
                    .execute(rusqlite::params![
                        uuid::Uuid::now_v7().to_string(),
                        no,
                        "ORDER_PAID",
                        now
                    ])
                    .unwrap();
                let payload = format!(
                    r#"{{"payment_no":"{no}","order_no":"{order_no}","status":"SUCCEEDED","version":{version},"amount_minor":19900,"currency":"CNY","at":{now}}}"#
                );
                event
                    .execute(rusqlite::params![
                        uuid::Uuid::now_v7().to_string(),
                        no,
                        payload,
                        now
                    ])
                    .unwrap();
                history
                    .execute(rusqlite::params![
                        uuid::Uuid::now_v7().to_string(),
                        no,
                        prev,
                        id,
                        trace,
                        now
                    ])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
        i += batch;
    }
    n as f64 / started.elapsed().as_secs_f64()
}

/// pgbench's transactions per second for the same statements, one
/// transaction per callback, `clients` at once, prepared.
fn pgbench(pg: &Postgres, db: &str, dir: &Path, n: usize, clients: usize) -> f64 {
    let per_client = n / clients;
    let script = dir.join("intake.sql");
    // pgbench keeps a client's variables from one transaction to the next:
    // k counts the client's callbacks, so each payment is paid once.
    std::fs::write(
        &script,
        format!(
            "\\set k :k + 1\n\
             \\set i :client_id * {per_client} + :k - 1\n\
             BEGIN;\n\
             INSERT INTO payment_callbacks (id, callback_id, provider, payment_no, provider_txn_id, callback_status, \
               headers_json, payload, payload_hash, verify_result, trace_id, received_at, facts, processed_at, \
               processing_status, outcome, retry_count) \
             VALUES (gen_random_uuid()::text, 'evt_' || :i, 'sandbox', 'PAYB' || lpad(:i::text, 8, '0'), \
               'TXNB' || lpad(:i::text, 8, '0'), 'SUCCEEDED', '{{\"content-type\":\"application/json\"}}', \
               convert_to('{{\"id\":\"evt_' || :i || '\",\"type\":\"payment.succeeded\"}}', 'UTF8'), md5(:i::text), 'VERIFIED', \
               md5(:i::text), 1, 'payment|' || :i, 1, 'SUCCESS', 'applied', 0) \
             ON CONFLICT (provider, callback_id) DO NOTHING;\n\
             UPDATE payments SET prev_status = status, status = 'SUCCEEDED', \
               provider_txn_id = COALESCE(provider_txn_id, 'TXNB' || lpad(:i::text, 8, '0')), version = version + 1, \
               updated_at = 1, paid_at = COALESCE(paid_at, 1) \
             WHERE payment_no = 'PAYB' || lpad(:i::text, 8, '0') AND status IN ('CREATED', 'PENDING') \
               AND provider = 'sandbox' AND amount_minor = 19900 AND currency = 'CNY' AND {} \
             RETURNING prev_status, order_no, version;\n\
             INSERT INTO payment_effects (effect_id, payment_no, effect_type, created_at) \
               VALUES (gen_random_uuid()::text, 'PAYB' || lpad(:i::text, 8, '0'), 'ORDER_PAID', 1);\n\
             INSERT INTO outbox_events (message_id, aggregate_type, aggregate_id, event_type, payload, available_at, created_at) \
               VALUES (gen_random_uuid()::text, 'payment', 'PAYB' || lpad(:i::text, 8, '0'), 'payment.succeeded', \
               '{{\"payment_no\":\"PAYB\",\"status\":\"SUCCEEDED\",\"amount_minor\":19900,\"currency\":\"CNY\"}}', 1, 1);\n\
             INSERT INTO payment_status_history (id, payment_no, from_status, to_status, source, evidence_ref, trace_id, at) \
               VALUES (gen_random_uuid()::text, 'PAYB' || lpad(:i::text, 8, '0'), 'CREATED', 'SUCCEEDED', 'callback', \
               md5(:i::text), md5(:i::text), 1);\n\
             END;\n",
            reckon::store::payments::NOT_HELD
        ),
    )
    .unwrap();
    let out = Command::new("/usr/lib/postgresql/15/bin/pgbench")
        .args(["-n", "-M", "prepared", "-D", "k=0"])
        .arg("-c")
        .arg(clients.to_string())
        .arg("-j")
        .arg("2")
        .arg("-t")
        .arg(per_client.to_string())
        .arg("-f")
        .arg(&script)
        .arg(pg.url(db))
        .output()
        .expect("pgbench");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pgbench failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or_else(|| panic!("no tps in pgbench's output: {text}"))
}

fn med(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    median(&v)
}

/// Medians over the rounds of one configuration.
struct Row {
    what: String,
    per_sec: f64,
    p50: f64,
    p99: f64,
    cores: f64,
    load: f64,
    db: Option<f64>,
    rss: f64,
}

fn row(what: String, loads: Vec<(Load, f64)>) -> Row {
    Row {
        what,
        per_sec: med(loads.iter().map(|l| l.0.per_sec).collect()),
        p50: med(loads.iter().map(|l| l.0.p50_ms).collect()),
        p99: med(loads.iter().map(|l| l.0.p99_ms).collect()),
        cores: med(loads.iter().map(|l| l.0.server_cores).collect()),
        load: med(loads.iter().map(|l| l.0.load_cores).collect()),
        db: loads[0]
            .0
            .db_cores
            .map(|_| med(loads.iter().filter_map(|l| l.0.db_cores).collect())),
        rss: med(loads.iter().map(|l| l.1).collect()),
    }
}

fn table(rows: &[Row], refs: &[(String, f64)], compare: &[(usize, usize)]) -> String {
    // The CPU columns show where the machine's cores went while the load ran.
    let pg = rows.iter().any(|r| r.db.is_some());
    let (db_head, db_rule) = if pg {
        (" PostgreSQL CPU |", "---|")
    } else {
        ("", "")
    };
    let mut t = format!(
        "| what | callbacks/s | p50 | p99 | server CPU | load CPU |{db_head} server peak RSS |\n\
         |---|---|---|---|---|---|{db_rule}---|\n"
    );
    for r in rows {
        let db = r.db.map_or(String::new(), |c| format!(" {c:.2} cores |"));
        t += &format!(
            "| {} | **{:.0}** | {:.1} ms | {:.1} ms | {:.2} cores | {:.2} cores |{db} {:.0} MiB |\n",
            r.what, r.per_sec, r.p50, r.p99, r.cores, r.load, r.rss
        );
    }
    for (what, v) in refs {
        let empty = if pg { " |" } else { "" };
        t += &format!("| {what} | {v:.0} | | | | |{empty} |\n");
    }
    t += "\n| ratio | |\n|---|---|\n";
    for &(r, f) in compare {
        t += &format!(
            "| {} / {} | {:.2}× |\n",
            rows[r].what,
            refs[f].0,
            rows[r].per_sec / refs[f].1
        );
    }
    t
}

fn main() {
    let n: usize = env_or("RECKON_BENCH_CALLBACKS", 20_000);
    let rounds: usize = env_or("RECKON_BENCH_ROUNDS", 3);
    let pg_too = std::env::var("RECKON_BENCH_PG").is_ok_and(|v| v == "1");
    let sqlite_too = std::env::var("RECKON_BENCH_SQLITE").map_or(true, |v| v != "0");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let secret = Secret::random();
    let date = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let cpu = std::thread::available_parallelism().map_or(0, |p| p.get());
    rt.block_on(async {
        if sqlite_too {
            let mut loads: Vec<Vec<(Load, f64)>> = concurrencies().iter().map(|_| Vec::new()).collect();
            let (mut each, mut batched) = (Vec::new(), Vec::new());
            for round in 0..rounds {
                for (k, &conns) in concurrencies().iter().enumerate() {
                    let dir = tempfile::tempdir().unwrap();
                    let url = sqlite_url(&dir.path().join("reckon.db"));
                    prepare(&url, n).await;
                    let (load, rss) = intake(dir.path(), &url, None, n, conns, 1, &secret).await;
                    println!(
                        "round {round}: SQLite, {conns} connections: {:.0}/s, p99 {:.1} ms, server {:.2} cores, load {:.2} cores",
                        load.per_sec, load.p99_ms, load.server_cores, load.load_cores
                    );
                    loads[k].push((load, rss));
                }
                for (batch, count, into) in [(1, n.min(3_000), &mut each), (RAW_BATCH, n, &mut batched)] {
                    let dir = tempfile::tempdir().unwrap();
                    let path: PathBuf = dir.path().join("raw.db");
                    prepare(&sqlite_url(&path), count).await;
                    let rate = tokio::task::block_in_place(|| raw_sqlite(&path, count, batch));
                    println!("round {round}: rusqlite, commit per {batch}: {rate:.0}/s");
                    into.push(rate);
                }
            }
            let rows: Vec<Row> = concurrencies()
                .iter()
                .zip(loads)
                .map(|(c, l)| row(format!("Reckon, {c} connections"), l))
                .collect();
            let refs = vec![
                ("rusqlite, commit per callback".to_string(), med(each)),
                (format!("rusqlite, commit per {RAW_BATCH}"), med(batched)),
            ];
            let compare: Vec<(usize, usize)> = (0..rows.len()).map(|r| (r, 1)).collect();
            let report = format!(
                "## Current: callback intake (SQLite)\n\n\
                 Measured {date} on this machine ({cpu} cores), SQLite with `synchronous=FULL`, medians of {rounds} \
                 rounds: `cargo bench --bench callbacks` ({n} callbacks, each sent once, pre-signed, over keep-alive \
                 HTTP/1.1 connections from the bench process to a `reckon serve` process; workers on).\n\n{}\n\
                 Every answer was 200, sent only after the callback's batch committed; each round asserts {n} \
                 callbacks stored and exactly {n} effects. The references run the same five statements per \
                 callback (callback row, guarded UPDATE, effect, outbox message, history) prepared through \
                 rusqlite on the same schema, in the same run.\n",
                table(&rows, &refs, &compare)
            );
            println!("{report}");
            write_section("## Current: callback intake (SQLite)", &report);
        }
        if pg_too {
            let Some(pg) = Postgres::start() else {
                println!("PostgreSQL 15 is not installed: not measured");
                return;
            };
            let dir = tempfile::tempdir().unwrap();
            prepare(&pg.create("seeded", None).await, n).await;
            let conns = 256;
            let mut one = Vec::new();
            let mut two = Vec::new();
            let mut bench = Vec::new();
            for round in 0..rounds {
                for (instances, into) in [(1, &mut one), (2, &mut two)] {
                    let url = pg.create("intake", Some("seeded")).await;
                    let (load, rss) = intake(dir.path(), &url, Some(&pg), n, conns, instances, &secret).await;
                    println!(
                        "round {round}: PostgreSQL, {instances} instance(s), {conns} connections: {:.0}/s, p99 {:.1} ms, servers {:.2} cores, PostgreSQL {:.2} cores, load {:.2} cores",
                        load.per_sec, load.p99_ms, load.server_cores, load.db_cores.unwrap_or(0.0), load.load_cores
                    );
                    into.push((load, rss));
                }
                pg.create("raw", Some("seeded")).await;
                let tps = pgbench(&pg, "raw", dir.path(), n, 64);
                println!("round {round}: pgbench, 64 clients: {tps:.0} tps");
                bench.push(tps);
            }
            let rows = vec![
                row(format!("Reckon, 1 instance, {conns} connections"), one),
                row(format!("Reckon, 2 instances, {conns} connections"), two),
            ];
            let refs = vec![(
                "pgbench, same transaction per callback, 64 clients".to_string(),
                med(bench),
            )];
            let mut report = format!(
                "## Current: callback intake (PostgreSQL)\n\n\
                 Measured {date} on this machine ({cpu} cores), PostgreSQL 15 (`fsync=on`, `synchronous_commit=on`, \
                 started by the bench), medians of {rounds} rounds: `RECKON_BENCH_PG=1 cargo bench --bench callbacks` \
                 ({n} callbacks as for SQLite; with two instances the connections alternate between them).\n\n{}",
                table(&rows, &refs, &[(0, 0), (1, 0)])
            );
            report += &format!(
                "| 2 instances / 1 instance | {:.2}× |\n\n\
                 Each round asserts {n} callbacks stored and exactly {n} effects. pgbench runs the same five \
                 statements per callback, prepared, one transaction each, on a copy of the same seeded database.\n",
                rows[1].per_sec / rows[0].per_sec
            );
            println!("{report}");
            write_section("## Current: callback intake (PostgreSQL)", &report);
        }
    });
}
