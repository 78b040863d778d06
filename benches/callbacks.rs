//! Callback intake and outbox delivery, measured from outside: `reckon
//! serve` (the release binary) runs as its own process, and this process
//! is the load — pre-signed sandbox callbacks, each sent once, over
//! keep-alive HTTP/1.1 connections — and the sink: a receiver that answers
//! 200 at once and notes when each payment's `payment.succeeded` message
//! arrived, so delivery is measured beside intake, per payment. Two
//! loads: a burst (every callback at once over C connections) and a paced
//! one (a fixed rate for some seconds, each request sent at its scheduled
//! time, its latency counted from that time). Beside them, in the same
//! run, the fastest honest references: the same statements on the same
//! schema through a direct binding — rusqlite committing per callback and
//! per 256, pgbench on PostgreSQL — the intake without a sink, and a plain
//! signed sender to the same receiver. Rounds alternate server and
//! reference; the tables give medians. Writes its figures into
//! BENCHMARKS.md.
//!
//!     cargo bench --bench callbacks                          # SQLite
//!     RECKON_BENCH_PG=1 cargo bench --bench callbacks        # and PostgreSQL
//!
//! Environment:
//! - `RECKON_BENCH_CALLBACKS`: callbacks of a burst (20000)
//! - `RECKON_BENCH_ROUNDS`: rounds, each every run once (3)
//! - `RECKON_BENCH_CONCURRENCY`: connections of the bursts (`64,256`)
//! - `RECKON_BENCH_MODES`: `burst`, `paced` or both (`burst,paced`)
//! - `RECKON_BENCH_RATE`: callbacks per second of the paced load (1000)
//! - `RECKON_BENCH_SECONDS`: how long the paced load sends (60)
//! - `RECKON_BENCH_PACED_CONNECTIONS`: its connections (256)
//! - `RECKON_BENCH_SINK=0`: no sink, intake only
//! - `RECKON_BENCH_WAIT`: seconds to wait for delivery after the last
//!   answer before the run says "not all delivered" (600)
//! - `RECKON_BENCH_PG=1`, `RECKON_BENCH_SQLITE=0`: PostgreSQL too, or only
//! - `RECKON_BENCH_SERVER=PATH`: another build's binary
//! - `RECKON_BENCH_LOGS=DIR`: keeps the servers' logs

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
use support::sink::Sink;
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

/// What one invocation measures, from the environment.
struct Plan {
    n: usize,
    rounds: usize,
    burst: bool,
    paced: bool,
    sink: bool,
    rate: f64,
    seconds: f64,
    paced_conns: usize,
    /// How long delivery may take after the last answer.
    wait: Duration,
}

impl Plan {
    fn from_env() -> Plan {
        let modes = std::env::var("RECKON_BENCH_MODES").unwrap_or_else(|_| "burst,paced".into());
        let has = |m: &str| modes.split(',').any(|x| x.trim() == m);
        Plan {
            n: env_or("RECKON_BENCH_CALLBACKS", 20_000),
            rounds: env_or("RECKON_BENCH_ROUNDS", 3),
            burst: has("burst"),
            paced: has("paced"),
            sink: std::env::var("RECKON_BENCH_SINK").map_or(true, |v| v != "0"),
            rate: env_or("RECKON_BENCH_RATE", 1000.0),
            seconds: env_or("RECKON_BENCH_SECONDS", 60.0),
            paced_conns: env_or("RECKON_BENCH_PACED_CONNECTIONS", 256),
            wait: Duration::from_secs(env_or("RECKON_BENCH_WAIT", 600)),
        }
    }

    /// Callbacks of the paced load.
    fn paced_n(&self) -> usize {
        (self.rate * self.seconds).round() as usize
    }

    /// Payments a database needs for every run of the plan.
    fn payments(&self) -> usize {
        let paced = if self.paced { self.paced_n() } else { 0 };
        self.n.max(paced)
    }
}

const RAW_BATCH: usize = 256;

/// Connections of the plain signed sender, the delivery's reference.
const PLAIN_CONNS: usize = 16;

/// The paced load's backlog is sampled this often.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// A paced send this late against its schedule counts as the sender
/// falling behind.
const BEHIND: Duration = Duration::from_millis(10);

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

