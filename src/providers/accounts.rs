//! The configured provider accounts: each kind's settings, as one variant
//! of [`ProviderConfig`] whose section is defined in the provider's folder,
//! and [`build`], which makes the adapter from them.

use super::alipay::{Alipay, AlipayConfig};
use super::sandbox::{Sandbox, SandboxConfig};
use super::signing::Secret;
use super::standard::{StandardConfig, StandardWebhooks};
use super::stripe::{Stripe, StripeConfig};
use super::wechatpay::{WechatPay, WechatPayConfig};
use super::{Provider, wire};
use crate::domain::ProviderName;
use secrecy::ExposeSecret;
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
}

impl ProviderConfig {
    pub fn name(&self) -> &str {
        match self {
            ProviderConfig::Sandbox(c) => &c.name,
            ProviderConfig::Stripe(c) => &c.name,
            ProviderConfig::StandardWebhooks(c) => &c.name,
            ProviderConfig::Alipay(c) => &c.name,
            ProviderConfig::WechatPay(c) => &c.name,
        }
    }

    /// The `kind` it is written with.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderConfig::Sandbox(_) => "sandbox",
            ProviderConfig::Stripe(_) => "stripe",
            ProviderConfig::StandardWebhooks(_) => "standard_webhooks",
            ProviderConfig::Alipay(_) => "alipay",
            ProviderConfig::WechatPay(_) => "wechatpay",
        }
    }

    /// A webhook that fails verification but names a payment makes Reckon
    /// ask the provider about that payment (the provider is the authority,
    /// never the unverified body).
    pub fn query_on_unverified(&self) -> bool {
        match self {
            ProviderConfig::Sandbox(c) => c.query_on_unverified,
            ProviderConfig::Stripe(c) => c.query_on_unverified,
            ProviderConfig::StandardWebhooks(c) => c.query_on_unverified,
            ProviderConfig::Alipay(c) => c.query_on_unverified,
            ProviderConfig::WechatPay(c) => c.query_on_unverified,
        }
    }

    /// The fee the account is expected to charge, if one is set.
    pub fn fees(&self) -> Option<&super::fees::FeeExpectation> {
        match self {
            ProviderConfig::Sandbox(c) => c.fees.as_ref(),
            ProviderConfig::Stripe(c) => c.fees.as_ref(),
            ProviderConfig::StandardWebhooks(_) => None,
            ProviderConfig::Alipay(c) => c.fees.as_ref(),
            ProviderConfig::WechatPay(c) => c.fees.as_ref(),
        }
    }

    /// Why the secrets configured cannot work, if they cannot (the keys
    /// are read when the adapter is built).
    pub fn check(&self) -> Result<(), &'static str> {
        match self {
            ProviderConfig::Sandbox(c) => c.check(),
            ProviderConfig::Stripe(c) => c.check(),
            ProviderConfig::StandardWebhooks(c) => c.check(),
            ProviderConfig::Alipay(_) | ProviderConfig::WechatPay(_) => Ok(()),
        }
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
    let named = |e: String| format!("provider {}: {e}", config.name());
    Ok(match config {
        ProviderConfig::WechatPay(c) => Arc::new(WechatPay::new(name, c).map_err(named)?),
        ProviderConfig::Alipay(c) => Arc::new(Alipay::new(name, c).map_err(named)?),
        ProviderConfig::StandardWebhooks(c) => {
            let secrets = c
                .secrets()
                .map(|s| Secret::parse(s.expose_secret()).map_err(named))
                .collect::<Result<Vec<_>, _>>()?;
            let retired = c
                .retired_secrets
                .iter()
                .map(|s| Secret::parse(s.expose_secret()).map_err(named))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StandardWebhooks::new(name, secrets, c.mapping.clone()).with_retired(retired))
        }
        ProviderConfig::Stripe(c) => {
            let secrets = std::iter::once(&c.secret)
                .chain(&c.previous_secrets)
                .map(|s| s.expose_secret().to_owned())
                .collect();
            Arc::new(
                Stripe::new(
                    name,
                    &c.base_url,
                    secrets,
                    c.api_key.expose_secret().to_owned(),
                    wire::timeout(c.timeout_ms),
                )
                .with_retired_secrets(
                    c.retired_secrets
                        .iter()
                        .map(|s| s.expose_secret().to_owned())
                        .collect(),
                )
                .with_day_zone(day_zone.clone()),
            )
        }
        ProviderConfig::Sandbox(c) => {
            let secret = Secret::parse(c.secret.expose_secret()).map_err(named)?;
            let sandbox = Sandbox::new(name, &c.base_url, secret);
            Arc::new(match c.timeout_ms {
                Some(_) => sandbox.with_timeout(wire::timeout(c.timeout_ms)),
                None => sandbox,
            })
        }
    })
}
