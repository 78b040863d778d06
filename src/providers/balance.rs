//! The balance side of a provider that keeps the merchant's money in an
//! account before it goes to the bank (WeChat Pay's 资金账单, Alipay's
//! 账务明细): every movement of that account on a day, in one neutral form,
//! read whole and checked against the bill's own totals and running balance
//! before anything is done with it.

use super::CallError;
use crate::domain::{Currency, Money, quote};

/// What a movement of the balance is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MovementKind {
    /// A payment's money coming in.
    PaymentIn,
    /// A fee taken (a fee given back is a negative one).
    Fee,
    /// A refund's money going out.
    RefundOut,
    /// Money sent to the merchant's bank account (提现): a payout.
    Withdrawal,
    /// Anything else (a transfer, a top-up, an adjustment): shown, not
    /// part of the day's trade.
    Other,
}

/// One movement, as the bill states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Movement {
    pub line_no: i64,
    pub kind: MovementKind,
    /// Signed: what came into the balance is positive, what left negative.
    pub money: Money,
    /// The provider's id of the movement (资金流水单号, 账务流水号).
    pub flow_id: String,
    /// The business it belongs to (微信支付业务单号, 业务流水号), if stated.
    pub business_id: Option<String>,
    /// YYYY-MM-DD, the day it was booked (Beijing time).
    pub booked_on: String,
    /// The provider's own words for it (业务类型), kept for a person.
    pub label: String,
}

/// A day's balance bill, its own checks passed.
#[derive(Clone, Debug, Default)]
pub struct BalanceBill {
    /// The provider's word for the bill (`BASIC fund flow`, `signcustomer`).
    pub bill_type: String,
    pub movements: Vec<Movement>,
    /// The totals the bill states, each as (what, stated), all agreeing
    /// with the movements read.
    pub stated: Vec<(String, i64)>,
    /// SHA-256 of the bill's bytes, as downloaded and unpacked.
    pub sha256: String,
}

impl BalanceBill {
    /// The movements in one currency, summed by kind.
    pub fn sums(&self) -> std::collections::BTreeMap<&'static str, Sums> {
        let mut out = std::collections::BTreeMap::<&'static str, Sums>::new();
        for m in &self.movements {
            let s = out.entry(m.money.currency.code()).or_default();
            let v = m.money.minor;
            match m.kind {
                MovementKind::PaymentIn => s.payments_in += v,
                MovementKind::Fee => s.fees += -v,
                MovementKind::RefundOut => s.refunds_out += -v,
                MovementKind::Withdrawal => {
                    s.withdrawn += -v;
                    s.withdrawals += 1;
                }
                MovementKind::Other => s.other += v,
            }
        }
        for s in out.values_mut() {
            s.trade_net = s.payments_in - s.fees - s.refunds_out;
        }
        out
    }
}

/// One currency's balance movements of the day, in minor units, each
/// positive as the trade bill's figures are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Sums {
    pub payments_in: i64,
    pub fees: i64,
    pub refunds_out: i64,
    /// Payments in less fees less refunds out: what the day's trade moved
    /// the balance by.
    pub trade_net: i64,
    /// Sent to the bank, and how many times.
    pub withdrawn: i64,
    pub withdrawals: i64,
    /// Every other movement, signed.
    pub other: i64,
}

/// A provider whose day's balance bill Reckon fetches through its API.
#[async_trait::async_trait]
pub trait BalanceBills: Send + Sync {
    /// The provider's kind (`wechatpay`, `alipay`): what its withdrawals
    /// are told by on the bank side.
    fn kind(&self) -> &'static str;
    /// The day's balance bill, downloaded, checked (signatures, digest) and
    /// read; a bill that does not read or whose totals disagree is refused
    /// ([`CallError::Refused`]) with the reason.
    async fn balance_bill(&self, date: &str) -> Result<BalanceBill, CallError>;
}

