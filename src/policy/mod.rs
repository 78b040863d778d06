//! The approval policy finance configures: for each action — every fix
//! kind, a bulk proposal's items, reopening a closed day, and changing the
//! policy itself — how many distinct approvers it needs, raised above
//! amount thresholds per currency. Nothing goes below one approver (the
//! floor is checked when a policy is read from text, whatever it says).
//! The count a proposal needs is worked out here when it is proposed and
//! stored on it; the database counts the approvals (`store::approvals`).
//! Versions are kept by `store::policy`; [`changes`] proposes and decides
//! a new one.

pub mod changes;

use crate::domain::{Currency, Money};
use app::tickets::FixKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// No action that moves money or holds, nor the policy, needs fewer.
pub const FLOOR: i64 = 1;
/// A count nobody could meet is refused, not stored.
pub const CEILING: i64 = 5;

/// The actions besides fix kinds.
pub const BULK: &str = "BULK";
pub const REOPEN_DAY: &str = "REOPEN_DAY";
pub const POLICY_CHANGE: &str = "POLICY_CHANGE";

/// Every action a rule may name, in the order the policy lists them.
pub fn actions() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = FixKind::ALL.iter().map(|k| k.as_str()).collect();
    all.extend([BULK, REOPEN_DAY, POLICY_CHANGE]);
    all
}

/// Above `minor` (in the currency's minor units), `approvers` are needed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Threshold {
    pub currency: String,
    pub minor: i64,
    pub approvers: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub action: String,
    pub approvers: i64,
    #[serde(default)]
    pub above: Vec<Threshold>,
}

/// A policy: one rule per action, in [`actions`]' order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub rules: Vec<Rule>,
}

impl Default for Policy {
    /// Today's two-person rule: one approver besides the proposer, for all.
    fn default() -> Self {
        Policy {
            rules: actions()
                .into_iter()
                .map(|a| Rule {
                    action: a.to_owned(),
                    approvers: FLOOR,
                    above: Vec::new(),
                })
                .collect(),
        }
    }
}

impl Policy {
    /// How many distinct approvers `action` needs for `amount` (minor
    /// units and currency code), never fewer than the floor.
    pub fn required(&self, action: &str, amount: Option<(i64, &str)>) -> i64 {
        let Some(rule) = self.rules.iter().find(|r| r.action == action) else {
            return FLOOR;
        };
        let above = |t: &&Threshold| {
            amount.is_some_and(|(minor, currency)| {
                t.currency == currency && minor.unsigned_abs() > t.minor.unsigned_abs()
            })
        };
        rule.above
            .iter()
            .filter(above)
            .map(|t| t.approvers)
            .fold(rule.approvers, i64::max)
            .max(FLOOR)
    }

    /// What a fix of `kind` moving `amount` needs; a bulk proposal's item
    /// needs the bulk rule's count too, so a bulk is no way around a
    /// threshold.
    pub fn required_for_fix(&self, kind: FixKind, amount: Option<(i64, &str)>, bulk: bool) -> i64 {
        let own = self.required(kind.as_str(), amount);
        if bulk {
            own.max(self.required(BULK, amount))
        } else {
            own
        }
    }

