//! Grouped matching, decided without I/O and shared by both sides that
//! group: payouts against bank credits, payments against a provider's
//! statement rows. Which sets of candidates sum exactly to an anchor's
//! amount, and which one of them (if any) to propose.

/// The most candidates one grouped search looks at: every subset of 12 is
/// 4,096 sums. A provider pays out a few times a day, and a combined
/// payment has a handful of parts, so more than 12 candidates of one
/// currency within a window is an anomaly a person sorts out; the search
/// says so instead of guessing.
pub const GROUP_CANDIDATES: usize = 12;

/// Every subset of two or more of `amounts` summing exactly to `target`
/// (indices into `amounts`, ascending). `amounts` holds at most
/// [`GROUP_CANDIDATES`]; sums are taken in `i128`, so no amount overflows.
pub fn covering_sets(amounts: &[i64], target: i64) -> Vec<Vec<usize>> {
    assert!(
        amounts.len() <= GROUP_CANDIDATES,
        "the caller caps the search"
    );
    let n = amounts.len();
    let mut out = Vec::new();
    for mask in 1u32..(1 << n) {
        if mask.count_ones() < 2 {
            continue;
        }
        let sum: i128 = (0..n)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| i128::from(amounts[i]))
            .sum();
        if sum == i128::from(target) {
            out.push((0..n).filter(|i| mask & (1 << i) != 0).collect());
        }
    }
    out.sort();
    out
}

/// The one set to propose among `sets` (each a list of candidates), by
/// `rank` (lower first); every set tied with the best when there is no one.
pub fn best<K: Ord>(
    sets: Vec<Vec<usize>>,
    rank: impl Fn(&[usize]) -> K,
) -> Result<Vec<usize>, Vec<Vec<usize>>> {
    let mut ranked: Vec<(K, Vec<usize>)> = sets.into_iter().map(|s| (rank(&s), s)).collect();
    ranked.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let tied = ranked
        .iter()
        .take_while(|(k, _)| Some(k) == ranked.first().map(|(k, _)| k))
        .count();
    let mut sets = ranked.into_iter().map(|(_, s)| s);
    match tied {
        1 => Ok(sets.next().unwrap_or_default()),
        n => Err(sets.take(n).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covering_sets_are_exact_and_of_two_or_more() {
        assert_eq!(covering_sets(&[1, 2, 3, 4], 5), [vec![0, 3], vec![1, 2]]);
        // A single amount equal to the target is the 1:1 pass's, not a group.
        assert_eq!(covering_sets(&[5, 7], 5), Vec::<Vec<usize>>::new());
        assert_eq!(covering_sets(&[3, 4, 5], 12), [vec![0, 1, 2]]);
        assert!(
            covering_sets(&[3, 4, 5], 11).is_empty(),
            "one short is no match"
        );
        // Sums never overflow.
        assert_eq!(covering_sets(&[i64::MAX, i64::MAX, 1], i64::MAX).len(), 0);
        assert_eq!(covering_sets(&[], 0).len(), 0);
    }

    #[test]
    fn the_best_set_is_the_one_ranked_first_or_none_when_tied() {
        let sets = vec![vec![0, 1], vec![2, 3]];
        assert_eq!(best(sets.clone(), |s| s[0]), Ok(vec![0, 1]));
        assert_eq!(best(sets.clone(), |_| 0), Err(sets));
    }
}