/// An outbox message as the server writes a `payment.succeeded`'s: the
/// same fields, the same size.
fn message(i: usize) -> String {
    serde_json::json!({
        "type": "payment.succeeded",
        "payment_no": payment_no(i),
        "order_no": format!("ORDB{i:08}"),
        "provider": "sandbox",
        "provider_txn_id": format!("TXNB{i:08}"),
        "status": "SUCCEEDED",
        "amount_minor": 19900,
        "currency": "CNY",
        "version": 2,
        "occurred_at": now_micros(),
        "trace_id": uuid::Uuid::new_v4().simple().to_string(),
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
    /// Started on `database_url`; with `sink` (its URL and secret), the
    /// server's outbox delivers `payment.succeeded` there.
    fn start(
        dir: &Path,
        name: &str,
        database_url: &str,
        secret: &Secret,
        sink: Option<(&str, &Secret)>,
    ) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = dir.join(format!("{name}.toml"));
        let mut text = format!(
            "listen = \"127.0.0.1:{port}\"\ndatabase_url = \"{database_url}\"\ndata_dir = \"{}\"\n\
             [[providers]]\nname = \"sandbox\"\nkind = \"sandbox\"\nbase_url = \"http://127.0.0.1:9\"\n\
             secret = \"{}\"\n",
            dir.display(),
            secret.to_whsec()
        );
        if let Some((url, outbox)) = sink {
            text += &format!(
                "[[sinks]]\nname = \"bench\"\nurl = \"{url}\"\nevent_types = [\"payment.succeeded\"]\n\
                 secret = \"{}\"\n",
                outbox.to_whsec()
            );
        }
        std::fs::write(&config, text).unwrap();
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

fn servers_cpu(servers: &[Server]) -> f64 {
    servers.iter().map(Server::cpu_secs).sum()
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

/// How a load sends: everything at once, or request i at
/// `start + i / rate` whatever the answers before it took.
#[derive(Clone, Copy)]
enum Pace {
    Burst,
    Rate(f64),
}

/// What a load saw.
struct Sent {
    started: Instant,
    /// When every connection had its last answer.
    finished: Instant,
    /// When each request's answer came, by request.
    answered: Vec<Instant>,
    /// Latencies, sorted: from the send in a burst, from the scheduled
    /// time in a paced load (so a slow answer that delays the next send
    /// is counted, not hidden).
    latencies: Vec<Duration>,
    /// How late each paced send left against its schedule, sorted.
    late: Vec<Duration>,
    /// The servers' CPU seconds at the start, and used until `finished`.
    cpu_at_start: f64,
    server_cpu: f64,
    /// CPU seconds this process (the load) and PostgreSQL used meanwhile.
    load_cpu: f64,
    db_cpu: Option<f64>,
}

impl Sent {
    fn elapsed(&self) -> f64 {
        (self.finished - self.started).as_secs_f64()
    }

    fn per_sec(&self) -> f64 {
        self.answered.len() as f64 / self.elapsed()
    }

    fn latency_ms(&self, pct: usize) -> f64 {
        percentile(&self.latencies, pct).as_secs_f64() * 1e3
    }
}

/// The `pct`th percentile of sorted figures.
fn percentile<T: Copy>(sorted: &[T], pct: usize) -> T {
    sorted[(sorted.len() * pct / 100).min(sorted.len() - 1)]
}

/// Sends every request once over `conns` connections, spread over the
/// servers in turn, from `start`; every answer must be 200. `answered`
/// counts the answers as they come.
#[allow(clippy::too_many_arguments)]
async fn drive(
    servers: &[Server],
    pg: Option<&Postgres>,
    conns: usize,
    ts: i64,
    requests: Arc<Vec<Signed>>,
    pace: Pace,
    start: Instant,
    answered: Arc<AtomicUsize>,
) -> Sent {
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::with_capacity(conns);
    for c in 0..conns {
        let addr = servers[c % servers.len()].addr;
        let (next, requests, answered) = (next.clone(), requests.clone(), answered.clone());
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(conn);
            // (request, answered at, latency, late)
            let mut seen = Vec::new();
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
                let due = match pace {
                    Pace::Burst => Instant::now(),
                    Pace::Rate(rate) => {
                        let due = start + Duration::from_secs_f64(i as f64 / rate);
                        tokio::time::sleep_until(due.into()).await;
                        due
                    }
                };
                let late = due.elapsed();
                sender.ready().await.unwrap();
                let res = sender.send_request(req).await.unwrap();
                let status = res.status();
                let _ = res.into_body().collect().await.unwrap();
                assert_eq!(status, 200, "callback {id} answered {status}");
                let at = Instant::now();
                answered.fetch_add(1, Ordering::Relaxed);
                seen.push((i, at, at - due, late));
            }
            seen
        }));
    }
    // A paced load's connections are made before its start; its CPU is
    // counted from then.
    tokio::time::sleep_until(start.into()).await;
    let cpu_at_start = servers_cpu(servers);
    let (load_before, db_before) = (support::cpu_secs(), pg.map(Postgres::cpu_secs));
    let n = requests.len();
    let mut answered = vec![start; n];
    let mut latencies = Vec::with_capacity(n);
    let mut late = Vec::new();
    for t in tasks {
        for (i, at, latency, l) in t.await.unwrap() {
            answered[i] = at;
            latencies.push(latency);
            if matches!(pace, Pace::Rate(_)) {
                late.push(l);
            }
        }
    }
    let finished = Instant::now();
    let server_cpu = servers_cpu(servers) - cpu_at_start;
    let (load_after, db_after) = (support::cpu_secs(), pg.map(Postgres::cpu_secs));
    latencies.sort();
    late.sort();
    Sent {
        started: start,
        finished,
        answered,
        latencies,
        late,
        cpu_at_start,
        server_cpu,
        load_cpu: load_after - load_before,
        db_cpu: db_after.zip(db_before).map(|(a, b)| a - b),
    }
}

/// How the outbox kept up with one load.
struct Delivery {
    /// Every payment's message arrived within the wait.
    complete: bool,
    /// Payments whose message arrived.
    delivered: usize,
    /// Payments delivered per second from the first request to the last
    /// delivery.
    per_sec: f64,
    /// Seconds from the last answer to the last delivery (to the end of
    /// the wait when not all came).
    tail_s: f64,
    /// Per payment, sink arrival − that callback's answer, ms, sorted; a
    /// message that never came is infinite.
    lags: Vec<f64>,
    /// Requests the sink received, and how many repeated a webhook-id.
    received: usize,
    duplicates: usize,
    /// Payments delivered when the last answer came, and per second
    /// until then.
    at_last_answer: usize,
    while_sending: f64,
    /// Every 5 s from the start: (seconds, answered, delivered).
    series: Vec<(u64, usize, usize)>,
}

impl Delivery {
    fn lag_ms(&self, pct: usize) -> f64 {
        percentile(&self.lags, pct)
    }

    fn backlog_end(&self, sent: usize) -> usize {
        sent - self.at_last_answer
    }
}

