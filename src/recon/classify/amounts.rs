//! The amount key, decided without I/O once the rows and payments are
//! classified: a SUCCEEDED row no identifier found (PROVIDER_ONLY) and a
//! payment of the day the statement does not list (LOCAL_ONLY, or not yet
//! paid) of the same currency and exact amount, made within the matching
//! window of the row and bound to no other transaction, are one payment
//! only when each is the other's only candidate. Where both sides say the
//! money arrived, the pair is matched (counted under the key); where Reckon
//! has the payment not paid, the pair is only proposed — a GROUP_MATCH of
//! one member, decided by people like any grouped match — since an equal
//! amount is no proof of payment. Anything less than a mutually unique
//! pair pairs nothing, and the row's ticket says why.

use super::groups::{RowAnchor, RowGroup, Search};
use super::paid;
use crate::domain::Class;
use crate::recon::figures::Figures;
use crate::recon::matching::Pay;
use crate::recon::run::Found;

/// The candidates a ticket names, at most.
const SHOWN: usize = 5;

/// The figures' name of the key.
pub(in crate::recon) const KEY: &str = "amount";

/// What the amount key found for one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::recon) enum ByAmount {
    /// The row's one payment, each the other's only candidate.
    Paired(Pay),
    /// More than one payment fits the row (all of them, by payment_no).
    Several(Vec<String>),
    /// The row's one payment is also the only one of other rows (their
    /// lines).
    Shared(Pay, Vec<i64>),
}

/// Whether payment `p` may be row `row`'s by amount: same currency and
/// exact amount, created within the window (a row without a time takes
/// any of the day's), bound to no other transaction, waiting for its
/// money or paid here without a row.
fn fits(row: &RowAnchor, p: &Pay, window_us: i64) -> bool {
    let near = match (p.created, row.occurred_at) {
        (Some(c), Some(o)) => (o - c).abs() <= window_us,
        (Some(_), None) => true,
        _ => false,
    };
    p.currency == row.currency
        && p.amount == row.amount
        && near
        && p.txn
            .as_deref()
            .is_none_or(|t| Some(t) == row.txn.as_deref())
        && (matches!(p.status.as_str(), "CREATED" | "PENDING") || paid(&p.status))
}

