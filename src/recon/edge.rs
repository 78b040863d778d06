//! The day's edge. A payment paid (or a refund finished) within the cut
//! window of its business day's end may be booked by the provider in the
//! next day's statement — and one just after the day's start in the
//! previous day's. Missing from its own day's statement, such a record is
//! IN_TRANSIT (no ticket, no hold, no alert; pending in the day's figures)
//! until the neighbouring statement decides: carrying it, it matches
//! (`ARRIVED`); completing without it, the record is LOCAL_ONLY (a refund
//! REFUND_MISMATCH) with its hold and alert as any other. Either day's run
//! may come first, and each may be run again: every decision is an upsert
//! of `recon_edges`, keyed by the record, and tickets keep their dedupe
//! keys. Only the records near the cut are read: the window's payments no
//! statement row listed (by the `payments_day` index), the day's edge rows,
//! and the payments the statement's exceptions already named.

use super::classify::Found;
use super::matching::{ByKey, DayPayments, paid};
use super::{ReconError, Run, local, write};
use crate::domain::{Class, Severity, quote};
use crate::engine::Engine;
use crate::statement::StatementRow;
use crate::store::recon_edges::{self, ARRIVED, EdgeRow, IN_TRANSIT, MISSING, Mark};
use crate::store::recon_reads::{self, PaymentKey, Refund};
use crate::store::{recon_runs, tickets};
use serde_json::json;

pub(super) const PAYMENT: &str = "payment";
pub(super) const REFUND: &str = "refund";

/// The cut window of `provider` (microseconds): its own setting, else the
/// default (`RECKON_CUT_WINDOW_MINUTES`).
pub fn cut_window(engine: &Engine, provider: &str) -> i64 {
    let pulls = &engine.settings.pulls;
    pulls
        .cut_windows
        .get(provider)
        .copied()
        .unwrap_or(pulls.cut_window_us)
}

/// A record of the day near one of its cuts, missing from the day's
/// statement: what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unlisted {
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
pub(super) struct Decided {
    pub kind: &'static str,
    pub number: String,
    /// The neighbouring day whose statement may carry it.
    pub expected: String,
    pub what: Unlisted,
}

/// A run's business day and its neighbours, and what is known of the
/// day's records near the cuts — read before classifying, so that
/// classifying stays pure.
pub(super) struct Edges {
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
}

/// The neighbouring business days of `date`.
fn neighbours(date: &str) -> Result<(String, String), ReconError> {
    let d: jiff::civil::Date = date.parse().map_err(|_| {
        ReconError::Invalid(format!("business date {} is not YYYY-MM-DD", quote(date)))
    })?;
    let bad = |e: jiff::Error| ReconError::Invalid(e.to_string());
    Ok((
        d.yesterday().map_err(bad)?.to_string(),
        d.tomorrow().map_err(bad)?.to_string(),
    ))
}

/// Reads what a run of `run` needs of its day's edges; `day` (the day's
/// payments, matched) is lent to tell which of them no row listed.
pub(super) async fn load(
    engine: &Engine,
    run: &Run<'_>,
    day: DayPayments,
) -> Result<(Edges, DayPayments), ReconError> {
    let pool = &engine.db.pool;
    let (prev, next) = neighbours(run.date)?;
    let window = cut_window(engine, run.provider);
    let done = (
        recon_runs::has_completed(pool, run.provider, &prev).await?,
        recon_runs::has_completed(pool, run.provider, &next).await?,
    );
    let mut edges = Edges::new((&prev, &next), run.range, window, done);
    if window <= 0 {
        return Ok((edges, day));
    }
    let (start, end) = run.range;
    let head = (start, (start + window).min(end));
    let tail = ((end - window).max(head.1), end);
    let (day, near) = local::unlisted_near(engine, run.provider, [head, tail], day).await?;
    for (no, at) in near {
        edges.near_payment(&no, at);
    }
    for row in recon_edges::of_day(pool, run.provider, run.date).await? {
        edges.state(&row.kind, &row.number, &row.state);
    }
    Ok((edges, day))
}

