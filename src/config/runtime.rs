//! The settings every room reads while Reckon runs, as `startup` assembles
//! them from the checked configuration: the engine's schedules and limits,
//! the outbox's sinks, reconciliation's pulls and closing, the SLA, the
//! alert channels. Their shapes live here so no room defines another's.

use super::RefusedSpike;
use crate::providers::signing::Secret;

/// An outbox destination: deliveries are recorded by name, sent to its URL.
#[derive(Clone, Debug)]
pub struct Sink {
    pub name: String,
    pub url: String,
    /// Exact event types or prefixes (`payment.*`) it wants; empty: all.
    pub event_types: Vec<String>,
    /// Signing secrets, the current one first; two during a rotation, and
    /// then every message carries both signatures.
    pub secrets: Vec<Secret>,
    /// How long its answer is awaited.
    pub timeout: std::time::Duration,
    /// Delays after each failed attempt (microseconds); past the last, DEAD.
    pub schedule: Vec<i64>,
    /// Messages sent to it at once at most.
    pub in_flight: usize,
}

#[derive(Clone, Debug)]
pub struct Settings {
    /// Delays of the status queries after a create, in microseconds
    /// (default 1m, 5m, 30m, 2h, 12h); after the last, a person decides.
    pub query_schedule: Vec<i64>,
    /// Failed callback processing is retried this many times in all.
    pub callback_max_tries: i64,
    /// Outbox deliveries give up (dead-letter) after this many attempts.
    pub outbox_max_attempts: i64,
    pub sinks: Vec<Sink>,
    /// Signs outbox messages (Standard-Webhooks style).
    pub outbox_secret: Secret,
    /// Refused webhooks kept per provider (older ones are pruned).
    pub refused_keep: i64,
    /// Refused webhooks stored per minute, all providers together; more
    /// are only counted.
    pub refused_per_minute: u32,
    /// Providers whose unverified webhooks trigger a status query for the
    /// payment they name.
    pub query_on_unverified: std::collections::BTreeSet<String>,
    /// Business days are cut in this time zone.
    pub timezone: jiff::tz::TimeZone,
    /// Provider calls (creates, queries, closes, refunds) in flight at once
    /// per provider account; the rest wait, unleased, for a free one.
    pub calls_per_account: usize,
    /// When and how far back each provider's statements are pulled, and
    /// how long their files are kept.
    pub pulls: Pulls,
    /// Fees expected and when a day closes by itself.
    pub closing: Closing,
    /// Hours a ticket of each class may stay open (the SLA pass reads it).
    pub sla: crate::domain::Sla,
    /// When a sink's failures raise `sink_failing`.
    pub sink_failing: super::Failing,
    /// Alert channels, sinks of the alerts' messages only.
    pub channels: Vec<super::Channel>,
    /// More than this many verification failures of one provider in
    /// the window raise `webhooks_refused_spike`.
    pub refused_spike: RefusedSpike,
    /// How statement rows find their payments (reconciliation reads it).
    pub matching: super::MatchRules,
}

impl Settings {
    /// The alert channel a delivery's sink names, if it is one.
    pub fn channel(&self, sink: &str) -> Option<&super::Channel> {
        self.channels.iter().find(|c| c.name == sink)
    }
}

/// What closing a day reads (reconciliation's): each account's expected fee, and the highest severity of ticket a
/// day may keep open and still close by itself (None: no open ticket).
#[derive(Clone, Debug)]
pub struct Closing {
    pub fees: std::collections::BTreeMap<String, crate::providers::fees::FeeExpectation>,
    pub allow_open: Option<crate::domain::Severity>,
    /// False: days close only by a supervisor.
    pub auto: bool,
}

impl Default for Closing {
    fn default() -> Self {
        Closing {
            fees: Default::default(),
            allow_open: Some(crate::domain::Severity::Low),
            auto: true,
        }
    }
}

