//! The refund state machine: a refund is its own row with its own states,
//! never a status flip of the payment it returns money from.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    /// Reserved on the payment; the provider has not been asked yet.
    Requested,
    /// The provider took it (or did not answer in time): result to come.
    Pending,
    Succeeded,
    Failed,
}

use RefundStatus::*;

impl RefundStatus {
    pub const ALL: [RefundStatus; 4] = [Requested, Pending, Succeeded, Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Requested => "REQUESTED",
            Pending => "PENDING",
            Succeeded => "SUCCEEDED",
            Failed => "FAILED",
        }
    }

    pub fn may_go_to(self, to: RefundStatus) -> bool {
        matches!(
            (self, to),
            (Requested, Pending | Succeeded | Failed) | (Pending, Succeeded | Failed)
        )
    }

    /// The states a refund may be in for a move to `to`.
    pub fn predecessors(to: RefundStatus) -> Vec<RefundStatus> {
        Self::ALL
            .into_iter()
            .filter(|from| from.may_go_to(to))
            .collect()
    }

    pub fn is_final(self) -> bool {
        matches!(self, Succeeded | Failed)
    }
}

impl fmt::Display for RefundStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RefundStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| format!("unknown refund status {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_follows_the_table() {
        let allowed: &[(RefundStatus, &[RefundStatus])] = &[
            (Requested, &[Pending, Succeeded, Failed]),
            (Pending, &[Succeeded, Failed]),
            (Succeeded, &[]),
            (Failed, &[]),
        ];
        let mut checked = 0;
        for (from, tos) in allowed {
            for to in RefundStatus::ALL {
                assert_eq!(from.may_go_to(to), tos.contains(&to), "{from} -> {to}");
                checked += 1;
            }
        }
        assert_eq!(checked, 16);
        assert_eq!(
            RefundStatus::predecessors(Succeeded),
            vec![Requested, Pending]
        );
        assert!(RefundStatus::predecessors(Requested).is_empty());
    }

    #[test]
    fn statuses_round_trip() {
        for s in RefundStatus::ALL {
            assert_eq!(s.as_str().parse::<RefundStatus>().unwrap(), s);
        }
    }
}
