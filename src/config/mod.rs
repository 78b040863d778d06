//! Configuration: an optional TOML file named by `RECKON_CONFIG`, overridden
//! key by key by environment variables — the two layered by figment, then
//! each setting checked, a bad one named by its variable. Every setting is
//! a row of [`SETTINGS`], which the book's configuration reference is made
//! from. A provider account's settings are its kind's own section (defined
//! in the provider's folder); secrets are `secrecy` types, so a config
//! printed for a log shows none of them.

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use secrecy::SecretString;
use settings::Layers;
pub use settings::{SETTINGS, Setting};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use crate::providers::ProviderConfig;

mod alert_channels;
pub mod evidence;
pub mod match_rules;
mod oidc;
mod runtime;
mod settings;
mod sinks;
mod values;
pub use values::site_beside_binary;

pub use alert_channels::{
    Channel, ChannelToml, QuietHours, Routing, Smtp, SmtpSecurity, Target, is_critical,
};
pub use match_rules::{MatchKey, MatchRules};
pub use oidc::{CALLBACK_PATH as OIDC_CALLBACK_PATH, Oidc};
pub use runtime::{Closing, MfaRoles, Pulls, Settings, SignIn, Sink, StatementDay};

pub use sinks::{DEFAULT_SINK_SCHEDULE, DEFAULT_SINK_TIMEOUT, SinkConfig, Sinks, legacy_schedule};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Pretty,
}

#[derive(Clone, Debug)]
pub struct Config {
    pub listen: SocketAddr,
    /// `sqlite://…` or `postgres://…`.
    pub database_url: DatabaseUrl,
    pub data_dir: PathBuf,
    /// IANA name of the business time zone (business days are cut there).
    pub timezone: String,
    pub log_format: LogFormat,
    /// A folder holding the compiled console (`pkg/`, assets), served
    /// instead of the one built into the binary (`web::assets::Site`).
    pub site_dir: Option<PathBuf>,
    /// Send the session cookie with `Secure` (set behind HTTPS).
    pub cookie_secure: bool,
    /// Provider accounts, each served at `/webhooks/{name}`.
    pub providers: Vec<ProviderConfig>,
    /// Where outbox messages go: (name, URL).
    pub outbox_sinks: Vec<(String, String)>,
    /// `whsec_…` secret that signs outbox messages; random when unset.
    pub outbox_secret: Option<SecretString>,
    /// Status-query delays after a create, microseconds.
    pub query_schedule: Vec<i64>,
    /// Refused webhooks kept per provider for audit.
    pub refused_keep: i64,
    /// Processing tries of a callback before it is DEAD (default 10).
    pub callback_max_tries: i64,
    /// Provider calls at once per provider account (default 4).
    pub calls_per_account: usize,
    /// Connection limit and timeouts of the listener.
    pub limits: Limits,
    /// Statement days and ready hours set per account, over each kind's
    /// default (WeChat Pay: Asia/Shanghai from 10:00; Alipay:
    /// Asia/Shanghai from 09:00; others: `timezone` from 02:00).
    pub pull_times: Vec<PullTime>,
    /// Days back in which every day without a completed run is pulled
    /// (default 7).
    pub pull_catch_up_days: i64,
    /// Hours after its ready time a missing statement raises an alert
    /// (default 6).
    pub statement_missing_hours: i64,
    /// Days a run's statement file is kept (default 400).
    pub statement_keep_days: i64,
    /// Days either side of a payout's arrival date its bank credit may be
    /// booked (default 3).
    pub bank_window_days: i64,
    /// The highest severity of ticket a provider's day may keep open and
    /// still be closed by itself after its run; None: only a day without
    /// open tickets (`RECKON_CLOSE_ALLOW_OPEN`, default LOW).
    pub close_allow_open: Option<crate::domain::Severity>,
    /// Whether a day closes by itself at all (`RECKON_CLOSE_ALLOW_OPEN=OFF`:
    /// only supervisors close days).
    pub close_auto: bool,
    /// Hours a ticket of each class may stay open before it is overdue
    /// and alerted once (`RECKON_SLA_HOURS`: `CLASS=HOURS,…`, `*=HOURS`
    /// for the classes not named, over the defaults).
    pub sla: crate::domain::Sla,
    /// The cut window of reconciliation at the day's edge (default 30
    /// minutes), with per-account overrides.
    pub cut_window: CutWindow,
    /// The matching rules (`RECKON_MATCH_KEYS`, `RECKON_MATCH_WINDOW_HOURS`,
    /// `RECKON_AMOUNT_TOLERANCE`).
    pub matching: MatchRules,
    /// The file's named sinks, the env sinks' attempts, and
    /// when a sink counts as failing.
    pub sinks: Sinks,
    /// Alert channels (`[[alert_channels]]` in the file), checked.
    pub alert_channels: Vec<Channel>,
    /// The threshold of the refused-webhooks spike alert.
    pub refused_spike: RefusedSpike,
    /// Console sessions' idle timeout and lifetime, and the sign-in
    /// lock-out.
    pub sign_in: SignIn,
    /// Sign-in through an OpenID Provider (`[oidc]`), if set.
    pub oidc: Option<Oidc>,
    /// `RECKON_TRUSTED_PROXIES`: the reverse proxies (addresses or
    /// networks) whose `X-Forwarded-For` names the client; none by default.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// `RECKON_CUT_WINDOW_MINUTES`: a payment or refund finished this close to
/// its business day's cut and missing from the day's statement is expected
/// in the neighbouring day's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CutWindow {
    pub minutes: i64,
    /// (account, minutes), over `minutes`.
    pub per_provider: Vec<(String, i64)>,
}