/// A neighbour's record this run's statement carried.
pub(super) struct Carried {
    pub kind: &'static str,
    pub number: String,
    pub local_date: String,
}

/// The neighbours' payments and refunds near the cut that the statement's
/// rows name: payment rows not among the day's payments (by the payment
/// their transaction, else their payment_no, names), refund rows by the
/// ledger's entry.
pub(super) fn carried(
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

/// What settling the edges did, for the run's figures.
#[derive(Default)]
pub(super) struct Settled {
    /// Neighbours' records this statement carried.
    pub arrived: i64,
    /// Neighbours' records expected in this statement and absent from it:
    /// tickets opened now.
    pub missing: i64,
}

/// After the run's own tickets: the edges written. The neighbours'
/// records this statement carried are ARRIVED (a ticket opened for one
/// as absent is closed: the statement carries it); those it was expected
/// to carry and does not are MISSING, and ticketed on their own day; the
/// day's own records near a cut as classifying decided; the day's own
/// records no longer at the edge (its statement carries them now)
/// forgotten.
pub(super) async fn settle(
    engine: &Engine,
    run: &Run<'_>,
    edges: &Edges,
    carried: &[Carried],
) -> Result<Settled, ReconError> {
    let (pool, provider, date) = (&engine.db.pool, run.provider, run.date);
    let mut settled = Settled::default();
    let is_carried: hashbrown::HashSet<(&str, &str)> = carried
        .iter()
        .map(|c| (c.kind, c.number.as_str()))
        .collect();
    // Expected here, not carried: absent from both statements, unless its
    // own day is still to be reconciled (its run will say).
    let mut gone: Vec<EdgeRow> = Vec::new();
    for row in recon_edges::expected_in(pool, provider, date).await? {
        if is_carried.contains(&(row.kind.as_str(), row.number.as_str())) {
            continue;
        }
        gone.push(row);
    }
    let mut ticketed: Vec<&EdgeRow> = Vec::new();
    for row in &gone {
        if row.state == IN_TRANSIT
            || recon_runs::has_completed(pool, provider, &row.local_date).await?
        {
            ticketed.push(row);
        }
    }
    settled.missing = open_missing(engine, run, &ticketed, false).await?;

    let now = engine.now();
    let db = engine.db.kind;
    fn mark<'m>(
        kind: &'static str,
        number: &'m str,
        local_date: &'m str,
        expected_date: &'m str,
    ) -> Mark<'m> {
        Mark {
            kind,
            number,
            local_date,
            expected_date,
        }
    }
    let mut tx = engine.db.begin_write().await?;
    // Carried here: arrived, and a ticket opened for one as absent closed.
    let marks: Vec<Mark> = carried
        .iter()
        .map(|c| mark(c.kind, &c.number, &c.local_date, date))
        .collect();
    recon_edges::mark(&mut tx, db, provider, ARRIVED, &marks, run.run_id, now).await?;
    settled.arrived = carried.len() as i64;
    let keys: Vec<String> = carried
        .iter()
        .map(|c| {
            let class = if c.kind == PAYMENT {
                Class::LocalOnly
            } else {
                Class::RefundMismatch
            };
            format!("recon:{provider}:{}:{class}:{}", c.local_date, c.number)
        })
        .collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let conclusion = format!(
        "{provider}'s statement of {date} carries it (run {}): not lost, booked past the day's cut; \
         a hold on the payment stays until a person releases it",
        run.run_id
    );
    let entry = json!({"action": "carried by the neighbouring day's statement", "run": run.run_id, "statement_date": date, "at": now});
    for id in tickets::open_absent(&mut tx, db, &keys).await? {
        tickets::close_with(&mut tx, &id, &entry, &conclusion, now).await?;
    }
    // Expected here and absent.
    let marks: Vec<Mark> = gone
        .iter()
        .map(|r| mark(edge_kind(&r.kind), &r.number, &r.local_date, date))
        .collect();
    recon_edges::mark(&mut tx, db, provider, MISSING, &marks, run.run_id, now).await?;
    // The day's own, as classifying decided.
    for (state, what) in [
        (IN_TRANSIT, Unlisted::InTransit),
        (MISSING, Unlisted::Missing),
    ] {
        let marks: Vec<Mark> = edges
            .decided
            .iter()
            .filter(|d| d.what == what)
            .map(|d| mark(d.kind, &d.number, date, &d.expected))
            .collect();
        recon_edges::mark(&mut tx, db, provider, state, &marks, run.run_id, now).await?;
    }
    let decided: hashbrown::HashSet<(&str, &str)> = edges
        .decided
        .iter()
        .map(|d| (d.kind, d.number.as_str()))
        .collect();
    for (kind, number) in edges.states.keys() {
        if !decided.contains(&(kind.as_str(), number.as_str())) {
            recon_edges::forget(&mut tx, provider, kind, number).await?;
        }
    }
    tx.commit().await?;
    Ok(settled)
}

