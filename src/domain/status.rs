//! The payment state machine as one table: every move a payment makes,
//! the refund side included, and who may make it.

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

/// Who moves a payment. Each makes only its own moves of the table
/// ([`PaymentStatus::may_move`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mover {
    /// A provider's word through `engine::apply`: a callback, a status
    /// query, a replay, reconciliation's repair.
    Provider,
    /// Two people's approved fix through `engine::apply`: what a provider
    /// may do, and a late success accepted (FAILED or CLOSED → SUCCEEDED).
    ManualFix,
    /// The refund ledger for a paid payment: a refund reserved, then
    /// settled (all refunded, others still in flight, or given back).
    Refund,
    /// The refund of a late success two people approved: the whole of a
    /// FAILED or CLOSED payment reserved, and back there if it fails.
    LateRefund,
}

impl Mover {
    pub const ALL: [Mover; 4] = [
        Mover::Provider,
        Mover::ManualFix,
        Mover::Refund,
        Mover::LateRefund,
    ];
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

    /// The table: may `by` move a payment from `self` to `to` in one step?
    /// DESIGN.md's seed table split by who moves: its outcome moves are the
    /// provider's, its refund moves the refund ledger's; a manual fix adds
    /// the late success accepted, and the refund of a late success leaves
    /// FAILED or CLOSED for REFUNDING and returns there when it fails.
    /// REFUNDING → REFUNDING is another refund reserved, or one of several
    /// settled while others are in flight.
    pub fn may_move(self, to: PaymentStatus, by: Mover) -> bool {
        match by {
            Mover::Provider => matches!(
                (self, to),
                (Created, Pending | Closed)
                    | (Pending, Succeeded | Failed | Closed)
                    | (Succeeded, Closed)
                    | (Failed, Pending)
            ),
            Mover::ManualFix => {
                self.may_move(to, Mover::Provider)
                    || matches!((self, to), (Failed | Closed, Succeeded))
            }
            Mover::Refund => matches!(
                (self, to),
                (Succeeded | Refunding, Refunding) | (Refunding, Succeeded | Refunded)
            ),
            Mover::LateRefund => matches!(
                (self, to),
                (Failed | Closed, Refunding) | (Refunding, Refunded | Failed | Closed)
            ),
        }
    }

    /// May anyone move a payment from `self` to `to` in one step?
    pub fn may_go_to(self, to: PaymentStatus) -> bool {
        Mover::ALL.into_iter().any(|by| self.may_move(to, by))
    }

    /// The states from which `by` may move a payment to `to` in one step.
    pub fn predecessors(to: PaymentStatus, by: Mover) -> Vec<PaymentStatus> {
        Self::ALL
            .into_iter()
            .filter(|from| from.may_move(to, by))
            .collect()
    }

    /// The states from which one `engine::apply` of `by`'s outcome may
    /// reach `to`: a step of `by`'s, or — when the create response was
    /// lost — CREATED straight to a final result through PENDING.
    fn outcome_predecessors(to: PaymentStatus, by: Mover) -> Vec<PaymentStatus> {
        Self::ALL
            .into_iter()
            .filter(|from| {
                let through_pending =
                    *from == Created && Created.may_move(Pending, by) && Pending.may_move(to, by);
                from.may_move(to, by) || through_pending
            })
            .collect()
    }

    /// The states from which one `engine::apply` of a provider outcome may
    /// reach `to`. Refund states belong to the refund ledger, not to
    /// payment outcomes.
    pub fn apply_predecessors(to: PaymentStatus) -> Vec<PaymentStatus> {
        Self::outcome_predecessors(to, Mover::Provider)
    }

    /// The states from which an approved manual fix may reach `to`: those
    /// of [`Self::apply_predecessors`], and for SUCCEEDED also FAILED and
    /// CLOSED — a provider's late success that two people accepted
    /// (PAID_AFTER_CLOSE). Only `Source::ManualFix` uses it: nothing
    /// automatic moves a FAILED or CLOSED payment to SUCCEEDED.
    pub fn manual_fix_predecessors(to: PaymentStatus) -> Vec<PaymentStatus> {
        Self::outcome_predecessors(to, Mover::ManualFix)
    }

    /// Where a REFUNDING payment goes when one of its refunds settles:
    /// REFUNDED once all of it is refunded, still REFUNDING while other
    /// reservations remain, else back to `began` (the status it left for
    /// REFUNDING) if the refund of a late success left it — FAILED or
    /// CLOSED, an order never paid — or SUCCEEDED.
    pub fn after_refund_settled(
        began: Option<PaymentStatus>,
        all_refunded: bool,
        still_reserved: bool,
    ) -> PaymentStatus {
        if all_refunded {
            Refunded
        } else if still_reserved {
            Refunding
        } else {
            match began {
                Some(s) if s.may_move(Refunding, Mover::LateRefund) => s,
                _ => Succeeded,
            }
        }
    }

