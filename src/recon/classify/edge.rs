//! The day's edge as classifying sees it, pure. A payment paid (or a
//! refund finished) within the cut window of its business day's end may be
//! booked by the provider in the next day's statement — and one just after
//! the day's start in the previous day's. Missing from its own day's
//! statement, such a record is IN_TRANSIT until the neighbouring statement
//! decides: carrying it, it matches (ARRIVED); completing without it, it is
//! absent (MISSING). Here it is only decided: which of the day's own
//! records are near a cut and what each is ([`Edges::unlisted`]), and which
//! of the neighbours' records the statement carries ([`carried`]). What is
//! stored of the edges is read before and written after by `recon/edge.rs`.

use crate::domain::quote;
use crate::recon::matching::ByKey;
use crate::recon::run::ReconError;
use crate::statement::StatementRow;
use crate::store::recon_edges::ARRIVED;
use crate::store::recon_reads::Refund;

pub(in crate::recon) const PAYMENT: &str = "payment";
pub(in crate::recon) const REFUND: &str = "refund";

/// A record of the day near one of its cuts, missing from the day's
/// statement: what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::recon) enum Unlisted {
    /// Not near a cut: absent, as any other.
    NotNear,
    /// The neighbouring statement carried it: matched.
    Arrived,
    /// The neighbouring statement is still to come.
    InTransit,
    /// The neighbouring statement came without it: absent.
    Missing,
}

/// What classifying decided about one of the day's own records near a
/// cut.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::recon) struct Decided {
    pub kind: &'static str,
    pub number: String,
    /// The neighbouring day whose statement may carry it.
    pub expected: String,
    pub what: Unlisted,
}

/// A run's business day and its neighbours, and what is known of the
/// day's records near the cuts — read before classifying, so that
/// classifying stays pure.
pub(in crate::recon) struct Edges {
    range: (i64, i64),
    window: i64,
    prev: String,
    next: String,
    prev_done: bool,
    next_done: bool,
    /// The day's payments paid within the window of either cut, with
    /// when (the day's index holds no times: only these few are read).
    near: hashbrown::HashMap<String, i64>,
    /// The edge states of the day's own records, by kind and number.
    states: hashbrown::HashMap<(String, String), String>,
    /// What classifying decided, for the run to write.
    pub decided: Vec<Decided>,
}

impl Edges {
    /// The edges of a day (`range`, its neighbours `prev` and `next`,
    /// whether each has a completed run) with a cut window of `window`.
    pub fn new(
        (prev, next): (&str, &str),
        range: (i64, i64),
        window: i64,
        (prev_done, next_done): (bool, bool),
    ) -> Edges {
        Edges {
            range,
            window,
            prev: prev.to_owned(),
            next: next.to_owned(),
            prev_done,
            next_done,
            near: Default::default(),
            states: Default::default(),
            decided: Vec::new(),
        }
    }

    /// A payment of the day paid at `paid_at`.
    pub fn near_payment(&mut self, no: &str, paid_at: i64) {
        self.near.insert(no.to_owned(), paid_at);
    }

    /// A record's edge state as stored.
    pub fn state(&mut self, kind: &str, number: &str, state: &str) {
        self.states
            .insert((kind.to_owned(), number.to_owned()), state.to_owned());
    }

    /// The neighbour (its date, and whether its statement was reconciled)
    /// whose statement may carry a record of this day finished at `at`.
    fn neighbour_of_own(&self, at: i64) -> Option<(&str, bool)> {
        let (start, end) = self.range;
        if self.window <= 0 || at < start || at >= end {
            return None;
        }
        if at >= end - self.window {
            Some((&self.next, self.next_done))
        } else if at < start + self.window {
            Some((&self.prev, self.prev_done))
        } else {
            None
        }
    }