fn edge_kind(kind: &str) -> &'static str {
    if kind == REFUND { REFUND } else { PAYMENT }
}

/// Tickets for the neighbours' records neither statement carried, each on
/// its own business day (the day whose figures showed it in transit, and
/// whose own run opens the same ticket under the same key), found by this
/// run: LOCAL_ONLY with hold and alert for a paid payment, REFUND_MISMATCH
/// for a succeeded refund. How many.
async fn open_missing(
    engine: &Engine,
    run: &Run<'_>,
    rows: &[&EdgeRow],
    overdue: bool,
) -> Result<i64, ReconError> {
    if rows.is_empty() {
        return Ok(0);
    }
    let db = &engine.db;
    let (provider, date) = (run.provider, run.date);
    let nos: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == PAYMENT)
        .map(|r| r.number.as_str())
        .collect();
    let pays = local::payments_by(engine, PaymentKey::PaymentNo, provider, &nos).await?;
    let rnos: Vec<&str> = rows
        .iter()
        .filter(|r| r.kind == REFUND)
        .map(|r| r.number.as_str())
        .collect();
    let refunds: hashbrown::HashMap<String, Refund> =
        recon_reads::refunds_by_no(&db.pool, db.kind, &rnos)
            .await?
            .into_iter()
            .map(|r| (r.refund_no.clone(), r))
            .collect();
    let mut by_day: std::collections::BTreeMap<&str, Vec<Found>> = Default::default();
    for row in rows {
        let why = |what: &str| {
            if overdue {
                format!(
                    "{what} near the cut of {}, absent from {provider}'s statement of {}; the \
                     statement of {} that might carry it is overdue (past its ready time and the \
                     missing-statement hours)",
                    row.local_date, row.local_date, row.expected_date
                )
            } else {
                format!(
                    "{what} near the cut of {}, absent from {provider}'s statements of {} and {date}",
                    row.local_date, row.local_date
                )
            }
        };
        let found = if row.kind == PAYMENT {
            let Some(p) = pays.get(&row.number).filter(|p| paid(&p.status)) else {
                continue;
            };
            Found {
                class: Class::LocalOnly,
                severity: Severity::Critical,
                key: p.no.clone(),
                payment_no: Some(p.no.clone()),
                order_no: p.order.clone(),
                txn: p.txn.clone(),
                line_no: None,
                local: Some((p.amount, p.currency.clone(), p.status.clone())),
                provider_side: None,
                reason: why(&format!("{} here", p.status)),
                hold: vec![p.no.clone()],
            }
        } else {
            let Some(r) = refunds.get(&row.number).filter(|r| r.status == "SUCCEEDED") else {
                continue;
            };
            Found {
                class: Class::RefundMismatch,
                severity: Severity::High,
                key: r.refund_no.clone(),
                payment_no: Some(r.payment_no.clone()),
                order_no: None,
                txn: None,
                line_no: None,
                local: Some((r.amount_minor, r.currency.clone(), r.status.clone())),
                provider_side: None,
                reason: why(&format!("refund {} succeeded here", r.refund_no)),
                hold: Vec::new(),
            }
        };
        by_day
            .entry(row.local_date.as_str())
            .or_default()
            .push(found);
    }
    let mut opened = 0;
    let zone = super::statement_zone(engine, provider);
    for (day, found) in by_day {
        opened += found.len() as i64;
        let range = super::day_range(day, &zone).map_err(ReconError::Invalid)?;
        let on_day = Run {
            date: day,
            range,
            ..*run
        };
        let findings = write::Findings::of(found, &pays);
        write::write(engine, &on_day, findings, None, &[]).await?;
    }
    Ok(opened)
}

