//! The matching rules finance may set: which keys after the transaction id
//! find a statement row's payment, in order; how near a payment's creation
//! a row found by payment_no must be (per account); and the amount
//! tolerance per account and currency, which only *proposes* — a row within
//! it is an AMOUNT_MISMATCH of LOW severity whose fix is one ACCEPT, never
//! a match. The defaults are the matcher as it always was.
//!
//! Each rule is text in its host variable's format (`RECKON_MATCH_KEYS`,
//! `RECKON_MATCH_WINDOW_HOURS`, `RECKON_AMOUNT_TOLERANCE`), read by the
//! same functions from the host's file and from the console.

use super::ConfigError;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

const HOUR_US: i64 = 3_600_000_000;

/// The window of a match by payment_no unless set: three days.
pub const DEFAULT_WINDOW_HOURS: i64 = 72;
/// The widest window: a month.
const MAX_WINDOW_HOURS: i64 = 24 * 30;
/// The largest tolerance (minor units): a tolerance is for rounding and
/// FX cents, not for amounts that differ.
pub const MAX_TOLERANCE_MINOR: i64 = 1_000_000;

/// A key a statement row's payment is found by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKey {
    /// The provider's transaction id: always first, it is what the
    /// streamed matcher holds the day's payments by.
    Txn,
    /// The merchant's payment_no the row carries, within the window of the
    /// payment's creation.
    PaymentNo,
    /// The merchant's own order reference the row states apart from the
    /// payment_no (a payment's `order_no`), within the window, when it
    /// names exactly one of the account's payments there.
    Reference,
    /// The last resort: a row no identifier found, paired with the one
    /// payment of the day the statement does not list of the same account,
    /// currency and exact amount made within the window — only when the
    /// pair is mutually unique; a pair whose sides disagree on the outcome
    /// is only proposed.
    Amount,
}

impl MatchKey {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKey::Txn => "txn",
            MatchKey::PaymentNo => "payment_no",
            MatchKey::Reference => "reference",
            MatchKey::Amount => "amount",
        }
    }

    fn parse(s: &str) -> Option<MatchKey> {
        match s {
            "txn" => Some(MatchKey::Txn),
            "payment_no" => Some(MatchKey::PaymentNo),
            "reference" => Some(MatchKey::Reference),
            "amount" => Some(MatchKey::Amount),
            _ => None,
        }
    }
}

/// The matching rules in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchRules {
    /// The keys, in order; the transaction id first.
    pub keys: Vec<MatchKey>,
    /// A row found by payment_no must be this near the payment's creation
    /// (microseconds).
    pub window_us: i64,
    /// The same per provider account, over `window_us`.
    pub windows: BTreeMap<String, i64>,
    /// (account or `*`, currency) → the largest difference (minor units)
    /// that makes an AMOUNT_MISMATCH LOW with an ACCEPT proposal.
    pub tolerances: BTreeMap<(String, String), i64>,
}

impl Default for MatchRules {
    fn default() -> Self {
        MatchRules {
            keys: vec![MatchKey::Txn, MatchKey::PaymentNo],
            window_us: DEFAULT_WINDOW_HOURS * HOUR_US,
            windows: BTreeMap::new(),
            tolerances: BTreeMap::new(),
        }
    }
}

impl MatchRules {
    /// Whether a row is found by its payment_no when its transaction id
    /// names none of the day's payments.
    pub fn by_payment_no(&self) -> bool {
        self.keys.contains(&MatchKey::PaymentNo)
    }

    /// Whether a row no identifier found is paired by amount and date.
    pub fn by_amount(&self) -> bool {
        self.keys.contains(&MatchKey::Amount)
    }

    /// Whether a row no earlier key found is found by the merchant's
    /// reference it states.
    pub fn by_reference(&self) -> bool {
        self.keys.contains(&MatchKey::Reference)
    }

    /// Whether the reference is tried before the payment_no when both are
    /// keys.
    pub fn reference_before_payment_no(&self) -> bool {
        let at = |k| self.keys.iter().position(|x| *x == k);
        matches!((at(MatchKey::Reference), at(MatchKey::PaymentNo)), (Some(r), Some(n)) if r < n)
    }

    /// Whether payment_no decides before the transaction id when the two
    /// name different payments (the ticket names the payment_no's).
    pub fn payment_no_first(&self) -> bool {
        self.keys.first() == Some(&MatchKey::PaymentNo)
    }

    /// The window of a match by payment_no for `provider` (microseconds).
    pub fn window(&self, provider: &str) -> i64 {
        self.windows
            .get(provider)
            .copied()
            .unwrap_or(self.window_us)
    }

    /// The amount tolerance of `provider` in `currency` (minor units): the
    /// account's own, else every account's (`*`), else none.
    pub fn tolerance(&self, provider: &str, currency: &str) -> i64 {
        let of = |p: &str| {
            self.tolerances
                .get(&(p.to_owned(), currency.to_owned()))
                .copied()
        };
        of(provider).or_else(|| of("*")).unwrap_or(0)
    }

