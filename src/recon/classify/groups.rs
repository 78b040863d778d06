//! Grouped matches of payments against the statement's rows, decided
//! without I/O once the rows and payments are classified: a SUCCEEDED row
//! Reckon has no payment for (PROVIDER_ONLY) or whose transaction names
//! another (ONE_TO_MANY), whose amount is exactly the sum of several of
//! the day's payments the statement does not list — a combined payment
//! (WeChat Pay's 合单) settling several orders in one transaction. The
//! candidates are of the row's currency, created within the matching
//! window of it, bound to no other transaction, and not paid elsewhere;
//! the search, its cap and its ambiguity rule are
//! [`crate::domain::grouping`]'s. Only a proposal: people approve it.

use super::Applied;
use crate::domain::Class;
use crate::domain::grouping::{GROUP_CANDIDATES, best, covering_sets};
use crate::recon::matching::Pay;
use crate::recon::run::Found;
use crate::statement::StatementRow;

/// The statement row a group is found for, with its ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::recon) struct RowAnchor {
    pub class: Class,
    /// Its ticket's key within the run (`recon:provider:day:CLASS:key`).
    pub key: String,
    pub line_no: i64,
    pub txn: Option<String>,
    pub amount: i64,
    pub currency: String,
    pub occurred_at: Option<i64>,
}

/// What the search found for one row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::recon) enum Search {
    /// The payments that together are the row (by payment_no).
    Payments(Vec<Pay>),
    /// More than one covering set is as good as the best: none proposed.
    Ambiguous(Vec<Vec<Pay>>),
    /// More candidates than [`GROUP_CANDIDATES`]: not searched.
    TooMany(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::recon) struct RowGroup {
    pub row: RowAnchor,
    pub found: Search,
}

/// The rows a grouped search starts from, in statement order: SUCCEEDED
/// payment rows found PROVIDER_ONLY or ONE_TO_MANY.
pub(in crate::recon) fn anchors(
    found: &[Found],
    exceptions: &[(StatementRow, Option<u32>)],
) -> Vec<RowAnchor> {
    let at: hashbrown::HashMap<i64, &StatementRow> =
        exceptions.iter().map(|(r, _)| (r.line_no, r)).collect();
    let mut out: Vec<RowAnchor> = found
        .iter()
        .filter(|f| matches!(f.class, Class::ProviderOnly | Class::OneToMany))
        .filter_map(|f| {
            let (amount, currency, status) = f.provider_side.as_ref()?;
            let row = at.get(&f.line_no?)?;
            (status == "SUCCEEDED" && *amount > 0).then(|| RowAnchor {
                class: f.class,
                key: f.key.clone(),
                line_no: row.line_no,
                txn: row.provider_txn_id.clone(),
                amount: *amount,
                currency: currency.clone(),
                occurred_at: row.occurred_at,
            })
        })
        .collect();
    out.sort_by_key(|a| a.line_no);
    out.dedup_by_key(|a| a.line_no);
    out
}

/// Whether payment `p` may be part of row `row`: same currency, less than
/// it, created within the window (a row without a time takes any of the
/// day's), bound to no other transaction, and waiting for its money or
/// paid here without a row (LOCAL_ONLY).
fn fits(row: &RowAnchor, p: &Pay, rules: &Applied) -> bool {
    let near = match (p.created, row.occurred_at) {
        (Some(c), Some(o)) => (o - c).abs() <= rules.window_us,
        (Some(_), None) => true,
        _ => false,
    };
    p.currency == row.currency
        && p.amount > 0
        && p.amount < row.amount
        && near
        && p.txn
            .as_deref()
            .is_none_or(|t| Some(t) == row.txn.as_deref())
        && matches!(p.status.as_str(), "CREATED" | "PENDING" | "SUCCEEDED")
}

/// How far a payment's creation is from the row's time, in whole minutes:
/// payments made within the same minute are alike (by the microsecond
/// one set would always be nearer, and the choice arbitrary).
fn distance(row: &RowAnchor, p: &Pay) -> i64 {
    match (p.created, row.occurred_at) {
        (Some(c), Some(o)) => (o - c).abs() / 60_000_000,
        _ => 0,
    }
}

