//! The approval policy finance configures: for each action — every fix
//! kind, a bulk proposal's items, reopening a closed day, changing the
//! policy or the settings, granting a deciding role, and the actions held
//! until approved (a sink's pause, a large bulk resend, a user's creation,
//! a token that can write) — how many distinct approvers it needs, raised
//! above amount thresholds per currency (a bulk resend's: above a number
//! of deliveries). What moves money, holds, roles or the rules never goes
//! below one approver; a held action's floor is none, today's behaviour
//! (floors are checked when a policy is read from text, whatever it says).
//! The count a proposal needs is worked out here when it is proposed and
//! stored on it; the database counts the approvals (`store::approvals`).
//! Versions are kept by `store::policy`; [`changes`] proposes and decides
//! a new one.

pub mod changes;
pub mod held;

use crate::domain::{Currency, Money};
use app::tickets::FixKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// No action that moves money or holds, nor the policy, needs fewer.
pub const FLOOR: i64 = 1;
/// What an action held until approved needs unless the policy says more:
/// it runs at once, as it always did.
pub const NONE: i64 = 0;
/// A count nobody could meet is refused, not stored.
pub const CEILING: i64 = 5;

/// The actions besides fix kinds.
pub const BULK: &str = "BULK";
pub const REOPEN_DAY: &str = "REOPEN_DAY";
pub const POLICY_CHANGE: &str = "POLICY_CHANGE";
pub const SETTINGS_CHANGE: &str = "SETTINGS_CHANGE";
/// Confirming a supervisor or admin role an admin gave in the console.
pub const ROLE_GRANT: &str = "ROLE_GRANT";
/// The actions held until approved only when the policy says so.
pub const SINK_PAUSE: &str = "SINK_PAUSE";
pub const BULK_RESEND: &str = "BULK_RESEND";
pub const USER_CREATE: &str = "USER_CREATE";
/// Creating an API token with any write scope.
pub const TOKEN_CREATE: &str = "TOKEN_CREATE";
pub const HELD: [&str; 4] = [SINK_PAUSE, BULK_RESEND, USER_CREATE, TOKEN_CREATE];

/// A bulk resend's threshold counts deliveries, not money.
pub const DELIVERIES: &str = "deliveries";

/// Every action a rule may name, in the order the policy lists them.
pub fn actions() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = FixKind::ALL.iter().map(|k| k.as_str()).collect();
    all.extend([BULK, REOPEN_DAY, POLICY_CHANGE, SETTINGS_CHANGE, ROLE_GRANT]);
    all.extend(HELD);
    all
}

/// The fewest approvers a rule for `action` may ask.
pub fn floor(action: &str) -> i64 {
    if HELD.contains(&action) { NONE } else { FLOOR }
}

/// A threshold's amount as text: money in its currency's major units, a
/// count of deliveries as it is.
fn threshold_text(t: &Threshold) -> String {
    match Currency::parse(&t.currency) {
        Ok(c) => Money::new(t.minor, c).major_string(),
        Err(_) => t.minor.to_string(),
    }
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
                    approvers: floor(a),
                    above: Vec::new(),
                })
                .collect(),
        }
    }
}

impl Policy {
    /// How many distinct approvers `action` needs for `amount` (minor
    /// units and currency code; a bulk resend's deliveries and
    /// [`DELIVERIES`]), never fewer than the action's floor.
    pub fn required(&self, action: &str, amount: Option<(i64, &str)>) -> i64 {
        let Some(rule) = self.rules.iter().find(|r| r.action == action) else {
            return floor(action);
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
            .max(floor(action))
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
                let amount = threshold_text(t);
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
            let least = floor(action);
            if count < least {
                return Err(format!(
                    "line {at}: {action} needs at least {least} approver besides the proposer; {count} is below the floor"
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
                [above, amount, unit]
                    if above.eq_ignore_ascii_case("above")
                        && action == BULK_RESEND
                        && unit.eq_ignore_ascii_case(DELIVERIES) =>
                {
                    let n: i64 = amount.parse().ok().filter(|n| *n >= 0).ok_or_else(|| {
                        format!("line {at}: {amount:?} is not a number of deliveries")
                    })?;
                    if rule.above.iter().any(|t| t.minor == n) {
                        return Err(format!(
                            "line {at}: {action} above {n} {DELIVERIES} is given twice"
                        ));
                    }
                    rule.above.push(Threshold {
                        currency: DELIVERIES.to_owned(),
                        minor: n,
                        approvers: count,
                    });
                }
                [_, _, _] if action == BULK_RESEND => {
                    return Err(format!(
                        "line {at}: expected \"{action} N\" or \"{action} N above COUNT {DELIVERIES}\""
                    ));
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
                    threshold_text(t),
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
    fn the_default_is_one_approver_for_everything_but_held_actions() {
        let p = Policy::default();
        for a in actions() {
            let want = if HELD.contains(&a) { 0 } else { 1 };
            assert_eq!(p.required(a, Some((i64::MAX, "CNY"))), want, "{a}");
        }
        assert_eq!(Policy::parse("").unwrap(), p);
    }

    #[test]
    fn a_bulk_resend_is_held_above_a_number_of_deliveries() {
        let p = Policy::parse("BULK_RESEND 1 above 100 deliveries\nSINK_PAUSE 1").unwrap();
        assert_eq!(p.required(BULK_RESEND, Some((100, DELIVERIES))), 0);
        assert_eq!(p.required(BULK_RESEND, Some((101, DELIVERIES))), 1);
        assert_eq!(p.required(SINK_PAUSE, None), 1);
        assert_eq!(p.required(USER_CREATE, None), 0);
        assert_eq!(Policy::parse(&p.text()).unwrap(), p, "text round trip");
        let refused = |t: &str| Policy::parse(t).unwrap_err();
        assert!(refused("BULK_RESEND 1 above 10.00 CNY").contains("COUNT deliveries"));
        assert!(refused("BULK_RESEND 1 above -3 deliveries").contains("not a number"));
        assert!(refused("ROLE_GRANT 0").contains("below the floor"));
        assert!(refused("SETTINGS_CHANGE 0").contains("below the floor"));
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