/// One measured run: its load, its delivery when a sink was attached,
/// the servers' CPU per callback (until the last delivery with a sink),
/// their peak RSS.
struct Run {
    sent: Sent,
    delivery: Option<Delivery>,
    cpu_us: f64,
    rss: f64,
}

/// Where a run goes: a database, its servers, the outbox's secret when a
/// sink is attached.
struct Target<'a> {
    dir: &'a Path,
    url: &'a str,
    pg: Option<&'a Postgres>,
    instances: usize,
    secret: &'a Secret,
    outbox: Option<&'a Secret>,
    /// Names the run's kept logs.
    label: String,
}

/// One measured run on a fresh database: the servers (with the sink when
/// asked), `n` callbacks at `pace` over `conns` connections, then the
/// wait for every payment's message; the effects counted after.
async fn run(t: &Target<'_>, n: usize, conns: usize, pace: Pace, wait: Duration) -> Run {
    let sink = t.outbox.map(|s| Sink::start(s.clone()));
    let sink_url = sink.as_ref().map(Sink::url);
    let servers: Vec<Server> = (0..t.instances)
        .map(|k| {
            Server::start(
                t.dir,
                &format!("serve{k}"),
                t.url,
                t.secret,
                sink_url.as_deref().zip(t.outbox),
            )
        })
        .collect();
    let (ts, requests) = signed(t.secret, n);
    let answered = Arc::new(AtomicUsize::new(0));
    let start = match pace {
        Pace::Burst => Instant::now(),
        Pace::Rate(_) => Instant::now() + Duration::from_millis(500),
    };
    // The backlog over time, while the load runs and after.
    let stop = Arc::new(tokio::sync::Notify::new());
    let sampler = sink.as_ref().map(|sink| {
        let (probe, answered, stop) = (sink.probe(), answered.clone(), stop.clone());
        tokio::spawn(async move {
            let mut series = Vec::new();
            for k in 1.. {
                tokio::select! {
                    _ = tokio::time::sleep_until((start + SAMPLE_EVERY * k).into()) => {}
                    _ = stop.notified() => break,
                }
                let (a, d) = (answered.load(Ordering::Relaxed), probe.delivered());
                series.push((SAMPLE_EVERY.as_secs() * u64::from(k), a, d));
            }
            series
        })
    });
    let sent = drive(&servers, t.pg, conns, ts, requests, pace, start, answered).await;
    let mut cpu_us = sent.server_cpu / n as f64 * 1e6;
    let delivery = match (&sink, sampler) {
        (Some(sink), Some(sampler)) => {
            let at_last_answer = sink.delivered();
            let last_answer = sent.answered.iter().copied().max().unwrap_or(sent.finished);
            let complete = sink.wait_for(n, last_answer + wait).await;
            let ended = Instant::now();
            cpu_us = (servers_cpu(&servers) - sent.cpu_at_start) / n as f64 * 1e6;
            stop.notify_one();
            let series = sampler.await.unwrap();
            let got = sink.summary(n);
            let last = got.first.iter().flatten().copied().max();
            let end = if complete { last.unwrap() } else { ended };
            let mut lags: Vec<f64> = got
                .first
                .iter()
                .zip(&sent.answered)
                .map(|(f, a)| {
                    f.map_or(f64::INFINITY, |f| {
                        f.saturating_duration_since(*a).as_secs_f64() * 1e3
                    })
                })
                .collect();
            lags.sort_by(f64::total_cmp);
            let delivered = got.delivered();
            Some(Delivery {
                complete,
                delivered,
                per_sec: delivered as f64 / (last.unwrap_or(end) - sent.started).as_secs_f64(),
                tail_s: end.saturating_duration_since(last_answer).as_secs_f64(),
                lags,
                received: got.received,
                duplicates: got.received - got.distinct_ids,
                at_last_answer,
                while_sending: at_last_answer as f64 / sent.elapsed(),
                series,
            })
        }
        _ => None,
    };
    let rss = servers.iter().map(Server::peak_rss_mib).fold(0.0, f64::max);
    for s in servers {
        s.stop();
    }
    // RECKON_BENCH_LOGS=DIR keeps the servers' logs (with RUST_LOG=debug
    // they time each batch the writer commits).
    if let Ok(keep) = std::env::var("RECKON_BENCH_LOGS") {
        for k in 0..t.instances {
            let _ = std::fs::copy(
                t.dir.join(format!("serve{k}.log")),
                Path::new(&keep).join(format!("{}-serve{k}-{}.log", t.label, now_micros())),
            );
        }
    }
    if let Some(sink) = &sink {
        sink.assert_signed();
    }
    let (effects, stored) = counts(t.url).await;
    assert_eq!(
        effects as usize, n,
        "every callback made exactly one effect"
    );
    assert_eq!(stored as usize, n, "every callback stored once");
    Run {
        sent,
        delivery,
        cpu_us,
        rss,
    }
}

