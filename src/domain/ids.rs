//! Identifiers. Each is a non-empty, bounded string of visible ASCII, checked
//! once by `parse`; the field is private so an unchecked one cannot exist.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} must be 1–{max} visible ASCII characters without spaces, got {got:?}")]
pub struct IdError {
    pub kind: &'static str,
    pub max: usize,
    pub got: String,
}

fn check(kind: &'static str, max: usize, s: &str) -> Result<String, IdError> {
    let ok = !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(s.to_owned())
    } else {
        Err(IdError {
            kind,
            max,
            got: s.chars().take(80).collect(),
        })
    }
}

macro_rules! identifier {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $max:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            pub const MAX_LEN: usize = $max;

            pub fn parse(s: &str) -> Result<Self, IdError> {
                check($kind, $max, s).map(Self)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

identifier!(
    /// Reckon's own key of one payment attempt.
    PaymentNo, "payment_no", 64
);
identifier!(
    /// The merchant's order; one order may have several payment attempts.
    OrderNo, "order_no", 64
);
identifier!(
    /// The provider's transaction id (trade_no, transaction_id, pi_…).
    ProviderTxnId, "provider_txn_id", 128
);
identifier!(
    /// Reckon's own key of one refund.
    RefundNo, "refund_no", 64
);
identifier!(
    /// The provider's id of a refund (re_…, refund_id).
    ProviderRefundId, "provider_refund_id", 128
);
identifier!(
    /// The provider's notification id, or a hash when it sends none.
    CallbackId, "callback_id", 128
);

/// A configured provider account: lowercase letters, digits and '-', as in
/// `/webhooks/{name}` (`sandbox`, `stripe-eu`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProviderName(String);

impl ProviderName {
    pub fn parse(s: &str) -> Result<Self, IdError> {
        let ok = !s.is_empty()
            && s.len() <= 32
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-');
        if ok {
            Ok(ProviderName(s.to_owned()))
        } else {
            Err(IdError {
                kind: "provider name",
                max: 32,
                got: s.chars().take(80).collect(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ProviderName {
    type Error = IdError;
    fn try_from(s: String) -> Result<Self, IdError> {
        Self::parse(&s)
    }
}

impl From<ProviderName> for String {
    fn from(v: ProviderName) -> String {
        v.0
    }
}

impl fmt::Display for ProviderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_checked_once() {
        assert!(PaymentNo::parse("PAY-20261011-0001").is_ok());
        assert!(PaymentNo::parse("").is_err());
        assert!(PaymentNo::parse("has space").is_err());
        assert!(PaymentNo::parse(&"x".repeat(65)).is_err());
        assert!(ProviderTxnId::parse(&"x".repeat(128)).is_ok());
        assert!(OrderNo::parse("订单").is_err());
        let e = CallbackId::parse("a\tb").unwrap_err();
        assert_eq!(e.kind, "callback_id");
    }

    #[test]
    fn provider_names_fit_a_route() {
        for ok in ["sandbox", "stripe-eu", "alipay2"] {
            assert!(ProviderName::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Stripe", "-x", "a/b", "we chat"] {
            assert!(ProviderName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn serde_goes_through_parse() {
        let ok: PaymentNo = serde_json::from_str("\"PAY-1\"").unwrap();
        assert_eq!(ok.as_str(), "PAY-1");
        assert!(serde_json::from_str::<PaymentNo>("\"bad id\"").is_err());
    }
}
