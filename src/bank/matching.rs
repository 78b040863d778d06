//! Payouts against bank credits, decided without I/O. A payout matches
//! the credit that names it (its id in the end-to-end id, the bank's
//! reference or the remittance text) — at the same amount and currency a
//! match, at another a PAYOUT_AMOUNT_MISMATCH. Otherwise it matches a
//! credit from the same provider with the same amount and currency booked
//! within the window around its arrival date, the one naming its
//! statement descriptor first, then the nearest in time. Each credit
//! settles at most one payout. What the window has passed without a
//! partner is PAYOUT_MISSING (a payout) or BANK_ONLY (a provider's credit).
//!
//! Then the grouped pass ([`Grouped`]): for a credit whose window has passed
//! unmatched, the open payouts of one provider account, currency and
//! window whose amounts sum exactly to it (N:1), and for such a payout the
//! credits that sum to it (1:N). Only a proposal: a person approves it.

use jiff::civil::Date;

pub use crate::domain::grouping::GROUP_CANDIDATES;
use crate::domain::grouping::{best, covering_sets};

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
    /// A member of a group waiting for approval: not grouped again.
    pub grouped: bool,
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
    /// A member of a group waiting for approval: not grouped again.
    pub grouped: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Matched {
        payout: usize,
        credit: usize,
    },
    AmountMismatch {
        payout: usize,
        credit: usize,
    },
    Missing {
        payout: usize,
    },
    BankOnly {
        credit: usize,
    },
    /// What the grouped pass found for a credit or payout past its window.
    Group(Grouped),
}

