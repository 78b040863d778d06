//! Configuration: an optional TOML file named by `RECKON_CONFIG`, overridden
//! key by key by environment variables — the two layered by figment, then
//! each setting checked, a bad one named by its variable. Every key is in
//! the README. A provider account's settings are its kind's own section
//! (defined in the provider's folder); secrets are `secrecy` types, so a
//! config printed for a log shows none of them.

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use secrecy::SecretString;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

pub use crate::providers::ProviderConfig;

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
    /// Where the compiled console (`pkg/`, assets) lives.
    pub site_dir: PathBuf,
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
    pub limits: crate::web::listener::Limits,
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

/// The settings as the file and the environment give them, the
/// environment's over the file's. The file's keys are the variables' in
/// lowercase without `RECKON_` ([`VARIABLES`]).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Layers {
    listen: Option<Text>,
    database_url: Option<Text>,
    data_dir: Option<Text>,
    timezone: Option<Text>,
    log_format: Option<Text>,
    site_dir: Option<Text>,
    cookie_secure: Option<Text>,
    #[serde(default)]
    providers: Vec<ProviderConfig>,
    outbox_sinks: Option<Text>,
    outbox_secret: Option<Text>,
    query_schedule: Option<Text>,
    refused_keep: Option<Text>,
    callback_max_tries: Option<Text>,
    calls_per_account: Option<Text>,
    max_connections: Option<Text>,
    header_read_timeout_secs: Option<Text>,
    idle_timeout_secs: Option<Text>,
    body_read_timeout_secs: Option<Text>,
}

/// The environment variable of each file key.
const VARIABLES: [(&str, &str); 17] = [
    ("listen", "RECKON_LISTEN"),
    ("database_url", "DATABASE_URL"),
    ("data_dir", "RECKON_DATA_DIR"),
    ("timezone", "RECKON_TIMEZONE"),
    ("log_format", "RECKON_LOG_FORMAT"),
    ("site_dir", "RECKON_SITE_DIR"),
    ("cookie_secure", "RECKON_COOKIE_SECURE"),
    ("outbox_sinks", "RECKON_OUTBOX_SINKS"),
    ("outbox_secret", "RECKON_OUTBOX_SECRET"),
    ("query_schedule", "RECKON_QUERY_SCHEDULE"),
    ("refused_keep", "RECKON_REFUSED_KEEP"),
    ("callback_max_tries", "RECKON_CALLBACK_MAX_TRIES"),
    ("calls_per_account", "RECKON_CALLS_PER_ACCOUNT"),
    ("max_connections", "RECKON_MAX_CONNECTIONS"),
    ("header_read_timeout_secs", "RECKON_HEADER_READ_TIMEOUT_SECS"),
    ("idle_timeout_secs", "RECKON_IDLE_TIMEOUT_SECS"),
    ("body_read_timeout_secs", "RECKON_BODY_READ_TIMEOUT_SECS"),
];

/// A setting as text, as the environment gives every one: a file's
/// string, whole number or boolean as written.
struct Text(String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Text;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string, a whole number or a boolean")
            }
            fn visit_str<E>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_owned()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

