//! `reckon doctor`: what a deployment needs, checked without changing
//! anything — the settings, the database and its migrations, the audit key,
//! each provider account (its host resolves, TLS and HTTP answer, its
//! credentials are accepted where the provider has a read-only call), the
//! outbox sinks and alert channels reachable, and the clock against a
//! provider's. One line each, OK / WARN / FAIL with what to do; any FAIL
//! makes the exit code 1. Nothing is sent but read-only requests: no
//! message to a sink, no e-mail, no payment.

use crate::config::{Config, Smtp, SmtpSecurity, Target};
use crate::providers::ProviderConfig;
use crate::store::{Db, MIGRATOR};
use futures_util::future::join_all;
use secrecy::ExposeSecret;
use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

/// Each network check's bound: a doctor that hangs helps nobody.
const TIMEOUT: Duration = Duration::from_secs(5);
/// A clock this far from a provider's is warned of: signatures carry
/// timestamps checked within minutes, and days are cut by the clock.
const SKEW_WARN: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Ok => "OK  ",
            Level::Warn => "WARN",
            Level::Fail => "FAIL",
        })
    }
}

/// One finding: what was checked and what was found (and, short of OK,
/// what to do).
#[derive(Debug)]
pub struct Finding {
    pub level: Level,
    pub what: String,
    pub said: String,
}

fn finding(level: Level, what: impl Into<String>, said: impl Into<String>) -> Finding {
    Finding {
        level,
        what: what.into(),
        said: said.into(),
    }
}

/// The settings did not load: the one finding there is.
pub(super) fn config_failed(error: &dyn fmt::Display) -> ExitCode {
    report(&[finding(
        Level::Fail,
        "config",
        format!("{error}: correct the setting named (RECKON_CONFIG's file or the environment)"),
    )])
}

pub(super) async fn doctor(config: &Config) -> ExitCode {
    report(&check(config).await)
}

fn report(findings: &[Finding]) -> ExitCode {
    for f in findings {
        println!("{} {}: {}", f.level, f.what, f.said);
    }
    let count = |l| findings.iter().filter(|f| f.level == l).count();
    println!(
        "{} OK, {} WARN, {} FAIL",
        count(Level::Ok),
        count(Level::Warn),
        count(Level::Fail)
    );
    if count(Level::Fail) > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Every check, the network ones at once.
pub async fn check(config: &Config) -> Vec<Finding> {
    let mut findings = vec![finding(
        Level::Ok,
        "config",
        match std::env::var("RECKON_CONFIG") {
            Ok(file) if !file.is_empty() => format!("{file} and the environment read and valid"),
            _ => "the environment read and valid (no RECKON_CONFIG file)".to_owned(),
        },
    )];
    findings.extend(accounts_built(config));
    let http = match reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            findings.push(finding(Level::Fail, "http client", e.to_string()));
            return findings;
        }
    };
    let local = async {
        let mut found = database(config).await;
        found.push(audit_key(config));
        found
    };
    let providers = join_all(config.providers.iter().map(|p| provider(&http, p)));
    let sinks = join_all(
        sinks_of(config)
            .into_iter()
            .map(|(name, url)| sink(name, url)),
    );
    let channels = join_all(
        config
            .alert_channels
            .iter()
            .map(|c| channel(&c.name, &c.target)),
    );
    let (local, providers, sinks, channels) = tokio::join!(local, providers, sinks, channels);
    findings.extend(local);
    let mut clocks = Vec::new();
    for (found, clock) in providers {
        findings.extend(found);
        clocks.extend(clock);
    }
    findings.extend(sinks);
    findings.extend(channels);
    findings.push(clock(&clocks));
    findings
}

/// Each account's settings make an adapter (its keys read).
fn accounts_built(config: &Config) -> Vec<Finding> {
    let zone = match jiff::tz::TimeZone::get(&config.timezone) {
        Ok(z) => z,
        Err(e) => {
            return vec![finding(
                Level::Fail,
                "config",
                format!("time zone {}: {e}", config.timezone),
            )];
        }
    };
    config
        .providers
        .iter()
        .filter_map(|p| {
            let why = match p.check() {
                Err(why) => why.to_owned(),
                Ok(()) => crate::providers::build(p, &zone).err()?,
            };
            Some(finding(
                Level::Fail,
                format!("provider {}", p.name()),
                format!("its settings do not make an account: {why}"),
            ))
        })
        .collect()
}

