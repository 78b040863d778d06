//! An Alipay account's settings (`kind = "alipay"`).

use crate::domain::ProviderName;
use crate::providers::Provider;
use crate::providers::account::{Account, Kind};
use secrecy::SecretString;
use serde::Deserialize;
use std::sync::Arc;

/// Alipay's days are Beijing days; its bill for one is there from 09:00
/// the next.
pub const KIND: Kind = Kind {
    name: "alipay",
    statement_zone: Some("Asia/Shanghai"),
    ready_hour: 9,
    payout_names: &["alipay", "支付宝"],
    bill_format: Some(|| super::statement::FORMAT),
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlipayConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// The gateway (`https://openapi.alipay.com/gateway.do`); empty for
    /// notifications only.
    pub base_url: String,
    /// This account's app_id: notifications for another are refused.
    #[serde(default)]
    pub app_id: String,
    /// Checked when set.
    #[serde(default)]
    pub seller_id: Option<String>,
    /// Alipay's RSA public key, PEM or bare base64 DER (as Alipay's console
    /// shows it).
    #[serde(default)]
    pub public_key: String,
    /// The app's private key (PKCS#8 or PKCS#1, PEM or base64 DER) that
    /// signs gateway calls; with `base_url`, or neither.
    #[serde(default)]
    pub private_key: Option<SecretString>,
    /// How long a call may take before its result counts as unknown
    /// (milliseconds, default 10000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The longest bill taken, downloaded or unpacked (bytes, default
    /// 1 GiB): a longer one is refused, not read.
    #[serde(default)]
    pub max_bill_bytes: Option<u64>,
    /// A webhook that fails verification but names a payment makes Reckon
    /// ask Alipay about that payment.
    #[serde(default)]
    pub query_on_unverified: bool,
    /// The fee this account is expected to charge; rows beyond it open
    /// FEE_MISMATCH tickets. None: fees are summed, not checked.
    #[serde(default)]
    pub fees: Option<crate::providers::fees::FeeExpectation>,
}

impl Account for AlipayConfig {
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

    fn build(
        &self,
        name: ProviderName,
        _day_zone: &jiff::tz::TimeZone,
    ) -> Result<Arc<dyn Provider>, String> {
        Ok(Arc::new(super::Alipay::new(name, self)?))
    }
}
