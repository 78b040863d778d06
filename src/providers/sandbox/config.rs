//! A sandbox account's settings (`kind = "sandbox"`, or
//! `RECKON_SANDBOX_URL` with `RECKON_SANDBOX_SECRET`).

use crate::domain::ProviderName;
use crate::providers::account::{Account, Kind};
use crate::providers::signing::Secret;
use crate::providers::{Provider, wire};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::sync::Arc;

/// Its days are Reckon's; its payouts are nobody's at a bank.
pub const KIND: Kind = Kind {
    name: "sandbox",
    statement_zone: None,
    ready_hour: 2,
    payout_names: &[],
    bill_format: Some(|| super::statement::FORMAT),
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// The sandbox's API.
    pub base_url: String,
    /// Its `whsec_…` webhook secret.
    #[serde(default)]
    pub secret: SecretString,
    /// How long a call may take before its result counts as unknown
    /// (milliseconds; the sandbox's own 5 s when unset).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A webhook that fails verification but names a payment makes Reckon
    /// ask the sandbox about that payment.
    #[serde(default)]
    pub query_on_unverified: bool,
    /// The fee this account is expected to charge; rows beyond it open
    /// FEE_MISMATCH tickets. None: fees are summed, not checked.
    #[serde(default)]
    pub fees: Option<crate::providers::fees::FeeExpectation>,
}

impl Account for SandboxConfig {
    fn kind(&self) -> &'static Kind {
        &KIND
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn query_on_unverified(&self) -> bool {
        self.query_on_unverified
    }

    fn fees(&self) -> Option<&crate::providers::fees::FeeExpectation> {
        self.fees.as_ref()
    }

    fn check(&self) -> Result<(), &'static str> {
        Secret::parse(self.secret.expose_secret())
            .map(|_| ())
            .map_err(|_| crate::providers::signing::WHSEC_HINT)
    }

    fn build(
        &self,
        name: ProviderName,
        _day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String> {
        let secret = Secret::parse(self.secret.expose_secret())?;
        let sandbox = super::Sandbox::new(name, &self.base_url, secret);
        Ok(Arc::new(match self.timeout_ms {
            Some(_) => sandbox.with_timeout(wire::timeout(self.timeout_ms)),
            None => sandbox,
        }))
    }
}