/// Connects (never creating a SQLite file) and compares the migrations
/// applied with this binary's.
async fn database(config: &Config) -> Vec<Finding> {
    if let Some(path) = config.sqlite_path()
        && !path.exists()
    {
        return vec![finding(
            Level::Warn,
            "database",
            format!(
                "no database yet at {}: `reckon migrate` or the first start creates it",
                path.display()
            ),
        )];
    }
    let db = match tokio::time::timeout(TIMEOUT, Db::connect(config.database_url.as_str())).await {
        Ok(Ok(db)) => db,
        Ok(Err(e)) => {
            return vec![finding(
                Level::Fail,
                "database",
                format!("{e}: check DATABASE_URL and that the server is up"),
            )];
        }
        Err(_) => {
            return vec![finding(
                Level::Fail,
                "database",
                format!(
                    "no answer within {} s: check DATABASE_URL",
                    TIMEOUT.as_secs()
                ),
            )];
        }
    };
    let connected = finding(
        Level::Ok,
        "database",
        format!("connected to {}", db.display_url),
    );
    let applied = sqlx::query_scalar::<_, i64>(
        "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
    )
    .fetch_all(&db.pool)
    .await;
    // No table yet: nothing applied.
    let applied = applied.unwrap_or_default();
    let pending: Vec<String> = MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration() && !applied.contains(&m.version))
        .map(|m| format!("{:04}_{}", m.version, m.description.replace(' ', "_")))
        .collect();
    let unknown: Vec<String> = applied
        .iter()
        .filter(|v| !MIGRATOR.iter().any(|m| m.version == **v))
        .map(|v| format!("{v:04}"))
        .collect();
    let migrations = if !unknown.is_empty() {
        finding(
            Level::Fail,
            "migrations",
            format!(
                "applied but unknown to this binary: {}; the database belongs to a newer Reckon: run that one",
                unknown.join(", ")
            ),
        )
    } else if !pending.is_empty() {
        finding(
            Level::Fail,
            "migrations",
            format!(
                "{} not applied: {}; run `reckon migrate` (the server also applies them at start)",
                pending.len(),
                pending.join(", ")
            ),
        )
    } else {
        finding(
            Level::Ok,
            "migrations",
            format!("all {} applied", applied.len()),
        )
    };
    vec![connected, migrations]
}

/// The key that signs the audit log: from the environment, or the data
/// directory's file (read, never made here).
fn audit_key(config: &Config) -> Finding {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let file = config.data_dir.join(crate::store::audit_keys::FILE_NAME);
    if env("RECKON_AUDIT_KEY").is_none() && !file.exists() {
        return finding(
            Level::Warn,
            "audit key",
            format!(
                "none yet: the first start writes {} (or set RECKON_AUDIT_KEY); keep a copy away from the database",
                file.display()
            ),
        );
    }
    // The file exists (or the key is in the environment): load only reads.
    match crate::store::audit_keys::Keys::load(&config.data_dir, 1, env) {
        Ok(keys) => match keys.signing() {
            Some(key) => {
                let mut mac = key.mac();
                hmac::Mac::update(&mut mac, b"reckon doctor");
                let _ = hmac::Mac::finalize(mac);
                finding(
                    Level::Ok,
                    "audit key",
                    format!("key {} signs ({})", key.id, keys.source),
                )
            }
            None => finding(
                Level::Fail,
                "audit key",
                format!("{} holds no key: restore it from its copy", keys.source),
            ),
        },
        Err(e) => finding(
            Level::Fail,
            "audit key",
            format!(
                "{e:#}: restore the key from its copy (RECKON_AUDIT_KEY or {})",
                file.display()
            ),
        ),
    }
}

fn base_url(p: &ProviderConfig) -> &str {
    match p {
        ProviderConfig::Sandbox(c) => &c.base_url,
        ProviderConfig::Stripe(c) => &c.base_url,
        ProviderConfig::StandardWebhooks(c) => &c.base_url,
        ProviderConfig::Alipay(c) => &c.base_url,
        ProviderConfig::WechatPay(c) => &c.base_url,
        ProviderConfig::Paypal(c) => &c.base_url,
        ProviderConfig::Adyen(c) => &c.base_url,
    }
}

/// A provider's clock as its `Date` header told it, with the local time
/// the answer came.
struct Clock {
    account: String,
    theirs: jiff::Timestamp,
    ours: jiff::Timestamp,
}

