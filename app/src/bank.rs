//! The bank side's wire types: the day's money settled to the bank (on the
//! dashboard), and the bank page's imported statements and payouts with
//! their match state. Amounts arrive formatted (`9048.00`) with their
//! currency.

use serde::{Deserialize, Serialize};

/// Payouts matched to a bank credit arriving on the day, for one provider
/// and currency.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettledRow {
    pub provider: String,
    pub currency: String,
    pub payouts: i64,
    pub amount: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct BankStatementLine {
    pub statement_id: String,
    pub imported_at: i64,
    pub imported_by: String,
    pub format: String,
    pub file_name: Option<String>,
    pub account: Option<String>,
    pub entries: i64,
    pub credits: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct PayoutLine {
    pub provider: String,
    pub payout_id: String,
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub amount: String,
    pub currency: String,
    pub arrival_on: String,
    /// PENDING, PAYOUT_MATCHED, PAYOUT_MISSING, PAYOUT_AMOUNT_MISMATCH or
    /// NOT_SENT.
    pub state: String,
    /// The provider's own word (`paid`, `in_transit`, …).
    pub status: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankView {
    pub statements: Vec<BankStatementLine>,
    pub payouts: Vec<PayoutLine>,
}
