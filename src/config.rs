//! Configuration: an optional TOML file named by `RECKON_CONFIG`, overridden
//! key by key by environment variables. Every key is in the README.

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Pretty,
}

#[derive(Clone)]
pub struct Config {
    pub listen: SocketAddr,
    /// `sqlite://…` or `postgres://…`.
    pub database_url: String,
    pub data_dir: PathBuf,
    /// IANA name of the business time zone (business days are cut there).
    pub timezone: String,
    pub log_format: LogFormat,
    /// Where the compiled console (`pkg/`, assets) lives.
    pub site_dir: PathBuf,
    /// Send the session cookie with `Secure` (set behind HTTPS).
    pub cookie_secure: bool,
    /// Provider accounts, each served at `/webhooks/{name}`.
    pub providers: Vec<ProviderConfig>,
    /// Where outbox messages go: (name, URL).
    pub outbox_sinks: Vec<(String, String)>,
    /// `whsec_…` secret that signs outbox messages; random when unset.
    pub outbox_secret: Option<String>,
    /// Status-query delays after a create, microseconds.
    pub query_schedule: Vec<i64>,
    /// Refused webhooks kept per provider for audit.
    pub refused_keep: i64,
    /// Processing tries of a callback before it is DEAD (default 10).
    pub callback_max_tries: i64,
    /// Provider calls at once per provider account (default 4).
    pub calls_per_account: usize,
    /// Connection limit and timeouts of the listener.
    pub limits: crate::web::listener::Limits,
}

#[derive(Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub name: String,
    /// `sandbox`, `stripe`, `standard_webhooks`, `alipay` or `wechatpay`.
    pub kind: String,
    pub base_url: String,
    /// The webhook secret (`whsec_…`; not used by Alipay).
    #[serde(default)]
    pub secret: String,
    /// Older secrets still accepted while rotating (Stripe).
    #[serde(default)]
    pub previous_secrets: Vec<String>,
    /// The API key for status queries and creates (Stripe: `sk_…`).
    #[serde(default)]
    pub api_key: Option<String>,
    /// How a Standard-Webhooks body maps onto a payment (JSON pointers).
    #[serde(default)]
    pub mapping: crate::providers::standard::Mapping,
    /// Alipay: this account's app_id, seller_id (optional) and Alipay's
    /// public key (PEM or base64 DER).
    #[serde(default)]
    pub app_id: Option<String>,
    #[serde(default)]
    pub seller_id: Option<String>,
    #[serde(default)]
    pub public_key: Option<String>,
    /// WeChat Pay: platform certificate serial → public key (PEM or base64
    /// DER); the APIv3 key goes in `api_key`.
    #[serde(default)]
    pub platform_keys: std::collections::BTreeMap<String, String>,
    /// The merchant's own RSA private key (PKCS#8 PEM or base64 DER) that
    /// signs API calls: Alipay's app private key, WeChat Pay's API key.
    #[serde(default)]
    pub private_key: Option<String>,
    /// WeChat Pay: the merchant id (`mchid`) and the serial number of the
    /// merchant API certificate whose key is `private_key`.
    #[serde(default)]
    pub mch_id: Option<String>,
    #[serde(default)]
    pub cert_serial: Option<String>,
    /// How long a call to the provider may take before its result counts
    /// as unknown (milliseconds, default 10000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A webhook that fails verification but names a payment makes Reckon
    /// ask the provider about that payment (the provider is the authority,
    /// never the unverified body).
    #[serde(default)]
    pub query_on_unverified: bool,
}

/// Secrets never reach a log line: a set secret shows as `***`.
fn masked(secret: &str) -> &'static str {
    if secret.is_empty() { "" } else { "***" }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("database_url", &redact_url(&self.database_url))
            .field("data_dir", &self.data_dir)
            .field("timezone", &self.timezone)
            .field("log_format", &self.log_format)
            .field("site_dir", &self.site_dir)
            .field("cookie_secure", &self.cookie_secure)
            .field("providers", &self.providers)
            .field("outbox_sinks", &self.outbox_sinks)
            .field("outbox_secret", &self.outbox_secret.as_deref().map(masked))
            .field("query_schedule", &self.query_schedule)
            .field("refused_keep", &self.refused_keep)
            .field("callback_max_tries", &self.callback_max_tries)
            .field("calls_per_account", &self.calls_per_account)
            .field("limits", &self.limits)
            .finish()
    }
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("secret", &masked(&self.secret))
            .field("previous_secrets", &self.previous_secrets.len())
            .field("api_key", &self.api_key.as_deref().map(masked))
            .field("mapping", &self.mapping)
            .field("app_id", &self.app_id)
            .field("seller_id", &self.seller_id)
            .field("public_key", &self.public_key.as_ref().map(|_| "(set)"))
            .field(
                "platform_keys",
                &self.platform_keys.keys().collect::<Vec<_>>(),
            )
            .field("private_key", &self.private_key.as_deref().map(masked))
            .field("mch_id", &self.mch_id)
            .field("cert_serial", &self.cert_serial)
            .field("timeout_ms", &self.timeout_ms)
            .field("query_on_unverified", &self.query_on_unverified)
            .finish()
    }
}