/// For each anchor in turn, the candidates (`unlisted`: the day's payments
/// no row names, as the database has them) whose amounts sum exactly to
/// its amount. A set is preferred when every member is bound to the row's
/// transaction already, then when its members were made nearest the row
/// (the farthest, then all together, in minutes); sets alike on that are
/// ambiguous and nothing is proposed. A payment proposed for one row is
/// no candidate for the next.
pub(in crate::recon) fn payments_to_rows(
    anchors: &[RowAnchor],
    unlisted: &[Pay],
    rules: &Applied,
) -> Vec<RowGroup> {
    let mut taken = vec![false; unlisted.len()];
    let mut out = Vec::new();
    for row in anchors {
        let cands: Vec<usize> = (0..unlisted.len())
            .filter(|&i| !taken[i] && fits(row, &unlisted[i], rules))
            .collect();
        let found = if cands.len() > GROUP_CANDIDATES {
            Search::TooMany(cands.len())
        } else {
            let amounts: Vec<i64> = cands.iter().map(|&i| unlisted[i].amount).collect();
            let sets: Vec<Vec<usize>> = covering_sets(&amounts, row.amount)
                .into_iter()
                .map(|s| s.into_iter().map(|i| cands[i]).collect())
                .collect();
            if sets.is_empty() {
                continue;
            }
            let rank = |s: &[usize]| {
                let d: Vec<i64> = s.iter().map(|&i| distance(row, &unlisted[i])).collect();
                (
                    !s.iter()
                        .all(|&i| unlisted[i].txn.is_some() && unlisted[i].txn == row.txn),
                    d.iter().copied().max().unwrap_or(0),
                    d.iter().map(|&x| i128::from(x)).sum::<i128>(),
                )
            };
            let pays = |s: &[usize]| -> Vec<Pay> {
                let mut v: Vec<Pay> = s.iter().map(|&i| unlisted[i].clone()).collect();
                v.sort_by(|a, b| a.no.cmp(&b.no));
                v
            };
            match best(sets, rank) {
                Ok(set) => {
                    set.iter().for_each(|&i| taken[i] = true);
                    Search::Payments(pays(&set))
                }
                Err(sets) => Search::Ambiguous(sets.iter().map(|s| pays(s)).collect()),
            }
        };
        out.push(RowGroup {
            row: row.clone(),
            found,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60 * 1_000_000;

    fn pay(no: &str, amount: i64, created_min: i64) -> Pay {
        Pay {
            no: no.into(),
            order: None,
            amount,
            currency: "CNY".into(),
            status: "PENDING".into(),
            txn: None,
            created: Some(created_min * MIN),
            paid: None,
        }
    }

    fn row(amount: i64, at_min: i64) -> RowAnchor {
        RowAnchor {
            class: Class::ProviderOnly,
            key: "4200001".into(),
            line_no: 2,
            txn: Some("4200001".into()),
            amount,
            currency: "CNY".into(),
            occurred_at: Some(at_min * MIN),
        }
    }

    fn rules() -> Applied {
        Applied {
            window_us: 30 * MIN,
            ..Applied::default()
        }
    }

    fn nos(g: &[RowGroup]) -> Vec<Vec<&str>> {
        g.iter()
            .map(|g| match &g.found {
                Search::Payments(p) => p.iter().map(|p| p.no.as_str()).collect(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_combined_row_is_the_payments_that_sum_to_it() {
        let unlisted = [
            pay("P1", 6_000, 100),
            pay("P2", 4_000, 101),
            pay("P3", 9_999, 100),
        ];
        let g = payments_to_rows(&[row(10_000, 102)], &unlisted, &rules());
        assert_eq!(nos(&g), [vec!["P1", "P2"]]);
        // One cent off: nothing.
        assert!(payments_to_rows(&[row(10_001, 102)], &unlisted, &rules()).is_empty());
        // A single payment of the row's amount is the 1:1 pass's, never a group.
        assert!(payments_to_rows(&[row(9_999, 102)], &unlisted, &rules()).is_empty());
    }

    #[test]
    fn currency_window_binding_and_status_keep_a_payment_out() {
        let base = [pay("P1", 6_000, 100), pay("P2", 4_000, 101)];
        let found = |u: &[Pay]| payments_to_rows(&[row(10_000, 102)], u, &rules()).len();
        assert_eq!(found(&base), 1);
        let mut other = base.to_vec();
        other[1].currency = "USD".into();
        assert_eq!(found(&other), 0, "another currency");
        let mut other = base.to_vec();
        other[1].created = Some(200 * MIN);
        assert_eq!(found(&other), 0, "outside the window");
        let mut other = base.to_vec();
        other[1].txn = Some("4200999".into());
        assert_eq!(found(&other), 0, "bound to another transaction");
        let mut other = base.to_vec();
        other[1].txn = Some("4200001".into());
        assert_eq!(found(&other), 1, "bound to the row's own");
        let mut other = base.to_vec();
        other[1].status = "FAILED".into();
        assert_eq!(found(&other), 0, "failed");
        let mut other = base.to_vec();
        other[1].status = "SUCCEEDED".into();
        assert_eq!(found(&other), 1, "paid here, absent from the statement");
    }

    #[test]
    fn sets_alike_are_ambiguous_and_nearer_wins() {
        let unlisted = [
            pay("P1", 6_000, 100),
            pay("P2", 4_000, 100),
            pay("P3", 4_000, 100),
        ];
        let g = payments_to_rows(&[row(10_000, 102)], &unlisted, &rules());
        assert_eq!(g.len(), 1);
        let Search::Ambiguous(sets) = &g[0].found else {
            panic!("{g:?}")
        };
        assert_eq!(sets.len(), 2);
        let mut later = unlisted.to_vec();
        later[2].created = Some(120 * MIN);
        let g = payments_to_rows(&[row(10_000, 102)], &later, &rules());
        assert_eq!(nos(&g), [vec!["P1", "P2"]]);
    }

    #[test]
    fn a_payment_grouped_once_is_not_grouped_again_and_the_search_is_capped() {
        let unlisted = [pay("P1", 6_000, 100), pay("P2", 4_000, 101)];
        let mut second = row(10_000, 102);
        second.line_no = 3;
        let g = payments_to_rows(&[row(10_000, 102), second], &unlisted, &rules());
        assert_eq!(nos(&g), [vec!["P1", "P2"]]);
        let many: Vec<Pay> = (0..=GROUP_CANDIDATES)
            .map(|i| pay(&format!("P{i:02}"), 100 + i as i64, 100))
            .collect();
        let g = payments_to_rows(&[row(201, 102)], &many, &rules());
        assert_eq!(g[0].found, Search::TooMany(GROUP_CANDIDATES + 1));
        let g = payments_to_rows(&[row(201, 102)], &many[..GROUP_CANDIDATES], &rules());
        assert_eq!(nos(&g), [vec!["P00", "P01"]]);
    }
}
