//! Outbox sinks as endpoints: the `[[sinks]]` sections of the file — each a
//! name, URL, event-type filter, signing secret (and the previous one
//! during a rotation), timeout and retry schedule — and the older
//! `RECKON_OUTBOX_SINKS` list beside them. Every value is checked at start;
//! a bad one is refused naming the sink and the key.

use super::{ConfigError, parse_schedule};
use secrecy::SecretString;
use serde::Deserialize;
use std::time::Duration;

/// The default retry schedule, close to Svix's: after the first attempt
/// fails, again 5 s later, then 5 min, 30 min, 2 h, 5 h, 10 h and 10 h
/// later — eight attempts over about 27 h, then DEAD.
pub const DEFAULT_SINK_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,10h";

/// A sink's answer is awaited this long unless its `timeout` says otherwise.
pub const DEFAULT_SINK_TIMEOUT: Duration = Duration::from_secs(10);

/// One `[[sinks]]` section as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SinkSection {
    name: String,
    url: String,
    #[serde(default)]
    event_types: Vec<String>,
    secret: Option<String>,
    previous_secret: Option<String>,
    timeout: Option<String>,
    schedule: Option<Vec<String>>,
    in_flight: Option<usize>,
}

/// A sink, checked. Its secrets never print.
#[derive(Clone, Debug)]
pub struct SinkConfig {
    pub name: String,
    pub url: String,
    /// Exact event types or prefixes (`payment.*`); empty: every event.
    pub event_types: Vec<String>,
    /// `whsec_…`; None: `RECKON_OUTBOX_SECRET`'s.
    pub secret: Option<SecretString>,
    /// Also signed with during a rotation, so a receiver still holding
    /// it keeps verifying.
    pub previous_secret: Option<SecretString>,
    pub timeout: Duration,
    /// Delays after each failed attempt, microseconds; past the last, DEAD.
    pub schedule: Vec<i64>,
    /// Messages sent to it at once; None: `RECKON_OUTBOX_IN_FLIGHT`'s.
    pub in_flight: Option<usize>,
}

/// Everything about sinks the configuration holds besides
/// `RECKON_OUTBOX_SINKS`'s list.
#[derive(Clone, Debug)]
pub struct Sinks {
    /// The file's `[[sinks]]`.
    pub named: Vec<SinkConfig>,
    /// `RECKON_OUTBOX_MAX_ATTEMPTS`: when set, the sinks of
    /// `RECKON_OUTBOX_SINKS` keep the old backoff (10 s doubling, at most
    /// 1 h) for this many attempts; unset, they get the default schedule.
    pub max_attempts: Option<i64>,
    /// A sink is failing after this many attempts failed in a row
    /// (`RECKON_SINK_FAILING_ATTEMPTS`, default 5)…
    pub failing_attempts: i64,
    /// …or when its failures go on this long without a delivery
    /// (`RECKON_SINK_FAILING_MINUTES`, default 30).
    pub failing_minutes: i64,
    /// Messages sent at once to each sink that does not say
    /// (`RECKON_OUTBOX_IN_FLIGHT`, default [`DEFAULT_IN_FLIGHT`]).
    pub in_flight: usize,
}

/// Messages in flight per sink by default: what a fulfilment endpoint
/// behind a small pool of workers takes without queueing long.
pub const DEFAULT_IN_FLIGHT: usize = 32;

/// The most messages in flight a sink may be given.
pub const MAX_IN_FLIGHT: usize = 256;

impl Default for Sinks {
    fn default() -> Self {
        Sinks {
            named: Vec::new(),
            max_attempts: None,
            failing_attempts: 5,
            failing_minutes: 30,
            in_flight: DEFAULT_IN_FLIGHT,
        }
    }
}

/// The old backoff as a schedule: 10 s doubling per attempt, at most 1 h,
/// `max_attempts` attempts in all.
pub fn legacy_schedule(max_attempts: i64) -> Vec<i64> {
    (1..max_attempts)
        .map(|n| (10_000_000i64 << n.min(9)).min(3_600_000_000))
        .collect()
}

/// A sink's name: letters, digits, '-', '_' and '.' (it is a path segment
/// of `/api/v1/sinks/{name}` and the key of its deliveries).
fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// An event-type filter entry: an exact type (`payment.succeeded`), a
/// prefix (`payment.*`) or `*`.
fn event_type_ok(t: &str) -> bool {
    let body = t
        .strip_suffix(".*")
        .unwrap_or(if t == "*" { "x" } else { t });
    !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

fn refused(sink: &str, key: &str, value: String, hint: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key: "sinks",
        value: format!("{sink}.{key} = {value}"),
        hint: hint.into(),
    }
}

