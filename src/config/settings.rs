//! Each setting read from the layers and checked: defaults filled in, text
//! parsed, and a bad value named by its environment variable.

use super::values::{self, Text, text};
use super::{Config, ConfigError, DEFAULT_DATA_DIR, ProviderConfig};
use secrecy::SecretString;
use serde::Deserialize;
use std::path::PathBuf;

/// The settings as the file and the environment give them, the
/// environment's over the file's. The file's keys are the variables' in
/// lowercase without `RECKON_` ([`SETTINGS`]).
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

/// One setting: its environment variable, its key in the file (`None`:
/// the environment only), its default and what it means, in Markdown. The
/// loader reads the keys from here; `reckon docs config` writes the book's
/// configuration reference from the same rows, so neither can drift.
pub struct Setting {
    pub variable: &'static str,
    pub key: Option<&'static str>,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every setting, in the order the reference lists them. The file's keys
/// are the variables' in lowercase without `RECKON_`.
pub const SETTINGS: &[Setting] = &[
    Setting {
        variable: "RECKON_CONFIG",
        key: None,
        default: "none",
        meaning: "path of the TOML file",
    },
    Setting {
        variable: "RECKON_LISTEN",
        key: Some("listen"),
        default: "`127.0.0.1:3000`",
        meaning: "address and port to serve on",
    },
    Setting {
        variable: "DATABASE_URL",
        key: Some("database_url"),
        default: "`sqlite://$RECKON_DATA_DIR/reckon.db`",
        meaning: "`sqlite://PATH` or `postgres://USER:PASS@HOST:PORT/DB`",
    },
    Setting {
        variable: "RECKON_DATA_DIR",
        key: Some("data_dir"),
        default: "`data` (relative to the working directory)",
        meaning: "where the SQLite file lives",
    },
    Setting {
        variable: "RECKON_TIMEZONE",
        key: Some("timezone"),
        default: "`UTC`",
        meaning: "business time zone (IANA name, e.g. `Asia/Shanghai`); business days are cut there",
    },
    Setting {
        variable: "RECKON_LOG_FORMAT",
        key: Some("log_format"),
        default: "`pretty`",
        meaning: "`json` for one JSON object per line, `pretty` for people",
    },
    Setting {
        variable: "RECKON_SITE_DIR",
        key: Some("site_dir"),
        default: "the console built into the binary (a debug build, which embeds none: `site` beside it, else `../site`)",
        meaning: "a compiled console folder (`pkg/` and assets) served instead of the embedded one (development, tests)",
    },
    Setting {
        variable: "RECKON_COOKIE_SECURE",
        key: Some("cookie_secure"),
        default: "`false`",
        meaning: "mark the session cookie `Secure` (set it behind HTTPS)",
    },
    Setting {
        variable: "RECKON_SANDBOX_URL",
        key: None,
        default: "none",
        meaning: "the API base URL of a sandbox provider account named `sandbox`, with `RECKON_SANDBOX_SECRET`",
    },
    Setting {
        variable: "RECKON_SANDBOX_SECRET",
        key: None,
        default: "none",
        meaning: "the `whsec_…` webhook secret of the sandbox provider account named `sandbox`, with `RECKON_SANDBOX_URL`",
    },
    Setting {
        variable: "RECKON_OUTBOX_SINKS",
        key: Some("outbox_sinks"),
        default: "none",
        meaning: "where outbox messages go: `fulfilment=http://host/path,accounting=http://…` — every event type, the default schedule (see [Sinks](../outbox/sinks.md); the file's `[[sinks]]` say more)",
    },
    Setting {
        variable: "RECKON_OUTBOX_SECRET",
        key: Some("outbox_secret"),
        default: "random per start",
        meaning: "`whsec_…` secret that signs outbox messages (set it so consumers can verify); a `[[sinks]]` entry without its own `secret` uses it too",
    },
    Setting {
        variable: "RECKON_OUTBOX_MAX_ATTEMPTS",
        key: Some("outbox_max_attempts"),
        default: "unset",
        meaning: "when set (1 to 50), the sinks of `RECKON_OUTBOX_SINKS` keep the old backoff — 20 s doubling to at most 1 h — for this many attempts in all; unset, they get the default schedule",
    },
    Setting {
        variable: "RECKON_OUTBOX_IN_FLIGHT",
        key: Some("outbox_in_flight"),
        default: "`32`",
        meaning: "messages sent at once to each sink (1 to 256) that does not set its own `in_flight`; see \"How messages are sent\" under [Sinks](../outbox/sinks.md)",
    },
    Setting {
        variable: "RECKON_SINK_FAILING_ATTEMPTS",
        key: Some("sink_failing_attempts"),
        default: "`5`",
        meaning: "a sink is *failing* once this many attempts in a row failed, or once it has been failing `RECKON_SINK_FAILING_MINUTES` without one delivery; either raises one `sink_failing` alert",
    },
    Setting {
        variable: "RECKON_SINK_FAILING_MINUTES",
        key: Some("sink_failing_minutes"),
        default: "`30`",
        meaning: "a sink is *failing* once it has been failing this many minutes without one delivery, or once `RECKON_SINK_FAILING_ATTEMPTS` attempts in a row failed; either raises one `sink_failing` alert",
    },
    Setting {
        variable: "RECKON_QUERY_SCHEDULE",
        key: Some("query_schedule"),
        default: "`1m,5m,30m,2h,12h`",
        meaning: "status-query delays after a create; after the last, the payment is flagged awaiting reconciliation",
    },
    Setting {
        variable: "RECKON_REFUSED_KEEP",
        key: Some("refused_keep"),
        default: "`10000`",
        meaning: "refused webhooks kept per provider for audit (`refused_callbacks`: reason, headers, first 4 KiB); at most 600 a minute are stored, the rest only counted in `callback_refused_total`",
    },
    Setting {
        variable: "RECKON_CALLBACK_MAX_TRIES",
        key: Some("callback_max_tries"),
        default: "`10`",
        meaning: "processing tries of a stored callback (retried after 2, 4, 8 … 64 minutes) before it is DEAD; a DEAD one waits for a person to replay it",
    },
    Setting {
        variable: "RECKON_CALLS_PER_ACCOUNT",
        key: Some("calls_per_account"),
        default: "`4`",
        meaning: "provider calls (creates, status queries, refunds) running at once per provider account; each has a lease of its own, so a provider that hangs to its timeout holds up only its own account's calls, never the outbox, callback retries or other accounts",
    },
    Setting {
        variable: "RECKON_MAX_CONNECTIONS",
        key: Some("max_connections"),
        default: "`10000`",
        meaning: "HTTP connections open at once (capped below the open-file limit, which Reckon raises to its hard limit at start). At the limit the connection idle longest is closed to make room; only when every one has a request in progress is the new one shed. Either is logged (at most once a second) and counted in `reckon_connections_shed_total`",
    },
    Setting {
        variable: "RECKON_HEADER_READ_TIMEOUT_SECS",
        key: Some("header_read_timeout_secs"),
        default: "`10`",
        meaning: "a request's headers must arrive within this, however slowly they trickle",
    },
    Setting {
        variable: "RECKON_IDLE_TIMEOUT_SECS",
        key: Some("idle_timeout_secs"),
        default: "`60`",
        meaning: "a connection with no request in progress that moves no bytes for this long is closed (idle keep-alive, or a client that never sends)",
    },
    Setting {
        variable: "RECKON_BODY_READ_TIMEOUT_SECS",
        key: Some("body_read_timeout_secs"),
        default: "`10`",
        meaning: "a request body that stops arriving for this long ends its request with `408` (a whole request has 30 s at most)",
    },
    Setting {
        variable: "RECKON_PULL_TIMES",
        key: Some("pull_times"),
        default: "each kind's own",
        meaning: "per provider account, `NAME=ZONE@HOUR` (comma-separated): the zone its statement days are cut in and the hour there its statement is ready from. Defaults: WeChat Pay `Asia/Shanghai@10`, Alipay `Asia/Shanghai@9`, others `RECKON_TIMEZONE@2`",
    },
    Setting {
        variable: "RECKON_PULL_CATCH_UP_DAYS",
        key: Some("pull_catch_up_days"),
        default: "`7`",
        meaning: "days back (yesterday's the latest, once ready) in which every day without a completed run is pulled, oldest first",
    },
    Setting {
        variable: "RECKON_STATEMENT_MISSING_HOURS",
        key: Some("statement_missing_hours"),
        default: "`6`",
        meaning: "a statement still missing this many hours after its ready time raises one `statement_missing` alert for its provider and day",
    },
    Setting {
        variable: "RECKON_STATEMENT_KEEP_DAYS",
        key: Some("statement_keep_days"),
        default: "`400`",
        meaning: "days a run's original statement file is kept (gzipped, in the database) before the retention pass deletes it",
    },
    Setting {
        variable: "RECKON_BANK_WINDOW_DAYS",
        key: Some("bank_window_days"),
        default: "`3`",
        meaning: "days either side of a payout's arrival date in which its bank credit may be booked; past them an unmatched payout is `PAYOUT_MISSING` and an unmatched provider credit `BANK_ONLY` (see [The bank side](../reconciliation/bank.md))",
    },
    Setting {
        variable: "RECKON_CLOSE_ALLOW_OPEN",
        key: Some("close_allow_open"),
        default: "`LOW`",
        meaning: "the highest severity of ticket a provider's day may still have open and be closed by itself after its run: `NONE` (no open ticket at all), `LOW`, `MEDIUM`, `HIGH` or `CRITICAL`; `OFF`: days close only by a supervisor (see [Fees and net; closing the day](../reconciliation/fees-and-closing.md))",
    },
    Setting {
        variable: "RECKON_SLA_HOURS",
        key: Some("sla_hours"),
        default: "24 h for `PAYOUT_LATE`, `LOCAL_ONLY`, `PROVIDER_ONLY` and `PAID_AFTER_CLOSE`; 48 h for the amount, currency, refund, duplicate and one-to-many mismatches; 72 h for every other class",
        meaning: "the hours a ticket of each class may stay open before it is overdue and raises one `sla_overdue` alert: `CLASS=HOURS` items, comma-separated, over the defaults, and `*=HOURS` for every class not named (e.g. `LOCAL_ONLY=8,*=48`); see [Ageing and SLA](../reconciliation/ageing-sla.md)",
    },
    Setting {
        variable: "RECKON_MATCH_KEYS",
        key: Some("match_keys"),
        default: "`txn, payment_no`",
        meaning: "the keys that find a statement row's payment, in order (see [Matching rules and the dry run](../reconciliation/matching-rules.md)): `txn`, `payment_no`, `reference`, `amount`; `txn` is required, `amount` comes last",
    },
    Setting {
        variable: "RECKON_MATCH_WINDOW_HOURS",
        key: Some("match_window_hours"),
        default: "`72`",
        meaning: "how near a row found by `payment_no` must be to its payment's creation (0–720; `account=HOURS` per account)",
    },
    Setting {
        variable: "RECKON_AMOUNT_TOLERANCE",
        key: Some("amount_tolerance"),
        default: "none",
        meaning: "`account:CURRENCY=MINOR` (`*:CURRENCY` for every account): a difference up to that is a LOW AMOUNT_MISMATCH offering ACCEPT, never a match",
    },
    Setting {
        variable: "RECKON_CUT_WINDOW_MINUTES",
        key: Some("cut_window_minutes"),
        default: "`30`",
        meaning: "the day's edge: a payment or refund finished this many minutes (0 to 360; 0: none) before its business day's cut, or after its start, and missing from the day's statement is *in transit* to the neighbouring day's statement, not yet LOCAL_ONLY. Per account: `30,wechat=60` (a number for all, then `NAME=MINUTES`)",
    },
    Setting {
        variable: "RECKON_SESSION_IDLE_MINUTES",
        key: Some("session_idle_minutes"),
        default: "`15`",
        meaning: "a console session unused this long ends (1 to 1440)",
    },
    Setting {
        variable: "RECKON_SESSION_LIFETIME_HOURS",
        key: Some("session_lifetime_hours"),
        default: "`12`",
        meaning: "a console session ends this long after sign-in, however busy (1 to 720)",
    },
    Setting {
        variable: "RECKON_LOGIN_MAX_FAILURES",
        key: Some("login_max_failures"),
        default: "`5`",
        meaning: "failed sign-ins of one username (in 15 minutes) that lock it (1 to 100); an address is locked after 20",
    },
    Setting {
        variable: "RECKON_LOCKOUT_MINUTES",
        key: Some("lockout_minutes"),
        default: "`30`",
        meaning: "how long a lock-out lasts (30 to 10080: never less than 30)",
    },
    Setting {
        variable: "RECKON_TRUSTED_PROXIES",
        key: Some("trusted_proxies"),
        default: "none",
        meaning: "reverse proxies (addresses or networks, comma-separated: `127.0.0.1, 10.0.0.0/8`) whose `X-Forwarded-For` names the client (see [Security](../security.md))",
    },
    Setting {
        variable: "RECKON_MFA_ROLES",
        key: Some("mfa_roles"),
        default: "`supervisor,admin`",
        meaning: "roles that must sign in with a second factor (TOTP), comma-separated, or `none`; `serve --demo` uses `none` unless it is set (see [Security](../security.md))",
    },
    Setting {
        variable: "RECKON_OIDC_CLIENT_SECRET",
        key: None,
        default: "—",
        meaning: "the `[oidc]` section's client secret, over the file's (see [Security](../security.md): single sign-on)",
    },
    Setting {
        variable: "RECKON_REFUSED_SPIKE",
        key: Some("refused_spike"),
        default: "`20/5`",
        meaning: "`N/M`: more than N webhooks of one provider failing verification within M minutes raise one `webhooks_refused_spike` alert per spell (see [Refused webhooks](../providers/refused-webhooks.md))",
    },
    Setting {
        variable: "RECKON_AUDIT_KEY",
        key: None,
        default: "the file `audit.key` in the data directory (made at the first start, mode 0600)",
        meaning: "the audit log's HMAC key, base64 of at least 32 bytes; give every instance on one database the same key (see [Triage and the two-person rule](../reconciliation/triage.md))",
    },
    Setting {
        variable: "RECKON_AUDIT_OLD_KEYS",
        key: None,
        default: "none",
        meaning: "retired audit keys, comma-separated: they sign nothing and still verify what they signed (`reckon audit rotate-key`)",
    },
    Setting {
        variable: "RUST_LOG",
        key: None,
        default: "`info,sqlx=warn`",
        meaning: "log filter",
    },
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
