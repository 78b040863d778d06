//! Fees and net: the day's money as the statement tells it, summed as each
//! row is read (a file's run keeps only the rows behind its tickets, so the
//! sums cannot be made later), and each payment row's fee checked against
//! the account's expected rate (`fees` in its config section). A fee beyond
//! the tolerance is a FEE_MISMATCH ticket: no hold, no money moves, a person
//! concludes it (the provider's contract, a promotion, a mistake to claim).

use super::run::Found;
use crate::domain::{Class, Fee, Money, Severity};
use crate::providers::fees::FeeExpectation;
use crate::statement::{RowKind, RowRef};
use std::collections::BTreeMap;

/// FEE_MISMATCH tickets one run opens at most: a wrong rate in the config
/// would otherwise make a ticket of every row. The figures count them all.
pub(super) const MAX_FEE_TICKETS: usize = 1_000;

/// One currency's figures of the day, in minor units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub(super) struct Sums {
    /// Paid payment rows and what they took.
    pub payments: i64,
    pub gross_minor: i64,
    /// Succeeded refund rows and what they gave back.
    pub refunds: i64,
    pub refunds_minor: i64,
    /// Every row's fee: taken on payments, given back on refunds (negative),
    /// summed exactly at the statement's precision, in 1/100,000 of the
    /// major unit (WeChat Pay states fees to five places).
    pub fees_e5: i64,
    /// `fees_e5` rounded once, half away from zero, to the minor unit: the
    /// day's fees as money is booked (what `net_minor` takes off).
    pub fees_minor: i64,
    /// Gross less refunds less fees: what the provider owes for the day.
    pub net_minor: i64,
    /// Rows the statement gave no fee for.
    pub rows_without_fee: i64,
}

/// The expected fee, parsed once.
#[derive(Clone, Copy, Debug)]
struct Expect {
    ppm: i64,
    fixed: i64,
    tolerance: i64,
}

/// A payment row whose fee is not the expected one.
#[derive(Clone, Debug)]
struct Mismatch {
    line_no: i64,
    txn: Option<String>,
    payment_no: Option<String>,
    money: Money,
    /// The fee as stated, exact; and rounded to the minor unit, as the
    /// expected fee is.
    fee: Fee,
    charged: i64,
    expected: i64,
}

/// The day's sums per currency and the fees that did not match, as the
/// rows go by.
#[derive(Default)]
pub(super) struct DayFees {
    expect: Option<Expect>,
    rate: Option<String>,
    sums: BTreeMap<&'static str, Sums>,
    mismatches: Vec<Mismatch>,
    mismatched: i64,
}

/// What a run's figures say of the day's money (`fees_and_net`).
#[derive(Debug, Default, serde::Serialize)]
pub(super) struct FeeFigures {
    pub currencies: BTreeMap<&'static str, Sums>,
    /// The expected rate checked, if one is configured.
    pub expected_rate: Option<String>,
    /// Payment rows whose fee is beyond the tolerance (all of them, though
    /// at most [`MAX_FEE_TICKETS`] become tickets).
    pub fee_mismatches: i64,
}

/// The fee `ppm` parts per million of `minor` plus `fixed`, rounded half
/// away from zero, as providers round a fee to the minor unit.
fn expected_fee(minor: i64, e: Expect) -> i64 {
    let scaled = i128::from(minor) * i128::from(e.ppm);
    let rounded = (scaled.abs() + 500_000) / 1_000_000 * scaled.signum();
    i64::try_from(rounded).unwrap_or(i64::MAX) + e.fixed
}

impl DayFees {
    /// Sums only, or sums and a check against `expect` (checked valid when
    /// the config was read; a rate that does not parse checks nothing).
    pub fn new(expect: Option<&FeeExpectation>) -> DayFees {
        let parsed = expect.and_then(|e| {
            Some(Expect {
                ppm: e.rate_ppm().ok()?,
                fixed: e.fixed_minor,
                tolerance: e.tolerance_minor,
            })
        });
        DayFees {
            expect: parsed,
            rate: parsed.and(expect.map(|e| e.rate.trim().to_owned())),
            ..DayFees::default()
        }
    }

