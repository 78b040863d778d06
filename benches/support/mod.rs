//! What the benchmarks share: peak memory and writing their section of
//! BENCHMARKS.md.

use reckon::config::{Config, LogFormat, ProviderConfig, parse_schedule, sqlite_url};
use reckon::providers::sandbox::SandboxConfig;
use reckon::providers::signing::Secret;

/// A server configuration on a SQLite file in `dir`, with one sandbox
/// provider account whose API address nothing listens on.
pub fn config(dir: &std::path::Path, secret: &Secret) -> Config {
    Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: sqlite_url(&dir.join("reckon.db")).into(),
        data_dir: dir.to_path_buf(),
        timezone: "UTC".into(),
        log_format: LogFormat::Pretty,
        site_dir: dir.join("site"),
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
    }
}

/// The process's peak resident set (VmHWM), MiB.
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
/// seconds: from `/proc/self/stat`, in the kernel's clock ticks.
#[allow(dead_code)] // only the reconciliation bench counts it
pub fn cpu_secs() -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the command's closing parenthesis: utime and
            // stime are the 12th and 13th of those.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?)
        })
        .map(|t| t / ticks)
        .unwrap_or(0.0)
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