/// The running balance a bill states after each movement must follow from
/// the one before and the movement: a row cut, shifted or changed shows
/// here. Oldest first (WeChat Pay) or newest first (Alipay's export lists
/// the latest at the top): either order, one throughout. Each row is
/// (line, movement, balance after it).
pub(crate) fn running(rows: &[(i64, i64, i64)]) -> Result<(), String> {
    let pairs = || rows.windows(2).map(|w| (w[0], w[1]));
    let oldest_first = pairs().all(|(a, b)| a.2.checked_add(b.1) == Some(b.2));
    let newest_first = pairs().all(|(a, b)| a.2.checked_sub(a.1) == Some(b.2));
    if oldest_first || newest_first {
        return Ok(());
    }
    // The first row that breaks the order the bill starts in.
    let ((_, _, before), (line_no, movement, balance)) = pairs()
        .find(|(a, b)| a.2.checked_add(b.1) != Some(b.2))
        .expect("one pair breaks it");
    let shown = |v: i64| Money::new(v, cny()).shown();
    Err(format!(
        "line {line_no}: the balance after it is {} where the balance before, {}, and the movement, {}, make {}",
        shown(balance),
        shown(before),
        shown(movement),
        shown(before.saturating_add(movement)),
    ))
}

fn cny() -> Currency {
    crate::statement::cny()
}

/// An amount in yuan as a bill writes it (a sign allowed), or why the line
/// is refused.
pub(crate) fn yuan(text: &str, column: &str) -> Result<i64, String> {
    Money::parse_major(text.trim(), cny())
        .map(|m| m.minor)
        .map_err(|e| format!("{column} {}: {e}", quote(text)))
}

/// A count as a bill writes it (`3` or `3.0`).
pub(crate) fn count(text: &str, column: &str) -> Result<i64, String> {
    let t = text.trim();
    let whole = match t.split_once('.') {
        Some((whole, zeros)) if zeros.bytes().all(|b| b == b'0') => whole,
        _ => t,
    };
    whole
        .parse()
        .map_err(|_| format!("{column} {} is not a count", quote(text)))
}

/// The day of a `YYYY-MM-DD HH:MM:SS` time, as written.
pub(crate) fn day_of(time: &str) -> Result<String, String> {
    let t = time.trim();
    t.get(..10)
        .and_then(|d| d.parse::<jiff::civil::Date>().ok())
        .filter(|_| crate::statement::time::local_time(t, 8).is_some())
        .map(|d| d.to_string())
        .ok_or_else(|| format!("the time {} is not YYYY-MM-DD HH:MM:SS", quote(time)))
}

/// Stated against read, refused when they differ.
pub(crate) fn agree(what: &str, stated: i64, read: i64, money: bool) -> Result<(), String> {
    if stated == read {
        return Ok(());
    }
    let shown = |v: i64| {
        if money {
            Money::new(v, cny()).shown()
        } else {
            v.to_string()
        }
    };
    Err(format!(
        "{what}: the bill says {}, its rows make {}: the bill is incomplete or altered, nothing was read",
        shown(stated),
        shown(read)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_balance_that_does_not_follow_is_refused() {
        let up = [(2, 100, 1_100), (3, -30, 1_070), (4, -30, 1_040)];
        running(&up).unwrap();
        let down = [(2, -30, 1_040), (3, -30, 1_070), (4, 100, 1_100)];
        running(&down).unwrap();
        let err = running(&[(2, 100, 1_100), (3, -30, 1_070), (4, -30, 1_050)]).unwrap_err();
        assert!(err.contains("line 4"), "{err}");
    }

    #[test]
    fn sums_put_each_kind_in_its_place() {
        let m = |kind, minor| Movement {
            line_no: 1,
            kind,
            money: Money::new(minor, cny()),
            flow_id: "F".into(),
            business_id: None,
            booked_on: "2026-11-30".into(),
            label: String::new(),
        };
        let bill = BalanceBill {
            movements: vec![
                m(MovementKind::PaymentIn, 12_800),
                m(MovementKind::Fee, -77),
                m(MovementKind::RefundOut, -2_783),
                m(MovementKind::Withdrawal, -9_940),
                m(MovementKind::Other, 500),
            ],
            ..BalanceBill::default()
        };
        let s = bill.sums()["CNY"];
        assert_eq!(s.trade_net, 12_800 - 77 - 2_783);
        assert_eq!((s.withdrawn, s.withdrawals, s.other), (9_940, 1, 500));
    }
}