/// DNS, then TLS and HTTP, then the credentials where the provider has a
/// read-only call for them.
async fn provider(http: &reqwest::Client, p: &ProviderConfig) -> (Vec<Finding>, Option<Clock>) {
    let what = format!("provider {} ({})", p.name(), p.kind());
    let base = base_url(p).trim_end_matches('/');
    if base.is_empty() {
        return (
            vec![finding(
                Level::Warn,
                what,
                "no base_url: nothing to reach (webhooks only)",
            )],
            None,
        );
    }
    let url = match reqwest::Url::parse(base) {
        Ok(u) => u,
        Err(e) => {
            return (
                vec![finding(
                    Level::Fail,
                    what,
                    format!("base_url {base} is not a URL: {e}"),
                )],
                None,
            );
        }
    };
    if let Err(why) = resolves(&url).await {
        return (
            vec![finding(
                Level::Fail,
                what,
                format!("{why}: check base_url and DNS"),
            )],
            None,
        );
    }
    let (request, checks) = match p {
        // GET /v1/balance reads the balance and changes nothing; an API key
        // Stripe does not accept is answered 401 with its error object
        // (docs.stripe.com/api/balance/balance_retrieve, /api/errors).
        ProviderConfig::Stripe(c) => (
            http.get(format!("{base}/v1/balance"))
                .bearer_auth(c.api_key.expose_secret()),
            Some("the api key (GET /v1/balance)"),
        ),
        _ => (http.get(format!("{base}/")), None),
    };
    let sent_at = jiff::Timestamp::now();
    let res = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            return (
                vec![finding(
                    Level::Fail,
                    what,
                    format!(
                        "{base}: {}: check base_url, the network and TLS",
                        crate::oidc::error_chain(&e)
                    ),
                )],
                None,
            );
        }
    };
    let ours = sent_at;
    let clock = res
        .headers()
        .get(reqwest::header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(httpdate)
        .map(|theirs| Clock {
            account: p.name().to_owned(),
            theirs,
            ours,
        });
    let status = res.status();
    let tls = if url.scheme() == "https" {
        "TLS handshake and "
    } else {
        ""
    };
    let found = match checks {
        Some(what_checked) if status.is_success() => finding(
            Level::Ok,
            what,
            format!("{base}: {tls}{what_checked} accepted"),
        ),
        Some(what_checked) if status.as_u16() == 401 || status.as_u16() == 403 => {
            let body: serde_json::Value = res.json().await.unwrap_or_default();
            let message = body["error"]["message"].as_str().unwrap_or("no message");
            finding(
                Level::Fail,
                what,
                format!(
                    "{base}: {what_checked} refused ({status}: {message}): set api_key to a secret or restricted key of this account"
                ),
            )
        }
        Some(what_checked) => finding(
            Level::Warn,
            what,
            format!("{base}: {what_checked} answered {status}: credentials not confirmed"),
        ),
        None => finding(
            Level::Ok,
            what,
            format!(
                "{base}: {tls}an HTTP answer ({status}); credentials not checked: Reckon makes no read-only call to {}",
                p.kind()
            ),
        ),
    };
    (vec![found], clock)
}

fn httpdate(text: &str) -> Option<jiff::Timestamp> {
    jiff::fmt::rfc2822::parse(text).ok().map(|z| z.timestamp())
}

async fn resolves(url: &reqwest::Url) -> Result<(), String> {
    let host = url
        .host_str()
        .ok_or_else(|| format!("{url} names no host"))?;
    let port = url.port_or_known_default().unwrap_or(443);
    match tokio::time::timeout(TIMEOUT, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(mut addrs)) => match addrs.next() {
            Some(_) => Ok(()),
            None => Err(format!("{host} resolves to no address")),
        },
        Ok(Err(e)) => Err(format!("{host} does not resolve: {e}")),
        Err(_) => Err(format!(
            "{host}: no DNS answer within {} s",
            TIMEOUT.as_secs()
        )),
    }
}

/// The sinks messages go to: `RECKON_OUTBOX_SINKS` and the file's.
fn sinks_of(config: &Config) -> Vec<(String, String)> {
    let mut sinks = config.outbox_sinks.clone();
    for s in &config.sinks.named {
        if !sinks.iter().any(|(n, _)| *n == s.name) {
            sinks.push((s.name.clone(), s.url.clone()));
        }
    }
    sinks
}

/// A TCP connection to the sink's host: reachable, nothing sent.
async fn sink(name: String, url: String) -> Finding {
    let what = format!("outbox sink {name}");
    match connects(&url).await {
        Ok(addr) => finding(
            Level::Ok,
            what,
            format!("{addr} accepts connections (nothing sent)"),
        ),
        Err(why) => finding(
            Level::Fail,
            what,
            format!("{why}: messages to it will wait and go DEAD; check its URL or the receiver"),
        ),
    }
}

