//! The configured provider accounts: each kind's settings, as one variant
//! of [`ProviderConfig`] whose section is defined in the provider's folder
//! and answers as an [`Account`], and [`build`], which makes the adapter
//! from them. What a kind is apart from any account — its statement day,
//! its payouts' names at the bank, its bill — is its [`Kind`], listed in
//! [`KINDS`].

use super::Provider;
use super::account::{Account, Kind};
use super::adyen::AdyenConfig;
use super::alipay::AlipayConfig;
use super::fees::FeeExpectation;
use super::paypal::PaypalConfig;
use super::sandbox::SandboxConfig;
use super::standard::StandardConfig;
use super::stripe::StripeConfig;
use super::wechatpay::WechatPayConfig;
use crate::domain::ProviderName;
use serde::Deserialize;
use std::sync::Arc;

/// One provider account, served at `/webhooks/{name}`: `kind` picks the
/// section, and each kind takes its own keys (and only those).
// A handful, read once at start: their sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind")]
pub enum ProviderConfig {
    #[serde(rename = "sandbox")]
    Sandbox(SandboxConfig),
    #[serde(rename = "stripe")]
    Stripe(StripeConfig),
    #[serde(rename = "standard_webhooks")]
    StandardWebhooks(StandardConfig),
    #[serde(rename = "alipay")]
    Alipay(AlipayConfig),
    #[serde(rename = "wechatpay")]
    WechatPay(WechatPayConfig),
    #[serde(rename = "paypal")]
    Paypal(PaypalConfig),
    #[serde(rename = "adyen")]
    Adyen(AdyenConfig),
}

/// Every kind Reckon knows, whichever accounts are configured: an uploaded
/// bill and a bank entry are told by them, first match first (a Stripe
/// payout id names Stripe wherever it stands).
pub const KINDS: [&Kind; 7] = [
    &super::sandbox::KIND,
    &super::stripe::KIND,
    &super::standard::KIND,
    &super::wechatpay::KIND,
    &super::alipay::KIND,
    &super::paypal::KIND,
    &super::adyen::KIND,
];

impl ProviderConfig {
    /// The account's section, as every kind answers.
    pub fn account(&self) -> &dyn Account {
        match self {
            ProviderConfig::Sandbox(c) => c,
            ProviderConfig::Stripe(c) => c,
            ProviderConfig::StandardWebhooks(c) => c,
            ProviderConfig::Alipay(c) => c,
            ProviderConfig::WechatPay(c) => c,
            ProviderConfig::Paypal(c) => c,
            ProviderConfig::Adyen(c) => c,
        }
    }

    pub fn name(&self) -> &str {
        self.account().name()
    }

    /// The `kind` it is written with.
    pub fn kind(&self) -> &'static str {
        self.account().kind().name
    }

    /// See [`Account::query_on_unverified`].
    pub fn query_on_unverified(&self) -> bool {
        self.account().query_on_unverified()
    }

    /// The fee the account is expected to charge, if one is set.
    pub fn fees(&self) -> Option<&FeeExpectation> {
        self.account().fees()
    }

    /// Why the secrets configured cannot work, if they cannot (the keys
    /// are read when the adapter is built).
    pub fn check(&self) -> Result<(), &'static str> {
        self.account().check()
    }
}

/// The adapter for one configured account, or why its settings do not make
/// one (naming the account). `day_zone` cuts the business days it pulls
/// statements for.
pub fn build(
    config: &ProviderConfig,
    day_zone: &jiff::tz::TimeZone,
) -> Result<Arc<dyn Provider>, String> {
    let name = ProviderName::parse(config.name()).map_err(|e| e.to_string())?;
    config
        .account()
        .build(name, day_zone)
        .map_err(|e| format!("provider {}: {e}", config.name()))
}

/// The kinds, as a hint names them: `"a", "b" or "c"`.
pub fn kinds_in_words() -> String {
    let quoted: Vec<String> = KINDS.iter().map(|k| format!("\"{}\"", k.name)).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{KINDS, ProviderConfig, kinds_in_words};

    /// Each listed kind is the one its `kind` tag reads: a section written
    /// with a kind's name answers with that kind.
    #[test]
    fn each_kind_is_read_by_its_own_tag() {
        for kind in KINDS {
            let section = serde_json::json!({ "kind": kind.name, "name": "a", "base_url": "" });
            let config: ProviderConfig = serde_json::from_value(section).unwrap();
            assert_eq!(config.kind(), kind.name);
        }
        assert_eq!(
            kinds_in_words(),
            "\"sandbox\", \"stripe\", \"standard_webhooks\", \"wechatpay\", \"alipay\", \"paypal\" or \"adyen\""
        );
    }
}
