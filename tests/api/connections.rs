//! The listener's limits: idle and half-sent connections, the connection
//! cap, and the header, idle and body timeouts.

use crate::both_databases;
use crate::engine_helpers::{EngineApp, spawn_engine_app_with};
use crate::helpers::Backend;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A client that opens a connection of its own for every request, as a
/// provider's sender does, and gives up after `secs`.
fn fresh_client(secs: u64) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .timeout(Duration::from_secs(secs))
        .build()
        .unwrap()
}

fn host(e: &EngineApp) -> String {
    e.app.base.strip_prefix("http://").unwrap().to_owned()
}

fn shed(e: &EngineApp, outcome: &str) -> u64 {
    let series = format!("reckon_connections_shed_total{{outcome=\"{outcome}\"}}");
    crate::helpers::metric(&e.app.accounts.metrics, &series)
}

/// Whether the server closes `stream` within `within` (what it had sent
/// before is read and dropped).
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// A paid notice for a new payment, sent on a connection of its own.
async fn callback(e: &EngineApp, client: &reqwest::Client, i: usize) -> reqwest::Result<u16> {
    let p = e.payment(&format!("conn-{i}"), 1000, "CNY").await;
    let id = format!("evt-conn-{i}");
    let body = e.notice(&id, &p, "SUCCEEDED", "10.00", "CNY", &format!("SBX-C{i}"));
    Ok(e.post_signed_with(client, &id, &body)
        .await?
        .status()
        .as_u16())
}

fn set_soft_fd_limit(soft: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls on a struct of ours.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = soft.min(lim.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    lim.rlim_max
}

async fn two_thousand_idle_connections_do_not_keep_callbacks_out(b: Backend) {
    // The usual default soft limit, which 1,100 idle clients once exhausted:
    // the server raises it to the hard limit when it starts.
    let hard = set_soft_fd_limit(1024);
    assert!(
        hard >= 8192,
        "this test needs an open-file hard limit of 8192 or more (ulimit -Hn is {hard})"
    );
    let e = spawn_engine_app_with(b, |_| {}).await;
    let addr = host(&e);
    let mut held = Vec::with_capacity(2000);
    for i in 0..2000 {
        let mut s = TcpStream::connect(&addr).await.expect("connection held");
        if i % 10 == 0 {
            // Half-sent: a request line and a header, then nothing.
            s.write_all(b"POST /webhooks/sandbox HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
        }
        held.push(s);
    }
    let client = fresh_client(5);
    let mut took = Vec::new();
    for i in 0..40 {
        let started = Instant::now();
        assert_eq!(callback(&e, &client, i).await.expect("answered"), 200);
        took.push(started.elapsed());
    }
    took.sort();
    eprintln!(
        "signed callbacks beside 2,000 idle connections: p50 {:?}, p99 {:?}",
        took[took.len() / 2],
        took[took.len() * 99 / 100]
    );
    let health = client
        .get(format!("{}/healthz", e.app.base))
        .send()
        .await
        .expect("healthz answers");
    assert_eq!(health.status(), 200);
    let paid: i64 = crate::reads::succeeded_payments(e.pool()).await;
    assert_eq!(paid, 40);
    drop(held);
}

async fn at_the_connection_limit_the_longest_idle_makes_room(b: Backend) {
    let e = spawn_engine_app_with(b, |c| {
        c.limits.max_connections = 50;
        c.limits.idle = Duration::from_secs(600);
        c.limits.header_read = Duration::from_secs(600);
    })
    .await;
    let addr = host(&e);
    let mut held = Vec::new();
    for _ in 0..50 {
        held.push(TcpStream::connect(&addr).await.unwrap());
    }
    // Let the server accept all fifty before the callbacks come.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let client = fresh_client(10);
    for i in 0..10 {
        assert_eq!(callback(&e, &client, i).await.expect("answered"), 200);
        // Back at the limit before the next one.
        held.push(TcpStream::connect(&addr).await.unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(shed(&e, "idle_closed") >= 10, "idle connections made room");
    let mut closed = 0;
    for s in &mut held {
        if closed_within(s, Duration::from_millis(20)).await {
            closed += 1;
        }
    }
    assert!(closed >= 10, "{closed} of the held connections were closed");
}

async fn with_every_connection_busy_new_ones_are_shed_until_bodies_time_out(b: Backend) {
    let e = spawn_engine_app_with(b, |c| {
        c.limits.max_connections = 20;
        c.limits.body_read = Duration::from_secs(2);
    })
    .await;
    let addr = host(&e);
    let mut stalled = Vec::new();
    for _ in 0..20 {
        let mut s = TcpStream::connect(&addr).await.unwrap();
        s.write_all(
            b"POST /webhooks/sandbox HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
              Content-Length: 1000\r\n\r\n{\"id\": \"",
        )
        .await
        .unwrap();
        stalled.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Every connection has a request in progress: the newcomer is shed.
    let client = fresh_client(5);
    assert!(callback(&e, &client, 0).await.is_err(), "shed");
    assert!(shed(&e, "refused") >= 1);
    // The stalled bodies end in 408 once they have not moved for 2 s.
    for s in &mut stalled {
        let mut answer = vec![0u8; 256];
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut answer))
            .await
            .expect("answered within 10 s")
            .unwrap();
        let head = String::from_utf8_lossy(&answer[..n]).to_string();
        assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    }
    drop(stalled);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(callback(&e, &client, 1).await.expect("answered"), 200);
}

both_databases!(
    two_thousand_idle_connections_do_not_keep_callbacks_out,
    at_the_connection_limit_the_longest_idle_makes_room,
    with_every_connection_busy_new_ones_are_shed_until_bodies_time_out,
);

/// No database is involved in what the listener closes: SQLite only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_headers_and_idle_connections_are_closed() {
    let e = spawn_engine_app_with(Backend::Sqlite, |c| {
        c.limits.header_read = Duration::from_secs(1);
        c.limits.idle = Duration::from_secs(600);
    })
    .await;
    let mut slow = TcpStream::connect(host(&e)).await.unwrap();
    slow.write_all(b"POST /webhooks/sandbox HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // Another header line every 300 ms does not keep it open.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let _ = slow.write_all(b"X-Slow: 1\r\n").await;
    }
    assert!(
        closed_within(&mut slow, Duration::from_secs(5)).await,
        "headers must arrive within the header-read timeout"
    );

    let e = spawn_engine_app_with(Backend::Sqlite, |c| {
        c.limits.header_read = Duration::from_secs(600);
        c.limits.idle = Duration::from_secs(1);
    })
    .await;
    let mut silent = TcpStream::connect(host(&e)).await.unwrap();
    let mut kept = TcpStream::connect(host(&e)).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = vec![0u8; 512];
    let n = kept.read(&mut answer).await.unwrap();
    assert!(String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 200"));
    assert!(
        closed_within(&mut kept, Duration::from_secs(5)).await,
        "an idle keep-alive connection is closed"
    );
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)).await,
        "a connection that never sends is closed"
    );
}