    /// A statement row, as it is read.
    pub fn add(&mut self, row: &RowRef<'_>) {
        let sums = self.sums.entry(row.money.currency.code()).or_default();
        let succeeded = row.status == "SUCCEEDED";
        match row.kind {
            RowKind::Payment if succeeded => {
                sums.payments += 1;
                sums.gross_minor = sums.gross_minor.saturating_add(row.money.minor);
            }
            RowKind::Refund if succeeded => {
                sums.refunds += 1;
                sums.refunds_minor = sums.refunds_minor.saturating_add(row.money.minor);
            }
            _ => {}
        }
        // Every row's fee counts, as the provider's own fee total does.
        match row.fee {
            Some(fee) => sums.fees_e5 = sums.fees_e5.saturating_add(fee.e5),
            None => sums.rows_without_fee += 1,
        }
        if let (Some(e), Some(fee), RowKind::Payment, true) =
            (self.expect, row.fee, row.kind, succeeded)
        {
            // Compared in the minor unit the expectation is stated in: a
            // fee of 0.11994 is the expected 0.12 of 0.6% of 19.99.
            let expected = expected_fee(row.money.minor, e);
            if fee.minor().abs_diff(expected) > e.tolerance.unsigned_abs() {
                self.mismatched += 1;
                if self.mismatches.len() < MAX_FEE_TICKETS {
                    self.mismatches.push(Mismatch {
                        line_no: row.line_no,
                        txn: row.provider_txn_id.map(str::to_owned),
                        payment_no: row.payment_no.map(str::to_owned),
                        money: row.money,
                        fee,
                        charged: fee.minor(),
                        expected,
                    });
                }
            }
        }
    }

    /// The figures, and a FEE_MISMATCH finding per row beyond the
    /// tolerance (MEDIUM when more was taken than expected, LOW when less).
    pub fn finish(self) -> (FeeFigures, Vec<Found>) {
        let mut currencies = self.sums;
        for (code, s) in currencies.iter_mut() {
            if let Ok(currency) = crate::domain::Currency::parse(code) {
                s.fees_minor = Fee::minor_of(s.fees_e5, currency);
            }
            s.net_minor = s
                .gross_minor
                .saturating_sub(s.refunds_minor)
                .saturating_sub(s.fees_minor);
        }
        let rate = self.rate.clone().unwrap_or_default();
        let found = self
            .mismatches
            .into_iter()
            .map(|m| {
                let money = |minor: i64| Money::new(minor, m.money.currency).shown();
                let key = m
                    .txn
                    .clone()
                    .or_else(|| m.payment_no.clone())
                    .unwrap_or_else(|| format!("line-{}", m.line_no));
                Found {
                    class: Class::FeeMismatch,
                    severity: if m.charged > m.expected {
                        Severity::Medium
                    } else {
                        Severity::Low
                    },
                    key,
                    payment_no: m.payment_no,
                    order_no: None,
                    txn: m.txn,
                    line_no: Some(m.line_no),
                    local: None,
                    provider_side: Some((
                        m.money.minor,
                        m.money.currency.code().to_owned(),
                        "SUCCEEDED".to_owned(),
                    )),
                    reason: format!(
                        "the statement's fee is {} where {rate} of {} is {} (tolerance {}): check the rate agreed with the provider, then conclude",
                        m.fee.shown(),
                        m.money.shown(),
                        money(m.expected),
                        money(self.expect.map_or(0, |e| e.tolerance)),
                    ),
                    hold: Vec::new(),
                }
            })
            .collect();
        let figures = FeeFigures {
            currencies,
            expected_rate: self.rate,
            fee_mismatches: self.mismatched,
        };
        (figures, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Currency;

    fn row(kind: RowKind, minor: i64, fee: Option<i64>, status: &str) -> RowRef<'static> {
        let cny = Currency::parse("CNY").unwrap();
        RowRef {
            reference: None,
            line_no: 2,
            kind,
            provider_txn_id: Some("T1"),
            payment_no: Some("P1"),
            refund_no: None,
            provider_refund_id: None,
            money: Money::new(minor, cny),
            status: if status == "ok" {
                "SUCCEEDED"
            } else {
                "CLOSED"
            },
            occurred_at: None,
            fee: fee.map(|f| Fee::of_money(Money::new(f, cny))),
        }
    }

    fn exact(kind: RowKind, minor: i64, fee: &str) -> RowRef<'static> {
        let cny = Currency::parse("CNY").unwrap();
        RowRef {
            reference: None,
            fee: Some(Fee::parse_major(fee, cny).unwrap()),
            ..row(kind, minor, None, "ok")
        }
    }