/// For each row (`anchors`: SUCCEEDED PROVIDER_ONLY rows) with at least
/// one candidate among `unlisted`, what the key found, in row order.
pub(in crate::recon) fn pair(
    anchors: &[RowAnchor],
    unlisted: &[Pay],
    window_us: i64,
) -> Vec<(RowAnchor, ByAmount)> {
    let mut by_amount: hashbrown::HashMap<(&str, i64), Vec<usize>> = hashbrown::HashMap::new();
    for (i, p) in unlisted.iter().enumerate() {
        by_amount
            .entry((p.currency.as_str(), p.amount))
            .or_default()
            .push(i);
    }
    let cands: Vec<Vec<usize>> = anchors
        .iter()
        .map(|row| {
            by_amount
                .get(&(row.currency.as_str(), row.amount))
                .map(|c| {
                    c.iter()
                        .copied()
                        .filter(|&i| fits(row, &unlisted[i], window_us))
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect();
    // The rows each payment is a candidate of.
    let mut rows_of: hashbrown::HashMap<usize, Vec<i64>> = hashbrown::HashMap::new();
    for (row, c) in anchors.iter().zip(&cands) {
        for &i in c {
            rows_of.entry(i).or_default().push(row.line_no);
        }
    }
    let mut out = Vec::new();
    for (row, c) in anchors.iter().zip(cands) {
        let found = match c.as_slice() {
            [] => continue,
            [i] => {
                let others: Vec<i64> = rows_of[i]
                    .iter()
                    .copied()
                    .filter(|l| *l != row.line_no)
                    .collect();
                match others.is_empty() {
                    true => ByAmount::Paired(unlisted[*i].clone()),
                    false => ByAmount::Shared(unlisted[*i].clone(), others),
                }
            }
            several => {
                let mut nos: Vec<String> =
                    several.iter().map(|&i| unlisted[i].no.clone()).collect();
                nos.sort_unstable();
                ByAmount::Several(nos)
            }
        };
        out.push((row.clone(), found));
    }
    out
}

fn money(minor: i64, currency: &str) -> String {
    app::format::money(minor, currency)
}

/// A list of at most [`SHOWN`] names, saying how many more.
fn bounded<T: std::fmt::Display>(all: &[T]) -> String {
    let shown: Vec<String> = all.iter().take(SHOWN).map(ToString::to_string).collect();
    match all.len() > SHOWN {
        true => format!("{} and {} more", shown.join(", "), all.len() - SHOWN),
        false => shown.join(", "),
    }
}

/// What the key's findings do to the run's: a matched pair's row and
/// payment leave their PROVIDER_ONLY and LOCAL_ONLY findings and count
/// matched; a pair Reckon has not paid keeps its PROVIDER_ONLY ticket,
/// saying so, and is returned as the one-member group to propose; a row
/// not paired says why on its ticket. Every pair is counted under the key
/// in `figures.by_key`.
pub(in crate::recon) fn settle(
    pairs: Vec<(RowAnchor, ByAmount)>,
    window_us: i64,
    found: &mut Vec<Found>,
    figures: &mut Figures,
) -> Vec<RowGroup> {
    let hours = window_us / 3_600_000_000;
    let mut proposed = Vec::new();
    let mut gone_rows: hashbrown::HashSet<i64> = hashbrown::HashSet::new();
    let mut gone_payments: hashbrown::HashSet<String> = hashbrown::HashSet::new();
    for (row, by) in pairs {
        let amount = money(row.amount, &row.currency);
        let why = match by {
            ByAmount::Paired(p) if paid(&p.status) => {
                figures.uncount(Class::ProviderOnly);
                if gone_payments.insert(p.no.clone()) {
                    figures.uncount(Class::LocalOnly);
                    figures.local_without_row -= 1;
                }
                gone_rows.insert(row.line_no);
                figures.count_matched(1);
                figures.count_by_key(KEY, "matched");
                continue;
            }
            ByAmount::Paired(p) => {
                figures.count_by_key(KEY, "proposed");
                let why = format!(
                    "; by amount and date it is payment {} ({amount}, {} here, made within {hours} hours of the row, \
                     the only one either way): proposed as a grouped match of one, nothing is paid until people approve it",
                    p.no, p.status
                );
                proposed.push(RowGroup {
                    row: row.clone(),
                    found: Search::Payments(vec![p]),
                });
                why
            }
            ByAmount::Several(nos) => {
                figures.count_by_key(KEY, "ambiguous");
                format!(
                    "; not paired by amount: {} of the day's unlisted payments of {amount} were made within {hours} hours of it ({}); decide by hand",
                    nos.len(),
                    bounded(&nos)
                )
            }
            ByAmount::Shared(p, lines) => {
                figures.count_by_key(KEY, "ambiguous");
                format!(
                    "; not paired by amount: payment {} ({amount}, {}) is also a candidate of statement line {}; decide by hand",
                    p.no,
                    p.status,
                    bounded(&lines)
                )
            }
        };
        if let Some(f) = found
            .iter_mut()
            .find(|f| f.class == Class::ProviderOnly && f.line_no == Some(row.line_no))
        {
            f.reason.push_str(&why);
        }
    }
    if !gone_rows.is_empty() {
        found.retain(|f| match f.class {
            Class::ProviderOnly => f.line_no.is_none_or(|l| !gone_rows.contains(&l)),
            Class::LocalOnly => f
                .payment_no
                .as_deref()
                .is_none_or(|no| !gone_payments.contains(no)),
            _ => true,
        });
    }
    proposed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Severity;

    const HOUR: i64 = 3_600_000_000;

    fn pay(no: &str, amount: i64, created_h: i64, status: &str) -> Pay {
        Pay {
            no: no.into(),
            order: None,
            amount,
            currency: "CNY".into(),
            status: status.into(),
            txn: None,
            created: Some(created_h * HOUR),
            paid: None,
        }
    }

    fn row(line: i64, amount: i64, at_h: i64) -> RowAnchor {
        RowAnchor {
            class: Class::ProviderOnly,
            key: format!("T{line}"),
            line_no: line,
            txn: Some(format!("T{line}")),
            amount,
            currency: "CNY".into(),
            occurred_at: Some(at_h * HOUR),
        }
    }

    fn finding(class: Class, line: Option<i64>, no: Option<&str>) -> Found {
        Found {
            class,
            severity: Severity::High,
            key: "k".into(),
            payment_no: no.map(Into::into),
            order_no: None,
            txn: None,
            line_no: line,
            local: None,
            provider_side: None,
            reason: "the provider reports a payment Reckon does not have".into(),
            hold: Vec::new(),
        }
    }

    #[test]
    fn one_payment_of_the_amount_within_the_window_pairs() {
        let u = [
            pay("P1", 1000, 10, "PENDING"),
            pay("P2", 999, 10, "PENDING"),
        ];
        let got = pair(&[row(2, 1000, 12)], &u, 3 * HOUR);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, ByAmount::Paired(u[0].clone()));
        // Outside the window, of another currency, bound elsewhere, failed: none.
        assert!(pair(&[row(2, 1000, 14)], &u, 3 * HOUR).is_empty());
        let mut other = u.clone();
        other[0].currency = "USD".into();
        assert!(pair(&[row(2, 1000, 12)], &other, 3 * HOUR).is_empty());
        let mut other = u.clone();
        other[0].txn = Some("T9".into());
        assert!(pair(&[row(2, 1000, 12)], &other, 3 * HOUR).is_empty());
        other[0].txn = Some("T2".into());
        assert_eq!(pair(&[row(2, 1000, 12)], &other, 3 * HOUR).len(), 1);
        let mut other = u.clone();
        other[0].status = "FAILED".into();
        assert!(pair(&[row(2, 1000, 12)], &other, 3 * HOUR).is_empty());
    }

    #[test]
    fn only_a_mutually_unique_pair_pairs() {
        let two = [
            pay("P1", 1000, 10, "PENDING"),
            pay("P2", 1000, 11, "PENDING"),
        ];
        let got = pair(&[row(2, 1000, 12)], &two, 3 * HOUR);
        assert_eq!(got[0].1, ByAmount::Several(vec!["P1".into(), "P2".into()]));
        let one = [pay("P1", 1000, 10, "PENDING")];
        let got = pair(&[row(2, 1000, 12), row(5, 1000, 11)], &one, 3 * HOUR);
        assert_eq!(got[0].1, ByAmount::Shared(one[0].clone(), vec![5]));
        assert_eq!(got[1].1, ByAmount::Shared(one[0].clone(), vec![2]));
    }

    #[test]
    fn a_paid_pair_matches_an_unpaid_one_is_only_proposed() {
        let mut found = vec![
            finding(Class::ProviderOnly, Some(2), None),
            finding(Class::LocalOnly, None, Some("P1")),
            finding(Class::ProviderOnly, Some(3), None),
        ];
        let mut figures = Figures::default();
        figures.count(Class::ProviderOnly, 2);
        figures.count(Class::LocalOnly, 1);
        figures.local_without_row = 1;
        let pairs = vec![
            (
                row(2, 1000, 12),
                ByAmount::Paired(pay("P1", 1000, 10, "SUCCEEDED")),
            ),
            (
                row(3, 500, 12),
                ByAmount::Paired(pay("P2", 500, 10, "PENDING")),
            ),
        ];
        let groups = settle(pairs, 3 * HOUR, &mut found, &mut figures);
        assert_eq!(found.len(), 1, "the paid pair's two findings are gone");
        assert_eq!(found[0].line_no, Some(3));
        assert!(
            found[0].reason.contains("payment P2"),
            "{}",
            found[0].reason
        );
        assert!(found[0].reason.contains("nothing is paid until"));
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].row.line_no, 3);
        assert_eq!(figures.matched, 1);
        assert_eq!(figures.classes.get("PROVIDER_ONLY"), Some(&1));
        assert_eq!(figures.classes.get("LOCAL_ONLY"), None);
        assert_eq!(figures.local_without_row, 0);
        assert_eq!(figures.by_key[KEY]["matched"], 1);
        assert_eq!(figures.by_key[KEY]["proposed"], 1);
    }

    #[test]
    fn a_row_not_paired_names_its_candidates_bounded() {
        let nos: Vec<String> = (1..=7).map(|i| format!("P{i}")).collect();
        let mut found = vec![finding(Class::ProviderOnly, Some(2), None)];
        let mut figures = Figures::default();
        let groups = settle(
            vec![(row(2, 1000, 12), ByAmount::Several(nos))],
            3 * HOUR,
            &mut found,
            &mut figures,
        );
        assert!(groups.is_empty());
        let reason = &found[0].reason;
        assert!(
            reason.contains("7 of the day's unlisted payments")
                && reason.contains("P1, P2, P3, P4, P5 and 2 more"),
            "{reason}"
        );
        assert_eq!(figures.by_key[KEY]["ambiguous"], 1);
    }
}
