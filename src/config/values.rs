//! One setting each: read from its text, defaulted and checked, a bad value
//! named by its environment variable with what was expected.

use super::{
    ConfigError, DEFAULT_LISTEN, DEFAULT_QUERY_SCHEDULE, DEFAULT_TIMEZONE, LogFormat,
    ProviderConfig, PullTime, parse_schedule, redact_url, sqlite_url,
};
use crate::domain::Severity;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// A setting as text, as the environment gives every one: a file's
/// string, whole number or boolean as written.
pub(super) struct Text(pub(super) String);

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

pub(super) fn text(setting: Option<Text>) -> Option<String> {
    setting.map(|t| t.0)
}

pub(super) fn listen(given: Option<Text>) -> Result<SocketAddr, ConfigError> {
    let listen_text = text(given).unwrap_or_else(|| DEFAULT_LISTEN.into());
    listen_text
        .parse::<SocketAddr>()
        .map_err(|_| ConfigError::Invalid {
            key: "RECKON_LISTEN",
            value: listen_text.clone(),
            hint: "expected an address and port such as 127.0.0.1:3000".into(),
        })
}

/// `DATABASE_URL`, or the SQLite file in the data directory.
pub(super) fn database_url(given: Option<Text>, data_dir: &Path) -> Result<String, ConfigError> {
    match text(given) {
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
            Ok(url)
        }
        None => Ok(sqlite_url(&data_dir.join("reckon.db"))),
    }
}

pub(super) fn timezone(given: Option<Text>) -> Result<String, ConfigError> {
    let timezone = text(given).unwrap_or_else(|| DEFAULT_TIMEZONE.into());
    if jiff::tz::TimeZone::get(&timezone).is_err() {
        return Err(ConfigError::Invalid {
            key: "RECKON_TIMEZONE",
            value: timezone,
            hint: "expected an IANA time zone name such as Asia/Shanghai or UTC".into(),
        });
    }
    Ok(timezone)
}

pub(super) fn log_format(given: Option<Text>) -> Result<LogFormat, ConfigError> {
    match text(given).as_deref().unwrap_or("pretty") {
        "json" => Ok(LogFormat::Json),
        "pretty" => Ok(LogFormat::Pretty),
        other => Err(ConfigError::Invalid {
            key: "RECKON_LOG_FORMAT",
            value: other.into(),
            hint: "expected json or pretty".into(),
        }),
    }
}

/// `RECKON_OUTBOX_SINKS`: `name=url` pairs, comma-separated.
pub(super) fn env_sinks(given: Option<Text>) -> Result<Vec<(String, String)>, ConfigError> {
    let sinks_text = text(given).unwrap_or_default();
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
    Ok(outbox_sinks)
}

pub(super) fn outbox_secret(given: Option<Text>) -> Result<Option<String>, ConfigError> {
    let outbox_secret = text(given);
    if let Some(secret) = &outbox_secret
        && crate::providers::signing::Secret::parse(secret).is_err()
    {
        return Err(ConfigError::Invalid {
            key: "RECKON_OUTBOX_SECRET",
            value: "***".into(),
            hint: crate::providers::signing::WHSEC_HINT.into(),
        });
    }
    Ok(outbox_secret)
}

pub(super) fn query_schedule(given: Option<Text>) -> Result<Vec<i64>, ConfigError> {
    let schedule_text = text(given).unwrap_or_else(|| DEFAULT_QUERY_SCHEDULE.into());
    parse_schedule(&schedule_text).ok_or_else(|| ConfigError::Invalid {
        key: "RECKON_QUERY_SCHEDULE",
        value: schedule_text.clone(),
        hint: "expected comma-separated durations such as 1m,5m,30m,2h,12h".into(),
    })
}

/// The listener's limits: connections, and seconds for headers, idleness
/// and the body.
pub(super) fn limits(
    max_connections: Option<Text>,
    header_read: Option<Text>,
    idle: Option<Text>,
    body_read: Option<Text>,
) -> Result<super::Limits, ConfigError> {
    let defaults = super::Limits::default();
    let secs = |key, given, default: std::time::Duration, max| {
        number(key, given, default.as_secs() as i64, max, "seconds")
            .map(|n| std::time::Duration::from_secs(n as u64))
    };
    Ok(super::Limits {
        max_connections: number(
            "RECKON_MAX_CONNECTIONS",
            max_connections,
            defaults.max_connections as i64,
            1_000_000,
            "connections",
        )? as usize,
        header_read: secs(
            "RECKON_HEADER_READ_TIMEOUT_SECS",
            header_read,
            defaults.header_read,
            600,
        )?,
        idle: secs("RECKON_IDLE_TIMEOUT_SECS", idle, defaults.idle, 3600)?,
        body_read: secs(
            "RECKON_BODY_READ_TIMEOUT_SECS",
            body_read,
            defaults.body_read,
            600,
        )?,
    })
}