    /// The rules as the settings document's `matching` section.
    pub fn document(&self) -> Value {
        let windows: Map<String, Value> = self
            .windows
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v / HOUR_US)))
            .collect();
        let tolerances: Map<String, Value> = self
            .tolerances
            .iter()
            .map(|((p, c), v)| (format!("{p}:{c}"), Value::from(*v)))
            .collect();
        json!({
            "keys": self.keys.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
            "window_hours": self.window_us / HOUR_US,
            "window_hours_per_provider": windows,
            "amount_tolerance_minor": tolerances,
        })
    }

    /// The three rules as their variables' text, from a document's
    /// `matching` section (absent: the defaults).
    pub fn texts_of(section: &Value) -> (String, String, String) {
        let rules = MatchRules::default();
        let keys = section["keys"]
            .as_array()
            .map(|k| {
                k.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|| {
                rules
                    .keys
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            });
        let mut window = vec![
            section["window_hours"]
                .as_i64()
                .unwrap_or(rules.window_us / HOUR_US)
                .to_string(),
        ];
        if let Some(per) = section["window_hours_per_provider"].as_object() {
            window.extend(per.iter().map(|(k, v)| format!("{k}={v}")));
        }
        let tolerance = section["amount_tolerance_minor"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        (keys, window.join(", "), tolerance)
    }
}

/// `RECKON_MATCH_KEYS`: the keys in order, comma-separated, from `txn`,
/// `payment_no`, `reference` and `amount`; the transaction id among them,
/// `amount` after every identifier (default `txn, payment_no`).
pub fn keys(given: Option<String>) -> Result<Vec<MatchKey>, ConfigError> {
    let Some(given) = given.filter(|g| !g.trim().is_empty()) else {
        return Ok(MatchRules::default().keys);
    };
    let refused = |hint: String| ConfigError::Invalid {
        key: "RECKON_MATCH_KEYS",
        value: given.clone(),
        hint,
    };
    let mut keys = Vec::new();
    for item in given.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let key = MatchKey::parse(item).ok_or_else(|| {
            refused(format!(
                "{item:?} is no matching key: expected txn, payment_no, reference or amount"
            ))
        })?;
        if keys.contains(&key) {
            return Err(refused(format!("{item:?} is named twice")));
        }
        keys.push(key);
    }
    if !keys.contains(&MatchKey::Txn) {
        return Err(refused(
            "txn is required: the provider's transaction id is what a statement row is matched by"
                .into(),
        ));
    }
    if keys
        .iter()
        .position(|k| *k == MatchKey::Amount)
        .is_some_and(|at| at + 1 != keys.len())
    {
        return Err(refused(
            "amount must come last: it only pairs a row no identifier (txn, payment_no, reference) found"
                .into(),
        ));
    }
    Ok(keys)
}

/// `RECKON_MATCH_WINDOW_HOURS`: `HOURS, account=HOURS, …` — how near a
/// payment's creation a row found by its payment_no must be (0 to 720).
pub fn window_hours(
    given: Option<String>,
    is_provider: impl Fn(&str) -> bool,
) -> Result<(i64, BTreeMap<String, i64>), ConfigError> {
    let mut window = DEFAULT_WINDOW_HOURS * HOUR_US;
    let mut per = BTreeMap::new();
    let Some(given) = given else {
        return Ok((window, per));
    };
    let refused = |hint: String| ConfigError::Invalid {
        key: "RECKON_MATCH_WINDOW_HOURS",
        value: given.clone(),
        hint,
    };
    let hours = |text: &str| {
        text.trim()
            .parse::<i64>()
            .ok()
            .filter(|h| (0..=MAX_WINDOW_HOURS).contains(h))
            .map(|h| h * HOUR_US)
            .ok_or_else(|| {
                refused(format!(
                    "{text:?}: expected hours from 0 to {MAX_WINDOW_HOURS}"
                ))
            })
    };
    for item in given.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            None => window = hours(item)?,
            Some((name, h)) => {
                let name = name.trim();
                if !is_provider(name) {
                    return Err(refused(format!(
                        "{name:?} is not a configured provider account"
                    )));
                }
                per.insert(name.to_owned(), hours(h)?);
            }
        }
    }
    Ok((window, per))
}

