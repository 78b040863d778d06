//! A discrepancy ticket's words: its class (what reconciliation or the
//! engine found), its severity, and its state with the moves allowed between
//! states. Stored as the text `as_str` gives; the console's filters list the
//! same words (`app::tickets`), checked against these by a test.

use std::fmt;
use std::str::FromStr;

/// Declares a closed set of words stored as text: `ALL`, `as_str`,
/// `Display` and `FromStr` (naming the set in its error).
macro_rules! words {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($variant,)+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|w| w.as_str() == s)
                    .ok_or_else(|| format!(concat!("unknown ", $what, " {:?}"), s))
            }
        }
    };
}

words!(
    /// What a ticket is about (DESIGN.md's table, and the engine's own).
    Class, "discrepancy class" {
        ProviderOnly => "PROVIDER_ONLY",
        LocalOnly => "LOCAL_ONLY",
        AmountMismatch => "AMOUNT_MISMATCH",
        CurrencyMismatch => "CURRENCY_MISMATCH",
        OneToMany => "ONE_TO_MANY",
        Duplicate => "DUPLICATE",
        StatusLag => "STATUS_LAG",
        RefundMismatch => "REFUND_MISMATCH",
        TxnMismatch => "TXN_MISMATCH",
        ProviderMismatch => "PROVIDER_MISMATCH",
        PaidAfterClose => "PAID_AFTER_CLOSE",
        PayoutMissing => "PAYOUT_MISSING",
        BankOnly => "BANK_ONLY",
        PayoutAmountMismatch => "PAYOUT_AMOUNT_MISMATCH",
        FeeMismatch => "FEE_MISMATCH",
        Dispute => "DISPUTE",
        PayoutLate => "PAYOUT_LATE",
    }
);

words!(
    /// Where a provider's dispute (a chargeback, or the inquiry before
    /// one) stands, in Reckon's words: INQUIRY (questioned, no money taken
    /// yet), OPEN (the merchant must answer by the evidence due date),
    /// EVIDENCE_SUBMITTED (answered, the issuer decides), then one end —
    /// WON, LOST, or INQUIRY_CLOSED (an inquiry that never became a
    /// chargeback).
    DisputeStatus, "dispute status" {
        Inquiry => "INQUIRY",
        Open => "OPEN",
        EvidenceSubmitted => "EVIDENCE_SUBMITTED",
        Won => "WON",
        Lost => "LOST",
        InquiryClosed => "INQUIRY_CLOSED",
    }
);

impl DisputeStatus {
    /// Its place in a dispute's life: a status reported later in the same
    /// instant never moves a dispute back to an earlier one.
    pub const fn rank(self) -> i64 {
        match self {
            DisputeStatus::Inquiry => 1,
            DisputeStatus::Open => 2,
            DisputeStatus::EvidenceSubmitted => 3,
            DisputeStatus::Won | DisputeStatus::Lost | DisputeStatus::InquiryClosed => 4,
        }
    }

    /// The dispute is decided: its ticket closes.
    pub const fn is_final(self) -> bool {
        self.rank() == 4
    }
}

words!(
    /// How urgent a ticket is; `rank` orders them (the queue's first key).
    Severity, "severity" {
        Critical => "CRITICAL",
        High => "HIGH",
        Medium => "MEDIUM",
        Low => "LOW",
    }
);

impl Severity {
    /// 4 for CRITICAL down to 1 for LOW, as the ticket queue sorts.
    pub const fn rank(self) -> i64 {
        match self {
            Severity::Critical => 4,
            Severity::High => 3,
            Severity::Medium => 2,
            Severity::Low => 1,
        }
    }
}

words!(
    /// Where a ticket is in its life.
    TicketStatus, "ticket status" {
        Open => "OPEN",
        InProgress => "IN_PROGRESS",
        AwaitingApproval => "AWAITING_APPROVAL",
        Closed => "CLOSED",
    }
);

use TicketStatus::*;

