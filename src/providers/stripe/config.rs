//! A Stripe account's settings (`kind = "stripe"`).

use crate::domain::ProviderName;
use crate::providers::account::{Account, Kind};
use crate::providers::{Provider, wire};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::sync::Arc;

/// Its days are cut in Reckon's zone; a bank shows its payouts by name or
/// by their `po_…` id.
pub const KIND: Kind = Kind {
    name: "stripe",
    statement_zone: None,
    ready_hour: 2,
    payout_names: &["stripe", "po_"],
    bill_format: Some(|| super::statement::FORMAT.in_zone(jiff::tz::TimeZone::UTC)),
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StripeConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// `https://api.stripe.com`.
    pub base_url: String,
    /// The endpoint's signing secret (`whsec_…`, used as-is).
    #[serde(default)]
    pub secret: SecretString,
    /// Older secrets still accepted while rotating.
    #[serde(default)]
    pub previous_secrets: Vec<SecretString>,
    /// Secrets no longer accepted, kept only so a webhook refused because
    /// the sender still signs with one is diagnosed as such (a rotation done
    /// on one side only). Never used to accept.
    #[serde(default)]
    pub retired_secrets: Vec<SecretString>,
    /// The API key (`sk_…`) for creates, status queries and refunds.
    #[serde(default)]
    pub api_key: SecretString,
    /// How long a call may take before its result counts as unknown
    /// (milliseconds, default 10000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A webhook that fails verification but names a payment makes Reckon
    /// ask Stripe about that payment.
    #[serde(default)]
    pub query_on_unverified: bool,
    /// The fee this account is expected to charge; rows beyond it open
    /// FEE_MISMATCH tickets. None: fees are summed, not checked.
    #[serde(default)]
    pub fees: Option<crate::providers::fees::FeeExpectation>,
}

impl Account for StripeConfig {
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
        if self.secret.expose_secret().is_empty() || self.api_key.expose_secret().is_empty() {
            return Err("a stripe provider needs its endpoint secret (whsec_…) and api_key (sk_…)");
        }
        Ok(())
    }

    fn build(
        &self,
        name: ProviderName,
        day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String> {
        let secrets = std::iter::once(&self.secret)
            .chain(&self.previous_secrets)
            .map(|s| s.expose_secret().to_owned())
            .collect();
        Ok(Arc::new(
            super::Stripe::new(
                name,
                &self.base_url,
                secrets,
                self.api_key.expose_secret().to_owned(),
                wire::timeout(self.timeout_ms),
            )
            .with_retired_secrets(
                self.retired_secrets
                    .iter()
                    .map(|s| s.expose_secret().to_owned())
                    .collect(),
            )
            .with_day_zone(day_zone.clone()),
        ))
    }
}