/// The statement schedule's settings (reconciliation reads them).
#[derive(Clone, Debug)]
pub struct Pulls {
    /// Per provider account: the zone its statement's days are cut in and
    /// the hour there from which a day's statement is ready. An account
    /// not named here: the business zone, from 02:00.
    pub days: std::collections::BTreeMap<String, StatementDay>,
    /// Days back (yesterday the first) in which every day without a
    /// completed run is pulled.
    pub catch_up_days: i64,
    /// A statement still missing this long after it should be ready
    /// raises an alert (microseconds).
    pub missing_after_us: i64,
    /// Kept statement files older than this are deleted (days).
    pub keep_files_days: i64,
    /// Days either side of a payout's arrival its bank credit may be
    /// booked (the bank side's window).
    pub bank_window_days: i64,
    /// A payment or refund finished this close to its business day's cut
    /// (microseconds) and missing from the day's statement is expected in
    /// the neighbouring day's: in transit, not yet absent.
    pub cut_window_us: i64,
    /// The same, per provider account, over `cut_window_us`.
    pub cut_windows: std::collections::BTreeMap<String, i64>,
}

/// Where a provider's statement day is cut, and when it is ready.
#[derive(Clone, Debug)]
pub struct StatementDay {
    pub zone: jiff::tz::TimeZone,
    pub ready_hour: i8,
}

impl Default for Pulls {
    fn default() -> Self {
        Pulls {
            days: Default::default(),
            catch_up_days: 7,
            missing_after_us: 6 * 3600 * 1_000_000,
            keep_files_days: 400,
            bank_window_days: super::DEFAULT_BANK_WINDOW_DAYS,
            cut_window_us: 30 * 60 * 1_000_000,
            cut_windows: Default::default(),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        const MIN: i64 = 60_000_000;
        Settings {
            query_schedule: vec![MIN, 5 * MIN, 30 * MIN, 120 * MIN, 720 * MIN],
            callback_max_tries: 10,
            outbox_max_attempts: 12,
            sinks: Vec::new(),
            outbox_secret: Secret::random(),
            refused_keep: 10_000,
            refused_per_minute: 600,
            query_on_unverified: Default::default(),
            timezone: jiff::tz::TimeZone::UTC,
            calls_per_account: 4,
            pulls: Pulls::default(),
            closing: Closing::default(),
            sla: Default::default(),
            sink_failing: Default::default(),
            channels: Vec::new(),
            refused_spike: RefusedSpike::default(),
            matching: Default::default(),
        }
    }
}

/// Console sign-in and sessions: how long a session may stay idle and
/// live at most, and how many failed sign-ins lock a username for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignIn {
    /// A session unseen this long is over (microseconds).
    pub idle_us: i64,
    /// A session is over this long after it began, however active
    /// (microseconds).
    pub lifetime_us: i64,
    /// Failed sign-ins of one username in the counting window before the
    /// next attempt is refused.
    pub max_failures: i64,
    /// How long a locked username or address stays locked (microseconds).
    pub lock_out_us: i64,
    /// The roles that sign in with a second factor.
    pub mfa: MfaRoles,
}

/// The roles whose users must sign in with a second factor (TOTP): each
/// role by name. `Default` is none (tests and benches); the setting's
/// default is supervisors and admins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MfaRoles {
    pub operator: bool,
    pub supervisor: bool,
    pub admin: bool,
    /// Named in the file or the environment, not defaulted: the demo turns
    /// only a defaulted one off.
    pub given: bool,
}

impl MfaRoles {
    /// Whether a user of the role named `role` must have a second factor.
    pub fn requires(&self, role: &str) -> bool {
        match role {
            "operator" => self.operator,
            "supervisor" => self.supervisor,
            "admin" => self.admin,
            _ => false,
        }
    }

    pub fn any(&self) -> bool {
        self.operator || self.supervisor || self.admin
    }
}

impl Default for SignIn {
    fn default() -> Self {
        const MIN: i64 = 60_000_000;
        SignIn {
            idle_us: 15 * MIN,
            lifetime_us: 12 * 60 * MIN,
            max_failures: 5,
            lock_out_us: 30 * MIN,
            mfa: MfaRoles::default(),
        }
    }
}