    fn expecting(rate: &str, tolerance: i64) -> FeeExpectation {
        FeeExpectation {
            rate: rate.into(),
            fixed_minor: 0,
            tolerance_minor: tolerance,
        }
    }

    #[test]
    fn gross_fees_refunds_and_net_per_currency() {
        let mut d = DayFees::new(None);
        d.add(&row(RowKind::Payment, 19_900, Some(119), "ok"));
        d.add(&row(RowKind::Payment, 10_000, Some(60), "ok"));
        d.add(&row(RowKind::Payment, 500, None, "closed"));
        d.add(&row(RowKind::Refund, 5_000, Some(-30), "ok"));
        let (f, found) = d.finish();
        let cny = f.currencies["CNY"];
        assert_eq!((cny.payments, cny.gross_minor), (2, 29_900));
        assert_eq!((cny.refunds, cny.refunds_minor), (1, 5_000));
        assert_eq!(cny.fees_minor, 149);
        assert_eq!(cny.net_minor, 29_900 - 5_000 - 149);
        assert_eq!(cny.rows_without_fee, 1);
        assert!(found.is_empty(), "no rate, no check");
    }

    #[test]
    fn a_fee_beyond_the_tolerance_is_a_finding_within_it_none() {
        let e = expecting("0.6%", 1);
        let mut d = DayFees::new(Some(&e));
        d.add(&row(RowKind::Payment, 19_900, Some(119), "ok")); // 119.4 → 119
        d.add(&row(RowKind::Payment, 19_900, Some(120), "ok")); // within 1
        d.add(&row(RowKind::Payment, 19_900, Some(150), "ok")); // 31 too much
        d.add(&row(RowKind::Payment, 19_900, Some(50), "ok")); // too little
        d.add(&row(RowKind::Refund, 19_900, Some(0), "ok")); // refunds: not checked
        let (f, found) = d.finish();
        assert_eq!(f.fee_mismatches, 2);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].class, Class::FeeMismatch);
        assert_eq!(found[0].severity, Severity::Medium);
        assert_eq!(found[1].severity, Severity::Low);
        assert!(found[0].reason.contains("1.50 CNY"), "{}", found[0].reason);
        assert!(found[0].reason.contains("1.19 CNY"), "{}", found[0].reason);
    }

    /// Fees at five places sum exactly; the day's total is rounded once,
    /// where net is booked, not row by row (three rows of 0.11994 are
    /// 0.35982, booked 0.36; rounded each, 0.36 too, but ten are 1.1994,
    /// booked 1.20 where ten rounded rows would make 1.20 — and 0.00500
    /// twice is 0.01, where each rounded alone is 0.01 and the two 0.02).
    #[test]
    fn fractional_fees_sum_exactly_and_the_day_rounds_once() {
        let e = expecting("0.6%", 0);
        let mut d = DayFees::new(Some(&e));
        for _ in 0..3 {
            d.add(&exact(RowKind::Payment, 1_999, "0.11994"));
        }
        d.add(&exact(RowKind::Payment, 100, "0.00500"));
        d.add(&exact(RowKind::Payment, 100, "0.00500"));
        d.add(&exact(RowKind::Refund, 1_999, "-0.11994"));
        let (f, found) = d.finish();
        let cny = f.currencies["CNY"];
        assert_eq!(cny.fees_e5, 3 * 11_994 + 2 * 500 - 11_994);
        assert_eq!(cny.fees_minor, 25, "0.24988 booked as 0.25");
        assert_eq!(cny.net_minor, 3 * 1_999 + 200 - 1_999 - 25);
        // 0.11994 is the expected 0.6% of 19.99 (0.12); 0.005 of 1.00 is
        // 0.006, both 0.01 in fen.
        assert!(found.is_empty(), "{} found", found.len());
        let mut d = DayFees::new(Some(&e));
        d.add(&exact(RowKind::Payment, 1_999, "0.15994"));
        let (_, found) = d.finish();
        assert!(
            found[0].reason.contains("0.15994 CNY"),
            "{}",
            found[0].reason
        );
    }

    #[test]
    fn rounding_is_half_away_from_zero_plus_the_fixed_part() {
        let e = Expect {
            ppm: 29_000,
            fixed: 30,
            tolerance: 0,
        };
        assert_eq!(expected_fee(1_000, e), 29 + 30);
        assert_eq!(expected_fee(50, e), 1 + 30, "1.45 rounds to 1");
        assert_eq!(expected_fee(1_724, e), 50 + 30, "49.996 rounds to 50");
    }
}
