//! An Adyen merchant account's settings (`kind = "adyen"`).

use crate::domain::ProviderName;
use crate::providers::account::{Account, Kind};
use crate::providers::{Provider, spool, wire};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use std::sync::Arc;

/// Its days are cut in Reckon's zone; Adyen's settlement reports are made
/// about two hours after the payout batch closes (reporting docs). A bank
/// shows its payouts under Adyen's name with the batch number.
pub const KIND: Kind = Kind {
    name: "adyen",
    statement_zone: None,
    ready_hour: 6,
    payout_names: &["adyen"],
    bill_format: Some(|| super::statement::FORMAT.in_zone(jiff::tz::TimeZone::UTC)),
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdyenConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// The Checkout API: `https://checkout-test.adyen.com` (live:
    /// `https://{prefix}-checkout-live.adyenpayments.com/checkout`).
    pub base_url: String,
    /// The merchant account code the refunds are made on.
    #[serde(default)]
    pub merchant_account: String,
    /// The webhook's HMAC key, as the Customer Area shows it (hex).
    #[serde(default)]
    pub hmac_key: SecretString,
    /// Older HMAC keys still accepted while rotating.
    #[serde(default)]
    pub previous_hmac_keys: Vec<SecretString>,
    /// The webhook's basic-authentication user, when one is set up in the
    /// Customer Area: then every notification must carry it.
    #[serde(default)]
    pub basic_user: Option<String>,
    #[serde(default)]
    pub basic_password: SecretString,
    /// The API key (`X-API-Key`) for refunds.
    #[serde(default)]
    pub api_key: SecretString,
    /// Where reports are downloaded from (`https://ca-test.adyen.com`):
    /// a report URL on any other origin is not fetched.
    #[serde(default)]
    pub report_base_url: Option<String>,
    /// The report user's API key (`X-API-Key`) for report downloads; or
    /// its user name and password (basic authentication).
    #[serde(default)]
    pub report_api_key: SecretString,
    #[serde(default)]
    pub report_user: Option<String>,
    #[serde(default)]
    pub report_password: SecretString,
    /// The IANA zone of the account's time zone setting, for a report row
    /// whose `TimeZone` is not one of the fixed abbreviations Reckon knows.
    #[serde(default)]
    pub report_time_zone: Option<String>,
    /// The largest report downloaded (bytes; default 1 GiB).
    #[serde(default)]
    pub max_bill_bytes: Option<u64>,
    /// How long a call may take before its result counts as unknown
    /// (milliseconds, default 10000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Adyen has no payment status API (see the module notes): accepted for
    /// the shared settings, it can make no query.
    #[serde(default)]
    pub query_on_unverified: bool,
    /// The fee this account is expected to charge; rows beyond it open
    /// FEE_MISMATCH tickets. None: fees are summed, not checked.
    #[serde(default)]
    pub fees: Option<crate::providers::fees::FeeExpectation>,
}

impl Account for AdyenConfig {
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
        if self.hmac_key.expose_secret().is_empty() {
            return Err("an adyen provider needs its webhook hmac_key (hex)");
        }
        if hex::decode(self.hmac_key.expose_secret()).is_err() {
            return Err("an adyen provider's hmac_key is the hex key the Customer Area shows");
        }
        let report_credentials =
            !self.report_api_key.expose_secret().is_empty() || self.report_user.is_some();
        if self.report_base_url.is_some() != report_credentials {
            return Err(
                "an adyen provider fetches pushed reports with both report_base_url and the report user's report_api_key (or report_user and report_password)",
            );
        }
        Ok(())
    }

    fn build(
        &self,
        name: ProviderName,
        _day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String> {
        Ok(Arc::new(super::Adyen::from_config(self, name)?))
    }
}

impl super::Adyen {
    /// The adapter these settings make, or why they make none.
    pub fn from_config(config: &AdyenConfig, name: ProviderName) -> Result<super::Adyen, String> {
        let mut keys = Vec::new();
        for (i, key) in std::iter::once(&config.hmac_key)
            .chain(&config.previous_hmac_keys)
            .enumerate()
        {
            let key = key.expose_secret();
            if key.is_empty() {
                continue;
            }
            keys.push(hex::decode(key).map_err(|_| {
                format!("HMAC key {i} is not hex (the Customer Area shows it as hex)")
            })?);
        }
        let report_zone = match &config.report_time_zone {
            Some(zone) => Some(
                jiff::tz::TimeZone::get(zone)
                    .map_err(|e| format!("report_time_zone {zone:?}: {e}"))?,
            ),
            None => None,
        };
        let basic = config.basic_user.as_ref().map(|user| {
            (
                user.clone(),
                config.basic_password.expose_secret().to_owned(),
            )
        });
        let report_auth = match (&config.report_user, config.report_api_key.expose_secret()) {
            (Some(user), _) => Some(super::ReportAuth::Basic(
                user.clone(),
                config.report_password.expose_secret().to_owned(),
            )),
            (None, "") => None,
            (None, key) => Some(super::ReportAuth::ApiKey(key.to_owned())),
        };
        Ok(super::Adyen {
            name,
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            merchant_account: config.merchant_account.clone(),
            keys,
            basic,
            api_key: config.api_key.expose_secret().to_owned(),
            report_base_url: config
                .report_base_url
                .as_deref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            report_auth,
            report_zone,
            max_bill_bytes: spool::limit(config.max_bill_bytes),
            http: wire::client(wire::timeout(config.timeout_ms)),
        })
    }
}
