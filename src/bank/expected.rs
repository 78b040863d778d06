//! Expected cash, decided without I/O: each provider account's payout
//! delay learned from its history, the cash expected at the bank per day
//! from it, and when a payout is later than usual (PAYOUT_LATE).
//!
//! A payout's delay is the whole days from its origin — the business day
//! whose statement reported it (the provider created it then), or the day
//! Reckon first saw it — to the day the bank booked the credit that paid
//! it. Per provider account and currency, over the matched payouts whose
//! credit was booked in the last [`HISTORY_DAYS`] (at most the latest
//! [`MAX_SAMPLES`]), the usual delay is the median and the range ends at
//! the 90th percentile, at least a day past the median. The 90th
//! percentile and not the maximum: one payout held over a bank holiday
//! would otherwise widen the range for two months; with fewer than ten
//! payouts the two are the same, the cautious choice while history is
//! short. Under [`MIN_SAMPLES`] payouts nothing is learned, so nothing is
//! placed by a delay and no payout is called late.

use jiff::ToSpan;
use jiff::civil::Date;
use std::collections::BTreeMap;

/// How far back the history reaches, in days of the credits' booking.
pub const HISTORY_DAYS: i64 = 60;
/// The most payouts a delay is learned from (the latest ones).
pub const MAX_SAMPLES: usize = 60;
/// Fewer matched payouts than this: no delay is learned.
pub const MIN_SAMPLES: usize = 5;

/// A provider account and a currency: what a delay is learned for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub provider: String,
    pub currency: String,
}

impl Key {
    pub fn new(provider: &str, currency: &str) -> Key {
        Key {
            provider: provider.to_owned(),
            currency: currency.to_owned(),
        }
    }
}

/// One payout that reached the bank: where it started and when the bank
/// booked it.
#[derive(Clone, Debug)]
pub struct Paid {
    pub key: Key,
    pub origin: Date,
    pub credited: Date,
}

/// What a provider account's history says of its payouts' delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Delay {
    /// The payouts it was learned from.
    pub samples: usize,
    /// The usual delay, in days (the median; of two middles the lower).
    pub median_days: i64,
    /// The range's end: a payout not credited this many days after its
    /// origin is late (the 90th percentile, at least the median + 1).
    pub late_after_days: i64,
    /// The longest delay seen.
    pub max_days: i64,
}

/// The element at percentile `p` of `sorted` by nearest rank.
fn nearest_rank(sorted: &[i64], p: usize) -> i64 {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

/// The delay learned from `days` (each payout's delay in days, in any
/// order); `None` under [`MIN_SAMPLES`]. A credit booked before its origin
/// (a payout seen only after it arrived) counts as no delay.
pub fn learn(days: &[i64]) -> Option<Delay> {
    if days.len() < MIN_SAMPLES {
        return None;
    }
    let mut sorted: Vec<i64> = days.iter().map(|d| (*d).max(0)).collect();
    sorted.sort_unstable();
    let median = nearest_rank(&sorted, 50);
    let p90 = nearest_rank(&sorted, 90);
    Some(Delay {
        samples: sorted.len(),
        median_days: median,
        late_after_days: p90.max(median + 1),
        max_days: sorted[sorted.len() - 1],
    })
}

/// Whole days from `from` to `to` (negative when `to` is earlier).
pub fn days_from(from: Date, to: Date) -> i64 {
    i64::from((to - from).get_days())
}

/// `date` moved by `days`, or `date` itself at the calendar's edge.
pub fn plus_days(date: Date, days: i64) -> Date {
    date.checked_add(days.days()).unwrap_or(date)
}

/// Each key's delay from its history on `today`: credits booked in the
/// last [`HISTORY_DAYS`], the latest [`MAX_SAMPLES`] of each key. Keys
/// with too little history are left out.
pub fn learn_all(history: &[Paid], today: Date) -> BTreeMap<Key, Delay> {
    let since = plus_days(today, -HISTORY_DAYS);
    let mut by_key: BTreeMap<&Key, Vec<&Paid>> = BTreeMap::new();
    for p in history
        .iter()
        .filter(|p| p.credited >= since && p.credited <= today)
    {
        by_key.entry(&p.key).or_default().push(p);
    }
    by_key
        .into_iter()
        .filter_map(|(key, mut paid)| {
            paid.sort_by_key(|p| std::cmp::Reverse(p.credited));
            let days: Vec<i64> = paid
                .iter()
                .take(MAX_SAMPLES)
                .map(|p| days_from(p.origin, p.credited))
                .collect();
            Some((key.clone(), learn(&days)?))
        })
        .collect()
}

/// The first day a payout with no credit yet counts as late: the day
/// after its range ends, and never before the day after the arrival date
/// its provider announced.
pub fn late_from(origin: Date, arrival: Date, delay: &Delay) -> Date {
    plus_days(plus_days(origin, delay.late_after_days).max(arrival), 1)
}

/// Whether a payout with no credit on `today` is late; never without a
/// learned delay.
pub fn is_late(origin: Date, arrival: Date, delay: Option<&Delay>, today: Date) -> bool {
    delay.is_some_and(|d| today >= late_from(origin, arrival, d))
}

/// A payout the provider announced, expected on its arrival date.
#[derive(Clone, Debug)]
pub struct Announced {
    pub key: Key,
    pub arrival: Date,
    pub amount_minor: i64,
}

/// A reconciled business day's net.
#[derive(Clone, Debug)]
pub struct SettledDay {
    pub key: Key,
    pub day: Date,
    pub net_minor: i64,
}

/// Bank credits of a provider booked on a day.
#[derive(Clone, Debug)]
pub struct Arrived {
    pub key: Key,
    pub day: Date,
    pub amount_minor: i64,
}

/// The settled days no payout has taken yet: those after the origin of
/// the key's latest payout (a payout pays out what was settled up to the
/// day it was made), for keys that have had a payout; a day netting zero
/// brings nothing.
pub fn unpaid(settled: &[SettledDay], latest_payout: &BTreeMap<Key, Date>) -> Vec<SettledDay> {
    settled
        .iter()
        .filter(|s| s.net_minor != 0)
        .filter(|s| latest_payout.get(&s.key).is_some_and(|last| s.day > *last))
        .cloned()
        .collect()
}

/// One provider account's cash on one day at the bank.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DayCash {
    pub day: String,
    pub provider: String,
    pub currency: String,
    /// Payouts announced to arrive that day, and their sum.
    pub payouts: i64,
    pub announced_minor: i64,
    /// Settled days not paid out yet, placed at their day + the usual
    /// delay, and their net.
    pub settled_days: i64,
    pub settled_minor: i64,
    /// What is expected: the two sums.
    pub expected_minor: i64,
    /// What the bank booked from the provider that day.
    pub arrived_minor: i64,
}

