//! A WeChat Pay merchant account's settings (`kind = "wechatpay"`).

use crate::domain::ProviderName;
use crate::providers::Provider;
use crate::providers::account::{Account, Kind};
use secrecy::SecretString;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// WeChat Pay's days are Beijing days; its bill for one is there from
/// 10:00 the next. A bank shows its payouts as WeChat's or Tenpay's.
pub const KIND: Kind = Kind {
    name: "wechatpay",
    statement_zone: Some("Asia/Shanghai"),
    ready_hour: 10,
    payout_names: &["wechat", "tenpay", "财付通", "微信"],
    bill_format: Some(|| super::statement::FORMAT),
};

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WechatPayConfig {
    /// The route: `/webhooks/{name}`.
    pub name: String,
    /// `https://api.mch.weixin.qq.com`; empty for notifications only.
    pub base_url: String,
    /// The 32-character APIv3 key that seals notifications.
    #[serde(default)]
    pub api_key: SecretString,
    /// Platform certificate serial (or public-key id) → public key (PEM or
    /// base64 DER); several while keys rotate.
    #[serde(default)]
    pub platform_keys: BTreeMap<String, String>,
    /// The merchant id (`mchid`).
    #[serde(default)]
    pub mch_id: Option<String>,
    /// Serial number of the merchant API certificate whose key is
    /// `private_key`.
    #[serde(default)]
    pub cert_serial: Option<String>,
    /// The merchant API private key that signs calls; with `base_url`,
    /// `mch_id` and `cert_serial`, or none of them.
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
    /// ask WeChat Pay about that payment.
    #[serde(default)]
    pub query_on_unverified: bool,
    /// The fee this account is expected to charge; rows beyond it open
    /// FEE_MISMATCH tickets. None: fees are summed, not checked.
    #[serde(default)]
    pub fees: Option<crate::providers::fees::FeeExpectation>,
}

impl Account for WechatPayConfig {
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
        Ok(Arc::new(super::WechatPay::new(name, self)?))
    }
}