impl TicketStatus {
    /// May a ticket go from `self` to `to` in one step? Someone working on
    /// an open ticket takes it IN_PROGRESS; a proposal waits for approval;
    /// an approval executed, a conclusion or an automatic repair closes it;
    /// a rejected, failed or superseded proposal hands it back. CLOSED is
    /// final — a cause that comes back opens a new ticket — but for one
    /// move: a close by conclusion alone (no money moved) undone shortly
    /// after goes back IN_PROGRESS, someone's work again. Which closes may
    /// be undone, by whom and until when is triage's (a bulk close's undo).
    pub const fn may_go_to(self, to: TicketStatus) -> bool {
        matches!(
            (self, to),
            (Open, InProgress | AwaitingApproval | Closed)
                | (InProgress, AwaitingApproval | Closed)
                | (AwaitingApproval, InProgress | Closed)
                | (Closed, InProgress)
        )
    }

    /// The states a ticket may come from to reach `to`.
    pub fn predecessors(to: TicketStatus) -> Vec<TicketStatus> {
        Self::ALL
            .iter()
            .copied()
            .filter(|from| from.may_go_to(to))
            .collect()
    }

    pub const fn is_open(self) -> bool {
        !matches!(self, Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_read_back_as_themselves() {
        for c in Class::ALL {
            assert_eq!(c.as_str().parse::<Class>(), Ok(*c));
        }
        for s in Severity::ALL {
            assert_eq!(s.as_str().parse::<Severity>(), Ok(*s));
        }
        for t in TicketStatus::ALL {
            assert_eq!(t.as_str().parse::<TicketStatus>(), Ok(*t));
        }
        assert_eq!(
            "MATCHED".parse::<Class>(),
            Err("unknown discrepancy class \"MATCHED\"".to_string())
        );
    }

    /// The console filters by the same words the server stores.
    #[test]
    fn the_console_lists_the_same_words() {
        let classes: Vec<&str> = Class::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(classes, app::tickets::CLASSES);
        let severities: Vec<&str> = Severity::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(severities, app::tickets::SEVERITIES);
        let states: Vec<&str> = TicketStatus::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(states, app::tickets::STATUSES[1..]);
    }

    /// Every code the server stores has words in both languages on the
    /// console's pages, and the console's lists of codes are the server's.
    #[test]
    fn the_console_has_words_for_every_code() {
        use crate::domain::refund::RefundStatus;
        use crate::domain::status::PaymentStatus;
        use app::codes::Codes;
        let has_words = |set: Codes, code: &str| {
            let (en, zh) = set
                .words(code)
                .unwrap_or_else(|| panic!("{set:?} {code}: no words on the console"));
            assert!(
                !en.is_empty() && !zh.is_ascii(),
                "{set:?} {code}: {en} / {zh}"
            );
        };
        for c in Class::ALL {
            has_words(Codes::Class, c.as_str());
        }
        for s in Severity::ALL {
            has_words(Codes::Severity, s.as_str());
        }
        for t in TicketStatus::ALL {
            has_words(Codes::TicketStatus, t.as_str());
        }
        let payments: Vec<&str> = PaymentStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(payments, app::codes::PAYMENT_STATUSES);
        for p in payments {
            has_words(Codes::PaymentStatus, p);
        }
        let refunds: Vec<&str> = RefundStatus::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(refunds, app::codes::REFUND_STATUSES);
        for r in refunds {
            has_words(Codes::RefundStatus, r);
        }
        for k in app::tickets::FixKind::ALL {
            has_words(Codes::FixKind, k.as_str());
        }
    }

    /// Every (from, to) pair, written out in full.
    #[test]
    fn every_ticket_move_is_as_written() {
        let allowed = [
            (Open, InProgress),
            (Open, AwaitingApproval),
            (Open, Closed),
            (InProgress, AwaitingApproval),
            (InProgress, Closed),
            (AwaitingApproval, InProgress),
            (AwaitingApproval, Closed),
            (Closed, InProgress),
        ];
        for from in TicketStatus::ALL {
            for to in TicketStatus::ALL {
                assert_eq!(
                    from.may_go_to(*to),
                    allowed.contains(&(*from, *to)),
                    "{from} -> {to}"
                );
            }
        }
        assert_eq!(
            TicketStatus::predecessors(Closed),
            [Open, InProgress, AwaitingApproval]
        );
        assert!(TicketStatus::predecessors(Open).is_empty());
        // Reopened, a ticket is worked on; it is never new again.
        assert_eq!(
            TicketStatus::predecessors(InProgress),
            [Open, AwaitingApproval, Closed]
        );
        assert!(Severity::Critical.rank() > Severity::High.rank());
    }
}
