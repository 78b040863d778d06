//! API tokens: the scopes a token may be given — the one list of them,
//! read by the API's routes, the OpenAPI document, the console and the
//! command line — and a token as the console lists it.

use crate::types::Lang;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// What a token may do through `/api/v1`. Every route there needs one of
/// these (`whoami` only a valid token).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Scope {
    #[serde(rename = "payments:read")]
    PaymentsRead,
    #[serde(rename = "payments:write")]
    PaymentsWrite,
    #[serde(rename = "refunds:write")]
    RefundsWrite,
    #[serde(rename = "recon:read")]
    ReconRead,
    #[serde(rename = "recon:write")]
    ReconWrite,
    #[serde(rename = "statements:download")]
    StatementsDownload,
    #[serde(rename = "bank:read")]
    BankRead,
    #[serde(rename = "bank:write")]
    BankWrite,
    #[serde(rename = "outbox:read")]
    OutboxRead,
    #[serde(rename = "outbox:write")]
    OutboxWrite,
    #[serde(rename = "sinks:write")]
    SinksWrite,
    #[serde(rename = "webhooks:read")]
    WebhooksRead,
}

/// The word for every scope on the command line (`--scope all`).
pub const ALL_SCOPES: &str = "all";

/// The longest expiry a token may be given, in days.
pub const MAX_EXPIRY_DAYS: u32 = 3650;

impl Scope {
    pub const ALL: [Scope; 12] = [
        Scope::PaymentsRead,
        Scope::PaymentsWrite,
        Scope::RefundsWrite,
        Scope::ReconRead,
        Scope::ReconWrite,
        Scope::StatementsDownload,
        Scope::BankRead,
        Scope::BankWrite,
        Scope::OutboxRead,
        Scope::OutboxWrite,
        Scope::SinksWrite,
        Scope::WebhooksRead,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::PaymentsRead => "payments:read",
            Scope::PaymentsWrite => "payments:write",
            Scope::RefundsWrite => "refunds:write",
            Scope::ReconRead => "recon:read",
            Scope::ReconWrite => "recon:write",
            Scope::StatementsDownload => "statements:download",
            Scope::BankRead => "bank:read",
            Scope::BankWrite => "bank:write",
            Scope::OutboxRead => "outbox:read",
            Scope::OutboxWrite => "outbox:write",
            Scope::SinksWrite => "sinks:write",
            Scope::WebhooksRead => "webhooks:read",
        }
    }

    /// What the scope allows, in the viewer's language.
    pub fn describe(self, lang: Lang) -> &'static str {
        let (en, zh) = match self {
            Scope::PaymentsRead => ("read payments and refunds", "查看支付和退款"),
            Scope::PaymentsWrite => ("create and close payments", "创建和关闭支付"),
            Scope::RefundsWrite => ("request refunds", "发起退款"),
            Scope::ReconRead => (
                "read reconciliation runs, days, closes and bulk jobs",
                "查看对账批次、对账日、日结和批量任务",
            ),
            Scope::ReconWrite => (
                "upload, pull and resume statements",
                "上传、拉取和续跑对账单",
            ),
            Scope::StatementsDownload => ("download raw statement files", "下载原始对账单文件"),
            Scope::BankRead => ("read bank statements and payouts", "查看银行流水和结算"),
            Scope::BankWrite => (
                "import bank statements and run matching",
                "导入银行流水并执行匹配",
            ),
            Scope::OutboxRead => (
                "read outbox messages, jobs and sinks",
                "查看外发消息、任务和接收端",
            ),
            Scope::OutboxWrite => (
                "resend, recover and cancel outbox jobs",
                "重发、恢复外发消息和取消任务",
            ),
            Scope::SinksWrite => (
                "pause, resume and retry sinks",
                "暂停、恢复和立即重试接收端",
            ),
            Scope::WebhooksRead => ("read refused webhooks", "查看被拒回调"),
        };
        match lang {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }

    /// Scope names as written on the command line or posted by the console
    /// (`all` for every scope), each named once, in [`Scope::ALL`]'s order.
    /// None at all, or an unknown name, is refused with the names there are.
    pub fn parse_list<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Vec<Scope>, String> {
        let mut picked = Vec::new();
        for name in names.into_iter().map(str::trim).filter(|n| !n.is_empty()) {
            if name == ALL_SCOPES {
                picked.extend(Scope::ALL);
            } else {
                picked.push(name.parse()?);
            }
        }
        if picked.is_empty() {
            return Err(format!(
                "a token needs at least one scope: {}, or {ALL_SCOPES}",
                Scope::names()
            ));
        }
        picked.sort();
        picked.dedup();
        Ok(picked)
    }

    /// Every scope's name, comma-separated.
    pub fn names() -> String {
        Scope::ALL
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown scope `{s}`: expected {}, or {ALL_SCOPES}",
                    Scope::names()
                )
            })
    }
}

/// A token as the console and `reckon token list` show it (never the
/// token itself, which is shown once, when it is made).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    pub id: String,
    pub name: String,
    /// The token's first characters, to tell it apart.
    pub prefix: String,
    /// The owner's username; none for a token made before owners.
    pub owner: Option<String>,
    /// None: a token made before scopes, which may do everything.
    pub scopes: Option<Vec<Scope>>,
    /// Microseconds since the epoch, UTC (as every time here).
    pub created_at: i64,
    pub created_by: String,
    pub expires_at: Option<i64>,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// A token just made: the only time the token itself is shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedToken {
    pub name: String,
    pub prefix: String,
    pub token: String,
    /// Set when the approval policy holds the token: it works once the
    /// held action with this id is approved.
    #[serde(default)]
    pub held_action: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scope_reads_back_from_its_name() {
        for scope in Scope::ALL {
            assert_eq!(scope.as_str().parse::<Scope>(), Ok(scope));
            assert_eq!(
                serde_json::to_value(scope).unwrap(),
                serde_json::json!(scope.as_str())
            );
        }
    }

    #[test]
    fn a_list_is_checked_and_all_is_every_scope() {
        assert_eq!(
            Scope::parse_list(["recon:write", " payments:read", "recon:write"]),
            Ok(vec![Scope::PaymentsRead, Scope::ReconWrite])
        );
        assert_eq!(Scope::parse_list(["all"]), Ok(Scope::ALL.to_vec()));
        assert!(
            Scope::parse_list([""])
                .unwrap_err()
                .contains("at least one")
        );
        assert!(
            Scope::parse_list(["payments:delete"])
                .unwrap_err()
                .contains("unknown scope `payments:delete`")
        );
    }
}