/// `RECKON_AMOUNT_TOLERANCE`: `account:CURRENCY=MINOR, …` (`*` for every
/// account) — a statement amount at most that far from Reckon's is an
/// AMOUNT_MISMATCH of LOW severity, to ACCEPT; none by default.
pub fn tolerances(
    given: Option<String>,
    is_provider: impl Fn(&str) -> bool,
) -> Result<BTreeMap<(String, String), i64>, ConfigError> {
    let mut out = BTreeMap::new();
    let Some(given) = given else {
        return Ok(out);
    };
    let refused = |hint: String| ConfigError::Invalid {
        key: "RECKON_AMOUNT_TOLERANCE",
        value: given.clone(),
        hint,
    };
    for item in given.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (who, minor) = item
            .split_once('=')
            .ok_or_else(|| refused(format!("{item:?}: expected account:CURRENCY=MINOR_UNITS")))?;
        let (account, currency) = who.trim().split_once(':').ok_or_else(|| {
            refused(format!(
                "{who:?}: expected account:CURRENCY (or *:CURRENCY)"
            ))
        })?;
        let account = account.trim();
        if account != "*" && !is_provider(account) {
            return Err(refused(format!(
                "{account:?} is not a configured provider account"
            )));
        }
        let currency =
            crate::domain::Currency::parse(currency.trim()).map_err(|e| refused(e.to_string()))?;
        let minor = minor
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|m| (1..=MAX_TOLERANCE_MINOR).contains(m))
            .ok_or_else(|| {
                refused(format!(
                    "{:?}: expected minor units from 1 to {MAX_TOLERANCE_MINOR}",
                    minor.trim()
                ))
            })?;
        let key = (account.to_owned(), currency.code().to_owned());
        if out.insert(key, minor).is_some() {
            return Err(refused(format!("{who:?} is named twice")));
        }
    }
    Ok(out)
}

/// The three rules' texts checked into rules; the first bad one named by
/// its variable.
pub fn rules(
    keys_text: Option<String>,
    window_text: Option<String>,
    tolerance_text: Option<String>,
    is_provider: impl Fn(&str) -> bool,
) -> Result<MatchRules, ConfigError> {
    let keys = keys(keys_text)?;
    let (window_us, windows) = window_hours(window_text, &is_provider)?;
    let tolerances = tolerances(tolerance_text, &is_provider)?;
    Ok(MatchRules {
        keys,
        window_us,
        windows,
        tolerances,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any(_: &str) -> bool {
        true
    }

    #[test]
    fn the_defaults_are_the_matcher_as_it_was() {
        let r = rules(None, None, None, any).unwrap();
        assert_eq!(r, MatchRules::default());
        assert!(r.by_payment_no() && !r.payment_no_first());
        assert_eq!(r.window("stripe"), 72 * HOUR_US);
        assert_eq!(r.tolerance("stripe", "USD"), 0);
    }

    #[test]
    fn the_texts_read_back_into_the_same_rules() {
        let r = rules(
            Some("payment_no, txn".into()),
            Some("48, stripe=6".into()),
            Some("stripe:USD=50, *:EUR=2".into()),
            any,
        )
        .unwrap();
        assert!(r.payment_no_first());
        assert_eq!(r.window("stripe"), 6 * HOUR_US);
        assert_eq!(r.window("alipay"), 48 * HOUR_US);
        assert_eq!(r.tolerance("stripe", "USD"), 50);
        assert_eq!(r.tolerance("alipay", "EUR"), 2);
        assert_eq!(r.tolerance("alipay", "USD"), 0);
        let (k, w, t) = MatchRules::texts_of(&r.document());
        assert_eq!(rules(Some(k), Some(w), Some(t), any).unwrap(), r);
    }

    #[test]
    fn the_amount_and_reference_keys_read_in_their_order() {
        let r = rules(
            Some("txn, reference, payment_no, amount".into()),
            None,
            None,
            any,
        )
        .unwrap();
        assert!(r.by_amount() && r.by_reference() && r.by_payment_no());
        assert!(r.reference_before_payment_no());
        let r = rules(Some("txn, payment_no, reference".into()), None, None, any).unwrap();
        assert!(!r.by_amount() && !r.reference_before_payment_no());
        let d = MatchRules::default();
        assert!(!d.by_amount() && !d.by_reference());
        let (k, w, t) = MatchRules::texts_of(&r.document());
        assert_eq!(rules(Some(k), Some(w), Some(t), any).unwrap(), r);
    }

    #[test]
    fn bad_rules_are_refused_naming_their_variable() {
        let e = |r: Result<MatchRules, ConfigError>| r.unwrap_err().to_string();
        assert!(e(rules(Some("payment_no".into()), None, None, any)).contains("txn is required"));
        assert!(e(rules(Some("txn, txn".into()), None, None, any)).contains("named twice"));
        assert!(
            e(rules(
                Some("txn, amount, payment_no".into()),
                None,
                None,
                any
            ))
            .contains("amount must come last")
        );
        assert!(
            e(rules(Some("txn, amounts".into()), None, None, any))
                .contains("\"amounts\" is no matching key")
        );
        assert!(
            e(rules(None, Some("800".into()), None, any)).contains("RECKON_MATCH_WINDOW_HOURS")
        );
        let t = |s: &str| e(rules(None, None, Some(s.into()), |n| n == "stripe"));
        assert!(t("stripe:USD=0").contains("from 1 to"));
        assert!(t("nobody:USD=5").contains("not a configured provider"));
        assert!(t("stripe:XXQ=5").contains("RECKON_AMOUNT_TOLERANCE"));
        assert!(t("stripe=5").contains("account:CURRENCY"));
    }
}
