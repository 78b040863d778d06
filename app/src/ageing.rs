//! Open tickets' age, as the lists filter it and the dashboard shows it:
//! whole days since the ticket was found, in four buckets; the chosen day's
//! change (new, persisting, resolved) beside the day before's; and whether
//! a ticket is past its class's SLA.

use serde::{Deserialize, Serialize};

pub const DAY_US: i64 = 86_400_000_000;

/// Whole days a ticket found at `found_at` has been open at `now` (0 on its
/// first day; a clock behind the finding counts as 0).
pub fn age_days(found_at: i64, now: i64) -> i64 {
    (now - found_at).max(0) / DAY_US
}

/// 0–1, 2–7, 8–30 and more than 30 days.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AgeBucket {
    UpTo1,
    UpTo7,
    UpTo30,
    Over30,
}

impl AgeBucket {
    pub const ALL: [AgeBucket; 4] = [
        AgeBucket::UpTo1,
        AgeBucket::UpTo7,
        AgeBucket::UpTo30,
        AgeBucket::Over30,
    ];

    /// Its word in a list's address (`?age=2-7`).
    pub fn as_str(self) -> &'static str {
        match self {
            AgeBucket::UpTo1 => "0-1",
            AgeBucket::UpTo7 => "2-7",
            AgeBucket::UpTo30 => "8-30",
            AgeBucket::Over30 => "31+",
        }
    }

    /// As a person reads it (the same in both languages).
    pub fn label(self) -> &'static str {
        match self {
            AgeBucket::UpTo1 => "0–1 d",
            AgeBucket::UpTo7 => "2–7 d",
            AgeBucket::UpTo30 => "8–30 d",
            AgeBucket::Over30 => "> 30 d",
        }
    }

    pub fn parse(s: &str) -> Option<AgeBucket> {
        AgeBucket::ALL.into_iter().find(|b| b.as_str() == s)
    }

    /// Its ages in whole days: from `.0` up to (not including) `.1`.
    pub fn days(self) -> (i64, Option<i64>) {
        match self {
            AgeBucket::UpTo1 => (0, Some(2)),
            AgeBucket::UpTo7 => (2, Some(8)),
            AgeBucket::UpTo30 => (8, Some(31)),
            AgeBucket::Over30 => (31, None),
        }
    }

    pub fn of(age_days: i64) -> AgeBucket {
        AgeBucket::ALL
            .into_iter()
            .find(|b| b.days().1.is_none_or(|to| age_days < to))
            .unwrap_or(AgeBucket::Over30)
    }

    /// The `found_at` of its tickets at `now`: after `.0` (if bounded) and
    /// at or before `.1` (none for the youngest bucket, so a ticket found
    /// after a clock's step back still counts as new).
    pub fn found_between(self, now: i64) -> (Option<i64>, Option<i64>) {
        let (from, to) = self.days();
        (
            to.map(|to| now - to * DAY_US),
            (from > 0).then(|| now - from * DAY_US),
        )
    }
}

/// One class's open tickets by age, and how many are past its SLA.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassAges {
    pub class: String,
    /// In [`AgeBucket::ALL`]'s order.
    pub buckets: [i64; 4],
    pub overdue: i64,
    pub sla_hours: i64,
}

/// A day's tickets: found that day, open at its end though found before
/// it, and closed that day.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(sqlx::FromRow))]
pub struct DayChange {
    #[cfg_attr(feature = "ssr", sqlx(skip))]
    pub day: String,
    pub new: i64,
    pub persisting: i64,
    pub resolved: i64,
}

/// The dashboard's ageing section.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ageing {
    /// Open tickets now, per class (classes with none left out).
    pub classes: Vec<ClassAges>,
    /// The chosen day, and the day before it.
    pub day: DayChange,
    pub before: DayChange,
}

impl Ageing {
    /// Every class together, per bucket.
    pub fn totals(&self) -> [i64; 4] {
        let mut t = [0; 4];
        for c in &self.classes {
            for (sum, n) in t.iter_mut().zip(c.buckets) {
                *sum += n;
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_fall_in_one_bucket_each() {
        let expect = [
            (0, "0-1"),
            (1, "0-1"),
            (2, "2-7"),
            (7, "2-7"),
            (8, "8-30"),
            (30, "8-30"),
            (31, "31+"),
            (400, "31+"),
        ];
        for (days, bucket) in expect {
            assert_eq!(AgeBucket::of(days).as_str(), bucket, "{days}");
        }
        for b in AgeBucket::ALL {
            assert_eq!(AgeBucket::parse(b.as_str()), Some(b));
        }
        assert_eq!(AgeBucket::parse("7"), None);
        let now = 100 * DAY_US;
        assert_eq!(age_days(now - 2 * DAY_US + 1, now), 1);
        assert_eq!(age_days(now - 2 * DAY_US, now), 2);
        assert_eq!(age_days(now + 5, now), 0);
        // found_between agrees with age_days at the edges.
        for b in AgeBucket::ALL {
            let (after, upto) = b.found_between(now);
            for found in [
                now - 40 * DAY_US,
                now - 31 * DAY_US,
                now - 8 * DAY_US,
                now - 8 * DAY_US + 1,
                now - 2 * DAY_US,
                now,
            ] {
                let inside = after.is_none_or(|a| found > a) && upto.is_none_or(|u| found <= u);
                assert_eq!(
                    inside,
                    AgeBucket::of(age_days(found, now)) == b,
                    "{b:?} {found}"
                );
            }
        }
    }
}
