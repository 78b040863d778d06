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
    /// PENDING, PAYOUT_LATE, PAYOUT_MATCHED, PAYOUT_MISSING,
    /// PAYOUT_AMOUNT_MISMATCH or NOT_SENT.
    pub state: String,
    /// The provider's own word (`paid`, `in_transit`, …).
    pub status: String,
}

/// One provider account's cash at the bank on a day: expected (payouts
/// announced for it, and reconciled days not paid out yet at their usual
/// delay) and arrived.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CashLine {
    pub day: String,
    pub provider: String,
    pub currency: String,
    pub payouts: i64,
    pub announced: String,
    pub settled_days: i64,
    pub settled: String,
    pub expected: String,
    pub arrived: String,
    /// Today or later: still to come.
    pub ahead: bool,
}

/// A provider account's payout delay as learned from its history (days
/// from a payout's origin to its bank credit); `None` until it has enough
/// matched payouts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelayLine {
    pub provider: String,
    pub currency: String,
    pub samples: i64,
    pub median_days: Option<i64>,
    pub late_after_days: Option<i64>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankView {
    pub statements: Vec<BankStatementLine>,
    pub payouts: Vec<PayoutLine>,
    /// Expected cash from a week back to two weeks ahead.
    pub cash: Vec<CashLine>,
    pub delays: Vec<DelayLine>,
}
