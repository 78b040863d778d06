//! Prometheus metrics: the counters and histograms every part of Reckon
//! records into, rendered as text for `/metrics` (served by `web`).

use crate::domain::{AlertKind, Severity};
use crate::store::gauges::Gauges;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabel {
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabel {
    version: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SeverityLabel {
    severity: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabel {
    class: &'static str,
}

struct Inner {
    registry: Registry,
    logins: Family<OutcomeLabel, Counter>,
    http: Family<HttpLabel, Counter>,
    callbacks: [(&'static str, Counter); 7],
    callback_duration: Histogram,
    refused: Family<ReasonLabel, Counter>,
    refunds: Family<OutcomeLabel, Counter>,
    batch_size: Histogram,
    batch_writes: Family<OutcomeLabel, Counter>,
    applied: Family<ClassLabel, Counter>,
    replays: Family<ClassLabel, Counter>,
    outbox: Family<OutcomeLabel, Counter>,
    outbox_lag: Gauge<f64, AtomicU64>,
    connections: Gauge,
    shed: Family<OutcomeLabel, Counter>,
    alerts_open: Family<KindLabel, Gauge>,
    tickets_open: Family<SeverityLabel, Gauge>,
    tickets_overdue: Gauge,
    callbacks_dead: Gauge,
}

#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let logins = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "reckon_login_attempts",
            "Console sign-in attempts by outcome",
            logins.clone(),
        );
        let http = Family::<HttpLabel, Counter>::default();
        registry.register(
            "reckon_http_requests",
            "HTTP requests answered, by method and status",
            http.clone(),
        );
        let callbacks = [
            ("received", "Webhook callbacks received"),
            ("success", "Callbacks processed through apply"),
            (
                "failed",
                "Callbacks refused, unreadable or whose processing failed",
            ),
            ("duplicate", "Callbacks repeated with an identical payload"),
            ("conflict", "Callbacks repeated with a different payload"),
            ("retry", "Callback processing retries"),
            ("dead", "Callbacks given up (DEAD)"),
        ]
        .map(|(name, help)| {
            let c = Counter::default();
            registry.register(format!("callback_{name}"), help, c.clone());
            (name, c)
        });
        let callback_duration = Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        registry.register(
            "callback_processing_duration_seconds",
            "Time from receiving a callback to answering it",
            callback_duration.clone(),
        );
        let refused = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "callback_refused",
            "Webhooks refused before storing, by reason",
            refused.clone(),
        );
        let refunds = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "refunds",
            "Refund requests and results by outcome",
            refunds.clone(),
        );
        let batch_size = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        registry.register(
            "callback_batch_size",
            "Callbacks written per group commit",
            batch_size.clone(),
        );
        let batch_writes = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "callback_batch_writes",
            "Group commits' multi-row parts by where they were written: direct (SQLite's writer connection), pool, or fell_back (failed and written one by one)",
            batch_writes.clone(),
        );
        let replays = Family::<ClassLabel, Counter>::default();
        registry.register(
            "callback_replay",
            "Stored callbacks replayed by a person, by what apply made of them",
            replays.clone(),
        );
        let applied = Family::<ClassLabel, Counter>::default();
        registry.register(
            "apply_outcomes",
            "engine::apply results by class",
            applied.clone(),
        );
        let outbox = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "outbox_deliveries",
            "Outbox delivery attempts by outcome",
            outbox.clone(),
        );
        let outbox_lag = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "outbox_lag_seconds",
            "Age of the oldest undelivered outbox message",
            outbox_lag.clone(),
        );
        let connections = Gauge::default();
        registry.register(
            "reckon_connections_open",
            "HTTP connections open",
            connections.clone(),
        );
        let shed = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "reckon_connections_shed",
            "Connections closed at the connection limit: idle_closed (the longest idle made room) or refused (none was idle)",
            shed.clone(),
        );
        let alerts_open = Family::<KindLabel, Gauge>::default();
        registry.register(
            "reckon_alerts_open",
            "Alerts neither resolved nor acknowledged, by kind (read from the database at the scrape)",
            alerts_open.clone(),
        );
        let tickets_open = Family::<SeverityLabel, Gauge>::default();
        registry.register(
            "reckon_tickets_open",
            "Discrepancy tickets not closed, by severity (read at the scrape)",
            tickets_open.clone(),
        );
        let tickets_overdue = Gauge::default();
        registry.register(
            "reckon_tickets_overdue",
            "Open tickets past their SLA (read at the scrape)",
            tickets_overdue.clone(),
        );
        let callbacks_dead = Gauge::default();
        registry.register(
            "reckon_callbacks_dead",
            "Callbacks given up (DEAD) and not replayed (read at the scrape)",
            callbacks_dead.clone(),
        );
        let build = Family::<BuildLabel, Gauge>::default();
        build
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register("reckon_build_info", "The running version", build);
        Metrics(Arc::new(Inner {
            registry,
            logins,
            http,
            callbacks,
            callback_duration,
            refused,
            refunds,
            batch_size,
            batch_writes,
            applied,
            replays,
            outbox,
            outbox_lag,
            connections,
            shed,
            alerts_open,
            tickets_open,
            tickets_overdue,
            callbacks_dead,
        }))
    }

    /// One of received, success, failed, duplicate, conflict, retry, dead.
    pub fn callback(&self, what: &str) {
        if let Some((_, c)) = self.0.callbacks.iter().find(|(n, _)| *n == what) {
            c.inc();
        }
    }

    pub fn callback_duration(&self, seconds: f64) {
        self.0.callback_duration.observe(seconds);
    }

    /// unverified, malformed, content_type or too_large.
    pub fn refused(&self, reason: &'static str) {
        self.0.refused.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// requested, rejected, pending, succeeded, failed, duplicate,
    /// out_of_order, mismatch, unknown_refund.
    pub fn refund(&self, outcome: &'static str) {
        self.0
            .refunds
            .get_or_create(&OutcomeLabel { outcome })
            .inc();
    }

    pub fn batch(&self, size: usize) {
        self.0.batch_size.observe(size as f64);
    }

    /// direct, pool or fell_back.
    pub fn batch_written(&self, outcome: &'static str) {
        self.0
            .batch_writes
            .get_or_create(&OutcomeLabel { outcome })
            .inc();
    }

    pub fn applied(&self, class: &'static str) {
        self.0.applied.get_or_create(&ClassLabel { class }).inc();
    }

    pub fn replayed(&self, class: &'static str) {
        self.0.replays.get_or_create(&ClassLabel { class }).inc();
    }

    pub fn outbox(&self, outcome: &'static str) {
        self.0.outbox.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn outbox_lag(&self, seconds: f64) {
        self.0.outbox_lag.set(seconds);
    }

    pub fn connections_open(&self, open: i64) {
        self.0.connections.set(open);
    }

    pub fn connection_shed(&self, outcome: &'static str) {
        self.0.shed.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn login(&self, outcome: &'static str) {
        self.0.logins.get_or_create(&OutcomeLabel { outcome }).inc();
    }

    pub fn http(&self, method: &str, status: u16) {
        self.0
            .http
            .get_or_create(&HttpLabel {
                method: method.to_owned(),
                status,
            })
            .inc();
    }

    /// The database's state as the scrape read it. Every known alert kind
    /// and severity is written, at zero when none is open, so a rule sees a
    /// count fall back to zero rather than a series vanish.
    pub fn state(&self, g: &Gauges) {
        for kind in AlertKind::ALL {
            let n = count_of(&g.alerts_open, kind.as_str());
            self.0
                .alerts_open
                .get_or_create(&KindLabel {
                    kind: kind.as_str().to_owned(),
                })
                .set(n);
        }
        for severity in Severity::ALL {
            let n = count_of(&g.tickets_open, severity.as_str());
            self.0
                .tickets_open
                .get_or_create(&SeverityLabel {
                    severity: severity.as_str().to_owned(),
                })
                .set(n);
        }
        self.0.tickets_overdue.set(g.tickets_overdue);
        self.0.callbacks_dead.set(g.callbacks_dead);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.0.registry);
        out
    }
}

fn count_of(counts: &[(String, i64)], word: &str) -> i64 {
    counts
        .iter()
        .find(|(w, _)| w == word)
        .map(|(_, n)| *n)
        .unwrap_or(0)
}