/// `RECKON_CLOSE_ALLOW_OPEN`: the severity a day may keep open and close by
/// itself, and whether days close by themselves at all (OFF: never).
pub(super) fn closing(given: Option<Text>) -> Result<(Option<Severity>, bool), ConfigError> {
    let close_given = text(given);
    let close_auto = !close_given
        .as_deref()
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("OFF"));
    if close_auto {
        Ok((close_allow_open(close_given)?, true))
    } else {
        Ok((None, false))
    }
}

/// The sinks: the file's `[[sinks]]` beside RECKON_OUTBOX_SINKS's, with the
/// attempts, failing spell and messages in flight they share.
pub(super) fn sinks(
    sections: Vec<super::sinks::SinkSection>,
    outbox_sinks: &[(String, String)],
    [max_attempts, failing_attempts, failing_minutes, in_flight]: [Option<Text>; 4],
) -> Result<super::sinks::Sinks, ConfigError> {
    let outbox_max_attempts = match max_attempts {
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
        sections,
        outbox_sinks,
        outbox_max_attempts,
        number(
            "RECKON_SINK_FAILING_ATTEMPTS",
            failing_attempts,
            5,
            1000,
            "attempts",
        )?,
        number(
            "RECKON_SINK_FAILING_MINUTES",
            failing_minutes,
            30,
            7 * 24 * 60,
            "minutes",
        )?,
    )?;
    sinks.in_flight = number(
        "RECKON_OUTBOX_IN_FLIGHT",
        in_flight,
        super::sinks::DEFAULT_IN_FLIGHT as i64,
        super::sinks::MAX_IN_FLIGHT as i64,
        "messages",
    )? as usize;
    Ok(sinks)
}