async fn connects(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url} is not a URL: {e}"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("{url} names no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = parsed.port_or_known_default().unwrap_or(443);
    match tokio::time::timeout(
        TIMEOUT,
        tokio::net::TcpStream::connect((host.as_str(), port)),
    )
    .await
    {
        Ok(Ok(_)) => Ok(format!("{host}:{port}")),
        Ok(Err(e)) => Err(format!("{host}:{port}: {e}")),
        Err(_) => Err(format!(
            "{host}:{port}: no connection within {} s",
            TIMEOUT.as_secs()
        )),
    }
}

async fn channel(name: &str, target: &Target) -> Finding {
    let what = format!("alert channel {name} ({})", target.kind());
    match target {
        Target::Webhook { url, .. } => webhook(what, url).await,
        Target::Slack { url } => webhook(what, url.expose_secret()).await,
        Target::Email(smtp) => match smtp_answers(smtp).await {
            Ok(()) => finding(
                Level::Ok,
                what,
                format!("{}:{} answers EHLO (no mail sent)", smtp.host, smtp.port),
            ),
            Err(why) => finding(
                Level::Fail,
                what,
                format!(
                    "{}:{}: {why}: check host, port and tls",
                    smtp.host, smtp.port
                ),
            ),
        },
    }
}

async fn webhook(what: String, url: &str) -> Finding {
    let resolved = match reqwest::Url::parse(url) {
        Ok(u) => resolves(&u).await,
        Err(e) => Err(format!("not a URL: {e}")),
    };
    match resolved {
        Ok(()) => finding(Level::Ok, what, "its host resolves (nothing sent)"),
        Err(why) => finding(Level::Fail, what, format!("{why}: check its url")),
    }
}

/// Connects, greets (EHLO, STARTTLS where set) and quits: lettre's own
/// connection test, sending nothing.
async fn smtp_answers(smtp: &Smtp) -> Result<(), String> {
    use lettre::{AsyncSmtpTransport, Tokio1Executor};
    let transport: AsyncSmtpTransport<Tokio1Executor> = match smtp.security {
        SmtpSecurity::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&smtp.host),
        SmtpSecurity::StartTls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&smtp.host),
        SmtpSecurity::Plain => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(
            &smtp.host,
        )),
    }
    .map_err(|e| e.to_string())?
    .port(smtp.port)
    .timeout(Some(TIMEOUT))
    .build();
    match transport.test_connection().await {
        Ok(true) => Ok(()),
        Ok(false) => Err("the server did not answer the greeting".into()),
        Err(e) => Err(crate::oidc::error_chain(&e)),
    }
}

/// The largest difference between our clock and a provider's.
fn clock(clocks: &[Clock]) -> Finding {
    let Some((skew, c)) = clocks
        .iter()
        .map(|c| ((c.theirs.as_second() - c.ours.as_second()).abs(), c))
        .max_by_key(|(s, _)| *s)
    else {
        return finding(
            Level::Warn,
            "clock",
            "not compared: no provider answered with a Date header",
        );
    };
    // `Date` has whole seconds: a second either way is no skew.
    if skew > SKEW_WARN.as_secs() as i64 {
        finding(
            Level::Warn,
            "clock",
            format!(
                "{skew} s from {}'s (theirs {}, ours {}): set up NTP (chrony, systemd-timesyncd)",
                c.account, c.theirs, c.ours
            ),
        )
    } else {
        finding(
            Level::Ok,
            "clock",
            format!("within {skew} s of {}'s", c.account),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(theirs: &str, ours: &str) -> Clock {
        Clock {
            account: "stripe-eu".into(),
            theirs: httpdate(theirs).unwrap(),
            ours: ours.parse().unwrap(),
        }
    }

    /// `Date` is an IMF-fixdate (RFC 9110 §5.6.7, its own example here).
    #[test]
    fn a_clock_past_thirty_seconds_is_warned_of() {
        let near = at("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:10Z");
        assert_eq!(clock(&[near]).level, Level::Ok);
        let far = at("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:48:37Z");
        let found = clock(&[far]);
        assert_eq!(found.level, Level::Warn);
        assert!(
            found.said.starts_with("60 s from stripe-eu's"),
            "{}",
            found.said
        );
        assert_eq!(clock(&[]).level, Level::Warn);
    }
}