impl ProviderConfig {
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.unwrap_or(10_000).clamp(50, 120_000))
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

/// The file's keys mirror the environment variables, in lowercase.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    database_url: Option<String>,
    data_dir: Option<PathBuf>,
    timezone: Option<String>,
    log_format: Option<String>,
    site_dir: Option<PathBuf>,
    cookie_secure: Option<bool>,
    #[serde(default)]
    providers: Vec<ProviderConfig>,
    outbox_sinks: Option<String>,
    outbox_secret: Option<String>,
    query_schedule: Option<String>,
    refused_keep: Option<i64>,
    callback_max_tries: Option<i64>,
    calls_per_account: Option<i64>,
    max_connections: Option<i64>,
    header_read_timeout_secs: Option<i64>,
    idle_timeout_secs: Option<i64>,
    body_read_timeout_secs: Option<i64>,
}

pub const DEFAULT_LISTEN: &str = "127.0.0.1:3000";
pub const DEFAULT_DATA_DIR: &str = "data";
pub const DEFAULT_TIMEZONE: &str = "UTC";
pub const DEFAULT_QUERY_SCHEDULE: &str = "1m,5m,30m,2h,12h";

/// `1m,5m,30m,2h,12h` → microseconds. Units s, m, h; at least one entry.
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
        let file = match env("RECKON_CONFIG") {
            Some(path) => read_file(Path::new(&path))?,
            None => FileConfig::default(),
        };
        Self::from_file(file, env)
    }

    /// A config file's TOML text with the environment over it, as
    /// [`Config::from_sources`] reads them (`RECKON_CONFIG` aside): the
    /// parser without a file, for the fuzz target.
    pub fn from_toml(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        Self::from_file(parse_file(text, Path::new("<text>"))?, env)
    }

    fn from_file(
        file: FileConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let listen_text = env("RECKON_LISTEN")
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.into());
        let listen = listen_text
            .parse::<SocketAddr>()
            .map_err(|_| ConfigError::Invalid {
                key: "RECKON_LISTEN",
                value: listen_text.clone(),
                hint: "expected an address and port such as 127.0.0.1:3000".into(),
            })?;

        let data_dir = env("RECKON_DATA_DIR")
            .map(PathBuf::from)
            .or(file.data_dir)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));

        let database_url = match env("DATABASE_URL").or(file.database_url) {
            Some(url) => {
                if !(url.starts_with("sqlite:")
                    || url.starts_with("postgres://")
                    || url.starts_with("postgresql://"))
                {
                    return Err(ConfigError::Invalid {
                        key: "DATABASE_URL",
                        value: redact_url(&url),
                        hint: "expected sqlite://PATH or postgres://USER@HOST:PORT/DB".into(),
                    });
                }
                url
            }
            None => sqlite_url(&data_dir.join("reckon.db")),
        };

        let timezone = env("RECKON_TIMEZONE")
            .or(file.timezone)
            .unwrap_or_else(|| DEFAULT_TIMEZONE.into());
        if jiff::tz::TimeZone::get(&timezone).is_err() {
            return Err(ConfigError::Invalid {
                key: "RECKON_TIMEZONE",
                value: timezone,
                hint: "expected an IANA time zone name such as Asia/Shanghai or UTC".into(),
            });
        }

        let log_format = match env("RECKON_LOG_FORMAT")
            .or(file.log_format)
            .as_deref()
            .unwrap_or("pretty")
        {
            "json" => LogFormat::Json,
            "pretty" => LogFormat::Pretty,
            other => {
                return Err(ConfigError::Invalid {
                    key: "RECKON_LOG_FORMAT",
                    value: other.into(),
                    hint: "expected json or pretty".into(),
                });
            }
        };

        let site_dir = env("RECKON_SITE_DIR")
            .map(PathBuf::from)
            .or(file.site_dir)
            .unwrap_or_else(default_site_dir);

        let cookie_secure = match env("RECKON_COOKIE_SECURE") {
            Some(v) => parse_bool("RECKON_COOKIE_SECURE", &v)?,
            None => file.cookie_secure.unwrap_or(false),
        };

        let mut providers = file.providers;
        if let Some(base_url) = env("RECKON_SANDBOX_URL") {
            let secret = env("RECKON_SANDBOX_SECRET").ok_or(ConfigError::Invalid {
                key: "RECKON_SANDBOX_SECRET",
                value: String::new(),
                hint: "required with RECKON_SANDBOX_URL: the sandbox's whsec_… webhook secret"
                    .into(),
            })?;
            providers.retain(|p| p.name != "sandbox");
            providers.push(ProviderConfig {
                name: "sandbox".into(),
                kind: "sandbox".into(),
                base_url,
                secret,
                ..ProviderConfig::default()
            });
        }
        for p in &providers {
            if crate::domain::ProviderName::parse(&p.name).is_err()
                || ![
                    "sandbox",
                    "stripe",
                    "standard_webhooks",
                    "alipay",
                    "wechatpay",
                ]
                .contains(&p.kind.as_str())
            {
                return Err(ConfigError::Invalid {
                    key: "providers",
                    value: format!("{} ({})", p.name, p.kind),
                    hint: "a provider needs a name of lowercase letters, digits and '-', and kind = \"sandbox\", \"stripe\", \"standard_webhooks\", \"alipay\" or \"wechatpay\"".into(),
                });
            }
            if p.kind == "stripe"
                && (p.secret.is_empty() || p.api_key.as_deref().unwrap_or("").is_empty())
            {
                return Err(ConfigError::Invalid {
                    key: "providers.secret",
                    value: p.name.clone(),
                    hint:
                        "a stripe provider needs its endpoint secret (whsec_…) and api_key (sk_…)"
                            .into(),
                });
            }
            let whsec = |s: &str| crate::providers::signing::Secret::parse(s).is_ok();
            let bad_secret = match p.kind.as_str() {
                "sandbox" => !whsec(&p.secret),
                "standard_webhooks" => {
                    !whsec(&p.secret) || !p.previous_secrets.iter().all(|s| whsec(s))
                }
                _ => false,
            };
            if bad_secret {
                return Err(ConfigError::Invalid {
                    key: "providers.secret",
                    value: p.name.clone(),
                    hint: "expected whsec_ followed by base64 of at least 16 bytes".into(),
                });
            }
        }

        let sinks_text = env("RECKON_OUTBOX_SINKS")
            .or(file.outbox_sinks)
            .unwrap_or_default();
        let mut outbox_sinks = Vec::new();
        for item in sinks_text
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
        {
            match item.split_once('=') {
                Some((name, url)) if !name.trim().is_empty() && url.trim().starts_with("http") => {
                    outbox_sinks.push((name.trim().to_owned(), url.trim().to_owned()))
                }
                _ => {
                    return Err(ConfigError::Invalid {
                        key: "RECKON_OUTBOX_SINKS",
                        value: sinks_text.clone(),
                        hint: "expected name=http://host/path, comma-separated".into(),
                    });
                }
            }
        }
        let outbox_secret = env("RECKON_OUTBOX_SECRET").or(file.outbox_secret);
        if let Some(secret) = &outbox_secret
            && crate::providers::signing::Secret::parse(secret).is_err()
        {
            return Err(ConfigError::Invalid {
                key: "RECKON_OUTBOX_SECRET",
                value: "***".into(),
                hint: "expected whsec_ followed by base64 of at least 16 bytes".into(),
            });
        }
        let schedule_text = env("RECKON_QUERY_SCHEDULE")
            .or(file.query_schedule)
            .unwrap_or_else(|| DEFAULT_QUERY_SCHEDULE.into());
        let query_schedule =
            parse_schedule(&schedule_text).ok_or_else(|| ConfigError::Invalid {
                key: "RECKON_QUERY_SCHEDULE",
                value: schedule_text.clone(),
                hint: "expected comma-separated durations such as 1m,5m,30m,2h,12h".into(),
            })?;
        // A whole number from 1 to `max`: the environment's, else the
        // file's, else `default`; anything else names the key.
        let number =
            |key: &'static str, from_file: Option<i64>, default: i64, max: i64, what: &str| {
                let text = env(key);
                match &text {
                    Some(text) => text.trim().parse::<i64>().ok(),
                    None => Some(from_file.unwrap_or(default)),
                }
                .filter(|n| (1..=max).contains(n))
                .ok_or_else(|| ConfigError::Invalid {
                    key,
                    value: text
                        .or(from_file.map(|n| n.to_string()))
                        .unwrap_or_default(),
                    hint: format!("expected a number of {what} from 1 to {max}"),
                })
            };
        let refused_keep = number(
            "RECKON_REFUSED_KEEP",
            file.refused_keep,
            10_000,
            10_000_000,
            "rows",
        )?;
        let callback_max_tries = number(
            "RECKON_CALLBACK_MAX_TRIES",
            file.callback_max_tries,
            10,
            100,
            "tries",
        )?;
        let calls_per_account = number(
            "RECKON_CALLS_PER_ACCOUNT",
            file.calls_per_account,
            4,
            64,
            "calls",
        )? as usize;
        let defaults = crate::web::listener::Limits::default();
        let secs = |key, from_file, default: std::time::Duration, max| {
            number(key, from_file, default.as_secs() as i64, max, "seconds")
                .map(|n| std::time::Duration::from_secs(n as u64))
        };
        let limits = crate::web::listener::Limits {
            max_connections: number(
                "RECKON_MAX_CONNECTIONS",
                file.max_connections,
                defaults.max_connections as i64,
                1_000_000,
                "connections",
            )? as usize,
            header_read: secs(
                "RECKON_HEADER_READ_TIMEOUT_SECS",
                file.header_read_timeout_secs,
                defaults.header_read,
                600,
            )?,
            idle: secs(
                "RECKON_IDLE_TIMEOUT_SECS",
                file.idle_timeout_secs,
                defaults.idle,
                3600,
            )?,
            body_read: secs(
                "RECKON_BODY_READ_TIMEOUT_SECS",
                file.body_read_timeout_secs,
                defaults.body_read,
                600,
            )?,
        };

        Ok(Config {
            listen,
            database_url,
            data_dir,
            timezone,
            log_format,
            site_dir,
            cookie_secure,
            providers,
            outbox_sinks,
            outbox_secret,
            query_schedule,
            refused_keep,
            callback_max_tries,
            calls_per_account,
            limits,
        })
    }

    /// The SQLite file when the database is SQLite.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        sqlite_path(&self.database_url)
    }
}

fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        path: path.to_owned(),
        source,
    })?;
    parse_file(&text, path)
}

fn parse_file(text: &str, path: &Path) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        // toml's message spans several lines (a snippet); keep it to one.
        message: e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    })
}

fn parse_bool(key: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        other => Err(ConfigError::Invalid {
            key,
            value: other.into(),
            hint: "expected true or false".into(),
        }),
    }
}

/// The site directory beside the installed binary: `<exe>/../site` (the
/// build layout, `target/<profile>/reckon` + `target/site`), else `<exe>/site`.
fn default_site_dir() -> PathBuf {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let beside = exe_dir.join("site");
    if beside.is_dir() {
        return beside;
    }
    // target/debug/deps/<test binary> and target/debug/reckon both reach target/site.
    for up in exe_dir.ancestors().skip(1).take(2) {
        let candidate = up.join("site");
        if candidate.is_dir() {
            return candidate;
        }
    }
    beside
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
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn debug_output_masks_every_secret() {
        let p = ProviderConfig {
            name: "alipay".into(),
            kind: "alipay".into(),
            secret: "whsec_TOPSECRETvalue1".into(),
            previous_secrets: vec!["whsec_OLDSECRETvalue2".into()],
            api_key: Some("sk_live_SECRETKEY3".into()),
            private_key: Some("-----BEGIN PRIVATE KEY-----SECRETPEM4".into()),
            ..ProviderConfig::default()
        };
        let config = Config {
            providers: vec![p],
            outbox_secret: Some("whsec_OUTBOXSECRET5".into()),
            database_url: "postgres://u:DBPASSWORD6@h/db".into(),
            ..load(&[]).unwrap()
        };
        let text = format!("{config:?}");
        for secret in [
            "TOPSECRET",
            "OLDSECRET",
            "SECRETKEY",
            "SECRETPEM",
            "OUTBOXSECRET",
            "DBPASSWORD",
        ] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("alipay") && text.contains("***"), "{text}");
    }

    fn load(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_sources(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_are_documented_ones() {
        let c = load(&[]).unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.database_url, "sqlite://data/reckon.db?mode=rwc");
        assert_eq!(c.sqlite_path().unwrap(), PathBuf::from("data/reckon.db"));
        assert_eq!(c.timezone, "UTC");
        assert_eq!(c.log_format, LogFormat::Pretty);
        assert!(!c.cookie_secure);
        assert_eq!(c.calls_per_account, 4);
    }

    #[test]
    fn environment_overrides_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("reckon.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:4000\"\ntimezone = \"Asia/Shanghai\"\nlog_format = \"json\"\n",
        )
        .unwrap();
        let c = load(&[
            ("RECKON_CONFIG", file.to_str().unwrap()),
            ("RECKON_LISTEN", "127.0.0.1:5000"),
        ])
        .unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:5000");
        assert_eq!(c.timezone, "Asia/Shanghai");
        assert_eq!(c.log_format, LogFormat::Json);
    }

    #[test]
    fn bad_values_name_the_key() {
        let e = load(&[("RECKON_LISTEN", "nowhere")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("RECKON_LISTEN=`nowhere`"), "{e}");
        let e = load(&[("RECKON_TIMEZONE", "Mars/Olympus")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("IANA"), "{e}");
        let e = load(&[("DATABASE_URL", "mysql://u:secret@h/db")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mysql://u:***@h/db") && !e.contains("secret"),
            "{e}"
        );
        let e = load(&[("RECKON_LOG_FORMAT", "xml")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("json or pretty"), "{e}");
        for bad in ["0", "65", "four"] {
            let e = load(&[("RECKON_CALLS_PER_ACCOUNT", bad)])
                .unwrap_err()
                .to_string();
            assert!(e.contains("RECKON_CALLS_PER_ACCOUNT"), "{e}");
        }
        let c = load(&[("RECKON_CALLS_PER_ACCOUNT", "8")]).unwrap();
        assert_eq!(c.calls_per_account, 8);
    }

    #[test]
    fn malformed_file_is_one_clear_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "listen = \n[oops").unwrap();
        let e = load(&[("RECKON_CONFIG", file.to_str().unwrap())])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("config file") && !e.contains('\n'), "{e}");
        std::fs::write(&file, "colour = \"blue\"\n").unwrap();
        let e = load(&[("RECKON_CONFIG", file.to_str().unwrap())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
    }

    /// fuzz/corpus/config/crash-b541b308…: a schedule ending in a
    /// multi-byte character panicked; it (and one too long for i64
    /// microseconds) is now refused with the key named.
    #[test]
    fn schedules_ending_in_any_character_or_too_long_are_refused() {
        assert_eq!(parse_schedule("30s,\u{2d7}"), None);
        assert_eq!(parse_schedule("1\u{20ac}"), None);
        assert_eq!(parse_schedule("\u{20ac}"), None);
        assert_eq!(parse_schedule("2562047789h"), None);
        assert_eq!(parse_schedule("9223372036854775807s"), None);
        assert_eq!(
            parse_schedule("2562047788h"),
            Some(vec![9_223_372_036_800_000_000])
        );
        let e = Config::from_toml("", |k| {
            (k == "RECKON_QUERY_SCHEDULE").then(|| "30s,\u{2d7}".to_owned())
        })
        .unwrap_err();
        assert!(e.to_string().contains("RECKON_QUERY_SCHEDULE"), "{e}");
    }

    #[test]
    fn engine_settings_parse() {
        let c = load(&[]).unwrap();
        assert_eq!(c.query_schedule.len(), 5);
        assert_eq!(c.query_schedule[0], 60_000_000);
        assert_eq!(
            parse_schedule("30s, 2h"),
            Some(vec![30_000_000, 7_200_000_000])
        );
        assert_eq!(parse_schedule("5x"), None);
        let c = load(&[
            ("RECKON_SANDBOX_URL", "http://127.0.0.1:4000"),
            (
                "RECKON_SANDBOX_SECRET",
                "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
            ),
            (
                "RECKON_OUTBOX_SINKS",
                "fulfilment=http://127.0.0.1:9000/a, accounting=http://127.0.0.1:9001/b",
            ),
        ])
        .unwrap();
        assert_eq!(c.providers[0].name, "sandbox");
        assert_eq!(c.outbox_sinks.len(), 2);
        let e = load(&[("RECKON_SANDBOX_URL", "http://x")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("RECKON_SANDBOX_SECRET"), "{e}");
        let e = load(&[("RECKON_OUTBOX_SINKS", "nonsense")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("RECKON_OUTBOX_SINKS"), "{e}");
    }

    #[test]
    fn passwords_never_appear_in_redacted_urls() {
        assert_eq!(
            redact_url("postgres://reckon:hunter2@db:5432/reckon"),
            "postgres://reckon:***@db:5432/reckon"
        );
        assert_eq!(redact_url("postgres://db/reckon"), "postgres://db/reckon");
    }
}