/// Alert channels, each checked; a name is a sink's, so unique.
pub(super) fn alert_channels(
    raws: &[super::ChannelToml],
    timezone: &str,
    outbox_sinks: &[(String, String)],
    sinks: &super::sinks::Sinks,
) -> Result<Vec<super::Channel>, ConfigError> {
    let mut alert_channels: Vec<super::Channel> = Vec::new();
    for raw in raws {
        let refused = |hint: String| ConfigError::Invalid {
            key: "alert_channels",
            value: raw.name.clone(),
            hint,
        };
        let channel = raw.check(timezone).map_err(refused)?;
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
    Ok(alert_channels)
}

/// `RECKON_REFUSED_SPIKE`, `N/M` — more than N verification
/// failures of one provider in M minutes (1 to 1440) raise an alert.
pub(super) fn refused_spike(given: Option<String>) -> Result<super::RefusedSpike, ConfigError> {
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
pub(super) fn close_allow_open(given: Option<String>) -> Result<Option<Severity>, ConfigError> {
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
pub(super) fn cut_window(
    given: Option<String>,
    is_provider: impl Fn(&str) -> bool,
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
                if !is_provider(name) {
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
pub(super) fn pull_times(
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
pub(super) fn providers(
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

/// `RECKON_BANK_WINDOW_DAYS`: days either side of a payout's arrival its
/// bank credit may be booked; past them an unmatched payout or provider
/// credit is a ticket.
pub(super) fn bank_window_days(given: Option<Text>) -> Result<i64, ConfigError> {
    number(
        "RECKON_BANK_WINDOW_DAYS",
        given,
        super::DEFAULT_BANK_WINDOW_DAYS,
        60,
        "days",
    )
}

/// `RECKON_STATEMENT_MISSING_HOURS`: how long after it should be ready a
/// statement still missing raises an alert.
pub(super) fn statement_missing_hours(given: Option<Text>) -> Result<i64, ConfigError> {
    number("RECKON_STATEMENT_MISSING_HOURS", given, 6, 24 * 30, "hours")
}

/// `RECKON_SLA_HOURS`: hours per ticket class (`CLASS=HOURS`, `*=HOURS`).
pub(super) fn sla_hours(given: Option<String>) -> Result<crate::domain::Sla, ConfigError> {
    let given = given.unwrap_or_default();
    crate::domain::Sla::parse(&given).map_err(|hint| ConfigError::Invalid {
        key: "RECKON_SLA_HOURS",
        value: given.clone(),
        hint,
    })
}

/// A whole number from 1 to `max`: the one given, else `default`;
/// anything else names the key.
pub(super) fn number(
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

pub(super) fn parse_bool(key: &'static str, value: &str) -> Result<bool, ConfigError> {
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

/// A site folder beside the binary, for a build that embeds none (a debug
/// build): `<exe>/site`, else `<exe>/../site` (the build layout,
/// `target/<profile>/reckon` + `target/site`).
pub fn site_beside_binary() -> Option<PathBuf> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let beside = exe_dir.join("site");
    if beside.is_dir() {
        return Some(beside);
    }
    // target/debug/deps/<test binary> and target/debug/reckon both reach target/site.
    for up in exe_dir.ancestors().skip(1).take(2) {
        let candidate = up.join("site");
        if candidate.is_dir() {
            return Some(candidate);
        }
    }
    None
}

/// The console's sessions and sign-in lock-out: `RECKON_SESSION_IDLE_MINUTES`
/// (default 15), `RECKON_SESSION_LIFETIME_HOURS` (default 12),
/// `RECKON_LOGIN_MAX_FAILURES` (default 5) and `RECKON_LOCKOUT_MINUTES`
/// (default 30, never less).
pub(super) fn sign_in(
    [idle, lifetime, max_failures, lockout]: [Option<Text>; 4],
) -> Result<super::SignIn, ConfigError> {
    const MIN: i64 = 60_000_000;
    let lockout_given = text(lockout);
    let lockout_minutes = match &lockout_given {
        None => super::SignIn::default().lock_out_us / MIN,
        Some(given) => given
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (MIN_LOCKOUT_MINUTES..=7 * 24 * 60).contains(m))
            .ok_or_else(|| ConfigError::Invalid {
                key: "RECKON_LOCKOUT_MINUTES",
                value: given.clone(),
                hint: format!(
                    "expected minutes from {MIN_LOCKOUT_MINUTES} to {}: a username or address locked after repeated failed sign-ins stays locked at least {MIN_LOCKOUT_MINUTES} minutes",
                    7 * 24 * 60
                ),
            })?,
    };
    Ok(super::SignIn {
        idle_us: number("RECKON_SESSION_IDLE_MINUTES", idle, 15, 24 * 60, "minutes")? * MIN,
        lifetime_us: number(
            "RECKON_SESSION_LIFETIME_HOURS",
            lifetime,
            12,
            30 * 24,
            "hours",
        )? * 60
            * MIN,
        max_failures: number(
            "RECKON_LOGIN_MAX_FAILURES",
            max_failures,
            5,
            100,
            "failed sign-ins",
        )?,
        lock_out_us: lockout_minutes * MIN,
        mfa: super::MfaRoles::default(),
    })
}

/// `RECKON_MFA_ROLES`: the roles that sign in with a second factor, by
/// name and comma-separated, or `none`; supervisors and admins unless set.
pub(super) fn mfa_roles(given: Option<Text>) -> Result<super::MfaRoles, ConfigError> {
    let Some(given) = text(given) else {
        return Ok(super::MfaRoles {
            supervisor: true,
            admin: true,
            ..Default::default()
        });
    };
    let mut roles = super::MfaRoles {
        given: true,
        ..Default::default()
    };
    let bad = |value: &str| ConfigError::Invalid {
        key: "RECKON_MFA_ROLES",
        value: value.to_owned(),
        hint: "expected `none` or roles separated by commas, each of operator, supervisor, admin"
            .into(),
    };
    if given.trim().eq_ignore_ascii_case("none") {
        return Ok(roles);
    }
    for name in given.split(',').map(|n| n.trim().to_ascii_lowercase()) {
        match name.as_str() {
            "operator" => roles.operator = true,
            "supervisor" => roles.supervisor = true,
            "admin" => roles.admin = true,
            _ => return Err(bad(&given)),
        }
    }
    Ok(roles)
}

/// The shortest sign-in lock-out allowed.
const MIN_LOCKOUT_MINUTES: i64 = 30;

/// `RECKON_TRUSTED_PROXIES`: addresses or networks (`10.0.0.5`,
/// `10.0.0.0/8`, `::1`), separated by commas; empty trusts none.
pub(super) fn trusted_proxies(given: Option<Text>) -> Result<Vec<ipnet::IpNet>, ConfigError> {
    let Some(given) = text(given) else {
        return Ok(Vec::new());
    };
    given
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<ipnet::IpNet>()
                .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                .map_err(|_| ConfigError::Invalid {
                    key: "RECKON_TRUSTED_PROXIES",
                    value: s.to_owned(),
                    hint: "expected addresses or networks separated by commas, such as 127.0.0.1, 10.0.0.0/8".into(),
                })
        })
        .collect()
}
