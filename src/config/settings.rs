//! Each setting read from the layers and checked: defaults filled in, text
//! parsed, and a bad value named by its environment variable.

use super::{
    Config, ConfigError, DEFAULT_DATA_DIR, DEFAULT_LISTEN, DEFAULT_QUERY_SCHEDULE,
    DEFAULT_TIMEZONE, LogFormat, ProviderConfig, PullTime, parse_schedule, redact_url, sqlite_url,
};
use crate::domain::Severity;
use secrecy::SecretString;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The settings as the file and the environment give them, the
/// environment's over the file's. The file's keys are the variables' in
/// lowercase without `RECKON_` ([`VARIABLES`]).
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Layers {
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
    pull_times: Option<Text>,
    pull_catch_up_days: Option<Text>,
    statement_missing_hours: Option<Text>,
    statement_keep_days: Option<Text>,
    // The bank side.
    bank_window_days: Option<Text>,
    // Closing the day.
    close_allow_open: Option<Text>,
    // Ticket ageing and SLA.
    sla_hours: Option<Text>,
    // The day's edge
    cut_window_minutes: Option<Text>,
    // Sinks as endpoints.
    #[serde(default)]
    sinks: Vec<super::sinks::SinkSection>,
    outbox_max_attempts: Option<Text>,
    sink_failing_attempts: Option<Text>,
    sink_failing_minutes: Option<Text>,
    outbox_in_flight: Option<Text>,
    // Alert channels, file only (each with its secrets).
    #[serde(default)]
    alert_channels: Vec<crate::alerting::ChannelToml>,
    // Refused webhooks spiking
    refused_spike: Option<Text>,
}

