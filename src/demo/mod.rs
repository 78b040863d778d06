//! `reckon serve --demo`: a sandbox provider served in-process beside the
//! console, a month of history (`history`), and live traffic with a
//! reconciled day that keeps the console's queues filled (`traffic`).

mod history;
mod traffic;

use crate::domain::ProviderName;
use crate::engine::Engine;
use crate::providers::Provider;
use crate::providers::sandbox::Sandbox;
use crate::providers::signing::Secret;
use crate::sandbox_server::{Chaos, SandboxServer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use history::history;

/// The demo's sandbox, served under `/sandbox` by the server at `addr` and
/// notifying its webhook route; it settles payments after 1.5 s, fails one
/// in ten and sends each notification twice.
#[derive(Clone)]
pub struct Demo {
    addr: SocketAddr,
    secret: Secret,
    sandbox: SandboxServer,
}

impl Demo {
    pub fn beside(addr: SocketAddr) -> Demo {
        let secret = Secret::random();
        let sandbox = SandboxServer::new(
            &format!("http://{addr}/webhooks/sandbox"),
            secret.clone(),
            Chaos {
                settle_ms: 1500,
                fail_rate: 0.1,
                duplicates: 2,
                ..Chaos::default()
            },
        );
        Demo {
            addr,
            secret,
            sandbox,
        }
    }

    /// The sandbox's own HTTP API, to be nested at `/sandbox`.
    pub fn router(&self) -> axum::Router {
        self.sandbox.router()
    }

    /// The provider account `sandbox` that talks to it.
    pub fn provider(&self) -> Arc<dyn Provider> {
        Arc::new(Sandbox::new(
            ProviderName::parse("sandbox").expect("valid name"),
            &format!("http://{}/sandbox", self.addr),
            self.secret.clone(),
        ))
    }

    /// Live traffic at once; the history, then the workers (when `workers`)
    /// so the daily pull finds it; the first reconciled day `recon_after`.
    pub fn start(self, engine: &Engine, workers: bool, recon_after: Duration) {
        tokio::spawn(traffic::payments(engine.clone()));
        let (history_engine, history_sandbox) = (engine.clone(), self.sandbox.clone());
        tokio::spawn(async move {
            if let Err(e) = history(history_engine.clone(), history_sandbox).await {
                tracing::warn!(error = %e, "demo history not written");
            }
            if workers {
                crate::workers::spawn(&history_engine);
            }
        });
        tokio::spawn(traffic::disagreements(
            engine.clone(),
            self.sandbox,
            recon_after,
        ));
    }
}
