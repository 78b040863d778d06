//! A sandbox account's settings (`kind = "sandbox"`, or
//! `RECKON_SANDBOX_URL` with `RECKON_SANDBOX_SECRET`).

use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

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

impl SandboxConfig {
    /// Why these settings cannot work, if they cannot.
    pub fn check(&self) -> Result<(), &'static str> {
        crate::providers::signing::Secret::parse(self.secret.expose_secret())
            .map(|_| ())
            .map_err(|_| crate::providers::signing::WHSEC_HINT)
    }
}