/// The cash expected and arrived per day in `[from, to]`, per provider
/// account and currency, by day then key. An unpaid settled day is placed
/// at its day + the usual delay (left out without a learned delay); one
/// whose day is past stays there, so its shortfall shows.
pub fn expected_cash(
    announced: &[Announced],
    unpaid: &[SettledDay],
    arrived: &[Arrived],
    delays: &BTreeMap<Key, Delay>,
    from: Date,
    to: Date,
) -> Vec<DayCash> {
    let mut days: BTreeMap<(Date, Key), DayCash> = BTreeMap::new();
    fn at<'d>(
        days: &'d mut BTreeMap<(Date, Key), DayCash>,
        (from, to): (Date, Date),
        day: Date,
        key: &Key,
    ) -> Option<&'d mut DayCash> {
        if day < from || day > to {
            return None;
        }
        Some(days.entry((day, key.clone())).or_insert_with(|| DayCash {
            day: day.to_string(),
            provider: key.provider.clone(),
            currency: key.currency.clone(),
            ..DayCash::default()
        }))
    }
    let span = (from, to);
    for a in announced {
        if let Some(d) = at(&mut days, span, a.arrival, &a.key) {
            d.payouts += 1;
            d.announced_minor += a.amount_minor;
        }
    }
    for s in unpaid {
        let Some(delay) = delays.get(&s.key) else {
            continue;
        };
        if let Some(d) = at(&mut days, span, plus_days(s.day, delay.median_days), &s.key) {
            d.settled_days += 1;
            d.settled_minor += s.net_minor;
        }
    }
    for a in arrived {
        if let Some(d) = at(&mut days, span, a.day, &a.key) {
            d.arrived_minor += a.amount_minor;
        }
    }
    days.into_values()
        .map(|mut d| {
            d.expected_minor = d.announced_minor + d.settled_minor;
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> Date {
        s.parse().unwrap()
    }

    fn eur() -> Key {
        Key::new("stripe-eu", "EUR")
    }

    #[test]
    fn the_usual_delay_is_the_median_and_the_range_the_90th_percentile() {
        // Twenty payouts: mostly two days, some three, one held 15 days.
        let mut days = vec![2; 14];
        days.extend([3, 3, 3, 3, 1]);
        days.push(15);
        let d = learn(&days).unwrap();
        assert_eq!(
            d,
            Delay {
                samples: 20,
                median_days: 2,
                late_after_days: 3,
                max_days: 15
            },
            "the one outlier neither moves the median nor widens the range"
        );
        // Two outliers in twenty reach the 90th percentile.
        days[0] = 9;
        days[1] = 9;
        assert_eq!(learn(&days).unwrap().late_after_days, 9);
    }

    #[test]
    fn the_range_ends_at_least_a_day_past_the_median() {
        let d = learn(&[1, 1, 1, 1, 1, 1]).unwrap();
        assert_eq!((d.median_days, d.late_after_days, d.max_days), (1, 2, 1));
        // Of two middles the lower, and a negative delay counts as none.
        let d = learn(&[-1, 0, 2, 2, 4, 5]).unwrap();
        assert_eq!((d.median_days, d.late_after_days, d.max_days), (2, 5, 5));
    }

    #[test]
    fn too_little_history_learns_nothing_and_calls_nothing_late() {
        assert_eq!(learn(&[]), None);
        assert_eq!(learn(&[2, 2, 2, 2]), None);
        // With few payouts the 90th percentile is the maximum.
        assert_eq!(learn(&[2, 2, 2, 2, 6]).unwrap().late_after_days, 6);
        assert!(!is_late(
            day("2026-01-01"),
            day("2026-01-02"),
            None,
            day("2026-12-31")
        ));
    }

    #[test]
    fn history_counts_the_last_sixty_days_and_each_key_apart() {
        let paid = |key: Key, origin: &str, credited: &str| Paid {
            key,
            origin: day(origin),
            credited: day(credited),
        };
        let today = day("2026-12-10");
        let mut history = Vec::new();
        for d in 1..=5 {
            // Two days each for EUR, within the window.
            history.push(paid(
                eur(),
                &format!("2026-12-0{d}"),
                &format!("2026-12-0{}", d + 2),
            ));
        }
        // Older than sixty days: ten-day delays, not counted.
        for d in 1..=5 {
            history.push(paid(
                eur(),
                &format!("2026-09-0{d}"),
                &format!("2026-09-1{d}"),
            ));
        }
        // USD of the same account: four payouts only.
        for d in 1..=4 {
            history.push(paid(
                Key::new("stripe-eu", "USD"),
                &format!("2026-12-0{d}"),
                &format!("2026-12-0{}", d + 1),
            ));
        }
        let delays = learn_all(&history, today);
        assert_eq!(delays.len(), 1, "{delays:?}");
        let d = delays[&eur()];
        assert_eq!((d.samples, d.median_days, d.late_after_days), (5, 2, 3));
    }

    #[test]
    fn a_payout_is_late_past_its_range_and_never_before_its_arrival_date() {
        let d = learn(&[2, 2, 2, 3, 3]).unwrap();
        assert_eq!(d.late_after_days, 3);
        let origin = day("2026-12-01");
        // Range ends 12-04: late from 12-05.
        assert_eq!(late_from(origin, day("2026-12-03"), &d), day("2026-12-05"));
        assert!(!is_late(
            origin,
            day("2026-12-03"),
            Some(&d),
            day("2026-12-04")
        ));
        assert!(is_late(
            origin,
            day("2026-12-03"),
            Some(&d),
            day("2026-12-05")
        ));
        // Announced for 12-08: not late before 12-09.
        assert_eq!(late_from(origin, day("2026-12-08"), &d), day("2026-12-09"));
    }

    #[test]
    fn expected_cash_adds_announced_payouts_and_unpaid_days_at_their_usual_delay() {
        let delays: BTreeMap<Key, Delay> = [(eur(), learn(&[2, 2, 2, 3, 3]).unwrap())].into();
        let settled = [
            SettledDay {
                key: eur(),
                day: day("2026-12-04"),
                net_minor: 50_000,
            },
            SettledDay {
                key: eur(),
                day: day("2026-12-05"),
                net_minor: 70_000,
            },
            SettledDay {
                key: eur(),
                day: day("2026-12-06"),
                net_minor: 0,
            },
            // Paid out already (the latest payout was made on 12-04).
            SettledDay {
                key: eur(),
                day: day("2026-12-03"),
                net_minor: 99_999,
            },
            // No payout ever, no delay: not placed.
            SettledDay {
                key: Key::new("sandbox", "EUR"),
                day: day("2026-12-05"),
                net_minor: 1,
            },
        ];
        let latest: BTreeMap<Key, Date> = [
            (eur(), day("2026-12-04")),
            (Key::new("sandbox", "EUR"), day("2026-12-01")),
        ]
        .into();
        let open = unpaid(&settled, &latest);
        assert_eq!(
            open.iter()
                .map(|s| (s.key.provider.as_str(), s.net_minor))
                .collect::<Vec<_>>(),
            [("stripe-eu", 70_000), ("sandbox", 1)]
        );
        let announced = [
            Announced {
                key: eur(),
                arrival: day("2026-12-06"),
                amount_minor: 120_000,
            },
            Announced {
                key: eur(),
                arrival: day("2026-12-07"),
                amount_minor: 30_000,
            },
            Announced {
                key: eur(),
                arrival: day("2026-12-30"),
                amount_minor: 1,
            },
        ];
        let arrived = [Arrived {
            key: eur(),
            day: day("2026-12-06"),
            amount_minor: 100_000,
        }];
        let days = expected_cash(
            &announced,
            &open,
            &arrived,
            &delays,
            day("2026-12-06"),
            day("2026-12-10"),
        );
        let shown: Vec<(&str, i64, i64, i64, i64)> = days
            .iter()
            .map(|d| {
                (
                    d.day.as_str(),
                    d.announced_minor,
                    d.settled_minor,
                    d.expected_minor,
                    d.arrived_minor,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("2026-12-06", 120_000, 0, 120_000, 100_000),
                // 12-05 + 2 days.
                ("2026-12-07", 30_000, 70_000, 100_000, 0),
            ]
        );
        assert_eq!((days[1].payouts, days[1].settled_days), (1, 1));
    }
}