impl Default for CutWindow {
    fn default() -> Self {
        CutWindow {
            minutes: 30,
            per_provider: Vec::new(),
        }
    }
}

/// One account's statement day: the zone it is cut in, the hour there it
/// is ready from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullTime {
    pub provider: String,
    pub zone: String,
    pub ready_hour: i8,
}

/// The database's URL, whose password never prints: its `Debug` is the
/// URL without it.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<String> for DatabaseUrl {
    fn from(url: String) -> DatabaseUrl {
        DatabaseUrl(url)
    }
}

impl std::ops::Deref for DatabaseUrl {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for DatabaseUrl {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_ref()
    }
}

impl std::fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&redact_url(&self.0), f)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path} (named by RECKON_CONFIG): {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{key}=`{value}` is not valid: {hint}")]
    Invalid {
        key: &'static str,
        value: String,
        hint: String,
    },
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:3000";
pub const DEFAULT_DATA_DIR: &str = "data";
pub const DEFAULT_TIMEZONE: &str = "UTC";
pub const DEFAULT_QUERY_SCHEDULE: &str = "1m,5m,30m,2h,12h";

pub fn parse_schedule(text: &str) -> Option<Vec<i64>> {
    let list: Option<Vec<i64>> = text
        .split(',')
        .map(|item| {
            let item = item.trim();
            // The unit is the last character, however many bytes it takes
            // (split at the last byte, `1˗` panicked: found by fuzzing).
            let unit = item.chars().next_back()?;
            let num = &item[..item.len() - unit.len_utf8()];
            let n: i64 = num.parse().ok().filter(|n| *n > 0)?;
            // Too long to count in microseconds is refused, not wrapped.
            let secs = match unit {
                's' => Some(n),
                'm' => n.checked_mul(60),
                'h' => n.checked_mul(3600),
                _ => return None,
            }?;
            secs.checked_mul(1_000_000)
        })
        .collect();
    list.filter(|l| !l.is_empty())
}

impl Config {
    /// Reads `RECKON_CONFIG` (if set) and the environment.
    pub fn load() -> Result<Config, ConfigError> {
        Self::from_sources(|key| std::env::var(key).ok().filter(|v| !v.is_empty()))
    }

    pub fn from_sources(env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        match env("RECKON_CONFIG") {
            Some(path) => {
                let path = PathBuf::from(path);
                let text =
                    std::fs::read_to_string(&path).map_err(|source| ConfigError::ReadFile {
                        path: path.clone(),
                        source,
                    })?;
                Self::layered(&text, &path, env)
            }
            None => Self::layered("", Path::new("<none>"), env),
        }
    }

    /// A config file's TOML text with the environment over it, as
    /// [`Config::from_sources`] reads them (`RECKON_CONFIG` aside): the
    /// parser without a file, for the fuzz target.
    pub fn from_toml(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        Self::layered(text, Path::new("<text>"), env)
    }

    fn layered(
        text: &str,
        path: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        // Each variable's value is text, whatever it looks like.
        let environment: BTreeMap<&str, String> = SETTINGS
            .iter()
            .filter_map(|setting| Some((setting.key?, env(setting.variable)?)))
            .collect();
        let layers: Layers = Figment::from(Toml::string(text))
            .merge(Serialized::defaults(environment))
            .extract()
            .map_err(|e| ConfigError::Parse {
                path: path.to_owned(),
                // Messages may span several lines (a snippet); keep one.
                message: e
                    .to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
            })?;
        settings::checked(layers, env)
    }

    /// The SQLite file when the database is SQLite.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        sqlite_path(&self.database_url)
    }
}

pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty() && path != ":memory:").then(|| PathBuf::from(path))
}

/// A database URL without its password, fit for messages and logs.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://")
        && let Some((userinfo, host)) = rest.split_once('@')
    {
        let user = userinfo.split(':').next().unwrap_or("");
        let hidden = if userinfo.contains(':') { ":***" } else { "" };
        return format!("{scheme}://{user}{hidden}@{host}");
    }
    url.to_owned()
}

#[cfg(test)]
mod tests;

/// The listener's limits: connections at once, and how long a client may
/// take to send its headers, stay idle, or send its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_connections: usize,
    pub header_read: std::time::Duration,
    pub idle: std::time::Duration,
    pub body_read: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        use std::time::Duration;
        Limits {
            max_connections: 10_000,
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            body_read: Duration::from_secs(10),
        }
    }
}

/// `RECKON_REFUSED_SPIKE`: `N/M`, more than N failures in M minutes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusedSpike {
    pub failures: i64,
    pub window_us: i64,
}

impl Default for RefusedSpike {
    fn default() -> Self {
        RefusedSpike {
            failures: 20,
            window_us: 5 * 60_000_000,
        }
    }
}

/// When a sink's failures make it failing: this many attempts failed in a
/// row, or failures going on this long (microseconds) without a delivery.
#[derive(Clone, Copy, Debug)]
pub struct Failing {
    pub attempts: i64,
    pub after_us: i64,
}

impl Default for Failing {
    fn default() -> Self {
        Failing {
            attempts: 5,
            after_us: 30 * 60 * 1_000_000,
        }
    }
}

/// Days either side of a payout's arrival date in which its credit may be
/// booked, and after which an unmatched payout or provider credit becomes
/// a ticket, unless `RECKON_BANK_WINDOW_DAYS` says otherwise.
pub const DEFAULT_BANK_WINDOW_DAYS: i64 = 3;
