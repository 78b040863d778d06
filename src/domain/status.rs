//! The payment state machine of the seed design, as pure functions.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentStatus {
    Created,
    Pending,
    Succeeded,
    Failed,
    Refunding,
    Refunded,
    Closed,
}

use PaymentStatus::*;

impl PaymentStatus {
    pub const ALL: [PaymentStatus; 7] = [
        Created, Pending, Succeeded, Failed, Refunding, Refunded, Closed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Created => "CREATED",
            Pending => "PENDING",
            Succeeded => "SUCCEEDED",
            Failed => "FAILED",
            Refunding => "REFUNDING",
            Refunded => "REFUNDED",
            Closed => "CLOSED",
        }
    }

    /// The table of DESIGN.md: may a payment go from `self` to `to` in one step?
    pub fn may_go_to(self, to: PaymentStatus) -> bool {
        matches!(
            (self, to),
            (Created, Pending | Closed)
                | (Pending, Succeeded | Failed | Closed)
                | (Succeeded, Refunding | Closed)
                | (Failed, Pending)
                | (Refunding, Refunded | Succeeded)
        )
    }

    /// The states from which one `engine::apply` of a provider outcome may
    /// reach `to`: a direct step, or — when the create response was lost —
    /// CREATED straight to a final result through PENDING. Refund states
    /// belong to the refund ledger, not to payment outcomes.
    pub fn apply_predecessors(to: PaymentStatus) -> Vec<PaymentStatus> {
        if matches!(to, Refunding | Refunded) {
            return Vec::new();
        }
        Self::ALL
            .into_iter()
            .filter(|from| {
                let direct = from.may_go_to(to) && !matches!(from, Refunding);
                let through_pending =
                    *from == Created && Created.may_go_to(Pending) && Pending.may_go_to(to);
                direct || through_pending
            })
            .collect()
    }

    /// The states from which an approved manual fix may reach `to`: those
    /// of [`Self::apply_predecessors`], and for SUCCEEDED also FAILED and
    /// CLOSED — a provider's late success that two people accepted
    /// (PAID_AFTER_CLOSE). Only `Source::ManualFix` uses it: nothing
    /// automatic moves a FAILED or CLOSED payment to SUCCEEDED.
    pub fn manual_fix_predecessors(to: PaymentStatus) -> Vec<PaymentStatus> {
        let mut from = Self::apply_predecessors(to);
        if to == Succeeded {
            from.extend([Failed, Closed]);
        }
        from
    }

    /// Final for the payment's own lifecycle (refunds aside).
    pub fn is_settled(self) -> bool {
        matches!(self, Succeeded | Failed | Closed | Refunding | Refunded)
    }
}

impl fmt::Display for PaymentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PaymentStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| format!("unknown payment status {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (from, to) pair against the seed's table, written out in full.
    #[test]
    fn every_pair_follows_the_seed_table() {
        let allowed: &[(PaymentStatus, &[PaymentStatus])] = &[
            (Created, &[Pending, Closed]),
            (Pending, &[Succeeded, Failed, Closed]),
            (Succeeded, &[Refunding, Closed]),
            (Failed, &[Pending]),
            (Refunding, &[Refunded, Succeeded]),
            (Refunded, &[]),
            (Closed, &[]),
        ];
        let mut checked = 0;
        for (from, tos) in allowed {
            for to in PaymentStatus::ALL {
                assert_eq!(from.may_go_to(to), tos.contains(&to), "{from} -> {to}");
                checked += 1;
            }
        }
        assert_eq!(checked, 49);
    }

    #[test]
    fn the_seed_forbids_these_explicitly() {
        assert!(!Created.may_go_to(Succeeded));
        assert!(!Pending.may_go_to(Refunded));
        assert!(!Succeeded.may_go_to(Failed));
        assert!(!Succeeded.may_go_to(Pending));
        assert!(!Failed.may_go_to(Succeeded));
        for to in PaymentStatus::ALL {
            assert!(!Refunded.may_go_to(to));
        }
    }

    #[test]
    fn apply_reaches_a_result_from_created_through_pending() {
        assert_eq!(
            PaymentStatus::apply_predecessors(Succeeded),
            vec![Created, Pending]
        );
        assert_eq!(
            PaymentStatus::apply_predecessors(Failed),
            vec![Created, Pending]
        );
        assert_eq!(
            PaymentStatus::apply_predecessors(Pending),
            vec![Created, Failed]
        );
        assert_eq!(
            PaymentStatus::apply_predecessors(Closed),
            vec![Created, Pending, Succeeded]
        );
        assert!(PaymentStatus::apply_predecessors(Refunded).is_empty());
        assert!(PaymentStatus::apply_predecessors(Created).is_empty());
    }

    /// A late success is accepted only by two people: the provider-facing
    /// list never offers FAILED or CLOSED -> SUCCEEDED, the manual fix's
    /// list adds exactly those two, and nothing else differs.
    #[test]
    fn only_a_manual_fix_accepts_a_late_success() {
        for from in [Failed, Closed] {
            assert!(!from.may_go_to(Succeeded));
            assert!(!PaymentStatus::apply_predecessors(Succeeded).contains(&from));
            assert!(PaymentStatus::manual_fix_predecessors(Succeeded).contains(&from));
        }
        assert_eq!(
            PaymentStatus::manual_fix_predecessors(Succeeded),
            vec![Created, Pending, Failed, Closed]
        );
        for to in PaymentStatus::ALL.into_iter().filter(|t| *t != Succeeded) {
            assert_eq!(
                PaymentStatus::manual_fix_predecessors(to),
                PaymentStatus::apply_predecessors(to),
                "{to}"
            );
        }
    }

    #[test]
    fn statuses_round_trip() {
        for s in PaymentStatus::ALL {
            assert_eq!(s.as_str().parse::<PaymentStatus>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }
}