/// The environment variable of each file key.
pub(super) const VARIABLES: [(&str, &str); 30] = [
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
    (
        "header_read_timeout_secs",
        "RECKON_HEADER_READ_TIMEOUT_SECS",
    ),
    ("idle_timeout_secs", "RECKON_IDLE_TIMEOUT_SECS"),
    ("body_read_timeout_secs", "RECKON_BODY_READ_TIMEOUT_SECS"),
    ("pull_times", "RECKON_PULL_TIMES"),
    ("pull_catch_up_days", "RECKON_PULL_CATCH_UP_DAYS"),
    ("statement_missing_hours", "RECKON_STATEMENT_MISSING_HOURS"),
    ("statement_keep_days", "RECKON_STATEMENT_KEEP_DAYS"),
    ("bank_window_days", "RECKON_BANK_WINDOW_DAYS"),
    ("close_allow_open", "RECKON_CLOSE_ALLOW_OPEN"),
    ("sla_hours", "RECKON_SLA_HOURS"),
    // The day's edge
    ("cut_window_minutes", "RECKON_CUT_WINDOW_MINUTES"),
    // Sinks as endpoints.
    ("outbox_max_attempts", "RECKON_OUTBOX_MAX_ATTEMPTS"),
    ("sink_failing_attempts", "RECKON_SINK_FAILING_ATTEMPTS"),
    ("sink_failing_minutes", "RECKON_SINK_FAILING_MINUTES"),
    ("outbox_in_flight", "RECKON_OUTBOX_IN_FLIGHT"),
    // Refused webhooks spiking
    ("refused_spike", "RECKON_REFUSED_SPIKE"),
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

/// Each setting read and checked; a bad one is named by its variable.
pub(super) fn checked(
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
    let query_schedule = parse_schedule(&schedule_text).ok_or_else(|| ConfigError::Invalid {
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
    let defaults = super::Limits::default();
    let secs = |key, given, default: std::time::Duration, max| {
        number(key, given, default.as_secs() as i64, max, "seconds")
            .map(|n| std::time::Duration::from_secs(n as u64))
    };
    let limits = super::Limits {
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

    let pull_times = pull_times(text(layers.pull_times), &providers)?;
    let pull_catch_up_days = number(
        "RECKON_PULL_CATCH_UP_DAYS",
        layers.pull_catch_up_days,
        7,
        366,
        "days",
    )?;
    let statement_missing_hours = number(
        "RECKON_STATEMENT_MISSING_HOURS",
        layers.statement_missing_hours,
        6,
        24 * 30,
        "hours",
    )?;
    let statement_keep_days = number(
        "RECKON_STATEMENT_KEEP_DAYS",
        layers.statement_keep_days,
        400,
        36_500,
        "days",
    )?;
    // Days either side of a payout's arrival its bank credit may be
    // booked; past them an unmatched payout or provider credit is a ticket.
    let bank_window_days = number(
        "RECKON_BANK_WINDOW_DAYS",
        layers.bank_window_days,
        3,
        60,
        "days",
    )?;
    // Closing the day — the highest severity a day may keep open and
    // still close by itself (NONE: only a day without open tickets).
    let close_given = text(layers.close_allow_open);
    let close_auto = !close_given
        .as_deref()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("OFF"));
    let close_allow_open = if close_auto {
        close_allow_open(close_given)?
    } else {
        None
    };

    // Ticket ageing and SLA: hours per class.
    let sla_text = text(layers.sla_hours).unwrap_or_default();
    let sla = crate::domain::Sla::parse(&sla_text).map_err(|hint| ConfigError::Invalid {
        key: "RECKON_SLA_HOURS",
        value: sla_text.clone(),
        hint,
    })?;

    // The day's edge
    let cut_window = cut_window(text(layers.cut_window_minutes), &providers)?;

    // The file's [[sinks]] beside RECKON_OUTBOX_SINKS's.
    let outbox_max_attempts = match layers.outbox_max_attempts {
        Some(given) => Some(number(
            "RECKON_OUTBOX_MAX_ATTEMPTS",
            Some(given),
            12,
            50,
            "attempts",
        )?),
        None => None,
    };
    let mut sinks = super::sinks::checked(
        layers.sinks,
        &outbox_sinks,
        outbox_max_attempts,
        number(
            "RECKON_SINK_FAILING_ATTEMPTS",
            layers.sink_failing_attempts,
            5,
            1000,
            "attempts",
        )?,
        number(
            "RECKON_SINK_FAILING_MINUTES",
            layers.sink_failing_minutes,
            30,
            7 * 24 * 60,
            "minutes",
        )?,
    )?;
    sinks.in_flight = number(
        "RECKON_OUTBOX_IN_FLIGHT",
        layers.outbox_in_flight,
        super::sinks::DEFAULT_IN_FLIGHT as i64,
        super::sinks::MAX_IN_FLIGHT as i64,
        "messages",
    )? as usize;
    // Alert channels, each checked; a name is a sink's, so unique.
    let mut alert_channels: Vec<crate::alerting::Channel> = Vec::new();
    for raw in &layers.alert_channels {
        let refused = |hint: String| ConfigError::Invalid {
            key: "alert_channels",
            value: raw.name.clone(),
            hint,
        };
        let channel = raw.check(&timezone).map_err(refused)?;
        if alert_channels.iter().any(|c| c.name == channel.name)
            || outbox_sinks.iter().any(|(sink, _)| *sink == channel.name)
            || sinks.named.iter().any(|sink| sink.name == channel.name)
        {
            return Err(refused(
                "a channel's name must differ from every other channel's and outbox sink's".into(),
            ));
        }
        alert_channels.push(channel);
    }
    // More than N verification failures of one provider in
    // M minutes raise webhooks_refused_spike (`N/M`, default 20/5).
    let refused_spike = refused_spike(text(layers.refused_spike))?;

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
        pull_times,
        pull_catch_up_days,
        statement_missing_hours,
        statement_keep_days,
        bank_window_days,
        close_allow_open,
        close_auto,
        sla,
        cut_window,
        sinks,
        alert_channels,
        refused_spike,
    })
}

/// `RECKON_REFUSED_SPIKE`, `N/M` — more than N verification
/// failures of one provider in M minutes (1 to 1440) raise an alert.
fn refused_spike(given: Option<String>) -> Result<super::RefusedSpike, ConfigError> {
    let Some(text) = given else {
        return Ok(super::RefusedSpike::default());
    };
    let parsed = text.trim().split_once('/').and_then(|(n, m)| {
        let n: i64 = n.trim().parse().ok()?;
        let m: i64 = m.trim().trim_end_matches('m').parse().ok()?;
        ((1..=1_000_000).contains(&n) && (1..=1440).contains(&m)).then_some((n, m))
    });
    let (failures, minutes) = parsed.ok_or_else(|| ConfigError::Invalid {
        key: "RECKON_REFUSED_SPIKE",
        value: text.clone(),
        hint: "expected N/M: more than N signature failures in M minutes, e.g. 20/5".into(),
    })?;
    Ok(super::RefusedSpike {
        failures,
        window_us: minutes * 60_000_000,
    })
}

/// `RECKON_CLOSE_ALLOW_OPEN`: NONE, LOW (the default), MEDIUM, HIGH or
/// CRITICAL.
fn close_allow_open(given: Option<String>) -> Result<Option<Severity>, ConfigError> {
    let Some(text) = given else {
        return Ok(Some(Severity::Low));
    };
    match text.trim().to_ascii_uppercase().as_str() {
        "NONE" => Ok(None),
        word => word
            .parse::<Severity>()
            .map(Some)
            .map_err(|_| ConfigError::Invalid {
                key: "RECKON_CLOSE_ALLOW_OPEN",
                value: text.clone(),
                hint: "expected OFF, NONE, LOW, MEDIUM, HIGH or CRITICAL: the highest severity of ticket a day may keep open and still close by itself".into(),
            }),
    }
}

/// `RECKON_CUT_WINDOW_MINUTES` — minutes from 0 (no window) to 360 for
/// every account, then `NAME=MINUTES` overrides, comma-separated: `30` or
/// `30,wechat=60`.
fn cut_window(
    given: Option<String>,
    providers: &[ProviderConfig],
) -> Result<super::CutWindow, ConfigError> {
    let mut window = super::CutWindow::default();
    let Some(given) = given else {
        return Ok(window);
    };
    let refused = |hint: String| ConfigError::Invalid {
        key: "RECKON_CUT_WINDOW_MINUTES",
        value: given.clone(),
        hint,
    };
    let minutes = |text: &str| {
        text.trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (0..=360).contains(m))
            .ok_or_else(|| refused(format!("{text:?}: expected minutes from 0 to 360")))
    };
    for item in given.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            None => window.minutes = minutes(item)?,
            Some((name, m)) => {
                let name = name.trim();
                if !providers.iter().any(|p| p.name() == name) {
                    return Err(refused(format!(
                        "{name:?} is not a configured provider account"
                    )));
                }
                window.per_provider.push((name.to_owned(), minutes(m)?));
            }
        }
    }
    Ok(window)
}