    /// The neighbouring day a record finished at `at` belongs to, if it is
    /// a neighbour's within the window of this day's cut — one this
    /// day's statement may carry.
    pub fn neighbour_day(&self, at: i64) -> Option<&str> {
        let (start, end) = self.range;
        if self.window <= 0 {
            None
        } else if at < start && at >= start - self.window {
            Some(&self.prev)
        } else if at >= end && at < end + self.window {
            Some(&self.next)
        } else {
            None
        }
    }

    /// A record of the day (`kind`, `number`) its statement does not list,
    /// finished at `at` (a payment's time is looked up among those near
    /// the cuts): what it is, the decision kept for the run to write.
    pub fn unlisted(&mut self, kind: &'static str, number: &str, at: Option<i64>) -> Unlisted {
        let Some(at) = at.or_else(|| self.near.get(number).copied()) else {
            return Unlisted::NotNear;
        };
        let Some((expected, done)) = self
            .neighbour_of_own(at)
            .map(|(day, done)| (day.to_owned(), done))
        else {
            return Unlisted::NotNear;
        };
        let stored = self.states.get(&(kind.to_owned(), number.to_owned()));
        let what = if stored.is_some_and(|s| s == ARRIVED) {
            Unlisted::Arrived
        } else if done {
            Unlisted::Missing
        } else {
            Unlisted::InTransit
        };
        self.decided.push(Decided {
            kind,
            number: number.to_owned(),
            expected,
            what,
        });
        what
    }

    /// The day's own records stored at an edge that classifying did not
    /// decide now: its statement carries them, so they are no longer at
    /// the edge.
    pub fn forgotten(&self) -> Vec<(&str, &str)> {
        let decided: hashbrown::HashSet<(&str, &str)> = self
            .decided
            .iter()
            .map(|d| (d.kind, d.number.as_str()))
            .collect();
        self.states
            .keys()
            .map(|(kind, number)| (kind.as_str(), number.as_str()))
            .filter(|record| !decided.contains(record))
            .collect()
    }
}

/// The neighbouring business days of `date`.
pub(in crate::recon) fn neighbours(date: &str) -> Result<(String, String), ReconError> {
    let d: jiff::civil::Date = date.parse().map_err(|_| {
        ReconError::Invalid(format!("business date {} is not YYYY-MM-DD", quote(date)))
    })?;
    let bad = |e: jiff::Error| ReconError::Invalid(e.to_string());
    Ok((
        d.yesterday().map_err(bad)?.to_string(),
        d.tomorrow().map_err(bad)?.to_string(),
    ))
}

/// A neighbour's record this run's statement carried.
pub(in crate::recon) struct Carried {
    pub kind: &'static str,
    pub number: String,
    pub local_date: String,
}

/// The neighbours' payments and refunds near the cut that the statement's
/// rows name: payment rows not among the day's payments (by the payment
/// their transaction, else their payment_no, names), refund rows by the
/// ledger's entry.
pub(in crate::recon) fn carried(
    edges: &Edges,
    exceptions: &[(StatementRow, Option<u32>)],
    by_txn: &ByKey,
    by_no: &ByKey,
    refunds: &[StatementRow],
    ledger: &hashbrown::HashMap<String, Refund>,
) -> Vec<Carried> {
    let mut out = Vec::new();
    let mut seen = hashbrown::HashSet::new();
    for (row, slot) in exceptions {
        if slot.is_some() {
            continue;
        }
        let pay = row
            .provider_txn_id
            .as_deref()
            .and_then(|t| by_txn.get(t))
            .or_else(|| row.payment_no.as_deref().and_then(|n| by_no.get(n)));
        if let Some(p) = pay
            && let Some(day) = p.paid.and_then(|at| edges.neighbour_day(at))
            && seen.insert((PAYMENT, p.no.clone()))
        {
            out.push(Carried {
                kind: PAYMENT,
                number: p.no.clone(),
                local_date: day.to_owned(),
            });
        }
    }
    for row in refunds {
        if let Some(f) = row.refund_no.as_deref().and_then(|no| ledger.get(no))
            && let Some(day) = f.finished_at.and_then(|at| edges.neighbour_day(at))
            && seen.insert((REFUND, f.refund_no.clone()))
        {
            out.push(Carried {
                kind: REFUND,
                number: f.refund_no.clone(),
                local_date: day.to_owned(),
            });
        }
    }
    out
}