    /// The order is paid by this payment (or was, and money is being or
    /// has been given back).
    pub fn is_paid(self) -> bool {
        matches!(self, Succeeded | Refunding | Refunded)
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

/// A stored status read back: an unknown word is an error, never a panic.
impl TryFrom<String> for PaymentStatus {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (from, to) pair and who may make that move, written out in
    /// full. P: a provider's outcome (and so a manual fix too); M: a manual
    /// fix only; R: the refund ledger of a paid payment; L: the refund of a
    /// late success; -: nobody.
    #[test]
    fn every_pair_follows_the_table() {
        #[rustfmt::skip]
        let table: [(PaymentStatus, [&str; 7]); 7] = [
            //           CREATED PENDING SUCCEEDED FAILED REFUNDING REFUNDED CLOSED
            (Created,   ["-",    "P",    "-",      "-",   "-",      "-",     "P"]),
            (Pending,   ["-",    "-",    "P",      "P",   "-",      "-",     "P"]),
            (Succeeded, ["-",    "-",    "-",      "-",   "R",      "-",     "P"]),
            (Failed,    ["-",    "P",    "M",      "-",   "L",      "-",     "-"]),
            (Refunding, ["-",    "-",    "R",      "L",   "R",      "RL",    "L"]),
            (Refunded,  ["-",    "-",    "-",      "-",   "-",      "-",     "-"]),
            (Closed,    ["-",    "-",    "M",      "-",   "L",      "-",     "-"]),
        ];
        let mut checked = 0;
        for (from, row) in table {
            for (to, movers) in PaymentStatus::ALL.into_iter().zip(row) {
                let by = |letters: &str| letters.chars().any(|c| movers.contains(c));
                let expected = [
                    (Mover::Provider, by("P")),
                    (Mover::ManualFix, by("PM")),
                    (Mover::Refund, by("R")),
                    (Mover::LateRefund, by("L")),
                ];
                for (mover, allowed) in expected {
                    assert_eq!(
                        from.may_move(to, mover),
                        allowed,
                        "{from} -> {to} by {mover:?}"
                    );
                }
                assert_eq!(from.may_go_to(to), movers != "-", "{from} -> {to}");
                checked += 1;
            }
        }
        assert_eq!(checked, 49);
    }

    /// DESIGN.md's seed table is the union of the provider's and the
    /// refund ledger's moves.
    #[test]
    fn the_seed_table_is_the_providers_and_the_refunds_moves() {
        let seed: &[(PaymentStatus, &[PaymentStatus])] = &[
            (Created, &[Pending, Closed]),
            (Pending, &[Succeeded, Failed, Closed]),
            (Succeeded, &[Refunding, Closed]),
            (Failed, &[Pending]),
            (Refunding, &[Refunded, Succeeded]),
            (Refunded, &[]),
            (Closed, &[]),
        ];
        for (from, tos) in seed {
            for to in PaymentStatus::ALL.into_iter().filter(|to| to != from) {
                let either = from.may_move(to, Mover::Provider) || from.may_move(to, Mover::Refund);
                assert_eq!(either, tos.contains(&to), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn the_seed_forbids_these_explicitly() {
        assert!(!Created.may_go_to(Succeeded));
        assert!(!Pending.may_go_to(Refunded));
        assert!(!Succeeded.may_go_to(Failed));
        assert!(!Succeeded.may_go_to(Pending));
        assert!(!Failed.may_move(Succeeded, Mover::Provider));
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
        assert!(PaymentStatus::apply_predecessors(Refunding).is_empty());
        assert!(PaymentStatus::apply_predecessors(Created).is_empty());
    }

    /// A late success is accepted only by two people: the provider-facing
    /// list never offers FAILED or CLOSED -> SUCCEEDED, the manual fix's
    /// list adds exactly those two, and nothing else differs.
    #[test]
    fn only_a_manual_fix_accepts_a_late_success() {
        for from in [Failed, Closed] {
            assert!(!from.may_move(Succeeded, Mover::Provider));
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

    /// A refund reserves on a paid payment; the refund of a late success
    /// on a FAILED or CLOSED one.
    #[test]
    fn refunds_reserve_from_their_own_states() {
        assert_eq!(
            PaymentStatus::predecessors(Refunding, Mover::Refund),
            vec![Succeeded, Refunding]
        );
        assert_eq!(
            PaymentStatus::predecessors(Refunding, Mover::LateRefund),
            vec![Failed, Closed]
        );
    }

    /// Every settlement lands where the table lets the refund ledger go:
    /// REFUNDED when all is refunded, REFUNDING while more is reserved,
    /// else back where the refunds began (SUCCEEDED unless a late success).
    #[test]
    fn a_settled_refund_goes_where_the_table_allows() {
        let began = PaymentStatus::ALL.into_iter().map(Some).chain([None]);
        for b in began {
            for all_refunded in [false, true] {
                for still_reserved in [false, true] {
                    let to = PaymentStatus::after_refund_settled(b, all_refunded, still_reserved);
                    let expected = match (all_refunded, still_reserved, b) {
                        (true, _, _) => Refunded,
                        (false, true, _) => Refunding,
                        (false, false, Some(Failed)) => Failed,
                        (false, false, Some(Closed)) => Closed,
                        (false, false, _) => Succeeded,
                    };
                    assert_eq!(to, expected, "{b:?} {all_refunded} {still_reserved}");
                    let by = match b {
                        Some(Failed | Closed) if to != Refunding => Mover::LateRefund,
                        _ => Mover::Refund,
                    };
                    assert!(Refunding.may_move(to, by), "{b:?} -> {to} by {by:?}");
                }
            }
        }
    }

    #[test]
    fn statuses_round_trip() {
        for s in PaymentStatus::ALL {
            assert_eq!(s.as_str().parse::<PaymentStatus>().unwrap(), s);
            assert_eq!(PaymentStatus::try_from(s.as_str().to_owned()), Ok(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert_eq!(
            PaymentStatus::try_from("PAID".to_owned()),
            Err("unknown payment status \"PAID\"".to_owned())
        );
        assert!(Succeeded.is_paid() && Refunding.is_paid() && Refunded.is_paid());
        assert!(!Created.is_paid() && !Pending.is_paid() && !Failed.is_paid() && !Closed.is_paid());
    }
}
