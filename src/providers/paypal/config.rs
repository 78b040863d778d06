//! A PayPal REST app's settings (`kind = "paypal"`).

use crate::domain::ProviderName;
use crate::providers::account::{Account, Kind};
use crate::providers::{Provider, wire};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::sync::Arc;

/// Its Settlement Report is delivered before noon of the next day (in the
/// leading zone of the account's reporting window); a bank shows its
/// withdrawals as PayPal's.
pub const KIND: Kind = Kind {
    name: "paypal",
    statement_zone: None,
    ready_hour: 12,
    payout_names: &["paypal"],
    bill_format: Some(|| super::statement::FORMAT),
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaypalConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// `https://api-m.paypal.com` (`https://api-m.sandbox.paypal.com`).
    pub base_url: String,
    /// The REST app's client id; with `client_secret`, for status queries
    /// and refunds (empty: webhooks and settlement reports only).
    #[serde(default)]
    pub client_id: String,
    #[serde(default)]
    pub client_secret: SecretString,
    /// The id PayPal gave the webhook subscription of `/webhooks/{name}`:
    /// PayPal signs it into every webhook.
    #[serde(default)]
    pub webhook_id: String,
    /// PEM certificates the signing certificate must chain to (the CA
    /// that issues PayPal's `messageverificationcerts` certificates).
    #[serde(default)]
    pub cert_roots: String,
    /// URL prefixes a signing certificate may be fetched from (default:
    /// PayPal's live and sandbox `…/v1/notifications/certs/`); a webhook
    /// naming one elsewhere is refused without fetching it.
    #[serde(default)]
    pub cert_urls: Option<Vec<String>>,
    /// How long a call may take before its result counts as unknown
    /// (milliseconds, default 10000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// A webhook that fails verification but names a payment makes Reckon
    /// ask PayPal about that payment.
    #[serde(default)]
    pub query_on_unverified: bool,
    /// The fee this account is expected to charge; rows beyond it open
    /// FEE_MISMATCH tickets. None: fees are summed, not checked.
    #[serde(default)]
    pub fees: Option<crate::providers::fees::FeeExpectation>,
}

impl Account for PaypalConfig {
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
        if self.webhook_id.is_empty() || self.cert_roots.trim().is_empty() {
            return Err(
                "a paypal provider needs its webhook_id and cert_roots (PEM) to verify webhooks",
            );
        }
        if self.client_id.is_empty() != self.client_secret.expose_secret().is_empty() {
            return Err("a paypal provider needs client_id and client_secret together, or neither");
        }
        Ok(())
    }

    fn build(
        &self,
        name: ProviderName,
        _day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String> {
        let timeout = wire::timeout(self.timeout_ms);
        let urls = self.cert_urls.clone().unwrap_or_else(|| {
            super::cert::PAYPAL_CERT_URLS
                .iter()
                .map(|u| (*u).to_owned())
                .collect()
        });
        let certs = super::cert::Certs::new(&urls, &self.cert_roots, wire::client(timeout))?;
        Ok(Arc::new(super::Paypal::new(
            name,
            &self.base_url,
            self.client_id.clone(),
            self.client_secret.expose_secret().to_owned(),
            self.webhook_id.clone(),
            certs,
            timeout,
        )))
    }
}