/// A stored record's kind as one of the two kinds an edge holds.
pub(in crate::recon) fn edge_kind(kind: &str) -> &'static str {
    if kind == REFUND { REFUND } else { PAYMENT }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Currency, Money};
    use crate::recon::matching::Pay;
    use crate::statement::RowKind;
    use crate::store::recon_edges::IN_TRANSIT;

    const H: i64 = 3600 * 1_000_000;
    const START: i64 = 1_790_000_000_000_000;
    const END: i64 = START + 24 * H;
    const W: i64 = H / 2;

    fn edges(done: (bool, bool)) -> Edges {
        Edges::new(("2026-12-01", "2026-12-03"), (START, END), W, done)
    }

    #[test]
    fn a_record_near_either_cut_waits_for_its_neighbour() {
        let mut e = edges((false, false));
        e.near_payment("TAIL", END - 2_000_000);
        e.near_payment("HEAD", START + 2_000_000);
        assert_eq!(e.unlisted(PAYMENT, "TAIL", None), Unlisted::InTransit);
        assert_eq!(e.unlisted(PAYMENT, "HEAD", None), Unlisted::InTransit);
        assert_eq!(
            e.decided
                .iter()
                .map(|d| d.expected.as_str())
                .collect::<Vec<_>>(),
            ["2026-12-03", "2026-12-01"]
        );
    }

    #[test]
    fn the_window_hides_no_loss_inside_the_day() {
        let mut e = edges((false, false));
        // Not among the payments near a cut: absent at once.
        assert_eq!(e.unlisted(PAYMENT, "MIDDAY", None), Unlisted::NotNear);
        // A refund just outside the window.
        let at = END - W - 1;
        assert_eq!(e.unlisted(REFUND, "R1", Some(at)), Unlisted::NotNear);
        assert!(e.decided.is_empty());
        // No window: no edge.
        let mut none = Edges::new(("p", "n"), (START, END), 0, (false, false));
        assert_eq!(
            none.unlisted(REFUND, "R1", Some(END - 1)),
            Unlisted::NotNear
        );
    }

    #[test]
    fn a_neighbour_reconciled_decides() {
        let mut e = edges((true, true));
        e.near_payment("GONE", END - 1);
        e.near_payment("CAME", END - 1);
        e.state(PAYMENT, "CAME", ARRIVED);
        e.state(PAYMENT, "GONE", IN_TRANSIT);
        assert_eq!(e.unlisted(PAYMENT, "GONE", None), Unlisted::Missing);
        assert_eq!(e.unlisted(PAYMENT, "CAME", None), Unlisted::Arrived);
        assert_eq!(e.unlisted(REFUND, "R", Some(START)), Unlisted::Missing);
    }

    #[test]
    fn a_neighbours_record_is_near_only_within_the_window() {
        let e = edges((false, false));
        assert_eq!(e.neighbour_day(START - 1), Some("2026-12-01"));
        assert_eq!(e.neighbour_day(START - W - 1), None);
        assert_eq!(e.neighbour_day(END), Some("2026-12-03"));
        assert_eq!(e.neighbour_day(END + W), None);
        assert_eq!(e.neighbour_day(START + 1), None);
    }

    #[test]
    fn the_neighbours_of_a_day_are_the_days_either_side() {
        assert_eq!(
            neighbours("2026-12-31").unwrap(),
            ("2026-12-30".into(), "2027-01-01".into())
        );
        assert_eq!(
            neighbours("2028-03-01").unwrap(),
            ("2028-02-29".into(), "2028-03-02".into())
        );
        let Err(ReconError::Invalid(why)) = neighbours("2026-13-01") else {
            panic!("not a day, refused as invalid");
        };
        assert_eq!(why, "business date \"2026-13-01\" is not YYYY-MM-DD");
    }

    fn statement_row(kind: RowKind, txn: Option<&str>, no: Option<&str>) -> StatementRow {
        StatementRow {
            reference: None,
            line_no: 1,
            kind,
            provider_txn_id: txn.map(Into::into),
            payment_no: no.map(Into::into),
            refund_no: None,
            provider_refund_id: None,
            money: Money::new(100, Currency::parse("CNY").unwrap()),
            status: "SUCCEEDED".into(),
            occurred_at: None,
            fee: None,
        }
    }

    fn paid_at(no: &str, at: i64) -> Pay {
        Pay {
            no: no.into(),
            order: None,
            amount: 100,
            currency: "CNY".into(),
            status: "SUCCEEDED".into(),
            txn: Some(format!("T-{no}")),
            created: Some(at),
            paid: Some(at),
        }
    }

    #[test]
    fn the_statement_carries_the_neighbours_records_near_the_cut_once_each() {
        let e = edges((false, false));
        let by_txn: ByKey = [
            ("T-LATE".to_string(), paid_at("LATE", START - 1)),
            ("T-FAR".to_string(), paid_at("FAR", START - W - 1)),
        ]
        .into_iter()
        .collect();
        let by_no: ByKey = [("NEXT".to_string(), paid_at("NEXT", END + 1))]
            .into_iter()
            .collect();
        let exceptions = vec![
            // The previous day's, just before the cut: carried.
            (statement_row(RowKind::Payment, Some("T-LATE"), None), None),
            // Listed twice: carried once.
            (statement_row(RowKind::Payment, Some("T-LATE"), None), None),
            // Found by its payment_no: the next day's, just after the cut.
            (statement_row(RowKind::Payment, None, Some("NEXT")), None),
            // Outside the window: not the edge's.
            (statement_row(RowKind::Payment, Some("T-FAR"), None), None),
            // One of the day's own payments (it has a slot): not carried.
            (
                statement_row(RowKind::Payment, Some("T-LATE"), None),
                Some(0),
            ),
        ];
        let mut refund = statement_row(RowKind::Refund, None, None);
        refund.refund_no = Some("R-NEXT".into());
        let ledger: hashbrown::HashMap<String, Refund> = [(
            "R-NEXT".to_string(),
            Refund {
                refund_no: "R-NEXT".into(),
                payment_no: "P".into(),
                amount_minor: 100,
                currency: "CNY".into(),
                status: "SUCCEEDED".into(),
                finished_at: Some(END + W - 1),
            },
        )]
        .into_iter()
        .collect();
        let carried = carried(&e, &exceptions, &by_txn, &by_no, &[refund], &ledger);
        let got: Vec<(&str, &str, &str)> = carried
            .iter()
            .map(|c| (c.kind, c.number.as_str(), c.local_date.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (PAYMENT, "LATE", "2026-12-01"),
                (PAYMENT, "NEXT", "2026-12-03"),
                (REFUND, "R-NEXT", "2026-12-03"),
            ]
        );
    }

    #[test]
    fn a_stored_record_classifying_did_not_decide_is_forgotten() {
        let mut e = edges((false, false));
        e.near_payment("STILL", END - 1);
        e.state(PAYMENT, "STILL", IN_TRANSIT);
        e.state(PAYMENT, "LISTED", IN_TRANSIT);
        assert_eq!(e.unlisted(PAYMENT, "STILL", None), Unlisted::InTransit);
        assert_eq!(e.forgotten(), [(PAYMENT, "LISTED")]);
        assert_eq!(edge_kind("refund"), REFUND);
        assert_eq!(edge_kind("payment"), PAYMENT);
    }
}
