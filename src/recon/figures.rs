//! A run's figures: the count of each class and the day's figures, as
//! the run stores them (`figures_json`) and the days show them. Counted
//! while classifying, completed by the run.

use super::fees::FeeFigures;
use crate::domain::Class;
use std::collections::BTreeMap;

/// What a run's figures call what matched. Not a ticket class: a match
/// opens no ticket.
pub(super) const MATCHED: &str = "MATCHED";

/// What a run's figures call a record in transit. Not a ticket class.
pub(super) const IN_TRANSIT_FIGURE: &str = "IN_TRANSIT";

/// Counts by class and the day's figures, as a run stores them.
#[derive(Default, serde::Serialize)]
pub(super) struct Figures {
    pub statement_rows: i64,
    pub local_without_row: i64,
    pub classes: BTreeMap<&'static str, i64>,
    pub matched: i64,
    pub pending: i64,
    pub repaired: i64,
    pub unknown: i64,
    /// The day's gross, refunds, fees and net per currency, as the
    /// statement states them, and the fees that were not as expected.
    pub fees_and_net: FeeFigures,
    /// The day's payments and refunds near a cut, missing from this
    /// statement and expected in the neighbouring day's (also pending).
    pub in_transit: i64,
    /// The day's records near a cut a neighbouring statement carried
    /// (also matched).
    pub edge_matched: i64,
    /// Neighbouring days' records near the cut this statement carried.
    pub edge_arrived: i64,
    /// Neighbouring days' records expected in this statement and absent
    /// from both: ticketed on their own day by this run.
    pub edge_missing: i64,
    /// How long the run's phases took: reading (and matching, as the rows
    /// arrive) the statement from the start of the run, classifying what
    /// did not plainly match, writing what was found.
    pub millis: BTreeMap<&'static str, u64>,
    /// What the keys after the identifiers did (`amount`: rows `matched`,
    /// `proposed`, `ambiguous`; `reference`: rows `found`); absent when
    /// they did nothing.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_key: BTreeMap<&'static str, BTreeMap<&'static str, i64>>,
    /// The tickets found, by class and severity (a preview shows them; a
    /// run's stored figures count rows).
    #[serde(skip)]
    pub tickets: BTreeMap<&'static str, BTreeMap<&'static str, i64>>,
}

impl Figures {
    pub fn count(&mut self, class: Class, n: i64) {
        *self.classes.entry(class.as_str()).or_default() += n;
    }

    /// One record fewer of `class` (a class left at none is left out).
    pub fn uncount(&mut self, class: Class) {
        if let Some(n) = self.classes.get_mut(class.as_str()) {
            *n -= 1;
            if *n <= 0 {
                self.classes.remove(class.as_str());
            }
        }
    }

    /// One more row `what` (`matched`, `proposed`, …) under matching key `key`.
    pub fn count_by_key(&mut self, key: &'static str, what: &'static str) {
        *self.by_key.entry(key).or_default().entry(what).or_default() += 1;
    }

    pub fn count_matched(&mut self, n: i64) {
        *self.classes.entry(MATCHED).or_default() += n;
        self.matched += n;
    }

    pub fn count_in_transit(&mut self) {
        *self.classes.entry(IN_TRANSIT_FIGURE).or_default() += 1;
        self.in_transit += 1;
        self.pending += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_record_counts_once_under_its_class_and_in_the_days_figures() {
        let mut f = Figures::default();
        f.count(Class::LocalOnly, 2);
        f.count_matched(3);
        f.count_matched(1);
        f.count_in_transit();
        assert_eq!(f.classes.get("LOCAL_ONLY"), Some(&2));
        assert_eq!((f.classes.get(MATCHED), f.matched), (Some(&4), 4));
        // In transit is pending too, and not a ticket class.
        assert_eq!(f.classes.get(IN_TRANSIT_FIGURE), Some(&1));
        assert_eq!((f.in_transit, f.pending), (1, 1));
    }

    #[test]
    fn the_stored_figures_carry_the_names_the_days_read() {
        let stored = serde_json::to_value(Figures::default()).unwrap();
        for name in [
            "statement_rows",
            "local_without_row",
            "classes",
            "matched",
            "pending",
            "unknown",
            "in_transit",
            "edge_matched",
            "fees_and_net",
        ] {
            assert!(stored.get(name).is_some(), "{name}: {stored}");
        }
    }
}
