//! Each setting read from the layers and checked: defaults filled in, text
//! parsed, and a bad value named by its environment variable.

use super::values::{self, Text, text};
use super::{Config, ConfigError, DEFAULT_DATA_DIR, ProviderConfig};
use secrecy::SecretString;
use serde::Deserialize;
use std::path::PathBuf;

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
    // The matching rules.
    match_keys: Option<Text>,
    match_window_hours: Option<Text>,
    amount_tolerance: Option<Text>,
    // Sinks as endpoints.
    #[serde(default)]
    sinks: Vec<super::sinks::SinkSection>,
    outbox_max_attempts: Option<Text>,
    sink_failing_attempts: Option<Text>,
    sink_failing_minutes: Option<Text>,
    outbox_in_flight: Option<Text>,
    // Alert channels, file only (each with its secrets).
    #[serde(default)]
    alert_channels: Vec<super::ChannelToml>,
    // Refused webhooks spiking
    refused_spike: Option<Text>,
    // Console sessions and the sign-in lock-out.
    session_idle_minutes: Option<Text>,
    session_lifetime_hours: Option<Text>,
    login_max_failures: Option<Text>,
    lockout_minutes: Option<Text>,
    // The second factor's roles.
    mfa_roles: Option<Text>,
    // The reverse proxies whose X-Forwarded-For is believed.
    trusted_proxies: Option<Text>,
    // Sign-in through an OpenID Provider, file only (its secret also by env).
    oidc: Option<super::oidc::OidcSection>,
}

/// The environment variable of each file key.
pub(super) const VARIABLES: [(&str, &str); 39] = [
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
    // The matching rules.
    ("match_keys", "RECKON_MATCH_KEYS"),
    ("match_window_hours", "RECKON_MATCH_WINDOW_HOURS"),
    ("amount_tolerance", "RECKON_AMOUNT_TOLERANCE"),
    // Sinks as endpoints.
    ("outbox_max_attempts", "RECKON_OUTBOX_MAX_ATTEMPTS"),
    ("sink_failing_attempts", "RECKON_SINK_FAILING_ATTEMPTS"),
    ("sink_failing_minutes", "RECKON_SINK_FAILING_MINUTES"),
    ("outbox_in_flight", "RECKON_OUTBOX_IN_FLIGHT"),
    // Refused webhooks spiking
    ("refused_spike", "RECKON_REFUSED_SPIKE"),
    // Console sessions and the sign-in lock-out.
    ("session_idle_minutes", "RECKON_SESSION_IDLE_MINUTES"),
    ("session_lifetime_hours", "RECKON_SESSION_LIFETIME_HOURS"),
    ("login_max_failures", "RECKON_LOGIN_MAX_FAILURES"),
    ("lockout_minutes", "RECKON_LOCKOUT_MINUTES"),
    ("mfa_roles", "RECKON_MFA_ROLES"),
    ("trusted_proxies", "RECKON_TRUSTED_PROXIES"),
];

/// Each setting read and checked; a bad one is named by its variable.
pub(super) fn checked(
    layers: Layers,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let listen = values::listen(layers.listen)?;

    let data_dir = text(layers.data_dir)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR));

    let database_url = values::database_url(layers.database_url, &data_dir)?;
    let timezone = values::timezone(layers.timezone)?;
    let log_format = values::log_format(layers.log_format)?;

    let site_dir = text(layers.site_dir).map(PathBuf::from);

    let cookie_secure = match text(layers.cookie_secure) {
        Some(v) => values::parse_bool("RECKON_COOKIE_SECURE", &v)?,
        None => false,
    };

    let providers = values::providers(layers.providers, &env)?;

    let outbox_sinks = values::env_sinks(layers.outbox_sinks)?;
    let outbox_secret = values::outbox_secret(layers.outbox_secret)?;
    let query_schedule = values::query_schedule(layers.query_schedule)?;
    let refused_keep = values::number(
        "RECKON_REFUSED_KEEP",
        layers.refused_keep,
        10_000,
        10_000_000,
        "rows",
    )?;
    let callback_max_tries = values::number(
        "RECKON_CALLBACK_MAX_TRIES",
        layers.callback_max_tries,
        10,
        100,
        "tries",
    )?;
    let calls_per_account = values::number(
        "RECKON_CALLS_PER_ACCOUNT",
        layers.calls_per_account,
        4,
        64,
        "calls",
    )? as usize;
    let limits = values::limits(
        layers.max_connections,
        layers.header_read_timeout_secs,
        layers.idle_timeout_secs,
        layers.body_read_timeout_secs,
    )?;

    let pull_times = values::pull_times(text(layers.pull_times), &providers)?;
    let pull_catch_up_days = values::number(
        "RECKON_PULL_CATCH_UP_DAYS",
        layers.pull_catch_up_days,
        7,
        366,
        "days",
    )?;
    let statement_missing_hours = values::statement_missing_hours(layers.statement_missing_hours)?;
    let statement_keep_days = values::number(
        "RECKON_STATEMENT_KEEP_DAYS",
        layers.statement_keep_days,
        400,
        36_500,
        "days",
    )?;
    // Days either side of a payout's arrival its bank credit may be
    // booked; past them an unmatched payout or provider credit is a ticket.
    let bank_window_days = values::bank_window_days(layers.bank_window_days)?;
    // Closing the day — the highest severity a day may keep open and
    // still close by itself (NONE: only a day without open tickets).
    let (close_allow_open, close_auto) = values::closing(layers.close_allow_open)?;

    // Ticket ageing and SLA: hours per class.
    let sla = values::sla_hours(text(layers.sla_hours))?;

    // The day's edge
    let cut_window = values::cut_window(text(layers.cut_window_minutes), |name| {
        providers.iter().any(|p| p.name() == name)
    })?;

    // The matching rules: keys in order, the payment_no window, the
    // amount tolerances.
    let matching = super::match_rules::rules(
        text(layers.match_keys),
        text(layers.match_window_hours),
        text(layers.amount_tolerance),
        |name| providers.iter().any(|p| p.name() == name),
    )?;

    // The file's [[sinks]] beside RECKON_OUTBOX_SINKS's.
    let sinks = values::sinks(
        layers.sinks,
        &outbox_sinks,
        [
            layers.outbox_max_attempts,
            layers.sink_failing_attempts,
            layers.sink_failing_minutes,
            layers.outbox_in_flight,
        ],
    )?;
    let alert_channels =
        values::alert_channels(&layers.alert_channels, &timezone, &outbox_sinks, &sinks)?;
    // More than N verification failures of one provider in
    // M minutes raise webhooks_refused_spike (`N/M`, default 20/5).
    let refused_spike = values::refused_spike(text(layers.refused_spike))?;
    // Console sessions: idle timeout, lifetime; the sign-in lock-out.
    let mut sign_in = values::sign_in([
        layers.session_idle_minutes,
        layers.session_lifetime_hours,
        layers.login_max_failures,
        layers.lockout_minutes,
    ])?;
    sign_in.mfa = values::mfa_roles(layers.mfa_roles)?;

    let oidc = super::oidc::oidc(layers.oidc, &env)?;
    let trusted_proxies = values::trusted_proxies(layers.trusted_proxies)?;

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
        matching,
        sinks,
        alert_channels,
        refused_spike,
        sign_in,
        oidc,
        trusted_proxies,
    })
}