/// Records in transit to a neighbouring day whose statement is overdue
/// (its ready time plus the missing-statement hours passed with no
/// completed run: a day the provider never delivers, or the day before
/// Reckon's first), or whose neighbour's run completed without deciding
/// them (it overlapped their own day's run), are absent: ticketed on their
/// own day — LOCAL_ONLY with hold and alert, a refund REFUND_MISMATCH — and
/// MISSING, so no window
/// hides a loss for longer than a missing statement would. A statement
/// that comes later still carries them: its run closes the ticket. How many
/// were ticketed.
pub async fn expire_overdue(engine: &Engine, now: i64) -> Result<i64, ReconError> {
    let pool = &engine.db.pool;
    let mut opened = 0;
    let providers: Vec<String> = engine.providers.names().map(str::to_owned).collect();
    for provider in &providers {
        let day = super::schedule::statement_day(engine, provider);
        let mut due: Vec<EdgeRow> = Vec::new();
        for row in recon_edges::in_transit(pool, provider).await? {
            let Ok(expected) = row.expected_date.parse::<jiff::civil::Date>() else {
                continue;
            };
            let overdue = super::schedule::ready_at(expected, &day)
                .is_some_and(|ready| now >= ready + engine.settings.pulls.missing_after_us);
            // A row still in transit after its neighbour's completed run was
            // missed by it (the two runs overlapped): absent now as well.
            if overdue || recon_runs::has_completed(pool, provider, &row.expected_date).await? {
                due.push(row);
            }
        }
        // Each own day's tickets under its latest completed run, as that
        // run would have opened them.
        let mut by_day: std::collections::BTreeMap<String, Vec<&EdgeRow>> = Default::default();
        for row in &due {
            by_day.entry(row.local_date.clone()).or_default().push(row);
        }
        for (date, rows) in by_day {
            let Some(last) = recon_runs::completed_between(pool, &date, &date)
                .await?
                .into_iter()
                .rfind(|r| &r.provider == provider)
            else {
                continue;
            };
            let zone = super::statement_zone(engine, provider);
            let range = super::day_range(&date, &zone).map_err(ReconError::Invalid)?;
            let run = Run {
                run_id: &last.run_id,
                provider,
                date: &date,
                file: None,
                range,
            };
            opened += open_missing(engine, &run, &rows, true).await?;
            let marks: Vec<Mark> = rows
                .iter()
                .map(|r| Mark {
                    kind: edge_kind(&r.kind),
                    number: &r.number,
                    local_date: &r.local_date,
                    expected_date: &r.expected_date,
                })
                .collect();
            let mut tx = engine.db.begin_write().await?;
            recon_edges::mark(
                &mut tx,
                engine.db.kind,
                provider,
                MISSING,
                &marks,
                &last.run_id,
                now,
            )
            .await?;
            tx.commit().await?;
        }
    }
    Ok(opened)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