fn text(setting: Option<Text>) -> Option<String> {
    setting.map(|t| t.0)
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
                let text = std::fs::read_to_string(&path).map_err(|source| {
                    ConfigError::ReadFile {
                        path: path.clone(),
                        source,
                    }
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
        let environment: BTreeMap<&str, String> = VARIABLES
            .iter()
            .filter_map(|(key, variable)| Some((*key, env(variable)?)))
            .collect();
        let layers: Layers = Figment::from(Toml::string(text))
            .merge(Serialized::defaults(environment))
            .extract()
            .map_err(|e| ConfigError::Parse {
                path: path.to_owned(),
                // Messages may span several lines (a snippet); keep one.
                message: e.to_string().split_whitespace().collect::<Vec<_>>().join(" "),
            })?;
        Self::checked(layers, env)
    }

    /// Each setting read and checked; a bad one is named by its variable.
    fn checked(
        layers: Layers,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let listen_text = text(layers.listen).unwrap_or_else(|| DEFAULT_LISTEN.into());
        let listen = listen_text
            .parse::<SocketAddr>()
            .map_err(|_| ConfigError::Invalid {
                key: "RECKON_LISTEN",
                value: listen_text.clone(),
                hint: "expected an address and port such as 127.0.0.1:3000".into(),
            })?;

        let data_dir = text(layers.data_dir)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));

        let database_url = match text(layers.database_url) {
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

        let timezone = text(layers.timezone).unwrap_or_else(|| DEFAULT_TIMEZONE.into());
        if jiff::tz::TimeZone::get(&timezone).is_err() {
            return Err(ConfigError::Invalid {
                key: "RECKON_TIMEZONE",
                value: timezone,
                hint: "expected an IANA time zone name such as Asia/Shanghai or UTC".into(),
            });
        }

        let log_format = match text(layers.log_format).as_deref().unwrap_or("pretty") {
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

        let site_dir = text(layers.site_dir)
            .map(PathBuf::from)
            .unwrap_or_else(default_site_dir);

        let cookie_secure = match text(layers.cookie_secure) {
            Some(v) => parse_bool("RECKON_COOKIE_SECURE", &v)?,
            None => false,
        };

        let providers = providers(layers.providers, &env)?;

        let sinks_text = text(layers.outbox_sinks).unwrap_or_default();
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
        let outbox_secret = text(layers.outbox_secret);
        if let Some(secret) = &outbox_secret
            && crate::providers::signing::Secret::parse(secret).is_err()
        {
            return Err(ConfigError::Invalid {
                key: "RECKON_OUTBOX_SECRET",
                value: "***".into(),
                hint: crate::providers::signing::WHSEC_HINT.into(),
            });
        }
        let schedule_text =
            text(layers.query_schedule).unwrap_or_else(|| DEFAULT_QUERY_SCHEDULE.into());
        let query_schedule =
            parse_schedule(&schedule_text).ok_or_else(|| ConfigError::Invalid {
                key: "RECKON_QUERY_SCHEDULE",
                value: schedule_text.clone(),
                hint: "expected comma-separated durations such as 1m,5m,30m,2h,12h".into(),
            })?;
        let refused_keep = number(
            "RECKON_REFUSED_KEEP",
            layers.refused_keep,
            10_000,
            10_000_000,
            "rows",
        )?;
        let callback_max_tries = number(
            "RECKON_CALLBACK_MAX_TRIES",
            layers.callback_max_tries,
            10,
            100,
            "tries",
        )?;
        let calls_per_account = number(
            "RECKON_CALLS_PER_ACCOUNT",
            layers.calls_per_account,
            4,
            64,
            "calls",
        )? as usize;
        let defaults = crate::web::listener::Limits::default();
        let secs = |key, given, default: std::time::Duration, max| {
            number(key, given, default.as_secs() as i64, max, "seconds")
                .map(|n| std::time::Duration::from_secs(n as u64))
        };
        let limits = crate::web::listener::Limits {
            max_connections: number(
                "RECKON_MAX_CONNECTIONS",
                layers.max_connections,
                defaults.max_connections as i64,
                1_000_000,
                "connections",
            )? as usize,
            header_read: secs(
                "RECKON_HEADER_READ_TIMEOUT_SECS",
                layers.header_read_timeout_secs,
                defaults.header_read,
                600,
            )?,
            idle: secs(
                "RECKON_IDLE_TIMEOUT_SECS",
                layers.idle_timeout_secs,
                defaults.idle,
                3600,
            )?,
            body_read: secs(
                "RECKON_BODY_READ_TIMEOUT_SECS",
                layers.body_read_timeout_secs,
                defaults.body_read,
                600,
            )?,
        };

        Ok(Config {
            listen,
            database_url: database_url.into(),
            data_dir,
            timezone,
            log_format,
            site_dir,
            cookie_secure,
            providers,
            outbox_sinks,
            outbox_secret: outbox_secret.map(SecretString::from),
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

/// The file's provider accounts, the sandbox of `RECKON_SANDBOX_URL` in
/// place of one named `sandbox`, each checked.
fn providers(
    mut providers: Vec<ProviderConfig>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Vec<ProviderConfig>, ConfigError> {
    if let Some(base_url) = env("RECKON_SANDBOX_URL") {
        let secret = env("RECKON_SANDBOX_SECRET").ok_or(ConfigError::Invalid {
            key: "RECKON_SANDBOX_SECRET",
            value: String::new(),
            hint: "required with RECKON_SANDBOX_URL: the sandbox's whsec_… webhook secret".into(),
        })?;
        providers.retain(|p| p.name() != "sandbox");
        providers.push(ProviderConfig::Sandbox(
            crate::providers::sandbox::SandboxConfig {
                name: "sandbox".into(),
                base_url,
                secret: secret.into(),
                ..Default::default()
            },
        ));
    }
    for p in &providers {
        if crate::domain::ProviderName::parse(p.name()).is_err() {
            return Err(ConfigError::Invalid {
                key: "providers",
                value: format!("{} ({})", p.name(), p.kind()),
                hint: "a provider needs a name of lowercase letters, digits and '-', and kind = \"sandbox\", \"stripe\", \"standard_webhooks\", \"alipay\" or \"wechatpay\"".into(),
            });
        }
        if let Err(hint) = p.check() {
            return Err(ConfigError::Invalid {
                key: "providers.secret",
                value: p.name().to_owned(),
                hint: hint.into(),
            });
        }
    }
    Ok(providers)
}

/// A whole number from 1 to `max`: the one given, else `default`;
/// anything else names the key.
fn number(
    key: &'static str,
    given: Option<Text>,
    default: i64,
    max: i64,
    what: &str,
) -> Result<i64, ConfigError> {
    let given = text(given);
    match &given {
        Some(text) => text.trim().parse::<i64>().ok(),
        None => Some(default),
    }
    .filter(|n| (1..=max).contains(n))
    .ok_or_else(|| ConfigError::Invalid {
        key,
        value: given.unwrap_or_default(),
        hint: format!("expected a number of {what} from 1 to {max}"),
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
    use secrecy::ExposeSecret;
    use std::collections::HashMap;

    #[test]
    fn debug_output_masks_every_secret() {
        use crate::providers::alipay::AlipayConfig;
        use crate::providers::standard::StandardConfig;
        use crate::providers::stripe::StripeConfig;
        use crate::providers::wechatpay::WechatPayConfig;
        let providers = vec![
            ProviderConfig::Stripe(StripeConfig {
                name: "stripe".into(),
                secret: "whsec_TOPSECRETvalue1".into(),
                previous_secrets: vec!["whsec_OLDSECRETvalue2".into()],
                api_key: "sk_live_SECRETKEY3".into(),
                ..StripeConfig::default()
            }),
            ProviderConfig::Alipay(AlipayConfig {
                name: "alipay".into(),
                private_key: Some("-----BEGIN PRIVATE KEY-----SECRETPEM4".into()),
                ..AlipayConfig::default()
            }),
            ProviderConfig::WechatPay(WechatPayConfig {
                name: "wechat".into(),
                api_key: "APIV3SECRET7".into(),
                private_key: Some("-----BEGIN PRIVATE KEY-----WXPEM8".into()),
                ..WechatPayConfig::default()
            }),
            ProviderConfig::StandardWebhooks(StandardConfig {
                name: "acme".into(),
                secret: "whsec_STANDARDSECRET9".into(),
                ..StandardConfig::default()
            }),
        ];
        let config = Config {
            providers,
            outbox_secret: Some("whsec_OUTBOXSECRET5".into()),
            database_url: String::from("postgres://u:DBPASSWORD6@h/db").into(),
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
            "APIV3SECRET",
            "WXPEM",
            "STANDARDSECRET",
        ] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.contains("alipay") && text.contains("***"), "{text}");
        assert!(text.contains("REDACTED"), "{text}");
    }

    /// Each kind's keys as the README shows them, from the file; a key
    /// another kind takes, an unknown kind, or a bad secret is refused with
    /// the key named.
    #[test]
    fn provider_sections_are_their_kinds_own() {
        let file = r#"
[[providers]]
name = "sandbox"
kind = "sandbox"
base_url = "http://127.0.0.1:4000"
secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
timeout_ms = 400

[[providers]]
name = "stripe-eu"
kind = "stripe"
base_url = "https://api.stripe.com"
secret = "whsec_endpoint"
previous_secrets = ["whsec_old"]
api_key = "sk_live_x"

[[providers]]
name = "acme"
kind = "standard_webhooks"
base_url = ""
secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
[providers.mapping]
amount_format = "major"

[[providers]]
name = "alipay"
kind = "alipay"
app_id = "2021000000000001"
seller_id = "2088000000000001"
public_key = "MIIB"
base_url = "https://openapi.alipay.com/gateway.do"
private_key = "MIIE"
timeout_ms = 10000
query_on_unverified = true

[[providers]]
name = "wechat"
kind = "wechatpay"
api_key = "0123456789abcdef0123456789ABCDEF"
base_url = "https://api.mch.weixin.qq.com"
mch_id = "1900000001"
cert_serial = "3775B6A45ACD588826D15E583A95F5DD"
private_key = "-----BEGIN PRIVATE KEY-----"
[providers.platform_keys]
"5157F09EFDC096DE15EBE81A47057A72" = "-----BEGIN PUBLIC KEY-----"
"#;
        let c = Config::from_toml(file, |_| None).unwrap();
        let kinds: Vec<(&str, &str)> = c.providers.iter().map(|p| (p.name(), p.kind())).collect();
        assert_eq!(
            kinds,
            [
                ("sandbox", "sandbox"),
                ("stripe-eu", "stripe"),
                ("acme", "standard_webhooks"),
                ("alipay", "alipay"),
                ("wechat", "wechatpay")
            ]
        );
        let ProviderConfig::Stripe(stripe) = &c.providers[1] else {
            panic!("{:?}", c.providers[1]);
        };
        assert_eq!(stripe.api_key.expose_secret(), "sk_live_x");
        assert_eq!(stripe.previous_secrets[0].expose_secret(), "whsec_old");
        let ProviderConfig::StandardWebhooks(acme) = &c.providers[2] else {
            panic!("{:?}", c.providers[2]);
        };
        assert_eq!(acme.mapping.amount_format, "major");
        assert_eq!(acme.mapping.payment_no, "/data/payment_no");
        assert!(c.providers[3].query_on_unverified());
        let ProviderConfig::WechatPay(wechat) = &c.providers[4] else {
            panic!("{:?}", c.providers[4]);
        };
        assert_eq!(wechat.platform_keys.len(), 1);
        assert_eq!(wechat.mch_id.as_deref(), Some("1900000001"));

        let refused = |file: &str| Config::from_toml(file, |_| None).unwrap_err().to_string();
        let e = refused("[[providers]]\nname = \"a\"\nkind = \"stripe\"\nbase_url = \"\"\nmapping = {}\n");
        assert!(e.contains("mapping"), "{e}");
        let e = refused("[[providers]]\nname = \"a\"\nkind = \"paypal\"\nbase_url = \"\"\n");
        assert!(e.contains("paypal") && e.contains("kind"), "{e}");
        let e = refused("[[providers]]\nname = \"a\"\nkind = \"stripe\"\nbase_url = \"\"\nsecret = \"whsec_x\"\n");
        assert!(e.starts_with("providers.secret=`a`") && e.contains("api_key"), "{e}");
        let e = refused("[[providers]]\nname = \"a\"\nkind = \"sandbox\"\nbase_url = \"\"\nsecret = \"nope\"\n");
        assert!(e.starts_with("providers.secret=`a`") && e.contains("whsec_"), "{e}");
        let e = refused("[[providers]]\nname = \"A B\"\nkind = \"sandbox\"\nbase_url = \"\"\n");
        assert!(e.starts_with("providers=`A B (sandbox)`"), "{e}");
        let e = refused("[[providers]]\nname = \"a\"\nkind = \"sandbox\"\n");
        assert!(e.contains("base_url"), "{e}");
    }

    /// The environment's text over the file's numbers and booleans, key by
    /// key; the file's own values where the environment says nothing.
    #[test]
    fn environment_text_overrides_file_values() {
        let file = "refused_keep = 5\ncookie_secure = true\ncalls_per_account = 2\n";
        let c = Config::from_toml(file, |_| None).unwrap();
        assert_eq!((c.refused_keep, c.cookie_secure, c.calls_per_account), (5, true, 2));
        let c = Config::from_toml(file, |k| match k {
            "RECKON_COOKIE_SECURE" => Some("no".into()),
            "RECKON_CALLS_PER_ACCOUNT" => Some(" 8 ".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((c.refused_keep, c.cookie_secure, c.calls_per_account), (5, false, 8));
        let e = Config::from_toml("refused_keep = 0\n", |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("RECKON_REFUSED_KEEP=`0`"), "{e}");
        let e = Config::from_toml("refused_keep = [1]\n", |_| None)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("config file") && e.contains("refused_keep"), "{e}");
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
        assert_eq!(c.database_url.as_str(), "sqlite://data/reckon.db?mode=rwc");
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
        assert_eq!(c.providers[0].name(), "sandbox");
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