fn url_checked(sink: &str, url: &str) -> Result<String, ConfigError> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(url.to_owned()),
        _ => Err(refused(
            sink,
            "url",
            url.to_owned(),
            "expected an http:// or https:// URL such as https://shop.example/hooks/reckon",
        )),
    }
}

fn secret_checked(
    sink: &str,
    key: &str,
    text: Option<String>,
) -> Result<Option<SecretString>, ConfigError> {
    let Some(text) = text else { return Ok(None) };
    if !text.starts_with("whsec_") || crate::providers::signing::Secret::parse(&text).is_err() {
        return Err(refused(
            sink,
            key,
            "***".into(),
            crate::providers::signing::WHSEC_HINT,
        ));
    }
    Ok(Some(text.into()))
}

/// The file's sections checked, and the env list's names beside them:
/// every name once.
pub(super) fn checked(
    sections: Vec<SinkSection>,
    env_sinks: &[(String, String)],
    max_attempts: Option<i64>,
    failing_attempts: i64,
    failing_minutes: i64,
) -> Result<Sinks, ConfigError> {
    let mut named = Vec::new();
    let mut seen: Vec<&str> = env_sinks.iter().map(|(n, _)| n.as_str()).collect();
    for s in &sections {
        if !name_ok(&s.name) {
            return Err(refused(
                &s.name,
                "name",
                s.name.clone(),
                "a sink needs a name of letters, digits, '-', '_' and '.' (at most 64)",
            ));
        }
        if seen.contains(&s.name.as_str()) {
            return Err(refused(
                &s.name,
                "name",
                s.name.clone(),
                "two sinks of that name (in [[sinks]] or RECKON_OUTBOX_SINKS): each needs its own",
            ));
        }
        seen.push(&s.name);
    }
    for s in sections {
        let url = url_checked(&s.name, &s.url)?;
        if let Some(bad) = s.event_types.iter().find(|t| !event_type_ok(t)) {
            return Err(refused(
                &s.name,
                "event_types",
                bad.clone(),
                "expected event types such as \"payment.succeeded\", prefixes such as \"payment.*\", or \"*\"",
            ));
        }
        let timeout = match &s.timeout {
            None => DEFAULT_SINK_TIMEOUT,
            Some(t) => parse_schedule(t)
                .filter(|l| l.len() == 1 && l[0] <= 60_000_000)
                .map(|l| Duration::from_micros(l[0] as u64))
                .ok_or_else(|| {
                    refused(
                        &s.name,
                        "timeout",
                        t.clone(),
                        "expected one duration from 1s to 60s such as \"10s\"",
                    )
                })?,
        };
        let schedule = match &s.schedule {
            None => parse_schedule(DEFAULT_SINK_SCHEDULE).expect("the default parses"),
            Some(steps) => steps
                .iter()
                .map(|step| {
                    parse_schedule(step)
                        .filter(|l| l.len() == 1 && l[0] <= 7 * 86_400_000_000)
                        .map(|l| l[0])
                        .ok_or_else(|| {
                            refused(
                                &s.name,
                                "schedule",
                                step.clone(),
                                "expected durations up to 7 days such as [\"5s\", \"5m\", \"2h\"]",
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?,
        };
        if schedule.len() > 50 {
            return Err(refused(
                &s.name,
                "schedule",
                format!("{} steps", schedule.len()),
                "at most 50 retries",
            ));
        }
        if let Some(n) = s.in_flight
            && !(1..=MAX_IN_FLIGHT).contains(&n)
        {
            return Err(refused(
                &s.name,
                "in_flight",
                n.to_string(),
                format!("expected a number of messages from 1 to {MAX_IN_FLIGHT}"),
            ));
        }
        named.push(SinkConfig {
            in_flight: s.in_flight,
            secret: secret_checked(&s.name, "secret", s.secret)?,
            previous_secret: secret_checked(&s.name, "previous_secret", s.previous_secret)?,
            name: s.name,
            url,
            event_types: s.event_types,
            timeout,
            schedule,
        });
    }
    if let Some((name, _)) = env_sinks.iter().find(|(n, _)| !name_ok(n)) {
        return Err(ConfigError::Invalid {
            key: "RECKON_OUTBOX_SINKS",
            value: name.clone(),
            hint: "a sink needs a name of letters, digits, '-', '_' and '.' (at most 64)".into(),
        });
    }
    Ok(Sinks {
        named,
        max_attempts,
        failing_attempts,
        failing_minutes,
        in_flight: DEFAULT_IN_FLIGHT,
    })
}
