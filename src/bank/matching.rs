//! Payouts against bank credits, decided without I/O. A payout matches
//! the credit that names it (its id in the end-to-end id, the bank's
//! reference or the remittance text) — at the same amount and currency a
//! match, at another a PAYOUT_AMOUNT_MISMATCH. Otherwise it matches a
//! credit from the same provider with the same amount and currency booked
//! within the window around its arrival date, the one naming its
//! statement descriptor first, then the nearest in time. Each credit
//! settles at most one payout. What the window has passed without a
//! partner is PAYOUT_MISSING (a payout) or BANK_ONLY (a provider's credit).

use jiff::civil::Date;

/// A payout not yet matched.
#[derive(Clone, Debug)]
pub struct OpenPayout {
    pub provider: String,
    pub payout_id: String,
    pub kind: String,
    pub amount_minor: i64,
    pub currency: String,
    pub arrival_on: Date,
    pub descriptor: Option<String>,
    /// Already past its window once (PAYOUT_MISSING): not decided again.
    pub missing: bool,
}

/// A provider's bank credit not yet matched.
#[derive(Clone, Debug)]
pub struct OpenCredit {
    pub entry_id: String,
    pub kind: String,
    pub amount_minor: i64,
    pub currency: String,
    pub booked_on: Date,
    /// End-to-end id, bank reference and remittance text, lowercased.
    pub text: String,
    /// Already BANK_ONLY: not decided again.
    pub bank_only: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Matched { payout: usize, credit: usize },
    AmountMismatch { payout: usize, credit: usize },
    Missing { payout: usize },
    BankOnly { credit: usize },
}

/// Whole days between two dates, either way round.
fn days_between(a: Date, b: Date) -> i64 {
    i64::from((a - b).get_days()).abs()
}

/// What to do with each open payout and credit on `today`, `window` days
/// either side of a payout's arrival.
pub fn decide(
    payouts: &[OpenPayout],
    credits: &[OpenCredit],
    window: i64,
    today: Date,
) -> Vec<Decision> {
    let mut out = Vec::new();
    let mut used = vec![false; credits.len()];
    let mut settled = vec![false; payouts.len()];
    let mut order: Vec<usize> = (0..payouts.len()).collect();
    order.sort_by(|&a, &b| {
        (payouts[a].arrival_on, &payouts[a].payout_id)
            .cmp(&(payouts[b].arrival_on, &payouts[b].payout_id))
    });
    // By reference first: a credit that names the payout is its credit,
    // whatever its amount or day.
    for &p in &order {
        let id = payouts[p].payout_id.to_lowercase();
        let named = (0..credits.len()).find(|&c| !used[c] && credits[c].text.contains(&id));
        if let Some(c) = named {
            used[c] = true;
            settled[p] = true;
            let same = credits[c].amount_minor == payouts[p].amount_minor
                && credits[c].currency == payouts[p].currency;
            out.push(if same {
                Decision::Matched {
                    payout: p,
                    credit: c,
                }
            } else {
                Decision::AmountMismatch {
                    payout: p,
                    credit: c,
                }
            });
        }
    }
    // Then by amount, currency and day within the window.
    for &p in &order {
        if settled[p] {
            continue;
        }
        let po = &payouts[p];
        let descriptor = po
            .descriptor
            .as_deref()
            .map(str::to_lowercase)
            .filter(|d| !d.trim().is_empty());
        let best = (0..credits.len())
            .filter(|&c| {
                let cr = &credits[c];
                !used[c]
                    && cr.kind == po.kind
                    && cr.currency == po.currency
                    && cr.amount_minor == po.amount_minor
                    && days_between(cr.booked_on, po.arrival_on) <= window
            })
            .min_by_key(|&c| {
                let names = descriptor
                    .as_deref()
                    .is_some_and(|d| credits[c].text.contains(d));
                (
                    !names,
                    days_between(credits[c].booked_on, po.arrival_on),
                    credits[c].entry_id.clone(),
                )
            });
        if let Some(c) = best {
            used[c] = true;
            settled[p] = true;
            out.push(Decision::Matched {
                payout: p,
                credit: c,
            });
        }
    }
    let past = |d: Date| days_between(today, d) > window && today > d;
    for &p in &order {
        if !settled[p] && !payouts[p].missing && past(payouts[p].arrival_on) {
            out.push(Decision::Missing { payout: p });
        }
    }
    for (c, credit) in credits.iter().enumerate() {
        if !used[c] && !credit.bank_only && past(credit.booked_on) {
            out.push(Decision::BankOnly { credit: c });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> Date {
        s.parse().unwrap()
    }

    fn payout(id: &str, amount: i64, arrival: &str, descriptor: Option<&str>) -> OpenPayout {
        OpenPayout {
            provider: "stripe-eu".into(),
            payout_id: id.into(),
            kind: "stripe".into(),
            amount_minor: amount,
            currency: "EUR".into(),
            arrival_on: day(arrival),
            descriptor: descriptor.map(str::to_owned),
            missing: false,
        }
    }

    fn credit(id: &str, amount: i64, booked: &str, text: &str) -> OpenCredit {
        OpenCredit {
            entry_id: id.into(),
            kind: "stripe".into(),
            amount_minor: amount,
            currency: "EUR".into(),
            booked_on: day(booked),
            text: text.to_lowercase(),
            bank_only: false,
        }
    }

    #[test]
    fn one_of_each_decision() {
        let payouts = [
            payout("po_A", 904_800, "2026-12-03", None),
            payout("po_B", 500_000, "2026-12-03", None),
            payout("po_C", 250_000, "2026-12-03", Some("RECKON DEMO")),
            payout("po_D", 150_000, "2026-12-02", None),
        ];
        let credits = [
            credit("e1", 904_800, "2026-12-03", "po_A stripe"),
            credit("e2", 499_000, "2026-12-03", "STRIPE PAYOUT po_B"),
            credit("e3", 250_000, "2026-12-04", "stripe"),
            credit("e4", 250_000, "2026-12-05", "stripe reckon demo"),
            credit("e5", 77_777, "2026-12-04", "stripe adjustment"),
        ];
        let d = decide(&payouts, &credits, 2, day("2026-12-08"));
        assert_eq!(
            d,
            [
                Decision::Matched {
                    payout: 0,
                    credit: 0
                },
                Decision::AmountMismatch {
                    payout: 1,
                    credit: 1
                },
                // The credit naming the descriptor over the nearer one.
                Decision::Matched {
                    payout: 2,
                    credit: 3
                },
                Decision::Missing { payout: 3 },
                Decision::BankOnly { credit: 2 },
                Decision::BankOnly { credit: 4 },
            ]
        );
        // Inside the window nothing is missing or bank-only yet.
        let early = decide(&payouts, &credits, 2, day("2026-12-04"));
        assert_eq!(early.len(), 3, "{early:?}");
    }

    #[test]
    fn outside_the_window_or_another_currency_is_no_match() {
        let payouts = [payout("po_A", 100, "2026-12-01", None)];
        let mut far = credit("e1", 100, "2026-12-05", "stripe");
        assert_eq!(
            decide(&payouts, std::slice::from_ref(&far), 3, day("2026-12-02")),
            []
        );
        far.booked_on = day("2026-12-04");
        far.currency = "USD".into();
        assert_eq!(decide(&payouts, &[far.clone()], 3, day("2026-12-02")), []);
        far.currency = "EUR".into();
        assert_eq!(
            decide(&payouts, &[far], 3, day("2026-12-02")),
            [Decision::Matched {
                payout: 0,
                credit: 0
            }]
        );
    }
}