/// `RECKON_PULL_TIMES`: `NAME=ZONE@HOUR`, comma-separated — the zone a
/// configured account's statement days are cut in and the hour there its
/// statement is ready from, over its kind's default.
fn pull_times(
    given: Option<String>,
    providers: &[ProviderConfig],
) -> Result<Vec<PullTime>, ConfigError> {
    let Some(given) = given else {
        return Ok(Vec::new());
    };
    let refused = |hint: String| ConfigError::Invalid {
        key: "RECKON_PULL_TIMES",
        value: given.clone(),
        hint,
    };
    let mut times = Vec::new();
    for item in given.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let parsed = item.split_once('=').and_then(|(name, rest)| {
            let (zone, hour) = rest.trim().rsplit_once('@')?;
            let hour = hour
                .trim()
                .parse::<i8>()
                .ok()
                .filter(|h| (0..24).contains(h))?;
            Some((name.trim(), zone.trim(), hour))
        });
        let Some((name, zone, ready_hour)) = parsed else {
            return Err(refused(format!(
                "{item:?}: expected NAME=ZONE@HOUR such as wechat=Asia/Shanghai@10, comma-separated"
            )));
        };
        if !providers.iter().any(|p| p.name() == name) {
            return Err(refused(format!(
                "{name:?} is not a configured provider account"
            )));
        }
        if jiff::tz::TimeZone::get(zone).is_err() {
            return Err(refused(format!(
                "{zone:?} is not an IANA time zone name such as Asia/Shanghai or UTC"
            )));
        }
        times.push(PullTime {
            provider: name.to_owned(),
            zone: zone.to_owned(),
            ready_hour,
        });
    }
    Ok(times)
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
                hint: format!(
                    "a provider needs a name of lowercase letters, digits and '-', and kind = {}",
                    crate::providers::kinds_in_words()
                ),
            });
        }
        if let Some(Err(hint)) = p.fees().map(|f| f.check()) {
            return Err(ConfigError::Invalid {
                key: "providers.fees",
                value: p.name().to_owned(),
                hint,
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
