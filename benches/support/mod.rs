//! What the benchmarks share: peak memory and writing their section of
//! BENCHMARKS.md.

pub mod postgres;
pub mod sink;

use reckon::config::{Config, LogFormat, ProviderConfig, parse_schedule, sqlite_url};
use reckon::providers::sandbox::SandboxConfig;
use reckon::providers::signing::Secret;

/// A server configuration on a SQLite file in `dir`, with one sandbox
/// provider account whose API address nothing listens on.
#[allow(dead_code)] // the intake bench starts `reckon serve` instead
pub fn config(dir: &std::path::Path, secret: &Secret) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: sqlite_url(&dir.join("reckon.db")).into(),
        data_dir: dir.to_path_buf(),
        timezone: "UTC".into(),
        log_format: LogFormat::Pretty,
        site_dir: Some(dir.join("site")),
        cookie_secure: false,
        providers: vec![ProviderConfig::Sandbox(SandboxConfig {
            name: "sandbox".into(),
            base_url: "http://127.0.0.1:9".into(),
            secret: secret.to_whsec().into(),
            ..SandboxConfig::default()
        })],
        outbox_sinks: Vec::new(),
        outbox_secret: None,
        query_schedule: parse_schedule("1h").unwrap(),
        refused_keep: 10_000,
        callback_max_tries: 10,
        calls_per_account: 4,
        limits: Default::default(),
        pull_times: Vec::new(),
        pull_catch_up_days: 7,
        statement_missing_hours: 6,
        statement_keep_days: 400,
        bank_window_days: 3,
        close_allow_open: Some(reckon::domain::Severity::Low),
        close_auto: true,
        sla: Default::default(),
        cut_window: Default::default(),
        matching: Default::default(),
        sinks: Default::default(),
        alert_channels: Vec::new(),
        refused_spike: Default::default(),
        sign_in: Default::default(),
        oidc: None,
        trusted_proxies: Vec::new(),
    }
}

/// The process's peak resident set (VmHWM), MiB.
#[allow(dead_code)] // the intake bench reads its server's
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// CPU time the process has used so far (user + system, every thread),
/// seconds.
#[allow(dead_code)] // the reconciliation and intake benches only
pub fn cpu_secs() -> f64 {
    cpu_secs_of("self").unwrap_or(0.0)
}

/// CPU time process `pid` has used so far (user + system, every thread),
/// seconds: from `/proc/PID/stat`, in the kernel's clock ticks; `None` once
/// it is gone.
#[allow(dead_code)] // the reconciliation and intake benches only
pub fn cpu_secs_of(pid: impl std::fmt::Display) -> Option<f64> {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let f = stat_fields(pid)?;
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / ticks)
}

/// The parent of process `pid`.
#[allow(dead_code)] // the intake bench only
pub fn parent_of(pid: impl std::fmt::Display) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// The fields of `/proc/PID/stat` after the command's closing parenthesis
/// (state, parent, …; utime and stime are the 12th and 13th).
fn stat_fields(pid: impl std::fmt::Display) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Replaces (or appends) one `## ` section of BENCHMARKS.md.
pub fn write_section(heading: &str, text: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md");
    let old = std::fs::read_to_string(&path).unwrap_or_else(|_| "# Benchmarks\n\n".into());
    let mut out = String::new();
    let mut skipping = false;
    let mut replaced = false;
    for line in old.lines() {
        if line.starts_with("## ") {
            skipping = line == heading;
            if skipping {
                out.push_str(text);
                out.push('\n');
                replaced = true;
            }
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !replaced {
        out.push('\n');
        out.push_str(text);
    }
    std::fs::write(&path, out).unwrap();
}

/// A local payment to insert: payment_no, transaction, amount, currency,
/// status, made at, paid at.
#[allow(dead_code)] // the recon and pull benches only
pub type Local = (
    String,
    String,
    i64,
    &'static str,
    &'static str,
    i64,
    Option<i64>,
);

/// Inserts `batch` as `provider`'s payments in one transaction, 32 rows a
/// statement: the fast way to seed a day (setup, never timed).
#[allow(dead_code)] // the recon and pull benches only
pub async fn insert_payments(engine: &reckon::engine::Engine, provider: &str, batch: &[Local]) {
    let mut tx = engine.db.begin_write().await.unwrap();
    for chunk in batch.chunks(32) {
        let sql = format!(
            "INSERT INTO payments (payment_no, order_no, attempt_no, provider, provider_txn_id, amount_minor, \
             currency, status, version, created_by, awaiting_recon, created_at, updated_at, paid_at) VALUES {}",
            (0..chunk.len())
                .map(|k| {
                    let b = k * 7 + 1;
                    format!(
                        "(${}, ${}, 1, $1, ${}, ${}, ${}, ${}, 1, 'bench', 0, ${}, ${}, ${})",
                        b + 1,
                        b + 1,
                        b + 2,
                        b + 3,
                        b + 4,
                        b + 5,
                        b + 6,
                        b + 6,
                        b + 7
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut q = sqlx::query(&sql).bind(provider);
        for (no, txn, minor, cur, status, created, paid) in chunk {
            q = q
                .bind(no)
                .bind(txn)
                .bind(*minor)
                .bind(*cur)
                .bind(*status)
                .bind(*created)
                .bind(*paid);
        }
        q.execute(&mut *tx).await.unwrap();
    }
    tx.commit().await.unwrap();
}

/// The median of sorted figures.
#[allow(dead_code)] // the recon and pull benches only
pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Copies the whole write-ahead log of `db` back into it and ends the log,
/// so that the file alone is the database. (A checkpoint that meets
/// another — the pool's checkpointer's — answers busy and leaves the log:
/// a copy of the file alone then lacked the last 500 payments.)
#[allow(dead_code)] // the recon and pull benches only
pub async fn settle(db: &std::path::Path) {
    use sqlx::{ConnectOptions, Connection};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .connect()
        .await
        .unwrap();
    for tries in 1.. {
        // (busy, frames in the log, frames copied back)
        let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        if busy == 0 {
            break;
        }
        assert!(tries < 100, "the log of {} stays busy", db.display());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    conn.close().await.unwrap();
    let left = std::fs::metadata(beside(db, "-wal")).map_or(0, |m| m.len());
    assert_eq!(left, 0, "{} has a write-ahead log left", db.display());
}

/// SQLite's file `db` with `suffix` (`-wal`, `-shm`) after its name.
#[allow(dead_code)] // the recon and pull benches only
fn beside(db: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(suffix);
    p.into()
}

/// `db` as `pristine` is, on disk: the copy synced, no log beside it.
#[allow(dead_code)] // the recon and pull benches only
pub fn restore(pristine: &std::path::Path, db: &std::path::Path) {
    discard(db);
    std::fs::copy(pristine, db).unwrap();
    std::fs::File::open(db).unwrap().sync_all().unwrap();
}

/// Removes the SQLite file `db` and its log.
#[allow(dead_code)] // the recon and pull benches only
pub fn discard(db: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(beside(db, suffix));
    }
}