/// The side a grouped search starts from: the one credit of an N:1, the
/// one payout of a 1:N.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Credit(usize),
    Payout(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grouped {
    /// Several payouts that together are one credit (members by index,
    /// oldest first).
    Payouts { credit: usize, payouts: Vec<usize> },
    /// One payout paid as several credits.
    Credits { payout: usize, credits: Vec<usize> },
    /// More than one covering set is as good as the best: none proposed.
    Ambiguous {
        anchor: Anchor,
        sets: Vec<Vec<usize>>,
    },
    /// More candidates than [`GROUP_CANDIDATES`]: not searched.
    TooMany { anchor: Anchor, candidates: usize },
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
    let (reserved_p, reserved_c) = named_groups(payouts, credits);
    // By reference first: a credit that names the payout is its credit,
    // whatever its amount or day.
    for &p in &order {
        if reserved_p[p] {
            continue;
        }
        let id = payouts[p].payout_id.to_lowercase();
        let named = (0..credits.len())
            .find(|&c| !used[c] && !reserved_c[c] && credits[c].text.contains(&id));
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
        if settled[p] || reserved_p[p] {
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
                    && !reserved_c[c]
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
    grouped(payouts, credits, (&settled, &used), window, today, &mut out);
    out
}

/// Whether payout `p` and credit `c` name each other: the credit's text
/// carries the payout's id or its statement descriptor.
fn names(p: &OpenPayout, c: &OpenCredit) -> bool {
    let descriptor = p
        .descriptor
        .as_deref()
        .map(str::to_lowercase)
        .filter(|d| !d.trim().is_empty());
    c.text.contains(&p.payout_id.to_lowercase()) || descriptor.is_some_and(|d| c.text.contains(&d))
}

/// Payouts and credits that name each other in a group summing exactly —
/// a credit naming several payouts that together are its amount, a payout
/// named by several credits that together are its amount: left to the
/// grouped pass, rather than the first of them taken as a mismatch.
fn named_groups(payouts: &[OpenPayout], credits: &[OpenCredit]) -> (Vec<bool>, Vec<bool>) {
    let mut rp = vec![false; payouts.len()];
    let mut rc = vec![false; credits.len()];
    let by_id = |p: &OpenPayout, c: &OpenCredit| {
        c.text.contains(&p.payout_id.to_lowercase()) && p.kind == c.kind && p.currency == c.currency
    };
    for (c, cr) in credits.iter().enumerate() {
        let named: Vec<usize> = (0..payouts.len())
            .filter(|&p| by_id(&payouts[p], cr))
            .collect();
        let sum: i128 = named
            .iter()
            .map(|&p| i128::from(payouts[p].amount_minor))
            .sum();
        if named.len() >= 2 && sum == i128::from(cr.amount_minor) {
            rc[c] = true;
            named.iter().for_each(|&p| rp[p] = true);
        }
    }
    for (p, po) in payouts.iter().enumerate() {
        let naming: Vec<usize> = (0..credits.len())
            .filter(|&c| by_id(po, &credits[c]))
            .collect();
        let sum: i128 = naming
            .iter()
            .map(|&c| i128::from(credits[c].amount_minor))
            .sum();
        if naming.len() >= 2 && sum == i128::from(po.amount_minor) {
            rp[p] = true;
            naming.iter().for_each(|&c| rc[c] = true);
        }
    }
    (rp, rc)
}

/// The grouped pass, after the 1:1 passes: each credit past its window
/// unmatched against the open payouts of one account (N:1), then each such
/// payout against the credits left (1:N). A set is preferred when every
/// member names the other side (its id or descriptor), then when its
/// members are nearest the anchor's day (the farthest, then all together);
/// two sets alike on that are ambiguous and nothing is proposed.
fn grouped(
    payouts: &[OpenPayout],
    credits: &[OpenCredit],
    (settled, used): (&[bool], &[bool]),
    window: i64,
    today: Date,
    out: &mut Vec<Decision>,
) {
    let past = |d: Date| days_between(today, d) > window && today > d;
    let mut taken_p: Vec<bool> = payouts
        .iter()
        .zip(settled)
        .map(|(p, s)| *s || p.grouped)
        .collect();
    let mut taken_c: Vec<bool> = credits
        .iter()
        .zip(used)
        .map(|(c, u)| *u || c.grouped)
        .collect();
    let mut anchors: Vec<usize> = (0..credits.len())
        .filter(|&c| !taken_c[c] && past(credits[c].booked_on))
        .collect();
    anchors.sort_by(|&a, &b| {
        (credits[a].booked_on, &credits[a].entry_id)
            .cmp(&(credits[b].booked_on, &credits[b].entry_id))
    });
    for c in anchors {
        let cr = &credits[c];
        let fits = |p: usize| {
            let po = &payouts[p];
            !taken_p[p]
                && po.kind == cr.kind
                && po.currency == cr.currency
                && po.amount_minor > 0
                && po.amount_minor < cr.amount_minor
                && days_between(po.arrival_on, cr.booked_on) <= window
        };
        // One account's payouts make one group.
        let mut accounts: Vec<&str> = (0..payouts.len())
            .filter(|&p| fits(p))
            .map(|p| payouts[p].provider.as_str())
            .collect();
        accounts.sort_unstable();
        accounts.dedup();
        let mut sets = Vec::new();
        let mut too_many = 0;
        for account in accounts {
            let cands: Vec<usize> = (0..payouts.len())
                .filter(|&p| fits(p) && payouts[p].provider == account)
                .collect();
            if cands.len() > GROUP_CANDIDATES {
                too_many = too_many.max(cands.len());
                continue;
            }
            let amounts: Vec<i64> = cands.iter().map(|&p| payouts[p].amount_minor).collect();
            sets.extend(
                covering_sets(&amounts, cr.amount_minor)
                    .into_iter()
                    .map(|s| s.into_iter().map(|i| cands[i]).collect::<Vec<_>>()),
            );
        }
        let anchor = Anchor::Credit(c);
        if too_many > 0 {
            out.push(Decision::Group(Grouped::TooMany {
                anchor,
                candidates: too_many,
            }));
            continue;
        }
        if sets.is_empty() {
            continue;
        }
        let rank = |s: &[usize]| {
            let dist: Vec<i64> = s
                .iter()
                .map(|&p| days_between(payouts[p].arrival_on, cr.booked_on))
                .collect();
            (
                !s.iter().all(|&p| names(&payouts[p], cr)),
                dist.iter().copied().max().unwrap_or(0),
                dist.iter().sum::<i64>(),
            )
        };
        match best(sets, rank) {
            Ok(mut set) => {
                set.sort_by(|&a, &b| {
                    (payouts[a].arrival_on, &payouts[a].payout_id)
                        .cmp(&(payouts[b].arrival_on, &payouts[b].payout_id))
                });
                set.iter().for_each(|&p| taken_p[p] = true);
                taken_c[c] = true;
                out.push(Decision::Group(Grouped::Payouts {
                    credit: c,
                    payouts: set,
                }));
            }
            Err(sets) => out.push(Decision::Group(Grouped::Ambiguous { anchor, sets })),
        }
    }
    let mut anchors: Vec<usize> = (0..payouts.len())
        .filter(|&p| !taken_p[p] && past(payouts[p].arrival_on))
        .collect();
    anchors.sort_by(|&a, &b| {
        (payouts[a].arrival_on, &payouts[a].payout_id)
            .cmp(&(payouts[b].arrival_on, &payouts[b].payout_id))
    });
    for p in anchors {
        let po = &payouts[p];
        let cands: Vec<usize> = (0..credits.len())
            .filter(|&c| {
                let cr = &credits[c];
                !taken_c[c]
                    && cr.kind == po.kind
                    && cr.currency == po.currency
                    && cr.amount_minor > 0
                    && cr.amount_minor < po.amount_minor
                    && days_between(cr.booked_on, po.arrival_on) <= window
            })
            .collect();
        let anchor = Anchor::Payout(p);
        if cands.len() > GROUP_CANDIDATES {
            out.push(Decision::Group(Grouped::TooMany {
                anchor,
                candidates: cands.len(),
            }));
            continue;
        }
        let amounts: Vec<i64> = cands.iter().map(|&c| credits[c].amount_minor).collect();
        let sets: Vec<Vec<usize>> = covering_sets(&amounts, po.amount_minor)
            .into_iter()
            .map(|s| s.into_iter().map(|i| cands[i]).collect())
            .collect();
        if sets.is_empty() {
            continue;
        }
        let rank = |s: &[usize]| {
            let dist: Vec<i64> = s
                .iter()
                .map(|&c| days_between(credits[c].booked_on, po.arrival_on))
                .collect();
            (
                !s.iter().all(|&c| names(po, &credits[c])),
                dist.iter().copied().max().unwrap_or(0),
                dist.iter().sum::<i64>(),
            )
        };
        match best(sets, rank) {
            Ok(mut set) => {
                set.sort_by(|&a, &b| {
                    (credits[a].booked_on, &credits[a].entry_id)
                        .cmp(&(credits[b].booked_on, &credits[b].entry_id))
                });
                set.iter().for_each(|&c| taken_c[c] = true);
                taken_p[p] = true;
                out.push(Decision::Group(Grouped::Credits {
                    payout: p,
                    credits: set,
                }));
            }
            Err(sets) => out.push(Decision::Group(Grouped::Ambiguous { anchor, sets })),
        }
    }
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
            grouped: false,
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
            grouped: false,
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

    fn group(d: &[Decision]) -> Vec<&Grouped> {
        d.iter()
            .filter_map(|d| match d {
                Decision::Group(g) => Some(g),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn three_payouts_that_sum_to_one_credit_are_proposed_as_its_group() {
        let payouts = [
            payout("po_A", 300_000, "2026-12-03", None),
            payout("po_B", 450_000, "2026-12-03", None),
            payout("po_C", 150_000, "2026-12-02", None),
            // Summing with A and B too, but the other currency.
            payout("po_X", 150_000, "2026-12-03", None),
        ];
        let mut payouts = payouts.to_vec();
        payouts[3].currency = "USD".into();
        let credits = [credit("e1", 900_000, "2026-12-03", "stripe transfer")];
        let d = decide(&payouts, &credits, 3, day("2026-12-08"));
        assert_eq!(
            group(&d),
            [&Grouped::Payouts {
                credit: 0,
                payouts: vec![2, 0, 1]
            }]
        );
        // The tickets are still opened: the proposal is made on them.
        assert!(d.contains(&Decision::BankOnly { credit: 0 }));
        assert!(d.contains(&Decision::Missing { payout: 0 }));
        // Inside the window nothing is grouped yet.
        assert!(group(&decide(&payouts, &credits, 3, day("2026-12-05"))).is_empty());
        // One cent off: no group.
        let off = [credit("e1", 900_001, "2026-12-03", "stripe")];
        assert!(group(&decide(&payouts, &off, 3, day("2026-12-08"))).is_empty());
    }

    #[test]
    fn one_payout_paid_as_several_credits_is_proposed_as_its_group() {
        let payouts = [payout("po_A", 1_000_000, "2026-12-03", None)];
        let credits = [
            credit("e1", 600_000, "2026-12-03", "stripe part 1"),
            credit("e2", 400_000, "2026-12-04", "stripe part 2"),
            credit(
                "e3",
                400_000,
                "2026-12-20",
                "stripe, far outside the window",
            ),
        ];
        let d = decide(&payouts, &credits, 3, day("2026-12-08"));
        assert_eq!(
            group(&d),
            [&Grouped::Credits {
                payout: 0,
                credits: vec![0, 1]
            }]
        );
    }

    #[test]
    fn two_sets_alike_are_ambiguous_and_nothing_is_proposed() {
        let payouts = [
            payout("po_A", 100, "2026-12-03", None),
            payout("po_B", 200, "2026-12-03", None),
            payout("po_C", 300, "2026-12-03", None),
            payout("po_D", 300, "2026-12-03", None),
        ];
        let credits = [credit("e1", 600, "2026-12-03", "stripe")];
        let d = decide(&payouts, &credits, 3, day("2026-12-08"));
        assert_eq!(
            group(&d),
            [&Grouped::Ambiguous {
                anchor: Anchor::Credit(0),
                sets: vec![vec![0, 1, 2], vec![0, 1, 3], vec![2, 3]],
            }]
        );
        // Nearer in time wins: D two days off makes the set without it best.
        let mut later = payouts.to_vec();
        later[3].arrival_on = day("2026-12-05");
        let d = decide(&later, &credits, 3, day("2026-12-09"));
        assert_eq!(
            group(&d),
            [&Grouped::Payouts {
                credit: 0,
                payouts: vec![0, 1, 2]
            }]
        );
        // Every member naming the credit wins over nearer ones: C and D
        // carry the descriptor the credit names.
        let mut named = later.clone();
        named[2].descriptor = Some("RECKON DEMO".into());
        named[3].descriptor = Some("RECKON DEMO".into());
        let credits = [credit("e1", 600, "2026-12-03", "stripe reckon demo")];
        let d = decide(&named, &credits, 3, day("2026-12-09"));
        assert_eq!(
            group(&d),
            [&Grouped::Payouts {
                credit: 0,
                payouts: vec![2, 3]
            }]
        );
    }

    #[test]
    fn a_credit_naming_its_payouts_is_their_group_not_a_mismatch() {
        let payouts = [
            payout("po_A", 100, "2026-12-03", None),
            payout("po_B", 250, "2026-12-03", None),
            payout("po_C", 350, "2026-12-03", None),
        ];
        let credits = [credit("e1", 350, "2026-12-03", "stripe po_A po_B")];
        // Inside the window: neither a mismatch of A, nor C's match by amount.
        let early = decide(&payouts, &credits, 3, day("2026-12-04"));
        assert_eq!(early, []);
        let d = decide(&payouts, &credits, 3, day("2026-12-08"));
        assert_eq!(
            group(&d),
            [&Grouped::Payouts {
                credit: 0,
                payouts: vec![0, 1]
            }]
        );
        // Naming one payout only is still that payout's mismatch.
        let one = [credit("e1", 350, "2026-12-03", "stripe po_A")];
        let d = decide(&payouts, &one, 3, day("2026-12-04"));
        assert_eq!(
            d,
            [Decision::AmountMismatch {
                payout: 0,
                credit: 0
            }]
        );
    }

    #[test]
    fn the_search_is_capped_and_says_so() {
        let many = |n: usize| -> Vec<OpenPayout> {
            (0..n)
                .map(|i| payout(&format!("po_{i:02}"), 100 + i as i64, "2026-12-03", None))
                .collect()
        };
        // 100 + 101 = 201: found among 12 candidates.
        let credits = [credit("e1", 201, "2026-12-03", "stripe")];
        let d = decide(&many(GROUP_CANDIDATES), &credits, 3, day("2026-12-08"));
        assert_eq!(
            group(&d),
            [&Grouped::Payouts {
                credit: 0,
                payouts: vec![0, 1]
            }]
        );
        let d = decide(&many(GROUP_CANDIDATES + 1), &credits, 3, day("2026-12-08"));
        assert_eq!(
            group(&d),
            [&Grouped::TooMany {
                anchor: Anchor::Credit(0),
                candidates: GROUP_CANDIDATES + 1
            }]
        );
    }

    #[test]
    fn another_provider_account_kind_or_window_is_no_group() {
        let base = [
            payout("po_A", 100, "2026-12-03", None),
            payout("po_B", 200, "2026-12-03", None),
        ];
        let credits = [credit("e1", 300, "2026-12-03", "stripe")];
        let found =
            |payouts: &[OpenPayout]| group(&decide(payouts, &credits, 3, day("2026-12-08"))).len();
        assert_eq!(found(&base), 1);
        let mut other = base.to_vec();
        other[1].provider = "stripe-us".into();
        assert_eq!(found(&other), 0, "two accounts' payouts are not one credit");
        let mut other = base.to_vec();
        other[1].kind = "adyen".into();
        assert_eq!(found(&other), 0, "another provider");
        let mut other = base.to_vec();
        other[1].arrival_on = day("2026-12-07");
        assert_eq!(found(&other), 0, "outside the window");
        let mut other = base.to_vec();
        other[1].grouped = true;
        assert_eq!(found(&other), 0, "already in a group waiting for approval");
        let mut other = base.to_vec();
        other[1].amount_minor = 199;
        assert_eq!(found(&other), 0);
    }
}
