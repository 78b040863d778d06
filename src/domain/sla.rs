//! How long a ticket of each class may stay open before it is overdue (its
//! SLA), in hours: the defaults below, each replaceable by configuration
//! (`RECKON_SLA_HOURS`), and one for every class not named.

use super::Class;
use std::collections::BTreeMap;

const HOUR_US: i64 = 3_600_000_000;

/// Hours per class, and the hours of every class not listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sla {
    per_class: BTreeMap<String, i64>,
    others: i64,
}

impl Default for Sla {
    /// Money at risk first: a payment Reckon counts as paid that the
    /// provider does not know (goods may ship unpaid), or money the
    /// provider holds that Reckon lacks, in a working day; mismatches in
    /// two; a payout later than its provider's usual in one; the rest in
    /// three.
    fn default() -> Sla {
        let per_class = [
            (Class::LocalOnly, 24),
            (Class::ProviderOnly, 24),
            (Class::PaidAfterClose, 24),
            (Class::AmountMismatch, 48),
            (Class::CurrencyMismatch, 48),
            (Class::RefundMismatch, 48),
            (Class::Duplicate, 48),
            (Class::OneToMany, 48),
            // An early warning with money on its way: asked after with the
            // provider within a working day, before the bank window's
            // PAYOUT_MISSING would be due.
            (Class::PayoutLate, 24),
        ]
        .into_iter()
        .map(|(c, h)| (c.as_str().to_owned(), h))
        .collect();
        Sla {
            per_class,
            others: 72,
        }
    }
}

/// Longest SLA accepted: a year.
pub const MAX_SLA_HOURS: i64 = 24 * 366;

impl Sla {
    /// The defaults with `CLASS=HOURS` items (comma-separated) over them;
    /// `*=HOURS` sets the hours of every class not named. A class must be
    /// one of the domain's words, so a typo is refused, not ignored.
    pub fn parse(text: &str) -> Result<Sla, String> {
        let mut sla = Sla::default();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((class, hours)) = item.split_once('=') else {
                return Err(format!(
                    "{item:?}: expected CLASS=HOURS such as LOCAL_ONLY=8, comma-separated"
                ));
            };
            let (class, hours) = (class.trim(), hours.trim());
            let hours = hours
                .parse::<i64>()
                .ok()
                .filter(|h| (1..=MAX_SLA_HOURS).contains(h))
                .ok_or_else(|| {
                    format!("{item:?}: hours are a whole number from 1 to {MAX_SLA_HOURS}")
                })?;
            if class == "*" {
                sla.others = hours;
            } else {
                let class: Class = class.parse()?;
                sla.per_class.insert(class.as_str().to_owned(), hours);
            }
        }
        Ok(sla)
    }

    /// The SLA of `class`, in hours.
    pub fn hours(&self, class: &str) -> i64 {
        self.per_class.get(class).copied().unwrap_or(self.others)
    }

    /// When a ticket of `class` found at `found_at` becomes overdue.
    pub fn due_at(&self, class: &str, found_at: i64) -> i64 {
        found_at.saturating_add(self.hours(class) * HOUR_US)
    }

    /// The classes given their own hours, and the hours of the others.
    pub fn listed(&self) -> (impl Iterator<Item = (&str, i64)>, i64) {
        (
            self.per_class.iter().map(|(c, h)| (c.as_str(), *h)),
            self.others,
        )
    }

    /// The shortest SLA of any class: no ticket younger is overdue.
    pub fn shortest_hours(&self) -> i64 {
        self.per_class
            .values()
            .copied()
            .chain([self.others])
            .min()
            .unwrap_or(self.others)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_hours_replace_the_defaults_and_a_star_sets_the_rest() {
        let sla = Sla::parse("LOCAL_ONLY=8, *=100").unwrap();
        assert_eq!(sla.hours("LOCAL_ONLY"), 8);
        assert_eq!(sla.hours("PROVIDER_ONLY"), 24);
        assert_eq!(sla.hours("STATUS_LAG"), 100);
        assert_eq!(sla.hours("A_CLASS_ADDED_LATER"), 100);
        assert_eq!(sla.shortest_hours(), 8);
        assert_eq!(sla.due_at("LOCAL_ONLY", 0), 8 * HOUR_US);
        assert_eq!(Sla::parse("").unwrap(), Sla::default());
    }

    #[test]
    fn a_typo_or_a_bad_number_is_refused() {
        assert!(Sla::parse("LOCAL_ONL=8").is_err());
        assert!(Sla::parse("LOCAL_ONLY=0").is_err());
        assert!(Sla::parse("LOCAL_ONLY=8h").is_err());
        assert!(Sla::parse("LOCAL_ONLY").is_err());
        assert!(Sla::parse(&format!("*={}", MAX_SLA_HOURS + 1)).is_err());
    }
}
