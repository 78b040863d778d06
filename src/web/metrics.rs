//! Prometheus metrics, served as text at `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::Arc;

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

struct Inner {
    registry: Registry,
    logins: Family<OutcomeLabel, Counter>,
    http: Family<HttpLabel, Counter>,
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
        let mut registry = Registry::with_prefix("reckon");
        let logins = Family::<OutcomeLabel, Counter>::default();
        registry.register(
            "login_attempts",
            "Console sign-in attempts by outcome",
            logins.clone(),
        );
        let http = Family::<HttpLabel, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method and status",
            http.clone(),
        );
        let build = Family::<BuildLabel, Gauge>::default();
        build
            .get_or_create(&BuildLabel {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register("build_info", "The running version", build);
        Metrics(Arc::new(Inner {
            registry,
            logins,
            http,
        }))
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

    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.0.registry);
        out
    }
}