/// A plain signed sender's messages/s: `count` messages like the
/// outbox's, each signed as it leaves (HMAC-SHA256, as the server signs
/// its own), POSTed over `conns` keep-alive HTTP/1.1 connections to a sink
/// of its own — which is also that receiver's capacity, measured.
async fn plain_sender(outbox: &Secret, count: usize, conns: usize) -> f64 {
    let sink = Sink::start(outbox.clone());
    let bodies: Arc<Vec<Bytes>> = Arc::new((0..count).map(|i| Bytes::from(message(i))).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(conns);
    for _ in 0..conns {
        let (next, bodies, outbox, addr) =
            (next.clone(), bodies.clone(), outbox.clone(), sink.addr);
        tasks.push(tokio::spawn(async move {
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            let (mut sender, conn) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .unwrap();
            tokio::spawn(conn);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(b) = bodies.get(i) else { break };
                let id = uuid::Uuid::now_v7().to_string();
                let ts = jiff::Timestamp::now().as_second();
                let req = http::Request::post("/hooks")
                    .header("host", "127.0.0.1")
                    .header("content-type", "application/json")
                    .header("webhook-id", &id)
                    .header("webhook-timestamp", ts.to_string())
                    .header("webhook-signature", outbox.sign(&id, ts, b))
                    .body(Full::new(b.clone()))
                    .unwrap();
                sender.ready().await.unwrap();
                let res = sender.send_request(req).await.unwrap();
                let status = res.status();
                let _ = res.into_body().collect().await.unwrap();
                assert_eq!(status, 200, "the sink answered {status}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let rate = count as f64 / started.elapsed().as_secs_f64();
    sink.assert_signed();
    let got = sink.summary(count);
    assert_eq!(got.delivered(), count, "the sink noted every message");
    assert_eq!(got.received, got.distinct_ids, "every message once");
    rate
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

/// The median over runs of one figure.
fn medf<T>(runs: &[T], f: impl Fn(&T) -> f64) -> f64 {
    med(runs.iter().map(f).collect())
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

fn row(what: String, runs: &[Run]) -> Row {
    Row {
        what,
        per_sec: medf(runs, |r| r.sent.per_sec()),
        p50: medf(runs, |r| r.sent.latency_ms(50)),
        p99: medf(runs, |r| r.sent.latency_ms(99)),
        cores: medf(runs, |r| r.sent.server_cpu / r.sent.elapsed()),
        load: medf(runs, |r| r.sent.load_cpu / r.sent.elapsed()),
        db: runs[0].sent.db_cpu.map(|_| {
            med(runs
                .iter()
                .filter_map(|r| Some(r.sent.db_cpu? / r.sent.elapsed()))
                .collect())
        }),
        rss: medf(runs, |r| r.rss),
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

/// A duration in milliseconds for a table: ms below a second, s above;
/// "past the wait" for a message that did not come in it.
fn dur(ms: f64) -> String {
    if !ms.is_finite() {
        "past the wait".into()
    } else if ms >= 10_000.0 {
        format!("{:.0} s", ms / 1e3)
    } else if ms >= 1_000.0 {
        format!("{:.1} s", ms / 1e3)
    } else if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

/// A count for a series: 1.2k above a thousand.
fn short(v: usize) -> String {
    if v >= 1_000 {
        format!("{:.1}k", v as f64 / 1e3)
    } else {
        v.to_string()
    }
}

/// The backlog (answered − delivered) every 5 s while the load sent.
fn backlog_series(d: &Delivery, until_s: f64) -> String {
    d.series
        .iter()
        .filter(|(s, _, _)| *s as f64 <= until_s + 0.5)
        .map(|(_, a, d)| short(a.saturating_sub(*d)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The run whose backlog at the end of sending is the median.
fn median_run(runs: &[Run]) -> &Run {
    let mut by: Vec<&Run> = runs.iter().collect();
    by.sort_by_key(|r| {
        r.delivery
            .as_ref()
            .map_or(0, |d| d.backlog_end(r.sent.answered.len()))
    });
    by[by.len() / 2]
}

/// One line per run as it ends.
fn say(round: usize, what: &str, r: &Run) {
    let s = &r.sent;
    let mut line = format!(
        "round {round}: {what}: intake {:.0}/s, p50 {}, p99 {}, server {:.2} cores, load {:.2} cores",
        s.per_sec(),
        dur(s.latency_ms(50)),
        dur(s.latency_ms(99)),
        s.server_cpu / s.elapsed(),
        s.load_cpu / s.elapsed()
    );
    if let Some(c) = s.db_cpu {
        line += &format!(", PostgreSQL {:.2} cores", c / s.elapsed());
    }
    if !s.late.is_empty() {
        let behind = s.late.iter().filter(|l| **l > BEHIND).count();
        line += &format!(
            "; sends late p99 {}, max {}, {behind} over {} ms",
            dur(percentile(&s.late, 99).as_secs_f64() * 1e3),
            dur(s.late.last().unwrap().as_secs_f64() * 1e3),
            BEHIND.as_millis()
        );
    }
    if let Some(d) = &r.delivery {
        let n = s.answered.len();
        line += &format!(
            "; delivered {}{} of {n}, {:.0}/s ({:.0}/s while sending), last answer → last delivery {}, \
             lag p50 {} p99 {}, received {} ({} duplicates), backlog at the last answer {}",
            d.delivered,
            if d.complete { "" } else { " (NOT ALL)" },
            d.per_sec,
            d.while_sending,
            dur(d.tail_s * 1e3),
            dur(d.lag_ms(50)),
            dur(d.lag_ms(99)),
            d.received,
            d.duplicates,
            d.backlog_end(n)
        );
        let series: Vec<String> = d
            .series
            .iter()
            .map(|(t, a, dd)| format!("{t}s {}", a.saturating_sub(*dd)))
            .collect();
        line += &format!("\n    backlog every 5 s: {}", series.join(", "));
    }
    line += &format!("; server CPU {:.0} µs per callback", r.cpu_us);
    println!("{line}");
}

/// A run's note when not every message came within the wait.
fn note(notes: &mut Vec<String>, round: usize, what: &str, r: &Run, wait: Duration) {
    if let Some(d) = r.delivery.as_ref().filter(|d| !d.complete) {
        notes.push(format!(
            "Round {round}, {what}: **not all delivered within {} s** after the last answer ({} of {}); \
             its delivery figures count only what came.",
            wait.as_secs(),
            d.delivered,
            r.sent.answered.len()
        ));
    }
}

/// The burst table: intake and delivery per configuration (rows without
/// a sink leave delivery blank).
fn burst_table(rows: &[(String, &[Run])]) -> String {
    let mut t = String::from(
        "| burst | intake/s | intake p99 | delivered/s | last answer → last delivery | lag p50 | lag p99 | \
         duplicates | server CPU per callback |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for (what, runs) in rows {
        let intake = format!(
            "| {what} | {:.0} | {} |",
            medf(runs, |r| r.sent.per_sec()),
            dur(medf(runs, |r| r.sent.latency_ms(99)))
        );
        let cpu = format!(" {:.0} µs |", medf(runs, |r| r.cpu_us));
        let delivered: Vec<&Delivery> = runs.iter().filter_map(|r| r.delivery.as_ref()).collect();
        if delivered.is_empty() {
            t += &format!("{intake} | | | | |{cpu}\n");
            continue;
        }
        t += &format!(
            "{intake} **{:.0}** | {} | {} | {} | {:.0} |{cpu}\n",
            medf(&delivered, |d| d.per_sec),
            dur(medf(&delivered, |d| d.tail_s * 1e3)),
            dur(medf(&delivered, |d| d.lag_ms(50))),
            dur(medf(&delivered, |d| d.lag_ms(99))),
            medf(&delivered, |d| d.duplicates as f64),
        );
    }
    t
}

/// The paced table: intake latency from the schedule, delivery while
/// sending, the backlog, CPU per callback.
fn paced_table(rows: &[(String, &[Run])], plan: &Plan) -> String {
    let mut t = String::from(
        "| paced | intake/s | intake p50 | intake p99 | sends late p99 | delivered/s while sending | \
         backlog at the end of sending | backlog every 5 s (median run) | last answer → last delivery | \
         lag p50 | lag p99 | server CPU per callback |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (what, runs) in rows {
        let intake = format!(
            "| {what} | {:.0} | {} | {} | {} ({:.0} over {} ms) |",
            medf(runs, |r| r.sent.per_sec()),
            dur(medf(runs, |r| r.sent.latency_ms(50))),
            dur(medf(runs, |r| r.sent.latency_ms(99))),
            dur(medf(runs, |r| percentile(&r.sent.late, 99).as_secs_f64() * 1e3)),
            medf(
                runs,
                |r| r.sent.late.iter().filter(|l| **l > BEHIND).count() as f64
            ),
            BEHIND.as_millis(),
        );
        let cpu = format!(" {:.0} µs |", medf(runs, |r| r.cpu_us));
        let delivered: Vec<&Run> = runs.iter().filter(|r| r.delivery.is_some()).collect();
        if delivered.is_empty() {
            t += &format!("{intake} | | | | | |{cpu}\n");
            continue;
        }
        let backlog = medf(&delivered, |r| {
            delivery_of(r).backlog_end(r.sent.answered.len()) as f64
        });
        t += &format!(
            "{intake} **{:.0}** | **{backlog:.0}** ({:.2} s of traffic) | {} | {} | {} | {} |{cpu}\n",
            medf(&delivered, |r| delivery_of(r).while_sending),
            backlog / plan.rate,
            backlog_series(median_run(runs).delivery.as_ref().unwrap(), plan.seconds),
            dur(medf(&delivered, |r| delivery_of(r).tail_s * 1e3)),
            dur(medf(&delivered, |r| delivery_of(r).lag_ms(50))),
            dur(medf(&delivered, |r| delivery_of(r).lag_ms(99))),
        );
    }
    t
}

fn delivery_of(r: &Run) -> &Delivery {
    r.delivery.as_ref().unwrap()
}

fn ratios(pairs: &[(String, f64)]) -> String {
    let mut t = String::from("| ratio | |\n|---|---|\n");
    for (what, v) in pairs {
        // Three figures for a ratio far below one.
        let v = if *v < 0.1 {
            format!("{v:.3}")
        } else {
            format!("{v:.2}")
        };
        t += &format!("| {what} | {v}× |\n");
    }
    t
}

/// delivered/s over intake/s of the same runs (medians).
fn delivery_over_intake(runs: &[Run]) -> f64 {
    medf(runs, |r| r.delivery.as_ref().map_or(0.0, |d| d.per_sec))
        / medf(runs, |r| r.sent.per_sec())
}

fn delivered_per_sec(runs: &[Run]) -> f64 {
    medf(runs, |r| r.delivery.as_ref().map_or(0.0, |d| d.per_sec))
}

/// What a delivery section says about the sink and the runs.
fn sink_words(plan: &Plan) -> String {
    format!(
        "The sink is a receiver in the bench's process (HTTP/1.1 and HTTP/2 with prior knowledge, \
         200 at once to every POST, every 100th signature checked), configured as one `[[sinks]]` \
         entry for `payment.succeeded`; it notes when each payment's first message arrived. \
         delivered/s is payments delivered over the time from the first request to the last \
         delivery; lag is per payment, sink arrival − that callback's answer; duplicates are \
         requests that repeated a webhook-id. The paced load sends request i at start + i / {rate:.0} s \
         over {conns} connections, its latency counted from that time; the backlog is answered − \
         delivered. Server CPU per callback counts from the first request to the last delivery \
         (to the last answer without a sink). Each run waits at most {wait} s after its last \
         answer for delivery.",
        rate = plan.rate,
        conns = plan.paced_conns,
        wait = plan.wait.as_secs()
    )
}

/// Every run of one round on SQLite, in turn, each on a fresh file.
#[derive(Default)]
struct SqliteRuns {
    intake: Vec<Vec<Run>>,
    burst: Vec<Vec<Run>>,
    each: Vec<f64>,
    batched: Vec<f64>,
    plain: Vec<f64>,
    paced: Vec<Run>,
    paced_bare: Vec<Run>,
    notes: Vec<String>,
}

async fn fresh_sqlite(n: usize) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = sqlite_url(&dir.path().join("reckon.db"));
    prepare(&url, n).await;
    (dir, url)
}

async fn sqlite(plan: &Plan, secret: &Secret, outbox: &Secret, date: &str, cpu: usize) {
    let conc = concurrencies();
    let mut m = SqliteRuns {
        intake: conc.iter().map(|_| Vec::new()).collect(),
        burst: conc.iter().map(|_| Vec::new()).collect(),
        ..Default::default()
    };
    let n = plan.n;
    for round in 0..plan.rounds {
        if plan.burst {
            for (k, &conns) in conc.iter().enumerate() {
                let sinks: &[Option<&Secret>] = if plan.sink {
                    &[None, Some(outbox)]
                } else {
                    &[None]
                };
                for &sink in sinks {
                    let (dir, url) = fresh_sqlite(n).await;
                    let what = format!(
                        "SQLite, {conns} connections, {}",
                        if sink.is_some() { "sink" } else { "no sink" }
                    );
                    let t = Target {
                        dir: dir.path(),
                        url: &url,
                        pg: None,
                        instances: 1,
                        secret,
                        outbox: sink,
                        label: format!("sqlite-burst-{conns}-{}", sink.is_some()),
                    };
                    let r = run(&t, n, conns, Pace::Burst, plan.wait).await;
                    say(round, &what, &r);
                    note(&mut m.notes, round, &what, &r, plan.wait);
                    (if sink.is_some() {
                        &mut m.burst
                    } else {
                        &mut m.intake
                    })[k]
                        .push(r);
                }
            }
            for (batch, count, into) in [
                (1, n.min(3_000), &mut m.each),
                (RAW_BATCH, n, &mut m.batched),
            ] {
                let dir = tempfile::tempdir().unwrap();
                let path: PathBuf = dir.path().join("raw.db");
                prepare(&sqlite_url(&path), count).await;
                let rate = tokio::task::block_in_place(|| raw_sqlite(&path, count, batch));
                println!("round {round}: rusqlite, commit per {batch}: {rate:.0}/s");
                into.push(rate);
            }
        }
        if plan.sink {
            let rate = plain_sender(outbox, n, PLAIN_CONNS).await;
            println!("round {round}: plain signed sender, {PLAIN_CONNS} connections: {rate:.0}/s");
            m.plain.push(rate);
        }
        if plan.paced {
            let pn = plan.paced_n();
            let sinks: &[Option<&Secret>] = if plan.sink {
                &[Some(outbox), None]
            } else {
                &[None]
            };
            for &sink in sinks {
                let (dir, url) = fresh_sqlite(pn).await;
                let what = format!(
                    "SQLite, paced {:.0}/s for {:.0} s, {}",
                    plan.rate,
                    plan.seconds,
                    if sink.is_some() { "sink" } else { "no sink" }
                );
                let t = Target {
                    dir: dir.path(),
                    url: &url,
                    pg: None,
                    instances: 1,
                    secret,
                    outbox: sink,
                    label: format!("sqlite-paced-{}", sink.is_some()),
                };
                let r = run(&t, pn, plan.paced_conns, Pace::Rate(plan.rate), plan.wait).await;
                say(round, &what, &r);
                note(&mut m.notes, round, &what, &r, plan.wait);
                (if sink.is_some() {
                    &mut m.paced
                } else {
                    &mut m.paced_bare
                })
                .push(r);
            }
        }
    }
    let rounds = plan.rounds;
    if plan.burst {
        let rows: Vec<Row> = conc
            .iter()
            .zip(&m.intake)
            .map(|(c, l)| row(format!("Reckon, {c} connections"), l))
            .collect();
        let refs = vec![
            (
                "rusqlite, commit per callback".to_string(),
                med(m.each.clone()),
            ),
            (
                format!("rusqlite, commit per {RAW_BATCH}"),
                med(m.batched.clone()),
            ),
        ];
        let compare: Vec<(usize, usize)> = (0..rows.len()).map(|r| (r, 1)).collect();
        let report = format!(
            "## Current: callback intake (SQLite)\n\n\
             Measured {date} on this machine ({cpu} cores), SQLite with `synchronous=FULL`, medians of {rounds} \
             rounds: `cargo bench --bench callbacks` ({n} callbacks, each sent once, pre-signed, over keep-alive \
             HTTP/1.1 connections from the bench process to a `reckon serve` process; workers on; no sink).\n\n{}\n\
             Every answer was 200, sent only after the callback's batch committed; each round asserts {n} \
             callbacks stored and exactly {n} effects. The references run the same five statements per \
             callback (callback row, guarded UPDATE, effect, outbox message, history) prepared through \
             rusqlite on the same schema, in the same run.\n",
            table(&rows, &refs, &compare)
        );
        println!("{report}");
        write_section("## Current: callback intake (SQLite)", &report);
    }
    if !(plan.paced || plan.sink && plan.burst) {
        return;
    }
    let mut text = format!(
        "## Current: outbox delivery (SQLite)\n\n\
         Measured {date} on this machine ({cpu} cores), SQLite with `synchronous=FULL`, medians of {rounds} \
         rounds: `cargo bench --bench callbacks`, the same server and callbacks as the intake above with a \
         sink attached. {}\n\n",
        sink_words(plan)
    );
    let mut pairs = Vec::new();
    if plan.burst {
        let mut rows: Vec<(String, &[Run])> = Vec::new();
        for (k, c) in conc.iter().enumerate() {
            if plan.sink {
                rows.push((format!("{n} callbacks, {c} connections, sink"), &m.burst[k]));
            }
            rows.push((
                format!("{n} callbacks, {c} connections, no sink"),
                &m.intake[k],
            ));
        }
        text += &burst_table(&rows);
        text += "\n";
        if plan.sink {
            let plain = med(m.plain.clone());
            for (k, c) in conc.iter().enumerate() {
                pairs.push((
                    format!("delivery / intake, {c} connections"),
                    delivery_over_intake(&m.burst[k]),
                ));
                pairs.push((
                    format!("delivery, {c} connections / plain signed sender"),
                    delivered_per_sec(&m.burst[k]) / plain,
                ));
            }
        }
    }
    if plan.paced {
        let mut rows: Vec<(String, &[Run])> = Vec::new();
        let load = format!("{:.0}/s for {:.0} s", plan.rate, plan.seconds);
        if plan.sink {
            rows.push((format!("{load}, sink"), &m.paced));
        }
        rows.push((format!("{load}, no sink"), &m.paced_bare));
        text += &paced_table(&rows, plan);
        text += "\n";
        if plan.sink {
            if let Some(last) = m.burst.last().filter(|b| !b.is_empty()) {
                pairs.push((
                    format!(
                        "server CPU per callback, paced / burst at {} connections (sink)",
                        conc.last().unwrap()
                    ),
                    medf(&m.paced, |r| r.cpu_us) / medf(last, |r| r.cpu_us),
                ));
            }
            pairs.push((
                "paced intake p99, sink / no sink".into(),
                medf(&m.paced, |r| r.sent.latency_ms(99))
                    / medf(&m.paced_bare, |r| r.sent.latency_ms(99)),
            ));
            pairs.push((
                "paced server CPU per callback, sink / no sink".into(),
                medf(&m.paced, |r| r.cpu_us) / medf(&m.paced_bare, |r| r.cpu_us),
            ));
        }
    }
    if plan.sink {
        text += &format!(
            "| reference | messages/s |\n|---|---|\n| plain signed sender, {PLAIN_CONNS} keep-alive connections, \
             same receiver (its capacity) | {:.0} |\n\n",
            med(m.plain.clone())
        );
    }
    if !pairs.is_empty() {
        text += &ratios(&pairs);
        text += "\n";
    }
    for n in &m.notes {
        text += &format!("{n}\n");
    }
    println!("{text}");
    write_section("## Current: outbox delivery (SQLite)", &text);
}

async fn postgres(plan: &Plan, secret: &Secret, outbox: &Secret, date: &str, cpu: usize) {
    let Some(pg) = Postgres::start() else {
        println!("PostgreSQL 15 is not installed: not measured");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    prepare(&pg.create("seeded", None).await, plan.payments()).await;
    let (n, rounds) = (plan.n, plan.rounds);
    let conns = 256;
    // By instances (1, 2): intake without a sink, the burst and the paced
    // load with one; the paced load without a sink on one instance.
    let mut intake: [Vec<Run>; 2] = Default::default();
    let mut burst: [Vec<Run>; 2] = Default::default();
    let mut paced: [Vec<Run>; 2] = Default::default();
    let mut paced_bare = Vec::new();
    let (mut bench, mut plain, mut notes) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut measure = async |instances: usize, sink: Option<&Secret>, pace: Pace| {
            let url = pg.create("intake", Some("seeded")).await;
            let (count, c, kind) = match pace {
                Pace::Burst => (n, conns, "burst".to_string()),
                Pace::Rate(rate) => (
                    plan.paced_n(),
                    plan.paced_conns,
                    format!("paced {rate:.0}/s for {:.0} s", plan.seconds),
                ),
            };
            let what = format!(
                "PostgreSQL, {instances} instance(s), {kind}, {c} connections, {}",
                if sink.is_some() { "sink" } else { "no sink" }
            );
            let t = Target {
                dir: dir.path(),
                url: &url,
                pg: Some(&pg),
                instances,
                secret,
                outbox: sink,
                label: format!("pg-{kind}-{instances}-{}", sink.is_some()).replace([' ', '/'], "-"),
            };
            let r = run(&t, count, c, pace, plan.wait).await;
            say(round, &what, &r);
            note(&mut notes, round, &what, &r, plan.wait);
            r
        };
        if plan.burst {
            for (k, runs) in intake.iter_mut().enumerate() {
                runs.push(measure(k + 1, None, Pace::Burst).await);
            }
            if plan.sink {
                for (k, runs) in burst.iter_mut().enumerate() {
                    runs.push(measure(k + 1, Some(outbox), Pace::Burst).await);
                }
            }
        }
        if plan.paced {
            if plan.sink {
                for (k, runs) in paced.iter_mut().enumerate() {
                    runs.push(measure(k + 1, Some(outbox), Pace::Rate(plan.rate)).await);
                }
            }
            paced_bare.push(measure(1, None, Pace::Rate(plan.rate)).await);
        }
        if plan.burst {
            pg.create("raw", Some("seeded")).await;
            let tps = pgbench(&pg, "raw", dir.path(), n, 64);
            println!("round {round}: pgbench, 64 clients: {tps:.0} tps");
            bench.push(tps);
        }
        if plan.sink {
            let rate = plain_sender(outbox, n, PLAIN_CONNS).await;
            println!("round {round}: plain signed sender, {PLAIN_CONNS} connections: {rate:.0}/s");
            plain.push(rate);
        }
    }
    if plan.burst {
        let rows = vec![
            row(
                format!("Reckon, 1 instance, {conns} connections"),
                &intake[0],
            ),
            row(
                format!("Reckon, 2 instances, {conns} connections"),
                &intake[1],
            ),
        ];
        let refs = vec![(
            "pgbench, same transaction per callback, 64 clients".to_string(),
            med(bench),
        )];
        let mut report = format!(
            "## Current: callback intake (PostgreSQL)\n\n\
             Measured {date} on this machine ({cpu} cores), PostgreSQL 15 (`fsync=on`, `synchronous_commit=on`, \
             started by the bench), medians of {rounds} rounds: `RECKON_BENCH_PG=1 cargo bench --bench callbacks` \
             ({n} callbacks as for SQLite; with two instances the connections alternate between them; no sink).\n\n{}",
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
    if !(plan.paced || plan.sink && plan.burst) {
        return;
    }
    let mut text = format!(
        "## Current: outbox delivery (PostgreSQL)\n\n\
         Measured {date} on this machine ({cpu} cores), PostgreSQL 15 as for the intake, medians of {rounds} \
         rounds: `RECKON_BENCH_PG=1 cargo bench --bench callbacks`, one and two instances on one database \
         (the connections alternate between them; each instance has the same sink). {}\n\n",
        sink_words(plan)
    );
    let mut pairs = Vec::new();
    if plan.burst {
        let mut rows: Vec<(String, &[Run])> = Vec::new();
        if plan.sink {
            rows.push((format!("{n} callbacks, 1 instance, sink"), &burst[0]));
            rows.push((format!("{n} callbacks, 2 instances, sink"), &burst[1]));
        }
        rows.push((format!("{n} callbacks, 1 instance, no sink"), &intake[0]));
        rows.push((format!("{n} callbacks, 2 instances, no sink"), &intake[1]));
        text += &burst_table(&rows);
        text += "\n";
        pairs.push((
            "intake, 2 instances / 1 instance, no sink".into(),
            medf(&intake[1], |r| r.sent.per_sec()) / medf(&intake[0], |r| r.sent.per_sec()),
        ));
        if plan.sink {
            let plain = med(plain.clone());
            pairs.push((
                "intake, 2 instances / 1 instance, sink".into(),
                medf(&burst[1], |r| r.sent.per_sec()) / medf(&burst[0], |r| r.sent.per_sec()),
            ));
            pairs.push((
                "delivery, 2 instances / 1 instance".into(),
                delivered_per_sec(&burst[1]) / delivered_per_sec(&burst[0]),
            ));
            for (k, runs) in burst.iter().enumerate() {
                pairs.push((
                    format!("delivery / intake, {} instance(s)", k + 1),
                    delivery_over_intake(runs),
                ));
                pairs.push((
                    format!("delivery, {} instance(s) / plain signed sender", k + 1),
                    delivered_per_sec(runs) / plain,
                ));
            }
        }
    }
    if plan.paced {
        let mut rows: Vec<(String, &[Run])> = Vec::new();
        let load = format!("{:.0}/s for {:.0} s", plan.rate, plan.seconds);
        if plan.sink {
            rows.push((format!("{load}, 1 instance, sink"), &paced[0]));
            rows.push((format!("{load}, 2 instances, sink"), &paced[1]));
        }
        rows.push((format!("{load}, 1 instance, no sink"), &paced_bare));
        text += &paced_table(&rows, plan);
        text += "\n";
        if plan.sink {
            if !burst[0].is_empty() {
                pairs.push((
                    "server CPU per callback, paced / burst, 1 instance (sink)".into(),
                    medf(&paced[0], |r| r.cpu_us) / medf(&burst[0], |r| r.cpu_us),
                ));
            }
            pairs.push((
                "paced delivered/s while sending, 2 instances / 1 instance".into(),
                medf(&paced[1], |r| {
                    r.delivery.as_ref().map_or(0.0, |d| d.while_sending)
                }) / medf(&paced[0], |r| {
                    r.delivery.as_ref().map_or(0.0, |d| d.while_sending)
                }),
            ));
            pairs.push((
                "paced intake p99, sink / no sink, 1 instance".into(),
                medf(&paced[0], |r| r.sent.latency_ms(99))
                    / medf(&paced_bare, |r| r.sent.latency_ms(99)),
            ));
        }
    }
    if plan.sink {
        text += &format!(
            "| reference | messages/s |\n|---|---|\n| plain signed sender, {PLAIN_CONNS} keep-alive connections, \
             same receiver (its capacity) | {:.0} |\n\n",
            med(plain)
        );
    }
    if !pairs.is_empty() {
        text += &ratios(&pairs);
        text += "\n";
    }
    for n in &notes {
        text += &format!("{n}\n");
    }
    println!("{text}");
    write_section("## Current: outbox delivery (PostgreSQL)", &text);
}

fn main() {
    let plan = Plan::from_env();
    let pg_too = std::env::var("RECKON_BENCH_PG").is_ok_and(|v| v == "1");
    let sqlite_too = std::env::var("RECKON_BENCH_SQLITE").map_or(true, |v| v != "0");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let secret = Secret::random();
    // The outbox's own secret: the sink checks the server's messages with it.
    let outbox = Secret::random();
    let date = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let cpu = std::thread::available_parallelism().map_or(0, |p| p.get());
    rt.block_on(async {
        if sqlite_too {
            sqlite(&plan, &secret, &outbox, &date, cpu).await;
        }
        if pg_too {
            postgres(&plan, &secret, &outbox, &date, cpu).await;
        }
    });
}