    /// The body as stored (JSON; the digest is over these bytes).
    pub fn body(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn digest(&self) -> String {
        hex::encode(Sha256::digest(self.body().as_bytes()))
    }

    /// A stored body, checked as text is: a body that breaks the floor is
    /// refused even if someone wrote it into the table by hand.
    pub fn from_body(body: &str) -> Result<Policy, String> {
        let p: Policy = serde_json::from_str(body).map_err(|e| e.to_string())?;
        Policy::parse(&p.text())
    }

    /// One line per rule: `ACTION N`, and `ACTION N above AMOUNT CURRENCY`
    /// for each threshold.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for r in &self.rules {
            out.push_str(&format!("{} {}\n", r.action, r.approvers));
            for t in &r.above {
                let amount = Currency::parse(&t.currency)
                    .map(|c| Money::new(t.minor, c).major_string())
                    .unwrap_or_else(|_| t.minor.to_string());
                out.push_str(&format!(
                    "{} {} above {amount} {}\n",
                    r.action, t.approvers, t.currency
                ));
            }
        }
        out
    }

    /// Reads a policy from its text. An action not named keeps the floor;
    /// `#` starts a comment. Errors name the line and what is wrong.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let known = actions();
        let mut policy = Policy::default();
        let mut base_given: Vec<&str> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let at = n + 1;
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let action = words[0].to_ascii_uppercase();
            let Some(&action) = known.iter().find(|a| **a == action) else {
                return Err(format!(
                    "line {at}: unknown action {:?}; one of {}",
                    words[0],
                    known.join(", ")
                ));
            };
            let count = words
                .get(1)
                .ok_or_else(|| format!("line {at}: {action} needs a number of approvers"))?;
            let count: i64 = count
                .parse()
                .map_err(|_| format!("line {at}: {count:?} is not a number of approvers"))?;
            if count < FLOOR {
                return Err(format!(
                    "line {at}: {action} needs at least {FLOOR} approver besides the proposer; {count} is below the floor"
                ));
            }
            if count > CEILING {
                return Err(format!(
                    "line {at}: {count} approvers for {action} is more than {CEILING}, the most a policy may ask"
                ));
            }
            let rule = policy
                .rules
                .iter_mut()
                .find(|r| r.action == action)
                .expect("every action has a rule");
            match &words[2..] {
                [] => {
                    if base_given.contains(&action) {
                        return Err(format!("line {at}: {action}'s count is given twice"));
                    }
                    base_given.push(action);
                    rule.approvers = count;
                }
                [above, amount, currency] if above.eq_ignore_ascii_case("above") => {
                    let c = Currency::parse(currency).map_err(|e| format!("line {at}: {e}"))?;
                    let m = Money::parse_major(amount, c).map_err(|e| format!("line {at}: {e}"))?;
                    if m.minor < 0 {
                        return Err(format!("line {at}: a threshold is an amount of 0 or more"));
                    }
                    if rule
                        .above
                        .iter()
                        .any(|t| t.currency == c.code() && t.minor == m.minor)
                    {
                        return Err(format!(
                            "line {at}: {action} above {} {} is given twice",
                            m.major_string(),
                            c.code()
                        ));
                    }
                    rule.above.push(Threshold {
                        currency: c.code().to_owned(),
                        minor: m.minor,
                        approvers: count,
                    });
                }
                _ => {
                    return Err(format!(
                        "line {at}: expected \"{action} N\" or \"{action} N above AMOUNT CURRENCY\""
                    ));
                }
            }
        }
        for r in &mut policy.rules {
            if let Some(t) = r.above.iter().find(|t| t.approvers < r.approvers) {
                return Err(format!(
                    "{}: above {} {} needs {} approvers, fewer than the {} it needs at any amount",
                    r.action,
                    Currency::parse(&t.currency)
                        .map(|c| Money::new(t.minor, c).major_string())
                        .unwrap_or_default(),
                    t.currency,
                    t.approvers,
                    r.approvers
                ));
            }
            r.above
                .sort_by(|a, b| (&a.currency, a.minor).cmp(&(&b.currency, b.minor)));
        }
        Ok(policy)
    }
}

/// The money a fix moves, from its plan: the amount it sets or refunds,
/// else the payment's (the largest of a merge's).
pub fn amount_of(before: &Value, after: &Value) -> Option<(i64, String)> {
    let pick = |v: &Value, key: &str| Some((v[key].as_i64()?, v["currency"].as_str()?.to_owned()));
    pick(after, "amount_minor")
        .or_else(|| pick(after, "refund_minor"))
        .or_else(|| pick(before, "amount_minor"))
        .or_else(|| {
            before["payments"]
                .as_array()?
                .iter()
                .filter_map(|p| pick(p, "amount_minor"))
                .max_by_key(|(m, _)| m.unsigned_abs())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_one_approver_for_everything() {
        let p = Policy::default();
        for a in actions() {
            assert_eq!(p.required(a, Some((i64::MAX, "CNY"))), 1, "{a}");
        }
        assert_eq!(Policy::parse("").unwrap(), p);
    }

    #[test]
    fn a_threshold_raises_the_count_above_its_amount_in_its_currency() {
        let p = Policy::parse("BACKFILL 2 above 10000.00 CNY\nBULK 1\n").unwrap();
        assert_eq!(p.required("BACKFILL", Some((1_000_000, "CNY"))), 1, "at it");
        assert_eq!(p.required("BACKFILL", Some((1_000_001, "CNY"))), 2);
        assert_eq!(p.required("BACKFILL", Some((5_000_000, "USD"))), 1);
        assert_eq!(p.required("ACCEPT_AMOUNT", Some((5_000_000, "CNY"))), 1);
        assert_eq!(Policy::parse(&p.text()).unwrap(), p, "text round trip");
        // JPY has no minor digits: 10000 JPY is 10000 minor units.
        let jpy = Policy::parse("MERGE 3 above 10000 JPY").unwrap();
        assert_eq!(jpy.rules[3].above[0].minor, 10_000);
    }

    #[test]
    fn bad_text_is_refused_with_its_line() {
        let refused = |t: &str| Policy::parse(t).unwrap_err();
        assert!(refused("BACKFILL 0").contains("below the floor"));
        assert!(refused("POLICY_CHANGE 0").contains("below the floor"));
        assert!(refused("# x\nBACKFILL 2 above 1.00 XYZ").starts_with("line 2: unknown currency"));
        assert!(refused("FOO 1").contains("unknown action"));
        assert!(refused("BACKFILL 9").contains("more than 5"));
        assert!(refused("BACKFILL 2\nBACKFILL 1 above 5.00 CNY").contains("fewer than"));
        assert!(refused("BACKFILL 2 above 1.001 CNY").contains("more decimals"));
        assert!(Policy::from_body(r#"{"rules":[{"action":"BACKFILL","approvers":0}]}"#).is_err());
    }
}
