//! A Stripe account's settings (`kind = "stripe"`).

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

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

impl StripeConfig {
    /// Why these settings cannot work, if they cannot.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.secret.expose_secret().is_empty() || self.api_key.expose_secret().is_empty() {
            return Err("a stripe provider needs its endpoint secret (whsec_…) and api_key (sk_…)");
        }
        Ok(())
    }
}
