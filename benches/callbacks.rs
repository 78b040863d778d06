//! Callback intake throughput: signed sandbox callbacks over real HTTP on
//! 127.0.0.1 into a running server on SQLite (`synchronous=FULL`), next to a
//! raw-SQL loop of the same statements on the same kind of database, in the
//! same run. Writes its figures into BENCHMARKS.md.
//!
//!     cargo bench --bench callbacks            # 20,000 callbacks
//!     RECKON_BENCH_CALLBACKS=50000 cargo bench --bench callbacks

mod support;

use reckon::config::{LogFormat, sqlite_url};
use reckon::domain::PaymentStatus;
use reckon::providers::signing::Secret;
use reckon::startup::{Application, Options};
use reckon::store::{Db, callbacks, now_micros, outbox, payments};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{config, peak_rss_mib, write_section};

/// Concurrent HTTP connections (RECKON_BENCH_CONCURRENCY), default 256: a
/// provider fleet retrying and notifying in parallel.
fn concurrency() -> usize {
    std::env::var("RECKON_BENCH_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}
const RAW_BATCH: usize = 256;

/// `n` CREATED payments, inserted in one transaction.
async fn seed(db: &Db, n: usize) -> Vec<String> {
    let now = now_micros();
    let mut tx = db.begin_write().await.unwrap();
    let mut nos = Vec::with_capacity(n);
    for i in 0..n {
        let no = format!("PAYB{i:08}");
        payments::insert(
            &mut *tx,
            &payments::NewPayment {
                payment_no: &no,
                order_no: &format!("ORDB{i:08}"),
                attempt_no: 1,
                provider: "sandbox",
                amount_minor: 19900,
                currency: "CNY",
                description: None,
                created_by: "bench",
                now,
            },
        )
        .await
        .unwrap();
        nos.push(no);
    }
    tx.commit().await.unwrap();
    nos
}

fn body(i: usize, payment_no: &str) -> String {
    serde_json::json!({
        "id": format!("evt_{i}"),
        "type": "payment.succeeded",
        "data": { "payment_no": payment_no, "txn_id": format!("TXNB{i:08}"), "status": "SUCCEEDED",
                  "amount": "199.00", "currency": "CNY" }
    })
    .to_string()
}

struct Figures {
    per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
}

async fn over_http(n: usize) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let secret = Secret::random();
    let cfg = config(dir.path(), &secret);
    let app = Application::build_with(
        &cfg,
        Options {
            workers: false,
            ..Options::default()
        },
    )
    .await
    .unwrap();
    let base = format!("http://{}", app.addr());
    let db = app.accounts.db.clone();
    tokio::spawn(app.run_until(std::future::pending()));
    let nos = seed(&db, n).await;
    let ts = jiff::Timestamp::now().as_second();
    let requests: Arc<Vec<(String, String, String)>> = Arc::new(
        nos.iter()
            .enumerate()
            .map(|(i, no)| {
                let b = body(i, no);
                let id = format!("evt_{i}");
                let sig = secret.sign(&id, ts, b.as_bytes());
                (id, sig, b)
            })
            .collect(),
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency())
        .build()
        .unwrap();
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency() {
        let probe = std::env::var("RECKON_BENCH_PROBE").is_ok();
        let url = if probe {
            format!("{base}/webhooks/nope")
        } else {
            format!("{base}/webhooks/sandbox")
        };
        let (client, next, requests) = (client.clone(), next.clone(), requests.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((id, sig, b)) = requests.get(i) else {
                    break;
                };
                let t = Instant::now();
                let res = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("webhook-id", id)
                    .header("webhook-timestamp", ts.to_string())
                    .header("webhook-signature", sig)
                    .body(b.clone())
                    .send()
                    .await
                    .unwrap();
                assert!(res.status() == 200 || probe);
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut latencies: Vec<Duration> = Vec::with_capacity(n);
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let effects: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_effects")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    if std::env::var("RECKON_BENCH_PROBE").is_ok() {
        println!("HTTP-only probe: {:.0}/s", n as f64 / elapsed.as_secs_f64());
        std::process::exit(0);
    }
    assert_eq!(
        effects as usize, n,
        "every callback made exactly one effect"
    );
    Figures {
        per_sec: n as f64 / elapsed.as_secs_f64(),
        p50_ms: latencies[n / 2].as_secs_f64() * 1e3,
        p99_ms: latencies[n * 99 / 100].as_secs_f64() * 1e3,
    }
}

/// The statements intake runs for one new callback, straight from the store
/// module, committing every `batch` callbacks.
async fn raw_sql(n: usize, batch: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::connect(&sqlite_url(&dir.path().join("raw.db")))
        .await
        .unwrap();
    db.migrate().await.unwrap();
    let nos = seed(&db, n).await;
    let started = Instant::now();
    for chunk in nos.chunks(batch) {
        let now = now_micros();
        let mut tx = db.begin_write().await.unwrap();
        for no in chunk {
            let id = uuid::Uuid::now_v7().to_string();
            let b = body(0, no);
            let hash = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b.as_bytes()));
            callbacks::insert_if_absent(
                &mut *tx,
                &callbacks::NewCallback {
                    id: &id,
                    callback_id: &format!("evt_{no}"),
                    provider: "sandbox",
                    payment_no: Some(no),
                    provider_txn_id: Some(&format!("T{no}")),
                    callback_status: "SUCCEEDED",
                    headers_json: "{}",
                    payload: b.as_bytes(),
                    payload_hash: &hash,
                    verify_result: "VERIFIED",
                    trace_id: &id,
                    received_at: now,
                    facts: &format!("payment|{no}|T{no}|SUCCEEDED|19900|CNY|-"),
                },
            )
            .await
            .unwrap();
            let moved = payments::guarded_move(
                &mut *tx,
                &payments::Move {
                    payment_no: no,
                    provider: "sandbox",
                    provider_txn_id: Some(&format!("T{no}")),
                    target: PaymentStatus::Succeeded,
                    amount_minor: 19900,
                    currency: "CNY",
                },
                &[PaymentStatus::Created, PaymentStatus::Pending],
                now,
            )
            .await
            .unwrap()
            .unwrap();
            payments::insert_effects(&mut tx, &[(no, "ORDER_PAID")], now)
                .await
                .unwrap();
            let event = outbox::NewEvent {
                message_id: &id,
                aggregate_type: "payment",
                aggregate_id: no,
                event_type: "payment.succeeded",
                payload: &b,
                now,
            };
            outbox::insert_events_many(&mut tx, std::slice::from_ref(&event), &[])
                .await
                .unwrap();
            let entry = payments::HistoryEntry {
                payment_no: no,
                from: &moved.prev_status,
                to: "SUCCEEDED",
                source: "callback",
                evidence: &id,
                trace_id: &id,
                at: now,
            };
            payments::insert_history_many(&mut tx, std::slice::from_ref(&entry))
                .await
                .unwrap();
            callbacks::succeeded(&mut *tx, &id, "applied", now)
                .await
                .unwrap();
        }
        tx.commit().await.unwrap();
    }
    n as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let n: usize = std::env::var("RECKON_BENCH_CALLBACKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        reckon::telemetry::init(LogFormat::Pretty);
        let http = over_http(n).await;
        let raw_each = raw_sql(n.min(3000), 1).await;
        let raw_batched = raw_sql(n, RAW_BATCH).await;
        let rss = peak_rss_mib();
        let cpu = std::thread::available_parallelism().map(|p| p.get()).unwrap_or(0);
        let report = format!(
            "## Current: callback intake\n\n\
             Measured {date} on this machine ({cpu} cores), SQLite with `synchronous=FULL`, one run:\n\
             `cargo bench --bench callbacks` ({n} callbacks, {conc} concurrent HTTP/1.1 connections, \
             client and server in one process sharing 2 worker threads).\n\n\
             | what | figure |\n|---|---|\n\
             | verified callbacks over HTTP, each stored + applied (group commit) | **{:.0}/s** |\n\
             | latency p50 / p99 | {:.1} ms / {:.1} ms |\n\
             | raw SQL, same statements, commit per callback | {:.0}/s |\n\
             | raw SQL, same statements, commit per {RAW_BATCH} | {:.0}/s |\n\
             | HTTP intake / raw SQL per-callback commit | {:.2}× |\n\
             | HTTP intake / raw SQL batched | {:.0}% |\n\
             | peak RSS of the whole run | {:.0} MiB |\n\n\
             Every callback is verified (HMAC-SHA256), stored raw, applied through `engine::apply` \
             (guarded UPDATE, effect, outbox event, history) and answered 200 only after its batch committed; \
             the run asserts exactly {n} effects.\n",
            http.per_sec,
            http.p50_ms,
            http.p99_ms,
            raw_each,
            raw_batched,
            http.per_sec / raw_each,
            100.0 * http.per_sec / raw_batched,
            rss,
            date = jiff::Timestamp::now().strftime("%Y-%m-%d"),
            conc = concurrency(),
        );
        println!("{report}");
        write_section("## Current: callback intake", &report);
    });
}
